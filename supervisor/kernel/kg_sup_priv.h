/*  kg_sup_priv: the kernel supervisor's private interface: its struct and
    the kg__ functions its files share. The files split the object by
    concern (kg_sup_loop.c: the loop; kg_sup_states.c: the states' rows;
    kg_sup_relay.c and kg_sup_relay_kernel.c: the relay each way, the gate,
    the one-execute-in-flight queue; kg_sup_synth.c: messages kguard writes
    itself; kg_sup_guard.c: evidence, sticky errors; kg_sup_notify.c:
    notices and incidents; kg_sup_helpers.c: the probe and checkpoint
    children; kg_sup_inband.c: %kguard cells; kg_sup_kenv.c: the kernel's
    environment; kg_sup_kernel.c: starting the kernel; kg_sup_standby.c,
    kg_sup_hang.c, kg_sup_gpu.c, kg_sup_devcheck.c, kg_sup_parent.c: one
    concern each). What owns a resource is an object of its own (kg_kernel,
    kg_front, kg_helper, ...); what only holds fields is a labelled struct
    here. The files call each other one way only (scripts/check-arrows.py
    fails on a circle).
*/
#ifndef KG_SUP_PRIV_H
#define KG_SUP_PRIV_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "kg_child.h"
#include "kg_classifier.h"
#include "kg_conninfo.h"
#include "kg_devcheck.h"
#include "kg_diagnosis.h"
#include "kg_front.h"
#include "kg_fsm.h"
#include "kg_gate.h"
#include "kg_helper.h"
#include "kg_inband_doctor.h"
#include "kg_incident.h"
#include "kg_kernel.h"
#include "kg_kernel_hb.h"
#include "kg_loop.h"
#include "kg_msg.h"
#include "kg_notice.h"
#include "kg_parentwatch.h"
#include "kg_pending.h"
#include "kg_policy.h"
#include "kg_gpuwatch.h"
#include "kg_preflight.h"
#include "kg_relay_stats.h"
#include "kg_restore.h"
#include "kg_ring.h"
#include "kg_rotlog.h"
#include "kg_sigsrc.h"
#include "kg_snapdir.h"
#include "kg_signer.h"
#include "kg_state.h"
#include "kg_supervisor.h"

/*  The death signal kguard arms on itself for the launcher watch: in the
    supervisor's signal list, handed to the watch, never a shutdown of its
    own; SIGUSR2 is unused elsewhere in kguard. */
#define KG__PDEATH_SIG SIGUSR2
#define KG__HELD_MAX 1024         /* held requests while no kernel         */
#define KG__EVENTS_MAX 16         /* events waiting at once (a transition posts 1-2) */
#define KG__RING_BYTES (256u * 1024u)   /* the kernel's stdout/stderr kept */
#define KG__START_TIMEOUT_MS 60000 /* STARTING: ready within this, or stopped */
#define KG__KLOG_BYTES (32u * 1024u * 1024u) /* the kernel log, twice at most */
#define KG__KLOG_ENV "KGUARD_KERNEL_LOG_BYTES"   /* ... or this many bytes  */
#define KG__EVIDENCE_MS 5000      /* CLOSING: wait for the failing reply   */
#define KG__TERM_GRACE_MS 1000    /* STOPPING: SIGTERM → SIGKILL           */
#define KG__KILL_REAP_MS 2000     /* KILLING: warn again if still not reaped */
#define KG__SHUTDOWN_REPLY_MS 1000 /* EXITING: the kernel's shutdown_reply awaited */
#define KG__DROPLOG_BURST 5        /* dropped messages logged in full ...   */
#define KG__DROPLOG_INTERVAL_MS 10000 /* ... per kind per interval          */
#define KG__STANDBY_MAX_FAILURES 3 /* standbys dead before promotion: then cold starts */
#define KG__HELPER_STALL_MS 30000 /* a helper silent this long is killed */
#define KG__HELPER_OUT_MAX (1024u * 1024u) /* a helper's stdout kept */
#define KG__RESTORE_NOTICE_MS 2000 /* a restore this long gets a progress notice */
#define KG__TRIM_MIN (256 * 1024) /*  a message this big ...                  */
#define KG__TRIM_DELAY_MS 500     /*  ... frees memory this long after the last */

/*  Why the current kernel is being stopped. */
typedef enum {
  KG__STOP_NONE = 0,
  KG__STOP_DIED,                /*  it died on its own                       */
  KG__STOP_STICKY,              /*  sticky GPU error                         */
  KG__STOP_USER,                /*  %kguard restart / kguard restart          */
  KG__STOP_TIMEOUT,             /*  never became ready                       */
  KG__STOP_DEVICE,              /*  the pre-flight found the device failing  */
  KG__STOP_HUNG                 /*  it stopped answering its heartbeat       */
} kg__stop_t;

/*  The notice due when the next kernel is ready. */
typedef enum {
  KG__DUE_NONE = 0,
  KG__DUE_STICKY,               /*  the sticky error's restart notice        */
  KG__DUE_DIAGNOSTIC            /*  the diagnostic restart's notice          */
} kg__due_kind_t;

/*  The configuration: built once by kg_supervisor_new (from the command
    line, the state directory and the environment), then frozen: the
    supervisor holds it through a const pointer. */
typedef struct {
  char conn_path[PATH_MAX];     /*  the frontend's connection file           */
  char **inner_argv;            /*  owned copy, {connection_file} kept       */
  size_t inner_argc;
  bool inner_message_interrupts;/*  inner kernel's interrupt_mode = message  */
  char ckpt_dir[PATH_MAX];
  char name[128];
  char exe[PATH_MAX];
  char state_dir[PATH_MAX];
  char python_dir[PATH_MAX];
  char runtime_dir[PATH_MAX];   /*  kguard's 0700 directory ("" if none)     */
  char inner_conn_path[PATH_MAX];
  char kernel_log_path[PATH_MAX];
  char own_log_path[PATH_MAX + 64];
  char *spec_language;          /*  the kernelspec's language, or NULL (owned) */
  kg_policy_config_t policy_config;   /*  as configured, for %kguard status  */
  int64_t stale_window_ms;      /*  the gate's (< 0: its default)            */
  bool standby;                 /*  keep a warm standby kernel               */
  char standby_conn_path[PATH_MAX]; /*  its private connection file          */
} kg__config_t;

typedef struct kg_supervisor_t kg_sup_t;

/*  What a loop source is given: the supervisor, and which channel, pipe or
    child it polls. */
typedef struct {
  kg_sup_t *S;
  int which;
} kg__src_t;

/*  The request a sticky error (or advice) belongs to: the one the
    evidence's parent names, else the one the kernel said busy for, else
    (a guess) the one running. */
typedef struct {
  char *msg_id;                 /*  which reply and idle are the failing
                                    cell's; NULL once its kernel is gone    */
  char *code;                   /*  its code: incident, signature            */
  cJSON *header;                /*  its header: the notices' parent, kept
                                    for the notice on the fresh kernel       */
  bool replied;                 /*  its real execute_reply was relayed       */
  bool guessed;                 /*  neither evidence nor busy status named it */
} kg__failing_t;

/*  An incident record and where it was last written. */
typedef struct {
  kg_incident_t *incident;      /*  owned, or NULL                           */
  char *path;                   /*  owned, or NULL (not written)             */
} kg__incident_t;

/*  Incident records (kg_sup_notify.c). */
typedef struct {
  kg__incident_t current;       /*  the last sticky one: restore, env, status */
  kg__incident_t aside;         /*  set aside while an advice's is written   */
} kg__incidents_t;

/*  What the user is still to be told. */
typedef struct {
  kg__due_kind_t kind;          /*  the notice due at the next READY         */
  cJSON *parent;                /*  its parent header (owned), or NULL       */
  char *down_reason;            /*  why kguard is DOWN (owned), or NULL      */
} kg__due_t;

/*  How kguard ends. */
typedef struct {
  char *request_id;             /*  the frontend's shutdown_request (owned;
                                    never doomed nor answered as others), or
                                    NULL                                     */
  bool restart;                 /*  its content.restart, echoed if kguard replies */
  int exit_code;                /*  kguard's own                             */
} kg__shutdown_t;

/*  The heartbeat watch (kg_sup_hang.c). */
typedef struct {
  kg_kernel_hb_config_t cfg;    /*  period and misses                        */
  kg_kernel_hb_t *pinger;       /*  of the process pid, or NULL              */
  pid_t pid;
  char *reason;                 /*  why the last hang was declared (owned)   */
  int64_t retry_ms;             /*  no pinger could be made: try again then  */
} kg__hang_t;

/*  The warm standby (kg_sup_standby.c). */
typedef struct {
  kg_kernel_t *kernel;          /*  its object, or NULL without --standby;
                                    swapped with the kernel's at a promotion */
  int64_t started_ms;
  bool warm;                    /*  it answered kernel_info                  */
  int failures;                 /*  standbys that died before promotion      */
} kg__standby_t;

struct kg_supervisor_t {
  const kg__config_t *cfg;      /*  owned; frozen by kg_supervisor_new       */

  /* the loop and what it polls */
  kg_loop_t *loop;              /*  the reactor every source registers with  */
  struct {                      /*  the arguments of the loop's sources      */
    kg__src_t kernel[KG_CH_COUNT];    /*  the kernel's sockets, by channel   */
    kg__src_t front[KG_CH_COUNT];     /*  the frontend's                     */
    kg__src_t standby[KG_CH_COUNT];   /*  the standby's                      */
    kg__src_t pipe[3];                /*  the kernel's stdout (1), stderr (2) */
    kg__src_t standby_pipe[3];        /*  the standby's                      */
    kg__src_t helper[4];              /*  ckpt stdout/stderr, probe's        */
    kg__src_t gpu[4];                 /*  pre-flight stdout/stderr, doctor's */
  } src;
  kg_sigsrc_t *sig;             /*  SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT */
  kg_parentwatch_t *parent;     /*  the launcher watch, or NULL (off)        */
  void *ctx;                    /*  the zmq context of both sides            */
  kg_conninfo_t *front_info;    /*  the frontend's connection file           */
  kg_front_t *front;            /*  the frontend's sockets, heartbeat, signer */
  kg_kernel_t *kernel;          /*  the inner kernel: process, pipes, rings,
                                    connection file, sockets                 */

  /* the kernel's life */
  kg_fsm_t *fsm;                /*  the state, its deadline, events waiting
                                    (rows: kg_sup_states.c; kg__fire posts)  */
  kg__stop_t stop_reason;       /*  why the current kernel is being stopped  */
  int64_t backoff_ms;           /*  BACKOFF's delay, as the policy chose     */
  int kernel_starts;            /*  kernels started or promoted              */
  char **kernel_envp;           /*  the running kernel's environment (owned) */
  int exit_status;              /*  wait status of the stopped kernel        */
  bool exit_known;              /*  it ended by itself (not killed by kguard) */
  long prev_kernel_pid;         /*  the stopped kernel's pid (memory note)   */
  kg_backend_t backend;         /*  known backend (diagnosis or probe)       */
  bool diagnostic;              /*  the kernel being started is diagnostic   */
  bool want_diagnostic;         /*  the requested restart is diagnostic      */
  bool preflight_after_sticky;  /*  this start follows a sticky error        */

  /* what the kernel said */
  cJSON *info_cache;            /*  last kernel_info_reply content           */
  char *session;                /*  its session as last seen (owned; any
                                    length: the kernel chose it)             */
  int execution_count;          /*  the running kernel's, as its last
                                    execute_reply said (0: a fresh kernel);
                                    `%kguard` replies carry it              */

  /* the relay */
  kg_pending_t *pending;        /*  requests, held queues, the busy ledger   */
  kg_gate_t *gate;              /*  routing decision, stale-request rule     */
  kg_relay_stats_t *stats;      /*  relayed and dropped counts, the drop log */
  int64_t trim_at_ms;           /*  give freed message memory back then      */
  kg_rotlog_t *klog;            /*  logs/kernel-*.log (the kernel's rings
                                    write there; bounded, kg_rotlog)         */
  FILE *own_log;                /*  logs/kguard-*.log                        */

  /* faults */
  kg_classifier_t *rules;
  kg_diagnosis_t *diag;         /*  the running kernel's evidence            */
  kg_diagnosis_t *prev_diag;    /*  the previous kernel's, for its notices   */
  kg_policy_t *policy;
  kg__failing_t failing;        /*  the failing request (kg_sup_guard.c)     */
  kg_devcheck_t *devcheck;      /*  a suspicion's device probe, the reply
                                    and idle it holds (kg_sup_devcheck.c)    */
  kg__incidents_t incidents;    /*  incident records (kg_sup_notify.c)       */
  kg__due_t due;                /*  what the user is still to be told        */
  kg__shutdown_t shutdown;      /*  how kguard ends                          */

  /* children and watches */
  kg_helper_t *ckpt;            /*  `kguard ckpt resume-prepare`             */
  kg_helper_t *probe;           /*  `python -m kguard.probe` (versions)      */
  kg_snapdir_t *snapdir;        /*  kguard.snapshot's memory, kept across the
                                    kernel's restarts (NULL: none)           */
  kg_restore_t *restore;        /*  what resume-prepare said, what the next
                                    kernel gets                              */
  kg_preflight_t *preflight;    /*  `kguard doctor --preflight` (kg_sup_gpu.c) */
  kg_inband_doctor_t *doctor;   /*  `%kguard doctor` and the cell it answers */
  kg_gpuwatch_t *gpuwatch;      /*  NVML's reading at the first start, judged
                                    again before a restart (NULL before the
                                    first start)                             */
  kg__hang_t hang;              /*  the heartbeat watch (kg_sup_hang.c)      */
  kg__standby_t standby;        /*  the warm standby (kg_sup_standby.c)      */
};

/* kg_sup_util.c (calls no other supervisor file, only its classes) */
/*  Replace the owned string *field with a copy of value (NULL or "" clear
    it; out of memory keeps the old value). */
void kg__set_str(char **field, const char *value);
/*  Free a NULL-terminated array of strings; *envp_p becomes NULL. */
void kg__free_envp(char ***envp_p);
/*  The kernel's language (kg_language.h): its cached kernel_info_reply,
    else the kernelspec's, else argv's guess. Borrowed. */
const char *kg__language(const kg_sup_t *S);
/*  The diagnostic kernel's label ("" unless S->diagnostic). Static text. */
const char *kg__diag_label(kg_sup_t *S);
/*  Post event to the state machine (kg_fsm): applied now, or after the
    running transition. */
void kg__fire(kg_sup_t *S, kg_event_t event);
bool kg__events_pending(const kg_sup_t *S);     /* a transition is waiting in the queue */
/*  The kernel's state now. */
static inline kg_state_t
kg__state(const kg_sup_t *S)
{
  return (kg_state_t) kg_fsm_state(S->fsm);
}

/*  A message of type could not be sent to `to` ("frontend", "kernel")
    with rc (a peer that does not read: KG_EQFULL; one that is gone:
    -EHOSTUNREACH): counted in stats as unsent, logged at a bounded rate. */
void kg__unsent(kg_relay_stats_t *stats, const char *to, const char *type, int rc);
/*  Doom every request queued behind the running cell (they are answered,
    never run) and drop the held non-requests. */
void kg__doom_queue(kg_sup_t *S);

/*  The failing request is msg_id (NULL: none known), with its code and
    header (each may be NULL; all copied); its reply not yet relayed.
    Out of memory leaves what could not be copied NULL. */
void kg__failing_set(kg__failing_t *f, const char *msg_id, const char *code,
                     const cJSON *header, bool guessed);
/*  Forget everything (free). */
void kg__failing_clear(kg__failing_t *f);
/*  True if msg_id (may be NULL) is the failing request's. */
bool kg__failing_is(const kg__failing_t *f, const char *msg_id);

/*  The notice due at the next READY: kind, with parent (copied; may be
    NULL); KG__DUE_NONE clears. */
void kg__due_set(kg__due_t *due, kg__due_kind_t kind, const cJSON *parent);
/*  Why kguard is DOWN (copied; NULL: it is not). */
void kg__due_set_down(kg__due_t *due, const char *reason);
/*  Why kguard is DOWN after automatic restarts stopped: reason (may be
    NULL) and how to start a fresh kernel by hand. */
void kg__due_set_gave_up(kg__due_t *due, const char *reason);

/*  The current incident's id, or NULL if there is none. Borrowed. */
const char *kg__incident_id(const kg__incidents_t *incidents);

/*  True if msg_id (may be NULL) is the frontend's shutdown_request. */
bool kg__shutdown_is(const kg__shutdown_t *shutdown, const char *msg_id);

/* kg_sup_kernel.c: the entry action of STARTING; 0, or a negative code with
   the down reason set in S->due (the caller fires SPAWN_FAILED) */
int kg__kernel_start(kg_sup_t *S);

/*  The loop's sources. Each concern registers its own readers and timers
    with S->loop (kg_loop.h); kg__loop_attach (kg_sup_loop.c) calls these in
    the order the loop dispatches them: signals first (a dead child is
    known before its last messages are judged), the launcher, the kernel's
    sockets, then its pipes (a reply already here was sent before what the
    pipes say now), the helpers, the GPU children, the standby, the
    frontend last. Timers fire after I/O in the same order. 0 or KG_ENOMEM. */
int kg__loop_attach(kg_sup_t *S);
int kg__signals_attach(kg_sup_t *S);          /* kg_supervisor.c */
int kg__state_attach(kg_sup_t *S);            /* kg_sup_states.c: the state's deadline */
int kg__relay_kernel_attach(kg_sup_t *S);     /* kg_sup_relay_kernel.c */
int kg__relay_front_attach(kg_sup_t *S);      /* kg_sup_relay.c */
int kg__pipes_attach(kg_sup_t *S);            /* kg_sup_guard.c: the kernel's pipes */
int kg__helpers_attach(kg_sup_t *S);          /* kg_sup_helpers.c */
int kg__gpu_attach(kg_sup_t *S);              /* kg_sup_gpu.c */
int kg__standby_attach(kg_sup_t *S);          /* kg_sup_standby.c */
int kg__hang_attach(kg_sup_t *S);             /* kg_sup_hang.c */
int kg__parent_attach(kg_sup_t *S);           /* kg_sup_parent.c */

/* kg_sup_parent.c */
/*  Start watching the launcher: JPY_PARENT_PID if it names an ancestor,
    else the parent; KGUARD_PARENT_WATCH=0 turns the watch off (for a
    kguard deliberately left running after its launcher, e.g. under nohup).
    Returns 0 or -errno. Call after S->sig exists (its list holds
    KG__PDEATH_SIG, blocked before the watch arms it). */
int kg__parent_init(kg_sup_t *S);

/* kg_sup_states.c: one row per state (entry action, deadline, event on
   deadline) over kg_state's table */
const kg_fsm_def_t *kg__states(void);

/* kg_sup_relay.c: the frontend's side and kguard's queues */
/*  Log the dropped-message summary if its interval ended at now (or at
    once, if force). */
void kg__droplog_flush(kg_sup_t *S, int64_t now, bool force);
/*  A verified message from the frontend on ch: the gate decides, this
    carries it out (forward, answer, hold, drop). *msg_p may be taken
    (held): then it is NULL on return. */
void kg__dispatch_front(kg_sup_t *S, kg_channel_t ch, kg_msg_t **msg_p);
/*  Deliver what kguard holds, as far as the state lets it: control first,
    then shell in order until an execute is in flight; while DOWN, answer
    it all. Stops at a posted event (what follows waits for its state). */
void kg__flush_held(kg_sup_t *S);
/*  Receive one message from socket (side and ch name it in logs): 1 and
    *msg_p, 0 if none waits, -1 on a socket error. Oversized ones are
    counted and skipped. */
int kg__relay_recv(kg_sup_t *S, void *socket, const char *side, kg_channel_t ch,
                   kg_msg_t **msg_p);
/*  Check msg from the frontend (kg_front_check: signature, header, replay,
    date, reflection); false (counted, logged) if it fails. */
bool kg__relay_accept(kg_sup_t *S, kg_msg_t *msg, const char *side, kg_channel_t ch);
/*  A message this big schedules the memory trim after the burst. */
void kg__relay_note_size(kg_sup_t *S, const kg_msg_t *msg);
/*  True if e is the execute in the kernel that holds the shell queue. */
bool kg__relay_holds_queue(const kg_pending_entry_t *e);
/*  True while an execute runs in the kernel or kguard's probe after an
    error reply is awaited: nothing more goes in. */
bool kg__relay_kernel_busy(kg_sup_t *S);
/*  stop_on_error after the error reply `reply`: the executes queued now
    are answered aborted; the other requests go on. */
void kg__relay_abort_queue(kg_sup_t *S, kg_msg_t *reply);

/* kg_sup_synth.c: messages kguard writes itself (fresh msg_id, signed) */
/*  Publish on iopub a message of type with parent (may be NULL), under the
    session of parent's open busy or else the kernel's; takes *content_p
    and *metadata_p (may be NULL). */
void kg__publish(kg_sup_t *S, const char *type, const cJSON *parent, cJSON **content_p,
                 cJSON **metadata_p);
/*  A status message (execution_state = state) with parent. */
void kg__publish_status(kg_sup_t *S, const cJSON *parent, const char *state);
/*  busy for the request of header, unless one is open already (ledger). */
void kg__status_busy(kg_sup_t *S, const cJSON *header);
/*  idle for the request of header, once, and only after its busy. */
void kg__status_idle(kg_sup_t *S, const cJSON *header);
/*  idle for every open busy but except_id's (NULL: all): the kernel that
    owed them is gone. */
void kg__settle_status(kg_sup_t *S, const char *except_id);
/*  Reply to e on its channel with type, taking *content_p (the entry
    stays: the caller removes it). */
void kg__reply(kg_sup_t *S, kg_pending_entry_t *e, const char *type, cJSON **content_p);
/*  e's execute_reply status "aborted" (stop_on_error), its busy and idle;
    e is removed. */
void kg__answer_aborted(kg_sup_t *S, kg_pending_entry_t *e, const cJSON *error_metadata);
/*  e answered with an error ename/evalue: busy, the error on iopub (an
    execute), the reply, idle; e is removed. */
void kg__answer_error(kg_sup_t *S, kg_pending_entry_t *e, const char *ename,
                      const char *evalue);
/*  e (a kernel_info_request) answered from the last kernel_info_reply, or
    kguard's own while none was seen; e is removed. */
void kg__answer_kernel_info(kg_sup_t *S, kg_pending_entry_t *e);
/*  Answer with an error every pending request that was forwarded or doomed
    (doomed_only: only the doomed), but the shutdown_request. */
void kg__answer_all(kg_sup_t *S, bool doomed_only, const char *ename, const char *evalue);
/*  e (a `%kguard` cell) answered with text as its stream output, then its
    execute_reply (ok or error); e is removed. */
void kg__answer_stream(kg_sup_t *S, kg_pending_entry_t *e, const char *text, bool ok);
/*  An error's content: ename, evalue and a one-line traceback. New. */
cJSON *kg__error_content(const char *ename, const char *evalue);

/* kg_sup_guard.c: evidence and what a fault does */
/*  A fresh kernel: fresh evidence (the old one kept for its notice), no
    probe, no abort wait. */
void kg__guard_kernel_started(kg_sup_t *S);
/*  An iopub message as evidence (error, stream). */
void kg__guard_iopub(kg_sup_t *S, kg_msg_t *msg);
/*  A reply as evidence (an error execute_reply); the failing cell's real
    reply gets kguard's notice metadata. */
void kg__guard_reply(kg_sup_t *S, kg_msg_t *msg);
/*  The failing request's real execute_reply was relayed: CLOSING is over. */
void kg__guard_failing_done(kg_sup_t *S, kg_msg_t *reply);
/*  Raw output of the kernel's stdout (which = 1) or stderr (2). */
void kg__guard_raw(kg_sup_t *S, int which, const char *data, size_t len);
/*  Read and judge what the kernel's pipes hold now. */
void kg__guard_drain_pipes(kg_sup_t *S);
/*  The kernel died on its own: its exit as evidence; true if the fault is
    sticky (the incident is open then). */
bool kg__guard_child_exit(kg_sup_t *S);
/*  CLOSING's entry: doom everything but the failing request, open the
    incident, start the version probe. */
void kg__guard_enter_closing(kg_sup_t *S);
/*  The kernel's group is gone: answer, let the policy decide, post where
    to go (STOPPED_RESTORE, STOPPED_RESTART or STOPPED_GIVE_UP). */
void kg__guard_after_stop(kg_sup_t *S);
/*  READY's entry: the notice that was due, the idles owed. */
void kg__guard_on_ready(kg_sup_t *S);
void kg__guard_enter_down(kg_sup_t *S);   /* DOWN's notice; then the caller flushes */
void kg__guard_down_answer(kg_sup_t *S);  /* KernelDown for every request still pending */
/*  The device probe confirmed the suspicion (probe: its error as matched,
    NULL for no answer): a sticky fault dated at the first evidence. */
void kg__guard_confirm(kg_sup_t *S, const kg_match_t *probe);

/* kg_sup_notify.c: notices and incident records */
/*  info from diag (the running kernel's, or the previous one's) and what
    the supervisor knows (incident, restore, policy). */
void kg__notice_fill(kg_sup_t *S, const kg_diagnosis_t *diag, kg_notice_info_t *info);
void kg__notice_fill_current(kg_sup_t *S, kg_notice_info_t *info);
/*  Publish a notice of kind as display_data with parent (may be NULL);
    extra (may be NULL) is appended to its texts. */
void kg__notice_publish(kg_sup_t *S, kg_notice_kind_t kind, const kg_notice_info_t *info,
                        const cJSON *parent, const char *extra);
/*  A new incident replaces the current one (sticky: the gate names it);
    written at once. */
void kg__incident_open(kg_sup_t *S, bool sticky);
/*  The failing cell's execute_reply (parent) says its execution count:
    the current incident names the cell by it. */
void kg__incident_cell_count(kg_sup_t *S, const char *parent, int count);
/*  Write the current incident (if any) and remember where. */
void kg__write_incident(kg_sup_t *S);
/*  An advice's record is opened with the sticky one set aside, then put
    back (the advice's is freed). */
void kg__incident_set_aside(kg__incidents_t *incidents);
void kg__incident_put_back(kg__incidents_t *incidents);
/*  Free both records (kg_supervisor_destroy). */
void kg__incidents_clear(kg__incidents_t *incidents);

/* kg_sup_helpers.c: the children that never touch the poisoned process */
/*  The version probe (Python, torch, CUDA/HIP, device) for the incident. */
void kg__start_probe(kg_sup_t *S);
/*  RESTORING's entry: `kguard ckpt resume-prepare`, or RESTORED at once
    when there is nothing to restore. */
void kg__guard_start_restore(kg_sup_t *S);
/*  Read what the helpers (and the GPU children) wrote; act on their end. */
void kg__guard_helpers_poll(kg_sup_t *S);
/*  The restore's latest progress into buf, "" if none. */
void kg__restore_progress_text(kg_sup_t *S, char *buf, size_t len);

/* kg_sup_devcheck.c: the device probe that turns a suspicion into proof */
/*  True while requests must wait: a probe is out, or a suspicion stands
    in READY. */
bool kg__check_pending(const kg_sup_t *S);
/*  Send the probe if a suspicion stands, the kernel is READY and idle. */
void kg__check_start(kg_sup_t *S);
/*  True if msg belongs to the probe (never shown). */
bool kg__check_iopub(kg_sup_t *S, kg_msg_t *msg);
/*  True if msg is the probe's reply (consumed); *confirmed then says it
    proved the suspicion, with the matching family in *match. */
bool kg__check_reply(kg_sup_t *S, kg_msg_t *msg, bool *confirmed, kg_match_t *match);
/*  True if the probe's deadline passed at now: a hung device, confirmed
    (the caller tells the guard). */
bool kg__check_expired(kg_sup_t *S, int64_t now);

/* kg_sup_inband.c: `%kguard` cells */
/*  True if msg (an execute_request) is a `%kguard` cell. */
bool kg__inband_match(kg_msg_t *msg);
/*  Record and answer the `%kguard` cell msg (arrived on ch); false if it
    is not one. */
bool kg__guard_inband(kg_sup_t *S, kg_msg_t *msg, kg_channel_t ch);

/* kg_sup_gpu.c: the pre-flight probe and `%kguard doctor` */
/*  Their objects, configured from the environment. 0 or KG_ENOMEM. */
int kg__gpu_init(kg_sup_t *S);
void kg__gpu_destroy(kg_sup_t *S);
/*  STARTING: start the pre-flight beside the fresh kernel if it is due
    (after_sticky: the start follows a sticky error). */
void kg__preflight_kernel_started(kg_sup_t *S, bool after_sticky);
/*  True while the pre-flight's verdict is awaited: READY waits for it. */
bool kg__preflight_holds_ready(const kg_sup_t *S);
/*  DOWN's notice for a failing device (the hardware family). */
void kg__preflight_down_notice(kg_sup_t *S);
/*  Before a restart: read NVML for the kernel's devices (kg_nvml) and judge
    against the first start's reading for a fault of family (NULL: a death)
    with text. The reading goes into the current incident ("gpu_health").
    A device that needs a reset: the reason (naming the GPU and "drain this
    node") into *why (new string, caller frees) and true; the kernel must
    not be restarted on it. */
bool kg__gpuhealth_needs_reset(kg_sup_t *S, const char *family, const char *text, char **why);
/*  Start `kguard doctor` for the `%kguard doctor` cell e (busy; held). */
void kg__doctor_start(kg_sup_t *S, kg_pending_entry_t *e);
/*  Read what the two children wrote; act on a verdict or an answer. */
void kg__gpu_poll(kg_sup_t *S);

/* kg_sup_hang.c: a kernel that stops answering its heartbeat mid-cell */
void kg__hang_init(kg__hang_t *hang);         /* its configuration (environment) */
void kg__hang_forget(kg__hang_t *hang);       /* the kernel process is gone */
void kg__hang_destroy(kg__hang_t *hang);      /* before the zmq context ends */

/* kg_sup_kenv.c: the kernel's argv and environment */
/*  The environment of a kernel start into *envp_p (NULL on allocation
    failure; free with kg__free_envp). */
void kg__guard_env(kg_sup_t *S, char ***envp_p);
/*  The warm standby's environment: as a plain start's, without the
    diagnostic and resume variables, with KGUARD_STANDBY=1 and
    KGUARD_HANDOVER_FILE=handover (read by kguard.resume() once promoted). */
void kg__guard_env_standby(kg_sup_t *S, const char *handover, char ***envp_p);
/*  The restore's variables alone ("NAME=value", NULL-terminated, possibly
    empty), as the kernel's environment would have them; NULL on allocation
    failure. Free with kg__free_envp. */
char **kg__resume_envp(kg_sup_t *S);
/*  The inner argv with {connection_file} (and the frontend's path, already
    substituted by jupyter_client) replaced by conn_path; NULL-terminated,
    free with kg__free_envp. NULL on allocation failure. */
char **kg__kernel_argv(kg_sup_t *S, const char *conn_path);

/* kg_sup_standby.c: the warm standby */
void kg__standby_start(kg_sup_t *S);          /* after READY, if configured */
bool kg__standby_promote(kg_sup_t *S);        /* at STARTING: true if it took over */
void kg__standby_reap(kg_sup_t *S);           /* SIGCHLD: a standby that died */
void kg__standby_stop(kg_sup_t *S);           /* kguard is exiting */

#endif
