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
    are checked by tests/unit/exec/test_exec_states.c. */
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
    WAITING    multi-node: the tree stopped, waiting for the decision */
#define KG_EX_STATES(X)                                                                    \
  X(RUNNING) X(SUSPECT) X(STOPPING) X(RESTORING) X(BACKOFF) X(DONE) X(JOINING) X(WAITING)

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
    COORD_FAILED  node 0: the coordinator could not start (usage)
    CHECK         multi-node: verify every node's key probe
    START         multi-node: every node joined (arg: master port)
    REFUSED       multi-node: the coordinator refuses this node's
                  handshake (another job secret) */
#define KG_EX_EVENTS(X)                                                                    \
  X(STICKY) X(STEP) X(PROC_EXIT) X(LEADER_EXIT) X(DEADLINE) X(GROUP_GONE) X(SIGNAL)       \
  X(HELPER_DONE) X(PEER_FAULT) X(WELCOME) X(DECISION) X(LINK_LOST) X(COORD_FAILED)       \
  X(CHECK) X(START) X(REFUSED)

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

/*  "RUNNING", "STICKY"... by value (static storage). */
extern const char *const kg_ex_state_names[KG_EX_STATE_COUNT];
extern const char *const kg_ex_event_names[KG_EXE_COUNT];

/*  The machine's definition (static storage); its functions take the
    run (kg_exec_s). */
const kg_fsm_def_t *kg_ex_states(void);

#endif
