/*  kg_coord_states: the coordinator's table (see kg_coord_states.h). */
#include "kg_coord_states.h"

#define N KG_COORD_NONE

/*  [state][event]: CHECKED, CHOSEN, STOP, RESUMED, END, DEADLINE. A stop
    while nodes still join or list their checkpoints is dropped: no node
    runs anything to stop yet (a node ignores a stop until it starts its
    ranks). */
static const kg_coord_state_t s_table[KG_COORD_STATE_COUNT][KG_COORD_EV_COUNT] = {
  [KG_COORD_JOINING]  = {KG_COORD_CHOOSING, N, N, N, KG_COORD_OVER, KG_COORD_OVER},
  [KG_COORD_CHOOSING] = {N, KG_COORD_RUNNING, N, N, KG_COORD_OVER, N},
  [KG_COORD_RUNNING]  = {N, N, KG_COORD_STOPPING, N, KG_COORD_OVER, N},
  [KG_COORD_STOPPING] = {N, N, N, KG_COORD_RUNNING, KG_COORD_OVER, N},
  [KG_COORD_OVER]     = {N, N, N, N, N, N},
};

kg_coord_state_t
kg_coord_next(kg_coord_state_t state, kg_coord_event_t event)
{
  if (state < 0 || state >= KG_COORD_STATE_COUNT || event < 0 || event >= KG_COORD_EV_COUNT)
    return KG_COORD_NONE;
  return s_table[state][event];
}

const char *const kg_coord_state_names[KG_COORD_STATE_COUNT] = {
#define X(name, what) #name,
  KG_COORD_STATE_LIST(X)
#undef X
};

const char *const kg_coord_event_names[KG_COORD_EV_COUNT] = {
#define X(name, what) #name,
  KG_COORD_EVENT_LIST(X)
#undef X
};
