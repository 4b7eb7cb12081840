/*  `kguard run`'s machine (kg_run_states), every state x event, with a
    clock of the test's own: where each event leads, the deadlines a TIMER
    is read against, what a signal does in each state, and what a finished
    cell means. Pure: no sockets, no kernel, no real time. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kg_exit.h"
#include "kg_run_states.h"
#include "kg_runner.h"
#include "kg_test.h"

/*  The injected clock: the loop's ms as the test says. */
static int64_t s_clock_ms = 100000;

#define N KG_RUN_ST_NONE
#define STA KG_RUN_ST_STARTING
#define WAI KG_RUN_ST_WAITING
#define EXE KG_RUN_ST_EXECUTING
#define INT KG_RUN_ST_INTERRUPTING
#define JUD KG_RUN_ST_JUDGING
#define RST KG_RUN_ST_RESTARTING
#define STO KG_RUN_ST_STOPPING
#define TRM KG_RUN_ST_TERMINATING
#define KIL KG_RUN_ST_KILLING
#define DON KG_RUN_ST_DONE

/*  Every state x event with nothing due yet (a TIMER that finds no passed
    deadline is a nudge in WAITING, nothing in a cell) and with everything
    due (the start limit, the cell's idle and limit all passed). Columns:
    SPAWNED SPAWNFAIL READY DOWN TIMER FINISHED CHILDEXIT STOP FAILED NEXT
    RESTART END */
static const kg_run_state_t s_not_due[KG_RUN_ST_COUNT][KG_RUN_EV_COUNT] = {
  /* STARTING     */ {WAI, DON, N,   N,   N,   N,   N,   N,   N,   N,   N,   N},
  /* WAITING      */ {N,   N,   EXE, STO, WAI, N,   STO, STO, STO, N,   N,   N},
  /* EXECUTING    */ {N,   N,   N,   N,   N,   JUD, JUD, JUD, JUD, N,   N,   STO},
  /* INTERRUPTING */ {N,   N,   N,   N,   N,   JUD, JUD, JUD, JUD, N,   N,   N},
  /* JUDGING      */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   EXE, RST, STO},
  /* RESTARTING   */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   EXE, N,   STO},
  /* STOPPING     */ {N,   N,   N,   N,   TRM, N,   DON, N,   N,   N,   N,   N},
  /* TERMINATING  */ {N,   N,   N,   N,   KIL, N,   DON, N,   N,   N,   N,   N},
  /* KILLING      */ {N,   N,   N,   N,   DON, N,   DON, N,   N,   N,   N,   N},
  /* DONE         */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N},
};

/*  What differs once every deadline has passed: TIMER only. */
static const kg_run_state_t s_due_timer[KG_RUN_ST_COUNT] = {
  N, STO, JUD, JUD, N, N, TRM, KIL, DON, N,
};

KG_TEST(every_state_and_event)
{
  kg_run_clock_t later = {.start_limit = s_clock_ms + 5000, .limit = s_clock_ms + 5000,
                          .idle_limit = 0};
  kg_run_clock_t passed = {.start_limit = s_clock_ms - 1, .limit = s_clock_ms - 1,
                           .idle_limit = s_clock_ms - 1};
  for (int st = 0; st < KG_RUN_ST_COUNT; st++) {
    for (int ev = 0; ev < KG_RUN_EV_COUNT; ev++) {
      kg_run_state_t got = kg_run_next((kg_run_state_t) st, (kg_run_event_t) ev, &later,
                                       s_clock_ms);
      kg_run_state_t want = s_not_due[st][ev];
      if (got != want)
        fprintf(stderr, "%s --%s--> %d, want %d\n", kg_run_state_names[st],
                kg_run_event_names[ev], got, want);
      KG_CHECK_INT(got, want);
      got = kg_run_next((kg_run_state_t) st, (kg_run_event_t) ev, &passed, s_clock_ms);
      want = ev == KG_RUN_EV_TIMER ? s_due_timer[st] : s_not_due[st][ev];
      if (got != want)
        fprintf(stderr, "%s --%s--> %d when due, want %d\n", kg_run_state_names[st],
                kg_run_event_names[ev], got, want);
      KG_CHECK_INT(got, want);
    }
  }
  /* out of range */
  KG_CHECK_INT(kg_run_next(KG_RUN_ST_COUNT, KG_RUN_EV_TIMER, &later, s_clock_ms), N);
  KG_CHECK_INT(kg_run_next(KG_RUN_ST_WAITING, KG_RUN_EV_COUNT, &later, s_clock_ms), N);
  KG_CHECK_INT(kg_run_next(KG_RUN_ST_NONE, KG_RUN_EV_TIMER, &later, s_clock_ms), N);
}

KG_TEST(shutdown_is_never_left_and_the_kernels_end_finishes_it)
{
  kg_run_clock_t none = {0};
  for (int st = KG_RUN_ST_STOPPING; st <= KG_RUN_ST_KILLING; st++) {
    for (int ev = 0; ev < KG_RUN_EV_COUNT; ev++) {
      kg_run_state_t next = kg_run_next((kg_run_state_t) st, (kg_run_event_t) ev, &none,
                                        s_clock_ms);
      KG_CHECK(next == N || next >= KG_RUN_ST_STOPPING);
    }
    KG_CHECK_INT(kg_run_next((kg_run_state_t) st, KG_RUN_EV_CHILD_EXIT, &none, s_clock_ms), DON);
    /* a signal does not hurry the shutdown: it is not read */
    KG_CHECK_INT(kg_run_on_signal((kg_run_state_t) st, SIGINT, 0), KG_RUN_SIG_IGNORE);
  }
  /* the escalation, one deadline each: ask, SIGTERM, SIGKILL, gone */
  kg_run_state_t s = KG_RUN_ST_STOPPING;
  s = kg_run_next(s, KG_RUN_EV_TIMER, &none, s_clock_ms);
  KG_CHECK_INT(s, TRM);
  s = kg_run_next(s, KG_RUN_EV_TIMER, &none, s_clock_ms);
  KG_CHECK_INT(s, KIL);
  s = kg_run_next(s, KG_RUN_EV_TIMER, &none, s_clock_ms);
  KG_CHECK_INT(s, DON);
}

/*  Reachability over the table: from STARTING every state can be reached,
    and from every state DONE can. */
static void
s_reach(kg_run_state_t from, bool seen[KG_RUN_ST_COUNT])
{
  if (seen[from])
    return;
  seen[from] = true;
  for (int ev = 0; ev < KG_RUN_EV_COUNT; ev++) {
    for (int due = 0; due < 2; due++) {
      kg_run_clock_t c = due ? (kg_run_clock_t){s_clock_ms - 1, s_clock_ms - 1, 0}
                             : (kg_run_clock_t){s_clock_ms + 1, 0, 0};
      kg_run_state_t next = kg_run_next(from, (kg_run_event_t) ev, &c, s_clock_ms);
      if (next != N)
        s_reach(next, seen);
    }
  }
}

KG_TEST(every_state_reachable_and_every_state_ends)
{
  bool seen[KG_RUN_ST_COUNT] = {false};
  s_reach(KG_RUN_ST_STARTING, seen);
  for (int st = 0; st < KG_RUN_ST_COUNT; st++) {
    if (!seen[st])
      fprintf(stderr, "%s unreachable from STARTING\n", kg_run_state_names[st]);
    KG_CHECK(seen[st]);
    bool from[KG_RUN_ST_COUNT] = {false};
    s_reach((kg_run_state_t) st, from);
    if (!from[KG_RUN_ST_DONE])
      fprintf(stderr, "no way out of %s\n", kg_run_state_names[st]);
    KG_CHECK(from[KG_RUN_ST_DONE]);
  }
}

/*  A cell's deadlines against the injected clock, as the run meets them. */
KG_TEST(cell_deadlines_follow_the_clock)
{
  s_clock_ms = 100000;
  /* sent with --timeout 30 s */
  kg_run_clock_t c = {.limit = s_clock_ms + 30000};
  KG_CHECK_INT(kg_run_cell_due(&c), s_clock_ms + 30000);
  KG_CHECK_INT(kg_run_cell_late(&c, s_clock_ms), KG_RUN_LATE_NONE);
  KG_CHECK_INT(kg_run_next(EXE, KG_RUN_EV_TIMER, &c, s_clock_ms + 29999), N);
  s_clock_ms += 30000;
  KG_CHECK_INT(kg_run_cell_late(&c, s_clock_ms), KG_RUN_LATE_LIMIT);
  KG_CHECK_INT(kg_run_next(EXE, KG_RUN_EV_TIMER, &c, s_clock_ms), INT);
  /* interrupted: a grace to answer */
  c.limit = s_clock_ms + 10000;
  KG_CHECK_INT(kg_run_next(INT, KG_RUN_EV_TIMER, &c, s_clock_ms + 9999), N);
  KG_CHECK_INT(kg_run_next(INT, KG_RUN_EV_TIMER, &c, s_clock_ms + 10000), JUD);
  /* it replied during the grace: its idle is awaited, briefly after a
     kguard event; the earlier deadline is the state's */
  s_clock_ms += 1000;
  c.idle_limit = s_clock_ms + kg_run_idle_grace_ms(true);
  KG_CHECK_INT(kg_run_idle_grace_ms(true), 2000);
  KG_CHECK_INT(kg_run_idle_grace_ms(false), 10000);
  KG_CHECK_INT(kg_run_cell_due(&c), s_clock_ms + 2000);
  KG_CHECK_INT(kg_run_cell_late(&c, s_clock_ms + 2000), KG_RUN_LATE_IDLE);
  KG_CHECK_INT(kg_run_next(INT, KG_RUN_EV_TIMER, &c, s_clock_ms + 2000), JUD);
  /* no --timeout, replied: only the idle is awaited (10 s) */
  kg_run_clock_t d = {.idle_limit = s_clock_ms + kg_run_idle_grace_ms(false)};
  KG_CHECK_INT(kg_run_cell_due(&d), s_clock_ms + 10000);
  KG_CHECK_INT(kg_run_next(EXE, KG_RUN_EV_TIMER, &d, s_clock_ms + 9999), N);
  KG_CHECK_INT(kg_run_next(EXE, KG_RUN_EV_TIMER, &d, s_clock_ms + 10000), JUD);
  /* replied before its --timeout, whose limit comes first: still
     interrupted, as a cell whose idle never came */
  kg_run_clock_t e = {.limit = s_clock_ms + 500, .idle_limit = s_clock_ms + 10000};
  KG_CHECK_INT(kg_run_cell_due(&e), s_clock_ms + 500);
  KG_CHECK_INT(kg_run_next(EXE, KG_RUN_EV_TIMER, &e, s_clock_ms + 500), INT);
  /* both passed: the idle's is read first (the cell did reply) */
  KG_CHECK_INT(kg_run_cell_late(&e, s_clock_ms + 10000), KG_RUN_LATE_IDLE);
  /* nothing armed */
  kg_run_clock_t none = {0};
  KG_CHECK_INT(kg_run_cell_due(&none), 0);
  KG_CHECK_INT(kg_run_cell_late(&none, s_clock_ms), KG_RUN_LATE_NONE);
}

KG_TEST(start_waits_until_its_limit)
{
  s_clock_ms = 200000;
  kg_run_clock_t c = {.start_limit = s_clock_ms + 60000};
  /* each nudge's deadline re-enters WAITING (another kernel_info) */
  for (int64_t t = s_clock_ms; t < c.start_limit; t += 1000)
    KG_CHECK_INT(kg_run_next(WAI, KG_RUN_EV_TIMER, &c, t), WAI);
  KG_CHECK_INT(kg_run_next(WAI, KG_RUN_EV_TIMER, &c, c.start_limit), STO);
  /* an answer, kguard's own "down", the child's end or a signal end it */
  KG_CHECK_INT(kg_run_next(WAI, KG_RUN_EV_READY, &c, s_clock_ms), EXE);
  KG_CHECK_INT(kg_run_next(WAI, KG_RUN_EV_DOWN, &c, s_clock_ms), STO);
  KG_CHECK_INT(kg_run_next(WAI, KG_RUN_EV_CHILD_EXIT, &c, s_clock_ms), STO);
  KG_CHECK_INT(kg_run_next(WAI, KG_RUN_EV_STOP, &c, s_clock_ms), STO);
}

KG_TEST(signals_in_every_state)
{
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (int st = 0; st < KG_RUN_ST_COUNT; st++) {
    bool cell = st == EXE || st == INT;
    bool shutdown = st >= STO;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
      for (int before = 0; before < 3; before++) {
        kg_run_signal_t got = kg_run_on_signal((kg_run_state_t) st, sigs[i], before);
        kg_run_signal_t want = shutdown ? KG_RUN_SIG_IGNORE
                               : cell && sigs[i] == SIGINT && before == 0 ? KG_RUN_SIG_INTERRUPT
                               : KG_RUN_SIG_STOP;
        if (got != want)
          fprintf(stderr, "signal %d in %s after %d: %d, want %d\n", sigs[i],
                  kg_run_state_names[st], before, got, want);
        KG_CHECK_INT(got, want);
      }
    }
  }
}

KG_TEST(cell_outcomes_in_order)
{
  /*  Each row sets one more fact than the row below it would need: the
      first that holds decides. */
  static const struct {
    kg_run_cell_t cell;
    kg_run_outcome_t want;
    int exit_code;
  } rows[] = {
    {{.failure = -12, .stop_signal = 2, .child_exited = true}, KG_RUN_OUT_FAILED, KG_EXIT_SYSTEM},
    {{.stop_signal = 15, .child_exited = true, .event = "down"}, KG_RUN_OUT_STOPPED, 143},
    {{.child_exited = true, .event = "down"}, KG_RUN_OUT_KERNEL_GONE, KG_EXIT_SYSTEM},
    {{.event = "down", .timed_out = true}, KG_RUN_OUT_DOWN, KG_RUN_EXIT_GAVE_UP},
    {{.event = "sticky-restart", .timed_out = true}, KG_RUN_OUT_RESTARTED, -1},
    {{.event = "kernel-died", .user_interrupt = true}, KG_RUN_OUT_RESTARTED, -1},
    {{.timed_out = true, .user_interrupt = true}, KG_RUN_OUT_TIMED_OUT, KG_RUN_EXIT_TIMEOUT},
    {{.user_interrupt = true, .status = "error"}, KG_RUN_OUT_INTERRUPTED, KG_RUN_EXIT_INTERRUPTED},
    {{.status = "error"}, KG_RUN_OUT_ERROR, KG_RUN_EXIT_CELL_ERROR},
    {{.status = "aborted"}, KG_RUN_OUT_ERROR, KG_RUN_EXIT_CELL_ERROR},
    {{.status = NULL}, KG_RUN_OUT_ERROR, KG_RUN_EXIT_CELL_ERROR},
    {{.status = "error", .raises_exception = true}, KG_RUN_OUT_OK, -1},
    {{.status = "ok", .event = "sticky"}, KG_RUN_OUT_OK, -1},
    {{.status = "ok"}, KG_RUN_OUT_OK, -1},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_run_outcome_t got = kg_run_outcome(&rows[i].cell);
    if (got != rows[i].want)
      fprintf(stderr, "row %zu: outcome %d, want %d\n", i, got, rows[i].want);
    KG_CHECK_INT(got, rows[i].want);
    KG_CHECK_INT(kg_run_outcome_exit(got, rows[i].cell.stop_signal), rows[i].exit_code);
  }
}

KG_TEST(names_follow_the_lists)
{
  KG_CHECK_STR(kg_run_state_names[KG_RUN_ST_STARTING], "STARTING");
  KG_CHECK_STR(kg_run_state_names[KG_RUN_ST_DONE], "DONE");
  KG_CHECK_STR(kg_run_event_names[KG_RUN_EV_CHILD_EXIT], "CHILD_EXIT");
  KG_CHECK_STR(kg_run_event_names[KG_RUN_EV_END], "END");
  for (int i = 0; i < KG_RUN_ST_COUNT; i++)
    for (int j = i + 1; j < KG_RUN_ST_COUNT; j++)
      KG_CHECK(strcmp(kg_run_state_names[i], kg_run_state_names[j]) != 0);
  for (int i = 0; i < KG_RUN_EV_COUNT; i++)
    for (int j = i + 1; j < KG_RUN_EV_COUNT; j++)
      KG_CHECK(strcmp(kg_run_event_names[i], kg_run_event_names[j]) != 0);
}

KG_TEST_MAIN(KG_CASE(every_state_and_event),
             KG_CASE(shutdown_is_never_left_and_the_kernels_end_finishes_it),
             KG_CASE(every_state_reachable_and_every_state_ends),
             KG_CASE(cell_deadlines_follow_the_clock), KG_CASE(start_waits_until_its_limit),
             KG_CASE(signals_in_every_state), KG_CASE(cell_outcomes_in_order),
             KG_CASE(names_follow_the_lists))
