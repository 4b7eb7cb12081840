/*  kg_exec_states: the names of `kguard exec`'s states and events, and the
    tables of its two sub-machines (see kg_exec_states.h). Pure. */
#include "kg_exec_states.h"

#include <stddef.h>

#define N KG_FSM_NONE

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

const char *const kg_ex_join_names[KG_EX_J_COUNT] = {
#define KG_EX_J_NAME(n) #n,
  KG_EX_JOIN_STATES(KG_EX_J_NAME)
#undef KG_EX_J_NAME
};

const char *const kg_ex_after_names[KG_EX_AFTER_COUNT] = {
#define KG_EX_AFTER_NAME(n) #n,
  KG_EX_AFTER_STATES(KG_EX_AFTER_NAME)
#undef KG_EX_AFTER_NAME
};

const char *const kg_ex_after_event_names[KG_EX_AFTER_EV_COUNT] = {
#define KG_EX_AFTER_EV_NAME(n) #n,
  KG_EX_AFTER_EVENTS(KG_EX_AFTER_EV_NAME)
#undef KG_EX_AFTER_EV_NAME
};

/*  The join, one step at a time: each sub-state waits for one event (a
    helper's end, or a word of the coordinator); every other event leaves
    it as it is (the run's JOINING state judges the ones that end the join:
    a refusal, an end decision, the join timeout). */
int
kg_ex_join_next(int state, int event)
{
  if (state < 0 || state >= KG_EX_J_COUNT || event < 0 || event >= KG_EXE_COUNT)
    return N;
  static const struct {
    int event, to;
  } waits[KG_EX_J_COUNT] = {
    [KG_EX_J_HELLO] = {KG_EXE_WELCOME, KG_EX_J_SEAL},
    [KG_EX_J_SEAL] = {KG_EXE_HELPER_DONE, KG_EX_J_JOINED},
    [KG_EX_J_JOINED] = {KG_EXE_CHECK, KG_EX_J_VERIFY},
    [KG_EX_J_VERIFY] = {KG_EXE_HELPER_DONE, KG_EX_J_CHECKED},
    [KG_EX_J_CHECKED] = {KG_EXE_START, KG_EX_J_LISTING},
    [KG_EX_J_LISTING] = {N, N},
  };
  return waits[state].event == event ? waits[state].to : N;
}

/*  [state][event]: STOP_EXIT, STOP_RESTART, STOP_REPORT, END. */
static const int s_after[KG_EX_AFTER_COUNT][KG_EX_AFTER_EV_COUNT] = {
  [KG_EX_AFTER_EXIT] = {KG_EX_AFTER_EXIT, KG_EX_AFTER_RESTART, KG_EX_AFTER_REPORT, N},
  [KG_EX_AFTER_RESTART] = {KG_EX_AFTER_EXIT, KG_EX_AFTER_RESTART, KG_EX_AFTER_REPORT,
                           KG_EX_AFTER_EXIT},
  [KG_EX_AFTER_REPORT] = {KG_EX_AFTER_EXIT, KG_EX_AFTER_RESTART, KG_EX_AFTER_REPORT,
                          KG_EX_AFTER_EXIT},
};

int
kg_ex_after_next(int state, int event)
{
  if (state < 0 || state >= KG_EX_AFTER_COUNT || event < 0 || event >= KG_EX_AFTER_EV_COUNT)
    return N;
  return s_after[state][event];
}

static int
s_after_next(void *arg, int state, const kg_fsm_event_t *ev)
{
  (void) arg;
  return kg_ex_after_next(state, ev->id);
}

static const kg_fsm_row_t s_after_rows[KG_EX_AFTER_COUNT] = {
  [KG_EX_AFTER_EXIT] = {NULL, 0, KG_FSM_NONE},
  [KG_EX_AFTER_RESTART] = {NULL, 0, KG_FSM_NONE},
  [KG_EX_AFTER_REPORT] = {NULL, 0, KG_FSM_NONE},
};

static const kg_fsm_def_t s_after_def = {
  .nstates = KG_EX_AFTER_COUNT,
  .nevents = KG_EX_AFTER_EV_COUNT,
  .state_names = kg_ex_after_names,
  .event_names = kg_ex_after_event_names,
  .rows = s_after_rows,
  .next = s_after_next,
};

const kg_fsm_def_t *
kg_ex_after_states(void)
{
  return &s_after_def;
}
