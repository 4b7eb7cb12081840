/*  kg_run_states: the run's table and its pure choices (see kg_run_states.h). */
#include "kg_run_states.h"

#include <signal.h>
#include <string.h>

#include "kg_exit.h"
#include "kg_runner.h"

/*  nbclient waits 4 s for the idle; kguard relays through one more hop. */
#define S_IDLE_GRACE_MS 10000
#define S_IDLE_GRACE_EVENT_MS 2000

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
/*  A TIMER, read against the clock by s_timer. */
#define T (-2)

/*  s_table[state][event]. Rows follow kg_run_state_t, columns kg_run_event_t:
    SPAWNED SPAWNFAIL READY DOWN TIMER FINISHED CHILDEXIT STOP FAILED NEXT
    RESTART END */
static const int s_table[KG_RUN_ST_COUNT][KG_RUN_EV_COUNT] = {
  /* STARTING     */ {WAI, DON, N,   N,   N,   N,   N,   N,   N,   N,   N,   N},
  /* WAITING      */ {N,   N,   EXE, STO, T,   N,   STO, STO, STO, N,   N,   N},
  /* EXECUTING    */ {N,   N,   N,   N,   T,   JUD, JUD, JUD, JUD, N,   N,   STO},
  /* INTERRUPTING */ {N,   N,   N,   N,   T,   JUD, JUD, JUD, JUD, N,   N,   N},
  /* JUDGING      */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   EXE, RST, STO},
  /* RESTARTING   */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   EXE, N,   STO},
  /* STOPPING     */ {N,   N,   N,   N,   TRM, N,   DON, N,   N,   N,   N,   N},
  /* TERMINATING  */ {N,   N,   N,   N,   KIL, N,   DON, N,   N,   N,   N,   N},
  /* KILLING      */ {N,   N,   N,   N,   DON, N,   DON, N,   N,   N,   N,   N},
  /* DONE         */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N},
};

kg_run_late_t
kg_run_cell_late(const kg_run_clock_t *c, int64_t now)
{
  if (c->idle_limit > 0 && now >= c->idle_limit)
    return KG_RUN_LATE_IDLE;
  if (c->limit > 0 && now >= c->limit)
    return KG_RUN_LATE_LIMIT;
  return KG_RUN_LATE_NONE;
}

int64_t
kg_run_cell_due(const kg_run_clock_t *c)
{
  if (c->limit > 0 && (c->idle_limit <= 0 || c->limit < c->idle_limit))
    return c->limit;
  return c->idle_limit > 0 ? c->idle_limit : 0;
}

int64_t
kg_run_idle_grace_ms(bool kguard_event)
{
  return kguard_event ? S_IDLE_GRACE_EVENT_MS : S_IDLE_GRACE_MS;
}

/*  A deadline in a waiting state: the kernel not ready in time (or the next
    nudge), a cell's idle or limit passed (or nothing yet: a timer that was
    moved). */
static kg_run_state_t
s_timer(kg_run_state_t state, const kg_run_clock_t *c, int64_t now)
{
  switch (state) {
  case KG_RUN_ST_WAITING:
    return now >= c->start_limit ? KG_RUN_ST_STOPPING : KG_RUN_ST_WAITING;
  case KG_RUN_ST_EXECUTING:
    switch (kg_run_cell_late(c, now)) {
    case KG_RUN_LATE_IDLE: return KG_RUN_ST_JUDGING;
    case KG_RUN_LATE_LIMIT: return KG_RUN_ST_INTERRUPTING;
    default: return KG_RUN_ST_NONE;
    }
  case KG_RUN_ST_INTERRUPTING:
    return kg_run_cell_late(c, now) != KG_RUN_LATE_NONE ? KG_RUN_ST_JUDGING
                                                         : KG_RUN_ST_NONE;
  default:
    return KG_RUN_ST_NONE;
  }
}

kg_run_state_t
kg_run_next(kg_run_state_t state, kg_run_event_t event, const kg_run_clock_t *clock,
            int64_t now_ms)
{
  if (state < 0 || state >= KG_RUN_ST_COUNT || event < 0 || event >= KG_RUN_EV_COUNT)
    return KG_RUN_ST_NONE;
  int next = s_table[state][event];
  return next == T ? s_timer(state, clock, now_ms) : (kg_run_state_t) next;
}

kg_run_signal_t
kg_run_on_signal(kg_run_state_t state, int signo, int sigints)
{
  switch (state) {
  case KG_RUN_ST_EXECUTING:
  case KG_RUN_ST_INTERRUPTING:
    return signo == SIGINT && sigints == 0 ? KG_RUN_SIG_INTERRUPT : KG_RUN_SIG_STOP;
  case KG_RUN_ST_STOPPING:
  case KG_RUN_ST_TERMINATING:
  case KG_RUN_ST_KILLING:
  case KG_RUN_ST_DONE:
    return KG_RUN_SIG_IGNORE;
  default:
    return KG_RUN_SIG_STOP;
  }
}

static bool
s_is(const char *a, const char *b)
{
  return a && b && strcmp(a, b) == 0;
}

kg_run_outcome_t
kg_run_outcome(const kg_run_cell_t *c)
{
  if (c->failure != 0)
    return KG_RUN_OUT_FAILED;
  if (c->stop_signal)
    return KG_RUN_OUT_STOPPED;
  if (c->child_exited)
    return KG_RUN_OUT_KERNEL_GONE;
  if (s_is(c->event, "down"))
    return KG_RUN_OUT_DOWN;
  if (s_is(c->event, "sticky-restart") || s_is(c->event, "kernel-died"))
    return KG_RUN_OUT_RESTARTED;
  if (c->timed_out)
    return KG_RUN_OUT_TIMED_OUT;
  if (c->user_interrupt)
    return KG_RUN_OUT_INTERRUPTED;
  if (!s_is(c->status, "ok") && !c->raises_exception)
    return KG_RUN_OUT_ERROR;
  return KG_RUN_OUT_OK;
}

int
kg_run_outcome_exit(kg_run_outcome_t outcome, int stop_signal)
{
  switch (outcome) {
  case KG_RUN_OUT_FAILED: return KG_EXIT_SYSTEM;
  case KG_RUN_OUT_STOPPED: return 128 + stop_signal;
  case KG_RUN_OUT_KERNEL_GONE: return KG_EXIT_SYSTEM;
  case KG_RUN_OUT_DOWN: return KG_RUN_EXIT_GAVE_UP;
  case KG_RUN_OUT_TIMED_OUT: return KG_RUN_EXIT_TIMEOUT;
  case KG_RUN_OUT_INTERRUPTED: return KG_RUN_EXIT_INTERRUPTED;
  case KG_RUN_OUT_ERROR: return KG_RUN_EXIT_CELL_ERROR;
  default: return -1;
  }
}

const char *const kg_run_state_names[KG_RUN_ST_COUNT] = {
#define X(name, what) #name,
  KG_RUN_STATE_LIST(X)
#undef X
};

const char *const kg_run_event_names[KG_RUN_EV_COUNT] = {
#define X(name, what) #name,
  KG_RUN_EVENT_LIST(X)
#undef X
};
