/*  kg_state: the inner kernel's life cycle, as data: its states and events
    (X-macro lists, so names never drift from the enums) and the table of
    where each event leads (s6-supervise's actions[state][event]). The
    kernel supervisor runs it on the state engine (common/kg_fsm.h), with
    one row per state (entry action, deadline, event on deadline) in
    supervisor/kernel/kg_sup_states.c. An event a state does not expect
    leaves it unchanged (KG_ST_NONE). The exit phases are states like the
    others: a deadline posts TIMER, the child's end CHILD_EXIT.

    Pure: tests/unit/kernel/decide/test_state.c checks every state x event.
*/
#ifndef KG_STATE_H
#define KG_STATE_H

/*  X(name, what it means) */
#define KG_STATE_LIST(X)                                                                 \
  X(STARTING,  "spawned; kernel_info nudged until a reply AND an iopub message came")   \
  X(READY,     "relaying; the gate is open")                                             \
  X(CLOSING,   "gate closed after a sticky sign; the failing cell's evidence collected") \
  X(STOPPING,  "SIGTERM to the group, a grace (restart path)")                           \
  X(KILLING,   "the grace ran out: SIGKILL to the group, reap")                          \
  X(RESTORING, "checkpoint child (kguard ckpt resume-prepare) running")                  \
  X(BACKOFF,   "waiting the restart delay the policy asked for")                         \
  X(DOWN,      "no kernel (spawn failed or policy gave up); requests get errors")        \
  X(EXITING,   "shutdown_request forwarded: the kernel's reply awaited")                 \
  X(EXIT_WAIT, "the kernel exits on its own (shutdown_reply answered)")                  \
  X(EXIT_TERM, "SIGTERM to the group, a short grace")                                    \
  X(EXIT_KILL, "SIGKILL to the group, a short grace")                                    \
  X(EXITED,    "done: the loop ends, sockets close, kguard exits")

#define KG_EVENT_LIST(X)                                                                 \
  X(KERNEL_READY,     "nudge answered and iopub seen")                                   \
  X(SPAWN_FAILED,     "exec failed (error pipe)")                                        \
  X(START_TIMEOUT,    "not ready in time")                                               \
  X(STICKY,           "a sticky GPU error was detected")                                 \
  X(EVIDENCE_DONE,    "the failing reply arrived, or its deadline passed")              \
  X(CHILD_EXIT,       "the kernel process ended")                                        \
  X(STOPPED_RESTART,  "group gone; policy: restart, no restore")                         \
  X(STOPPED_RESTORE,  "group gone; policy: restart with restore")                        \
  X(STOPPED_GIVE_UP,  "group gone; policy: give up")                                     \
  X(RESTORED,         "the checkpoint child finished (either way)")                      \
  X(TIMER,            "the state's deadline passed (backoff, grace, exit phases)")       \
  X(USER_RESTART,     "%kguard restart or kguard restart")                               \
  X(SHUTDOWN,         "SIGTERM, SIGHUP, launcher gone, or a shutdown_request kguard "     \
                      "answered itself: terminate the kernel now")                       \
  X(SHUTDOWN_REQUEST, "shutdown_request forwarded to the kernel")                        \
  X(SHUTDOWN_REPLIED, "the kernel's shutdown_reply came")                                \
  X(HUNG,             "the kernel stopped answering its heartbeat while a cell ran")     \
  X(PREFLIGHT_FAILED, "the pre-flight probe beside the start found the device failing")

typedef enum {
  KG_ST_NONE = -1,
#define X(name, what) KG_ST_##name,
  KG_STATE_LIST(X)
#undef X
  KG_ST_COUNT
} kg_state_t;

typedef enum {
#define X(name, what) KG_EV_##name,
  KG_EVENT_LIST(X)
#undef X
  KG_EV_COUNT
} kg_event_t;

/*  The state event leads to from state, or KG_ST_NONE if state ignores it
    (or either is out of range). */
kg_state_t kg_state_next(kg_state_t state, kg_event_t event);

/*  The names, indexed by state and by event ("STARTING", "KERNEL_READY"). */
extern const char *const kg_state_names[KG_ST_COUNT];
extern const char *const kg_event_names[KG_EV_COUNT];

/*  A name, "NONE" for KG_ST_NONE or out of range ("?" for an event). */
const char *kg_state_name(kg_state_t state);
const char *kg_event_name(kg_event_t event);

/*  True in the states where the gate is open (requests reach the kernel). */
int kg_state_gate_open(kg_state_t state);

/*  True in the shutdown states (EXITING .. EXITED): nothing is relayed,
    and kguard is on its way out. */
int kg_state_exiting(kg_state_t state);

#endif
