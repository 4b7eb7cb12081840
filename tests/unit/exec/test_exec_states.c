/*  `kguard exec`'s rows (kg_exec_states.h, kg_exec.c) on the state engine:
    the names follow the X-macro lists; exactly the states that wait for
    something timed (the stall after a sticky text, the stop's grace, the
    back-off, the join, the coordinator's decision, node 0's coordinator
    ending) have a deadline, and each posts DEADLINE; the others end by
    what happens outside (a process, the helper, the coordinator) or are
    final; no row's deadline is a number the code cannot explain.
    Its two sub-machines (the join, what follows STOPPING) as tables:
    every sub-state x event against the one written out here, and runs on
    the engine with the test's clock. */
#include <stdio.h>
#include <string.h>

#include "kg_exec_states.h"
#include "kg_fsm.h"
#include "kg_test.h"

KG_TEST(names_follow_the_lists)
{
  const kg_fsm_def_t *def = kg_ex_states();
  KG_CHECK_INT(def->nstates, KG_EX_STATE_COUNT);
  KG_CHECK_INT(def->nevents, KG_EXE_COUNT);
  KG_CHECK_STR(def->state_names[KG_EX_RUNNING], "RUNNING");
  KG_CHECK_STR(def->state_names[KG_EX_WAITING], "WAITING");
  KG_CHECK_STR(def->event_names[KG_EXE_STICKY], "STICKY");
  KG_CHECK_STR(def->event_names[KG_EXE_REFUSED], "REFUSED");
  for (int i = 0; i < KG_EX_STATE_COUNT; i++)
    for (int j = i + 1; j < KG_EX_STATE_COUNT; j++)
      KG_CHECK(strcmp(def->state_names[i], def->state_names[j]) != 0);
  for (int i = 0; i < KG_EXE_COUNT; i++)
    for (int j = i + 1; j < KG_EXE_COUNT; j++)
      KG_CHECK(strcmp(def->event_names[i], def->event_names[j]) != 0);
}

KG_TEST(timed_states_post_deadline)
{
  static const struct {
    kg_ex_state_t state;
    bool timed;          /*  a deadline, armed by the row or its entry */
    bool enter;          /*  an entry action (arming a deadline known only
                             then, or saying what the state waits for)   */
    int64_t fixed_ms;    /*  the row's own deadline, 0 if none          */
  } rows[] = {
    {KG_EX_RUNNING, false, false, 0},
    {KG_EX_SUSPECT, true, true, 0},     /* the stall: the job's pace */
    {KG_EX_STOPPING, true, true, 0},    /* the grace its stop gave */
    {KG_EX_RESTORING, false, false, 0}, /* the helper's end */
    {KG_EX_BACKOFF, true, true, 0},     /* the policy's delay */
    {KG_EX_DONE, false, false, 0},
    {KG_EX_JOINING, true, true, 0},     /* the join timeout */
    {KG_EX_WAITING, true, false, KG_EX_DECISION_WAIT_MS},
    {KG_EX_ENDING, true, true, KG_EX_ENDING_MS},   /* says why it waits */
  };
  KG_CHECK_INT(sizeof rows / sizeof rows[0], KG_EX_STATE_COUNT);
  const kg_fsm_def_t *def = kg_ex_states();
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const kg_fsm_row_t *row = &def->rows[rows[i].state];
    if ((row->on_deadline != KG_FSM_NONE) != rows[i].timed)
      fprintf(stderr, "%s: a deadline without its event, or the other way\n",
              kg_ex_state_names[rows[i].state]);
    KG_CHECK_INT(row->on_deadline, rows[i].timed ? KG_EXE_DEADLINE : KG_FSM_NONE);
    KG_CHECK_INT(row->enter != NULL, rows[i].enter);
    KG_CHECK_INT(row->deadline_ms, rows[i].fixed_ms);
  }
}

/*  Declared in exec's private header, which a test may not include: the
    definition is all this test reads. */
const kg_fsm_def_t *kg_ex_join_states(void);

#define N KG_FSM_NONE

KG_TEST(join_every_sub_state_and_event)
{
  /* each sub-state waits for one event; every other one leaves it */
  static const struct {
    int event, to;
  } want[KG_EX_J_COUNT] = {
    [KG_EX_J_HELLO] = {KG_EXE_WELCOME, KG_EX_J_SEAL},
    [KG_EX_J_SEAL] = {KG_EXE_HELPER_DONE, KG_EX_J_JOINED},     /* the seal's end */
    [KG_EX_J_JOINED] = {KG_EXE_CHECK, KG_EX_J_VERIFY},
    [KG_EX_J_VERIFY] = {KG_EXE_HELPER_DONE, KG_EX_J_CHECKED},  /* the verify's end */
    [KG_EX_J_CHECKED] = {KG_EXE_START, KG_EX_J_LISTING},  /* lists, then waits */
    [KG_EX_J_LISTING] = {N, N},   /* final: the run is in WAITING for the start decision */
  };
  for (int st = 0; st < KG_EX_J_COUNT; st++)
    for (int ev = 0; ev < KG_EXE_COUNT; ev++) {
      int expect = ev == want[st].event ? want[st].to : N;
      int got = kg_ex_join_next(st, ev);
      if (got != expect)
        fprintf(stderr, "join %s x %s: %d, want %d\n", kg_ex_join_names[st],
                kg_ex_event_names[ev], got, expect);
      KG_CHECK_INT(got, expect);
    }
  KG_CHECK_INT(kg_ex_join_next(KG_EX_J_COUNT, KG_EXE_WELCOME), N);
  KG_CHECK_INT(kg_ex_join_next(KG_EX_J_HELLO, KG_EXE_COUNT), N);
  /* its rows: no deadline (JOINING's covers the join); every step but
     the first (the hello, sent with the link) does its work on entry */
  const kg_fsm_def_t *def = kg_ex_join_states();
  KG_CHECK_INT(def->nstates, KG_EX_J_COUNT);
  KG_CHECK_INT(def->nevents, KG_EXE_COUNT);
  for (int st = 0; st < KG_EX_J_COUNT; st++) {
    KG_CHECK_INT(def->rows[st].deadline_ms, 0);
    KG_CHECK_INT(def->rows[st].on_deadline, N);
    KG_CHECK_INT(def->rows[st].enter != NULL, st != KG_EX_J_HELLO);
  }
  KG_CHECK_STR(kg_ex_join_names[KG_EX_J_CHECKED], "CHECKED");
  KG_CHECK_STR(kg_ex_join_names[KG_EX_J_LISTING], "LISTING");
}

KG_TEST(after_stop_every_state_and_event)
{
  enum { X = KG_EX_AFTER_EXIT, R = KG_EX_AFTER_RESTART, P = KG_EX_AFTER_REPORT };
  /*  STOP_EXIT STOP_RESTART STOP_REPORT END */
  static const int want[KG_EX_AFTER_COUNT][KG_EX_AFTER_EV_COUNT] = {
    [X] = {X, R, P, N},   /* an exit stays an exit */
    [R] = {X, R, P, X},   /* a signal while stopping: no restart */
    [P] = {X, R, P, X},   /* the coordinator lost: nothing to report to */
  };
  for (int st = 0; st < KG_EX_AFTER_COUNT; st++)
    for (int ev = 0; ev < KG_EX_AFTER_EV_COUNT; ev++) {
      int got = kg_ex_after_next(st, ev);
      if (got != want[st][ev])
        fprintf(stderr, "after %s x %s: %d, want %d\n", kg_ex_after_names[st],
                kg_ex_after_event_names[ev], got, want[st][ev]);
      KG_CHECK_INT(got, want[st][ev]);
    }
  KG_CHECK_INT(kg_ex_after_next(-1, KG_EX_AFTER_EV_END), N);
  const kg_fsm_def_t *def = kg_ex_after_states();
  for (int st = 0; st < KG_EX_AFTER_COUNT; st++) {
    KG_CHECK_INT(def->rows[st].deadline_ms, 0);
    KG_CHECK_INT(def->rows[st].on_deadline, N);
  }
}

KG_TEST(after_stop_on_the_engine)
{
  kg_fsm_t *m = kg_fsm_new(kg_ex_after_states(), NULL, 4);
  KG_CHECK(m != NULL);
  KG_CHECK_INT(kg_fsm_start(m, KG_EX_AFTER_EXIT, 1000), 0);
  KG_CHECK_INT(kg_fsm_post(m, KG_EX_AFTER_EV_STOP_RESTART, 0, 2000), 0);
  KG_CHECK_INT(kg_fsm_state(m), KG_EX_AFTER_RESTART);
  KG_CHECK_INT(kg_fsm_deadline(m), 0);
  KG_CHECK(!kg_fsm_tick(m, 1000000));   /* a plan never times out */
  KG_CHECK_INT(kg_fsm_post(m, KG_EX_AFTER_EV_END, 0, 3000), 0);
  KG_CHECK_INT(kg_fsm_state(m), KG_EX_AFTER_EXIT);
  KG_CHECK_INT(kg_fsm_post(m, KG_EX_AFTER_EV_END, 0, 4000), 0);
  KG_CHECK_INT(kg_fsm_state(m), KG_EX_AFTER_EXIT);
  KG_CHECK_INT(kg_fsm_post(m, KG_EX_AFTER_EV_STOP_REPORT, 0, 5000), 0);
  KG_CHECK_INT(kg_fsm_state(m), KG_EX_AFTER_REPORT);
  kg_fsm_destroy(&m);
}

/*  ENDING (node 0 waiting for its coordinator) is bounded: its own
    deadline, no longer than the wait docs/exec.md names, posts DEADLINE. */
KG_TEST(ending_waits_at_most_its_deadline)
{
  const kg_fsm_def_t *def = kg_ex_states();
  const kg_fsm_row_t *row = &def->rows[KG_EX_ENDING];
  KG_CHECK_INT(row->deadline_ms, KG_EX_ENDING_MS);
  KG_CHECK(row->deadline_ms <= 5000);   /* what docs/exec.md promises */
  KG_CHECK_INT(row->on_deadline, KG_EXE_DEADLINE);
}

KG_TEST_MAIN(KG_CASE(names_follow_the_lists), KG_CASE(timed_states_post_deadline),
             KG_CASE(join_every_sub_state_and_event), KG_CASE(after_stop_every_state_and_event),
             KG_CASE(after_stop_on_the_engine), KG_CASE(ending_waits_at_most_its_deadline))
