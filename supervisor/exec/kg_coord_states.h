/*  kg_coord_states: the coordinator's life as data: its states and events
    (X-macro lists, so names never drift from the enums) and the table of
    where each event leads. The coordinator (kg_coord.c) runs it on the
    state engine (common/kg_fsm.h), with one row per state (entry action,
    deadline, event on deadline); an event a state does not expect leaves
    it unchanged (KG_COORD_NONE).

    Pure: tests/unit/exec/test_coord_states.c checks every state x event
    and that every deadline leads somewhere.
*/
#ifndef KG_COORD_STATES_H
#define KG_COORD_STATES_H

#include "kg_fsm.h"

/*  X(name, what it means) */
#define KG_COORD_STATE_LIST(X)                                                             \
  X(JOINING,  "nodes say hello, seal and verify key probes; the join deadline runs")     \
  X(CHOOSING, "every node was told to start: each lists its ranks' checkpoints of the "   \
              "run; once every listing is in, the step the job starts from is sent")     \
  X(RUNNING,  "every node started this generation; a silent node is lost")               \
  X(STOPPING, "a stop was broadcast; waiting for every node's report to decide")         \
  X(OVER,     "the job's exit code is known: every node was told, the loop ends")

#define KG_COORD_EVENT_LIST(X)                                                             \
  X(CHECKED,  "every node verified every node's key probe: the job starts")              \
  X(CHOSEN,   "every node's listing is in and the start decision was sent")              \
  X(STOP,     "a node reported a fault, a failure, a pre-emption or a stop (arg: node)") \
  X(RESUMED,  "every node stopped and the decision restarts the job")                    \
  X(END,      "the job's exit code is known (an end decision, every node done, a node "   \
              "lost, a signal)")                                                          \
  X(DEADLINE, "the state's deadline passed (the join deadline)")

typedef enum {
  KG_COORD_NONE = -1,
#define X(name, what) KG_COORD_##name,
  KG_COORD_STATE_LIST(X)
#undef X
  KG_COORD_STATE_COUNT
} kg_coord_state_t;

typedef enum {
#define X(name, what) KG_COORD_EV_##name,
  KG_COORD_EVENT_LIST(X)
#undef X
  KG_COORD_EV_COUNT
} kg_coord_event_t;

/*  "JOINING", "STOP"... by value (static storage). */
extern const char *const kg_coord_state_names[KG_COORD_STATE_COUNT];
extern const char *const kg_coord_event_names[KG_COORD_EV_COUNT];

/*  Where event leads from state; KG_COORD_NONE: the state ignores it (also
    for values out of range). */
kg_coord_state_t kg_coord_next(kg_coord_state_t state, kg_coord_event_t event);

/*  The coordinator's machine (static storage; its rows are in kg_coord.c,
    its functions take the coordinator). */
const kg_fsm_def_t *kg_coord_states(void);

#endif
