/*  kg_state: the inner kernel's life cycle as an explicit state machine
    (s6-supervise style: an enum of states, an enum of events, one table).

    The table is pure: kg_state_next says where an event leads; the
    supervisor runs the entry action of the new state (spawn, kill, restore,
    deliver held requests...). An event a state does not expect leaves it
    unchanged (KG_ST_NONE).

      STARTING  spawned; nudging kernel_info until a reply AND an iopub message
      READY     relaying; the gate is open
      CLOSING   gate closed after a sticky sign; collecting the failing cell's
                evidence until its reply arrives or a deadline
      STOPPING  SIGTERM to the group, grace (restart path)
      KILLING   the grace ran out: SIGKILL to the group, reap
      RESTORING checkpoint child (kguard ckpt resume-prepare) running
      BACKOFF   waiting the restart delay the policy asked for
      DOWN      no kernel (spawn failed or policy gave up); requests get errors
      EXITING   shutdown_request forwarded: the kernel's reply awaited
      EXIT_WAIT the kernel exits on its own (shutdown_reply answered)
      EXIT_TERM SIGTERM to the group, short grace
      EXIT_KILL SIGKILL to the group, short grace
      EXITED    done: the loop ends, sockets close, kguard exits

    The exit phases are states like the others (no phase variable beside
    the table): a deadline posts TIMER, the child's end CHILD_EXIT.
*/
#ifndef KG_STATE_H
#define KG_STATE_H

typedef enum {
  KG_ST_NONE = -1,
  KG_ST_STARTING = 0,
  KG_ST_READY,
  KG_ST_CLOSING,
  KG_ST_STOPPING,
  KG_ST_KILLING,
  KG_ST_RESTORING,
  KG_ST_BACKOFF,
  KG_ST_DOWN,
  KG_ST_EXITING,
  KG_ST_EXIT_WAIT,
  KG_ST_EXIT_TERM,
  KG_ST_EXIT_KILL,
  KG_ST_EXITED,
  KG_ST_COUNT
} kg_state_t;

typedef enum {
  KG_EV_KERNEL_READY = 0,       /*  nudge answered and iopub seen            */
  KG_EV_SPAWN_FAILED,           /*  exec failed (error pipe)                 */
  KG_EV_START_TIMEOUT,          /*  not ready in time                        */
  KG_EV_STICKY,                 /*  a sticky GPU error was detected          */
  KG_EV_EVIDENCE_DONE,          /*  failing reply arrived, or its deadline   */
  KG_EV_CHILD_EXIT,             /*  the kernel process ended                 */
  KG_EV_STOPPED_RESTART,        /*  group gone; policy: restart, no restore  */
  KG_EV_STOPPED_RESTORE,        /*  group gone; policy: restart with restore */
  KG_EV_STOPPED_GIVE_UP,        /*  group gone; policy: give up              */
  KG_EV_RESTORED,               /*  checkpoint child finished (either way)   */
  KG_EV_TIMER,                  /*  the state's deadline passed (backoff,
                                    TERM grace, exit phases)                 */
  KG_EV_USER_RESTART,           /*  %kguard restart or kguard restart        */
  KG_EV_SHUTDOWN,               /*  SIGTERM, SIGHUP, launcher gone, or a
                                    shutdown_request kguard answered itself:
                                    terminate the kernel now                 */
  KG_EV_SHUTDOWN_REQUEST,       /*  shutdown_request forwarded to the kernel */
  KG_EV_SHUTDOWN_REPLIED,       /*  the kernel's shutdown_reply came         */
  KG_EV_HUNG,                   /*  the kernel stopped answering its heartbeat
                                    while a cell ran (kg_sup_hang.c)          */
  KG_EV_PREFLIGHT_FAILED,       /*  the pre-flight probe beside the start
                                    found the device failing or hung          */
  KG_EV_COUNT
} kg_event_t;

/*  The state event leads to from state, or KG_ST_NONE if state ignores it. */
kg_state_t kg_state_next(kg_state_t state, kg_event_t event);

/*  "STARTING", "READY"... and "KERNEL_READY"... Static storage. */
const char *kg_state_name(kg_state_t state);
const char *kg_event_name(kg_event_t event);

/*  True in the states where the gate is open (requests reach the kernel). */
int kg_state_gate_open(kg_state_t state);

/*  True in the shutdown states (EXITING .. EXITED): nothing is relayed,
    and kguard is on its way out. */
int kg_state_exiting(kg_state_t state);

#endif
