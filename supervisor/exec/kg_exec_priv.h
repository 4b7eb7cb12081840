/*  kg_exec_priv: the state of one `kguard exec` run, shared by its files
    (kg_exec_cli.c the setup and teardown, kg_exec_loop.c the loop,
    kg_exec.c the decisions on the state engine, kg_exec_restart.c the
    restore, kg_exec_join.c and kg_exec_node.c the coordinator's link,
    kg_exec_ranks.c and kg_exec_standby.c the process tree, kg_exec_env.c
    the command's environment and the incident, kg_exec_output.c the
    output, kg_exec_event.c the event sink; kg_exec_states.c the names and
    the sub-machines' tables). Not a public interface. */
#ifndef KG_EXEC_PRIV_H
#define KG_EXEC_PRIV_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#include "kg_child.h"
#include "kg_classifier.h"
#include "kg_diagnosis.h"
#include "kg_exec.h"
#include "kg_exec_devmem.h"
#include "kg_gpuwatch.h"
#include "kg_exec_log.h"
#include "kg_exec_store.h"
#include "kg_fdq.h"
#include "kg_exec_rule.h"
#include "kg_exec_states.h"
#include "kg_exec_stepsock.h"
#include "kg_snapdir.h"
#include "kg_fsm.h"
#include "kg_incident.h"
#include "kg_linebuf.h"
#include "kg_loop.h"
#include "kg_sigsrc.h"
#include "kg_policy.h"

/*  An event as the decision code sees it. */
typedef struct {
  kg_ex_event_kind_t kind;
  int64_t arg;
} kg_ex_event_t;

#define KG_EX_QUEUE 64
#define KG_EXEC_DEVMEM_WAIT_MS 10000   /* device memory released, at most */

/*  One local rank (agent mode: RANK = node * nproc + index), or the one
    command (plain and wrapper modes), each its own process group. */
/*  The most of one line a rank's stream holds back before passing it on in
    pieces (a progress bar's line, a line with no end). */
#define KG_EX_HELD_MAX 1024

typedef struct {
  kg_child_t *child;            /* NULL before the first start                */
  pid_t pgid;
  bool reaped;
  int status;                   /* wait status once reaped                    */
  kg_linebuf_t *lines[2];       /* stdout, stderr: whole lines for diagnosis  */
  bool mid_line[2];             /* stdout, stderr passed on up to a line's
                                   middle (no rank prefix due)               */
  char held[2][KG_EX_HELD_MAX]; /* several ranks: the start of a line not yet
                                   ended, held so the ranks' lines never mix */
  size_t held_len[2];
  char **envp;                  /* its environment (owned)                    */
  char error_file[PATH_MAX + 96]; /* TORCHELASTIC_ERROR_FILE of this start    */
  kg_child_t *standby;          /* its warm standby (kg_exec_standby.c)        */
  int standby_fd;               /* the handover pipe's write end, -1 none      */
  int64_t standby_started;      /* monotonic                                   */
  bool standby_warm;            /* it said it is ready                         */
  size_t standby_seen;          /* bytes of its ready line read so far         */
} kg_ex_rank_t;

typedef struct kg_exec_s {
  kg_exec_config_t cfg;
  char exe[PATH_MAX];
  char state_dir[PATH_MAX];
  char python_dir[PATH_MAX];
  char log_path[PATH_MAX + 64];
  kg_exec_log_t *log;           /* the group's output, kept                   */
  kg_fdq_t *out[2];             /* kguard's stdout and stderr: the group's
                                   output and kguard's own lines, never
                                   waiting on a reader (kg_fdq)              */
  bool out_closed[2];           /* said once: its reader is gone             */
  char run_dir[PATH_MAX + 64];  /* <state>/exec/<name>                        */

  kg_classifier_t *rules;
  kg_diagnosis_t *diag;
  kg_policy_t *policy;
  kg_incident_t *incident;      /* the current fault's record, or NULL        */
  bool incident_open;           /* its generation's tree is not yet gone      */
  bool incident_said;           /* its path was printed (once: it is rewritten
                                   as the tree's exits and the restore come)  */
  char signature[KG_DIAG_SIGNATURE_MAX];
  char last_signature[KG_DIAG_SIGNATURE_MAX]; /* the previous fault's        */
  bool restored;                /* the restore of this fault is done           */

  kg_exec_mode_t mode;          /* plain, wrapper or agent (kg_exec_mode)     */
  kg_ex_rank_t *ranks;          /* this node's ranks, or the one command      */
  int nranks;
  bool leader_reaped;           /* the command is over (a rank failed, or all
                                   ended): leader_status says how            */
  int leader_status;
  int fault_rank;               /* local index of the rank the sticky text or
                                   death came from, -1 unknown               */
  cJSON *exits;                 /* [{pid, status, rank}] of this start       */
  kg_child_t *helper;           /* `kguard ckpt resume-prepare`               */
  char *helper_out;
  size_t helper_len;

  kg_sigsrc_t *sig;             /* SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1  */
  kg_loop_t *loop;              /* the one reactor (kg_loop) and its clock,
                                   from the setup to the teardown           */
  kg_fsm_t *fsm;                /* the states (kg_exec_states.h): the one copy
                                   of the state, the queue, the state's
                                   deadline (the loop's ms)                 */
  int to;                       /* inside a transition: the state it leads to
                                   so far (kg_ex_enter), KG_FSM_NONE none    */
  bool stepping;                /* inside a transition of the run's machine  */
  kg_fsm_t *after;              /* what follows STOPPING (KG_EX_AFTER_*)     */
  int64_t stop_grace_ms;        /* STOPPING's deadline, from its entry       */
  bool killed;                  /* SIGKILL already sent this stop              */
  bool preempted;               /* a scheduler's signal arrived               */
  kg_exec_outcome_t outcome;
  int outcome_status;           /* wait status for COMMAND_FAILED             */
  int exit_code;
  int64_t delay_ms;             /* backoff before the next start              */

  int generation;               /* starts of the command, from 0             */
  kg_exec_devmem_t *devmem;     /* the driver's view of device memory          */
  kg_gpuwatch_t *gpuwatch;      /* NVML's reading at the start, judged again
                                   after a fault                               */
  char hw_line[512];            /* HARDWARE: the GPU and why it needs a reset */
  bool devmem_said;             /* "no driver to ask" logged                   */
  int64_t devmem_until;         /* monotonic: the wait for it ends, 0 none     */
  int standby_failures;         /* standbys that died before use               */
  int64_t generation_started;   /* monotonic                                   */
  kg_exec_pace_t pace;          /* this run's steps, the job's pace           */
  kg_exec_stepsock_t *steps;    /* kguard.step/kguard.save's reports, or NULL */
  int64_t step_at_suspicion;
  int64_t fault_wall_ms;
  int64_t fault_mono_ms;

  char *resume_dir, *resume_archive;
  char resume_tier[8];           /* "memory" or "disk" of the restore, or ""  */
  kg_snapdir_t *snapdir;        /* kguard.snapshot's memory, or NULL           */
  int64_t resume_step;          /* -1 = nothing to resume                     */
  bool starting;                /* the start-time choice runs (RESTORING)      */
  int64_t started_wall_ms;      /* the run's start (wall): with --fresh, no
                                   checkpoint sealed before it is restored    */

  /* multi-node (kg_exec_node.c) */
  bool multi;
  void *zctx, *link;            /* DEALER to the coordinator                  */
  kg_child_t *coord;            /* node 0: the coordinator process            */
  cJSON *decision;              /* the latest decision (owned)                */
  int restore_rank;             /* next step of the restore: local ranks to
                                   quarantine, then to restore                */
  int list_rank;                /* next local rank to list after a stop       */
  bool list_memory;             /* listing the ranks' snapshots in memory     */
  cJSON *listing;               /* {rank: rows} of this node's ranks (owned)  */
  bool listing_failed;          /* a listing could not be made                */
  int64_t listing_started;      /* monotonic                                   */
  char restored_base[PATH_MAX + 96];
  bool sticky_report;           /* a proven fault here, for `stopped`         */
  int64_t beat_next;            /* monotonic: send the next heartbeat         */
  int64_t coord_seen;           /* monotonic: last message from the coordinator */
  bool lost;                    /* the coordinator is lost: exit retryable    */
  kg_fsm_t *join;               /* JOINING's sub-states (KG_EX_J_*)          */
  void *monitor;                /* PAIR: the link's handshake events          */
  int handshake_failures;       /* before any word from the coordinator       */
  bool heard;                   /* the coordinator has said something         */
  char nonce[33];               /* the job's nonce (key probes' names)        */
  int master_port;              /* rank 0's rendezvous store port, 0 unknown  */
  char master_addr[256];        /* agent mode: MASTER_ADDR of the ranks        */
  kg_exec_store_t *store;       /* single node: the ranks' rendezvous store    */
  int store_port;               /* several nodes: the coordinator's store, 0 none */
  bool agent_store;             /* this generation's ranks use a kept store    */
} kg_exec_s;

/*  The files below, each calling only those listed before it (and the
    pure rules, kg_exec_rule.c), never back up: an event that a lower file
    sees is queued (kg_ex_fire) and applied later by the decisions, from
    the queue. */

/*  kg_exec_event.c: the event sink, the states as they stand, the outcome. */
/*  The time now on the loop's clock (what every handler reads: a test
    injects its own); the loop exists from the setup to the teardown. */
int64_t kg_ex_now(const kg_exec_s *E);
/*  The run's state: inside a transition, the one it leads to so far. */
kg_ex_state_t kg_ex_state(const kg_exec_s *E);
/*  What follows STOPPING, as planned now (KG_EX_AFTER_*). */
kg_ex_after_t kg_ex_after(const kg_exec_s *E);
/*  Post an after-stop event (a stop's plan, or END). */
void kg_ex_plan(kg_exec_s *E, kg_ex_after_event_t event);
/*  Queue an event; applied by kg_ex_run_queue, after what the wake-up
    brought has been gathered (inside a transition: after it). */
void kg_ex_fire(kg_exec_s *E, kg_ex_event_kind_t kind, int64_t arg);
/*  Inside a transition (only there: a state changes by an event, never
    beside the machine): it leads to state (the last call wins); entering
    arms the state's deadline (kg_exec_states.h). */
void kg_ex_enter(kg_exec_s *E, kg_ex_state_t state);
/*  The run ends with outcome (status: a wait status for COMMAND_FAILED):
    DONE, or ENDING while node 0's coordinator still runs. */
void kg_ex_done(kg_exec_s *E, kg_exec_outcome_t outcome, int status);
/*  The run ends with the code a job-ending decision names. */
void kg_ex_done_code(kg_exec_s *E, int code);
/*  End with outcome: at once, or once the tree is gone while it stops. */
void kg_ex_finish(kg_exec_s *E, kg_exec_outcome_t outcome);

/*  kg_exec_output.c: the ranks' and the helper's pipes, kguard's stdout
    and stderr. */
/*  Start the checkpoint helper (argv, output captured), forgetting its
    previous answer. 0 or a negative code. */
int kg_ex_start_helper(kg_exec_s *E, char **argv);
/*  Read what is in rank r's pipe (which = 1 stdout, 2 stderr): pass it
    through, keep it, diagnose it. */
void kg_ex_read_rank(kg_exec_s *E, int r, int which);
/*  Read what is in the helper's pipes (its answer on stdout is kept). */
void kg_ex_read_helper(kg_exec_s *E);
/*  Pass len bytes of the group's output (or kguard's own line) to kguard's
    stdout (which 1) or stderr (2) through its queue: never waits for the
    reader; what a stopped reader made it drop is said once it reads again. */
void kg_ex_output(kg_exec_s *E, int which, const char *buf, size_t len);
/*  Read the step reports waiting on the step socket (kguard.step,
    kguard.save): this generation's are progress, as a printed step line. */
void kg_ex_read_steps(kg_exec_s *E);
/*  kguard's stdout (which 1) or stderr (2) is writable: write what its
    queue holds, and say what it dropped (or that its reader is gone). */
void kg_ex_output_flush(kg_exec_s *E, int which);
/*  At the end (once): what the queues still hold goes out, waiting for
    slow readers at most a few seconds in all. */
void kg_ex_output_drain(kg_exec_s *E);

/*  kg_exec_env.c */
char **kg_ex_build_env(kg_exec_s *E, int rank);
void kg_ex_free_env(char ***envp_p);
void kg_ex_incident_begin(kg_exec_s *E, const char *decision, const char *reason);
void kg_ex_incident_write(kg_exec_s *E);
/*  Once the tree is gone: every exit and torchrun's error file, rewritten. */
void kg_ex_incident_refresh(kg_exec_s *E);

/*  kg_exec_standby.c: warm standby ranks. */
/*  Can this command have standbys? If not, why (usage). */
bool kg_ex_standby_possible(const kg_exec_s *E, char *why, size_t len);
/*  Start the missing standbys when they are due (every loop turn). */
void kg_ex_standby_tick(kg_exec_s *E);
/*  When the missing standbys are due (monotonic ms), 0 when none is. A
    query. */
int64_t kg_ex_standby_due(const kg_exec_s *E);
/*  Read what rank r's standby printed (which = 1 stdout, 2 stderr). */
void kg_ex_standby_read(kg_exec_s *E, int r, int which);
/*  pid was a standby: reap it (a death before use). False: not one. */
bool kg_ex_standby_reaped(kg_exec_s *E, pid_t pid);
bool kg_ex_standby_spared(const kg_exec_s *E, pid_t pid);
/*  Rank r's standby becomes the rank with ranks[r].envp: true, or false
    (logged why) for a cold start. */
bool kg_ex_standby_promote(kg_exec_s *E, int r);
void kg_ex_standby_stop(kg_exec_s *E, int r);

/*  kg_exec_ranks.c: the process tree. */
int kg_ex_ranks_new(kg_exec_s *E);
void kg_ex_ranks_destroy(kg_exec_s *E);
/*  Start every rank (the command) for the next generation. Returns 0 or a
    negative code (nothing left running). */
int kg_ex_start_command(kg_exec_s *E);
/*  sig to every rank's process group and to every process of the tree
    that left it (never the helper, the coordinator or a standby). */
void kg_ex_kill_tree(kg_exec_s *E, int sig);
/*  sig to one rank's process group. */
void kg_ex_kill_rank(kg_exec_s *E, int rank, int sig);
/*  Nothing of the command is left. */
bool kg_ex_group_gone(kg_exec_s *E);
/*  Reap every ended child, firing the events they mean. */
void kg_ex_reap(kg_exec_s *E);

/*  kg_exec_node.c */
int kg_ex_node_open(kg_exec_s *E);
void kg_ex_node_close(kg_exec_s *E);
void kg_ex_node_recv(kg_exec_s *E);
void kg_ex_node_send(kg_exec_s *E, const char *type, cJSON *fields);
int64_t kg_ex_node_timers(kg_exec_s *E);
/*  When kg_ex_node_timers must run next (monotonic ms). A query. */
int64_t kg_ex_node_when(const kg_exec_s *E);
cJSON *kg_ex_node_report(kg_exec_s *E);
int kg_ex_node_restore_next(kg_exec_s *E);
/*  After a stop: an empty listing, in WAITING; then kg_ex_node_list_next. */
void kg_ex_node_list_begin(kg_exec_s *E);
/*  After a stop: list the next local rank's checkpoints (`kguard ckpt
    list`, verifying each), its directory on shared storage first, then its
    snapshots in this kguard's memory. Returns 1 when a helper was
    started, 0 when every rank is listed. */
int kg_ex_node_list_next(kg_exec_s *E);
/*  The listing helper ended: keep its rows (disk paths relative to the
    shared directory; snapshots marked "tier": "memory", their paths
    absolute on this node). */
void kg_ex_node_listed(kg_exec_s *E);
/*  The start of a multi-node job (entering the join's LISTING, on the
    coordinator's START): list this node's ranks' checkpoints of the run
    (none with --fresh) and send them as after a fault, in WAITING; the
    coordinator's start decision then takes the decision path
    (kg_ex_decision). */
void kg_ex_node_list_start(kg_exec_s *E);
/*  Tell the coordinator this node's tree is gone, with its listing. */
void kg_ex_node_send_stopped(kg_exec_s *E);

/*  kg_exec_join.c: joining the coordinator. */
/*  The join's machine, in HELLO (its hello was sent). 0 or KG_ENOMEM. */
int kg_ex_join_start(kg_exec_s *E);
/*  Its definition (static storage): the rows of kg_exec_join.c on the
    table of kg_exec_states.c. */
const kg_fsm_def_t *kg_ex_join_states(void);
/*  One event while joining (state KG_EX_JOINING). */
void kg_ex_node_join_step(kg_exec_s *E, kg_ex_event_t ev);
/*  The link's handshake events (the monitor socket is readable). */
void kg_ex_node_monitor(kg_exec_s *E);

/*  kg_exec_restart.c: at the start, and after a proven fault. */
/*  One node, before the first start (no --fresh; RESTORING's BEGIN):
    choose the run's last consistent checkpoint with resume-prepare, the
    start's time as T; the ranks start once it answers
    (kg_ex_helper_done). */
void kg_ex_start_choose(kg_exec_s *E);
/*  Start choosing the checkpoint (one node): at once, also while the tree
    still stops. */
void kg_ex_restore(kg_exec_s *E);
/*  The checkpoint helper ended (one node: resume-prepare; several: a
    quarantine or restore of this node's ranks). */
void kg_ex_helper_done(kg_exec_s *E);
/*  The coordinator's decision, once this node's tree stopped. */
void kg_ex_decision(kg_exec_s *E);
/*  The coordinator ends the job while this node still runs. */
void kg_ex_end_early(kg_exec_s *E);
/*  May the ranks start again on these devices (memory released)? When
    not yet, the deadline is re-armed. */
bool kg_ex_devices_free(kg_exec_s *E);

/*  kg_exec.c: the decisions, on kg_fsm. */
/*  The machine for E in its first state (RUNNING, or JOINING for a node
    of several). 0 or KG_ENOMEM. */
int kg_ex_states_start(kg_exec_s *E, kg_ex_state_t initial);
/*  Apply the queued events, each a transition of the machine. */
void kg_ex_run_queue(kg_exec_s *E);

/*  kg_exec_loop.c: the reactor; the run's exit code once it is done. */
int kg_ex_loop(kg_exec_s *E);

#endif
