/*  kg_state: the transition table (see kg_state.h). */
#include "kg_state.h"

#define N KG_ST_NONE
#define STA KG_ST_STARTING
#define RDY KG_ST_READY
#define CLO KG_ST_CLOSING
#define STO KG_ST_STOPPING
#define RES KG_ST_RESTORING
#define BAK KG_ST_BACKOFF
#define DWN KG_ST_DOWN
#define EXI KG_ST_EXITING
#define KIL KG_ST_KILLING
#define EWT KG_ST_EXIT_WAIT
#define ETM KG_ST_EXIT_TERM
#define EKL KG_ST_EXIT_KILL
#define EXD KG_ST_EXITED

/*  s_table[state][event]. Rows follow kg_state_t, columns kg_event_t:
    READY SPAWNFAIL STARTTO STICKY EVDONE CHILDEXIT RESTART RESTORE GIVEUP
    RESTORED TIMER USERRESTART SHUTDOWN SHUTREQUEST SHUTREPLIED HUNG PREFLIGHTFAILED */
static const kg_state_t s_table[KG_ST_COUNT][KG_EV_COUNT] = {
  /* STARTING  */ {RDY, DWN, STO, STO, N,   STO, N,   N,   N,   N,   N,   STO, ETM, EXI, N,   N,   STO},
  /* READY     */ {N,   N,   N,   CLO, N,   STO, N,   N,   N,   N,   N,   STO, ETM, EXI, N,   STO, N},
  /* CLOSING   */ {N,   N,   N,   N,   STO, STO, N,   N,   N,   N,   N,   N,   ETM, EXI, N,   N,   N},
  /* STOPPING  */ {N,   N,   N,   N,   N,   N,   BAK, RES, DWN, N,   KIL, N,   ETM, EXI, N,   N,   N},
  /* KILLING   */ {N,   N,   N,   N,   N,   N,   BAK, RES, DWN, N,   KIL, N,   ETM, EXI, N,   N,   N},
  /* RESTORING */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   BAK, N,   N,   ETM, EXI, N,   N,   N},
  /* BACKOFF   */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   STA, STA, ETM, EXI, N,   N,   N},
  /* DOWN      */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   STA, ETM, EXI, N,   N,   N},
  /* EXITING   */ {N,   N,   N,   N,   N,   EXD, N,   N,   N,   N,   EWT, N,   ETM, N,   EWT, N,   N},
  /* EXIT_WAIT */ {N,   N,   N,   N,   N,   EXD, N,   N,   N,   N,   ETM, N,   ETM, N,   N,   N,   N},
  /* EXIT_TERM */ {N,   N,   N,   N,   N,   EXD, N,   N,   N,   N,   EKL, N,   N,   N,   N,   N,   N},
  /* EXIT_KILL */ {N,   N,   N,   N,   N,   EXD, N,   N,   N,   N,   EXD, N,   N,   N,   N,   N,   N},
  /* EXITED    */ {N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N,   N},
};

kg_state_t
kg_state_next(kg_state_t state, kg_event_t event)
{
  if (state < 0 || state >= KG_ST_COUNT || event < 0 || event >= KG_EV_COUNT)
    return KG_ST_NONE;
  return s_table[state][event];
}

const char *const kg_state_names[KG_ST_COUNT] = {
#define X(name, what) #name,
  KG_STATE_LIST(X)
#undef X
};

const char *const kg_event_names[KG_EV_COUNT] = {
#define X(name, what) #name,
  KG_EVENT_LIST(X)
#undef X
};

const char *
kg_state_name(kg_state_t state)
{
  return state >= 0 && state < KG_ST_COUNT ? kg_state_names[state] : "NONE";
}

const char *
kg_event_name(kg_event_t event)
{
  return event >= 0 && event < KG_EV_COUNT ? kg_event_names[event] : "?";
}

int
kg_state_gate_open(kg_state_t state)
{
  return state == KG_ST_READY;
}

int
kg_state_exiting(kg_state_t state)
{
  return state >= KG_ST_EXITING && state <= KG_ST_EXITED;
}
