/*  kg_exec_event: the event sink and the outcome of `kguard exec`
    (contracts in kg_exec_priv.h): what the files below the decisions see
    (output, deaths, the coordinator's words) is queued here as an event,
    applied later by the decisions (kg_exec.c) from the queue; a
    transition names its state and records the run's outcome here. It
    calls no other file of exec but the pure rules (kg_exec_rule.c), so
    every file may call it. */
#include "kg_exec_priv.h"

#include <assert.h>

#include "kg_exit.h"
#include "kg_log.h"

const char *const kg_ex_state_names[KG_EX_STATE_COUNT] = {
#define KG_EX_STATE_NAME(n) #n,
  KG_EX_STATES(KG_EX_STATE_NAME)
#undef KG_EX_STATE_NAME
};

const char *const kg_ex_event_names[KG_EXE_COUNT] = {
#define KG_EX_EVENT_NAME(n) #n,
  KG_EX_EVENTS(KG_EX_EVENT_NAME)
#undef KG_EX_EVENT_NAME
};

void
kg_ex_fire(kg_exec_s *E, kg_ex_event_kind_t kind, int64_t arg)
{
  assert(E);
  if (kg_fsm_queue(E->fsm, (int) kind, arg) != 0)
    kg_error("exec: event queue full, %s dropped", kg_ex_event_names[kind]);
}

void
kg_ex_enter(kg_exec_s *E, kg_ex_state_t state)
{
  assert(E);
  E->state = state;
  E->entered = true;
}

void
kg_ex_done(kg_exec_s *E, kg_exec_outcome_t outcome, int status)
{
  E->outcome = outcome;
  E->outcome_status = status;
  E->exit_code = kg_exec_exit_code(outcome, status);
  kg_ex_enter(E, KG_EX_DONE);
}

/*  End with outcome: at once, or once the tree is gone when it still
    stops. */
void
kg_ex_finish(kg_exec_s *E, kg_exec_outcome_t outcome)
{
  if (E->state == KG_EX_STOPPING) {
    E->outcome = outcome;
    E->then = KG_EX_THEN_EXIT;
  } else {
    kg_ex_done(E, outcome, 0);
  }
}

/*  The outcome a job-ending decision's code stands for. */
void
kg_ex_done_code(kg_exec_s *E, int c)
{
  if (c == KG_EXEC_EXIT_GAVE_UP)
    kg_ex_done(E, KG_EXEC_OUT_GAVE_UP, 0);
  else if (c == KG_EXEC_EXIT_RETRYABLE)
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
  else if (c == 0)
    kg_ex_done(E, KG_EXEC_OUT_SUCCESS, 0);
  else if (c == KG_EXIT_USAGE)
    kg_ex_done(E, KG_EXEC_OUT_USAGE, 0);
  else
    kg_ex_done(E, KG_EXEC_OUT_COMMAND_FAILED, (c & 0xff) << 8);
}
