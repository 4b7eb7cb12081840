/*  kg_exec_event: the event sink and the outcome of `kguard exec`
    (contracts in kg_exec_priv.h): what the files below the decisions see
    (output, deaths, the coordinator's words) is queued here as an event,
    applied later by the decisions (kg_exec.c) from the queue; a
    transition names its state and records the run's outcome here. It
    calls no other file of exec but the pure rules and tables
    (kg_exec_rule.c, kg_exec_states.c), so every file may call it. */
#include "kg_exec_priv.h"

#include <assert.h>

#include "kg_exit.h"
#include "kg_log.h"

int64_t
kg_ex_now(const kg_exec_s *E)
{
  assert(E && E->loop);
  return kg_loop_now(E->loop);
}

kg_ex_state_t
kg_ex_state(const kg_exec_s *E)
{
  assert(E);
  return (kg_ex_state_t) (E->to != KG_FSM_NONE ? E->to : kg_fsm_state(E->fsm));
}

kg_ex_after_t
kg_ex_after(const kg_exec_s *E)
{
  assert(E);
  return (kg_ex_after_t) kg_fsm_state(E->after);
}

void
kg_ex_plan(kg_exec_s *E, kg_ex_after_event_t event)
{
  assert(E);
  (void) kg_fsm_post(E->after, (int) event, 0, kg_ex_now(E));
}

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
  assert(E && E->stepping);
  E->to = (int) state;
}

void
kg_ex_done(kg_exec_s *E, kg_exec_outcome_t outcome, int status)
{
  E->outcome = outcome;
  E->outcome_status = status;
  E->exit_code = kg_exec_exit_code(outcome, status);
  kg_ex_enter(E, E->coord && !kg_child_exited(E->coord) ? KG_EX_ENDING : KG_EX_DONE);
}

/*  End with outcome: at once, or once the tree is gone when it still
    stops. */
void
kg_ex_finish(kg_exec_s *E, kg_exec_outcome_t outcome)
{
  if (kg_ex_state(E) == KG_EX_STOPPING) {
    E->outcome = outcome;
    kg_ex_plan(E, KG_EX_AFTER_EV_END);
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
