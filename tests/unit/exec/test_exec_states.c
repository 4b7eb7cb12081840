/*  `kguard exec`'s rows (kg_exec_states.h, kg_exec.c) on the state engine:
    the names follow the X-macro lists; exactly the states that wait for
    something timed (the stall after a sticky text, the stop's grace, the
    back-off, the join, the coordinator's decision) have a deadline, and
    each posts DEADLINE; the others end by what happens outside (a process,
    the helper, the coordinator) or are final; no row's deadline is a
    number the code cannot explain. */
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
    bool enter;          /*  an entry action arms it (known only then) */
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

KG_TEST_MAIN(KG_CASE(names_follow_the_lists), KG_CASE(timed_states_post_deadline))
