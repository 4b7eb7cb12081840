/*  kg_exec_states: the states and events of one `kguard exec` run, named
    once (X-macros), and its machine's definition on the house's state
    engine (kg_fsm, as the kernel supervisor's): one row per state (entry
    action, deadline, event on deadline), events queued so no transition
    runs inside another.

    Unlike the kernel's, where an event leads depends on more than the
    state (the proof rule, the policy, the coordinator's decision, whether
    the tree is gone), and getting there has work of its own (killing the
    tree, reporting, starting the restore while the tree goes): the next
    function is the decision code of kg_exec.c, which names the state it
    leads to (kg_ex_enter); entering a state arms its deadline. The rows
    are checked by tests/unit/exec/test_exec_states.c.

    Two of its states have sub-states of their own, each a machine on
    kg_fsm with a pure table (kg_exec_states.c, every state x event checked
    by the same test): JOINING's join (KG_EX_J_*: hello, key probe sealed,
    joined, probes verified, checked, listing) and what follows STOPPING
    once the tree is gone (KG_EX_AFTER_*: exit, restart, report). The run
    keeps no other copy of any of them. */
#ifndef KG_EXEC_STATES_H
#define KG_EXEC_STATES_H

#include "kg_fsm.h"

/*  RUNNING    the command runs, no suspicion
    SUSPECT    a sticky text seen; waiting for proof or progress (the stall
               deadline)
    STOPPING   the tree was signalled; KILL at the grace's deadline
    RESTORING  `kguard ckpt resume-prepare` (or a node's restore) runs
    BACKOFF    the policy's delay before the next start
    DONE       exit with the recorded code
    JOINING    multi-node: joining the coordinator (the join timeout)
    WAITING    multi-node: the tree stopped, waiting for the decision
    ENDING     node 0: the exit code is known; its coordinator gets
               KG_EX_ENDING_MS to deliver its last decision and end (a
               signal ends the wait at once), then DONE */
#define KG_EX_STATES(X)                                                                    \
  X(RUNNING) X(SUSPECT) X(STOPPING) X(RESTORING) X(BACKOFF) X(DONE) X(JOINING) X(WAITING)  \
  X(ENDING)

/*  STICKY        the diagnosis established a sticky family
    STEP          a newer completed step (arg: step)
    PROC_EXIT     a process of the tree ended (arg: wait status)
    LEADER_EXIT   the command ended (arg: wait status)
    DEADLINE      the state's deadline passed
    GROUP_GONE    nothing of the group is left
    SIGNAL        SIGTERM/SIGINT/SIGHUP/SIGUSR1 to kguard (arg: signo)
    HELPER_DONE   the checkpoint helper ended
    PEER_FAULT    multi-node: the coordinator says stop (arg: the node)
    WELCOME       multi-node: welcome (arg 1: shared storage seen)
    DECISION      multi-node: the coordinator's decision
    LINK_LOST     multi-node: no word from the coordinator in time
    COORD_ENDED   node 0: the coordinator process ended (arg: wait status;
                  the usage code: it could not start)
    CHECK         multi-node: verify every node's key probe
    START         multi-node: every node joined (arg: master port)
    REFUSED       multi-node: the coordinator refuses this node's
                  handshake (another job secret)
    BEGIN         one node, no --fresh: the run begins (RESTORING) by
                  choosing its last consistent checkpoint */
#define KG_EX_EVENTS(X)                                                                    \
  X(STICKY) X(STEP) X(PROC_EXIT) X(LEADER_EXIT) X(DEADLINE) X(GROUP_GONE) X(SIGNAL)       \
  X(HELPER_DONE) X(PEER_FAULT) X(WELCOME) X(DECISION) X(LINK_LOST) X(COORD_ENDED)        \
  X(CHECK) X(START) X(REFUSED) X(BEGIN)

typedef enum {
#define KG_EX_STATE_ENUM(n) KG_EX_##n,
  KG_EX_STATES(KG_EX_STATE_ENUM)
#undef KG_EX_STATE_ENUM
  KG_EX_STATE_COUNT
} kg_ex_state_t;

typedef enum {
#define KG_EX_EVENT_ENUM(n) KG_EXE_##n,
  KG_EX_EVENTS(KG_EX_EVENT_ENUM)
#undef KG_EX_EVENT_ENUM
  KG_EXE_COUNT
} kg_ex_event_kind_t;

/*  How long WAITING waits for the coordinator's decision. */
#define KG_EX_DECISION_WAIT_MS 600000
/*  How long ENDING waits for node 0's coordinator to end. */
#define KG_EX_ENDING_MS 5000

/*  JOINING's sub-states (events: the run's, KG_EXE_*):
    HELLO    hello sent, waiting for the welcome
    SEAL     welcomed: sealing this node's key probe
    JOINED   sealed and said so: waiting for every node to join (CHECK)
    VERIFY   verifying every node's key probe
    CHECKED  said what it verified: waiting for the start
    LISTING  the start came: this node lists its ranks' checkpoints of the
             run and sends them (the run leaves JOINING for WAITING, where
             the coordinator's start decision starts the command)
    A sub-state whose work cannot begin refuses the node: the run ends. */
#define KG_EX_JOIN_STATES(X) X(HELLO) X(SEAL) X(JOINED) X(VERIFY) X(CHECKED) X(LISTING)

typedef enum {
#define KG_EX_J_ENUM(n) KG_EX_J_##n,
  KG_EX_JOIN_STATES(KG_EX_J_ENUM)
#undef KG_EX_J_ENUM
  KG_EX_J_COUNT
} kg_ex_join_t;

/*  What follows STOPPING once the tree is gone:
    EXIT     the run ends with the outcome recorded
    RESTART  the checkpoint is restored, then the command starts again
    REPORT   multi-node: this node's checkpoints listed, the coordinator told
    Events: a stop begins with a plan (STOP_EXIT, STOP_RESTART,
    STOP_REPORT); END (a signal, the coordinator lost or ending the job, a
    restore that cannot start) turns any plan into EXIT. */
#define KG_EX_AFTER_STATES(X) X(EXIT) X(RESTART) X(REPORT)
#define KG_EX_AFTER_EVENTS(X) X(STOP_EXIT) X(STOP_RESTART) X(STOP_REPORT) X(END)

typedef enum {
#define KG_EX_AFTER_ENUM(n) KG_EX_AFTER_##n,
  KG_EX_AFTER_STATES(KG_EX_AFTER_ENUM)
#undef KG_EX_AFTER_ENUM
  KG_EX_AFTER_COUNT
} kg_ex_after_t;

typedef enum {
#define KG_EX_AFTER_EV_ENUM(n) KG_EX_AFTER_EV_##n,
  KG_EX_AFTER_EVENTS(KG_EX_AFTER_EV_ENUM)
#undef KG_EX_AFTER_EV_ENUM
  KG_EX_AFTER_EV_COUNT
} kg_ex_after_event_t;

/*  "RUNNING", "STICKY"... by value (static storage). */
extern const char *const kg_ex_state_names[KG_EX_STATE_COUNT];
extern const char *const kg_ex_event_names[KG_EXE_COUNT];
extern const char *const kg_ex_join_names[KG_EX_J_COUNT];
extern const char *const kg_ex_after_names[KG_EX_AFTER_COUNT];
extern const char *const kg_ex_after_event_names[KG_EX_AFTER_EV_COUNT];

/*  Where a run event leads from a join sub-state; KG_FSM_NONE: ignored
    (also out of range). Pure (kg_exec_states.c). */
int kg_ex_join_next(int state, int event);

/*  Where an after-stop event leads; KG_FSM_NONE: ignored. Pure. */
int kg_ex_after_next(int state, int event);

/*  The after-stop machine's definition (static storage; no entry actions,
    no deadlines: a plan, read when the tree is gone). */
const kg_fsm_def_t *kg_ex_after_states(void);

/*  The machine's definition (static storage); its functions take the
    run (kg_exec_s). */
const kg_fsm_def_t *kg_ex_states(void);

#endif
