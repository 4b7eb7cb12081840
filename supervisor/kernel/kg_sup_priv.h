/*  kg_sup_priv: the supervisor's state, shared by the files that implement
    it (kg_supervisor.c: loop and life cycle; kg_sup_relay.c: routing, the gate
    and the one-execute-in-flight queue; kg_sup_synth.c: messages kguard writes
    itself; kg_sup_guard.c: evidence, sticky errors, incidents; kg_sup_helpers.c: the
    probe and checkpoint children; kg_sup_inband.c: %kguard cells; kg_sup_kenv.c:
    the kernel's environment; kg_sup_kernel.c: starting the kernel object).
    The inner kernel itself is an object (kg_kernel.h) held here, as are
    the state of single concerns (issue 9): the device probe's (kg_devcheck.h,
    driven by kg_sup_devcheck.c), the restore's result (kg_restore.h, kg_sup_helpers.c),
    the failing request (kg_failing.h, kg_sup_guard.c), the relay's counts
    (kg_relay_stats.h), the heartbeat watch (kg_hangwatch.h, kg_sup_hang.c),
    the warm standby's slot (kg_standby_slot.h, kg_sup_standby.c), how kguard
    ends (kg_shutdown.h), the current incident (kg_incident_slot.h) and what
    the user is still to be told (kg_notice_due.h). Not a
    public header: names shared across those files carry the kg__ prefix.
    They call each other one way only (docs/ARCHITECTURE.md, checked by
    scripts/check-arrows.py).
*/
#ifndef KG_SUP_PRIV_H
#define KG_SUP_PRIV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kg_child.h"
#include "kg_classifier.h"
#include "kg_conninfo.h"
#include "kg_devcheck.h"
#include "kg_diagnosis.h"
#include "kg_evq.h"
#include "kg_failing.h"
#include "kg_front.h"
#include "kg_gate.h"
#include "kg_helper.h"
#include "kg_incident_slot.h"
#include "kg_hangwatch.h"
#include "kg_inband_doctor.h"
#include "kg_preflight.h"
#include "kg_kernel.h"
#include "kg_msg.h"
#include "kg_notice.h"
#include "kg_notice_due.h"
#include "kg_pending.h"
#include "kg_restore.h"
#include "kg_relay_stats.h"
#include "kg_policy.h"
#include "kg_ring.h"
#include "kg_rotlog.h"
#include "kg_parentwatch.h"
#include "kg_shutdown.h"
#include "kg_sigsrc.h"
#include "kg_signer.h"
#include "kg_standby_slot.h"
#include "kg_state.h"
#include "kg_supervisor.h"

#define KG__HELD_MAX 1024         /* held requests while no kernel         */
#define KG__RING_BYTES (256u * 1024u)   /* the kernel's stdout/stderr kept */
#define KG__KLOG_BYTES (32u * 1024u * 1024u) /* the kernel log, twice at most */
#define KG__KLOG_ENV "KGUARD_KERNEL_LOG_BYTES"   /* ... or this many bytes  */
#define KG__START_TIMEOUT_MS 60000
#define KG__EVIDENCE_MS 5000      /* CLOSING: wait for the failing reply   */
#define KG__TERM_GRACE_MS 1000    /* STOPPING: SIGTERM → SIGKILL           */
#define KG__SHUTDOWN_REPLY_MS 1000
#define KG__DROPLOG_BURST 5        /* dropped messages logged in full ...   */
#define KG__DROPLOG_INTERVAL_MS 10000 /* ... per kind per interval          */
#define KG__STANDBY_MAX_FAILURES 3 /* standbys dead before promotion: then cold starts */
#define KG__HELPER_STALL_MS 30000 /* a helper silent this long is killed */
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

/*  The configuration: filled in once by kg_supervisor_new (from the
    command line, the state directory and the environment), then read only
    (the supervisor keeps it as a const pointer). */
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
  char runtime_dir[PATH_MAX];
  char inner_conn_path[PATH_MAX];
  char kernel_log_path[PATH_MAX];
  char *spec_language;          /*  the kernelspec's language, or NULL (owned) */
  kg_policy_config_t policy_config;   /*  as configured, for %kguard status  */
  bool standby;                 /*  keep a warm standby kernel (kg_sup_standby.c) */
  char standby_conn_path[PATH_MAX]; /*  its private connection file          */
} kg__config_t;

struct kg_supervisor_t {
  const kg__config_t *cfg;      /*  owned; immutable after kg_supervisor_new */

  /* transport */
  kg_sigsrc_t *sig;
  kg_parentwatch_t *parent;     /*  the launcher watch, or NULL (off)        */
  bool parent_gone;             /*  the launcher is gone: shutting down      */
  void *ctx;
  kg_conninfo_t *front_info;
  kg_front_t *front;            /*  the frontend's bound sockets, heartbeat
                                    thread and signer (kg_front.h)           */
  kg_standby_slot_t *standby;   /*  the warm standby (--standby), or NULL:
                                    its kernel object, started after READY,
                                    swapped with `kernel` at the next start;
                                    its age, warmth, failures
                                    (kg_standby_slot.h; kg_sup_standby.c)         */
  kg_kernel_t *kernel;          /*  the inner kernel: process, pipes, rings,
                                    connection file, sockets (kg_kernel.h)   */

  /* the kernel */
  kg_state_t state;
  kg_rotlog_t *klog;            /*  logs/kernel-<id>.log (the kernel's rings
                                    write there; bounded, kg_rotlog)         */
  FILE *own_log;                /*  logs/kguard-<id>.log                     */
  kg_pending_t *pending;
  kg_gate_t *gate;              /*  routing decision, stale-request rule     */
  cJSON *info_cache;            /*  last kernel_info_reply content           */
  char *session;                /*  inner kernel's session as last seen
                                    (owned; any length: the kernel chose it) */
  int execution_count;          /*  the running kernel's, as its last
                                    execute_reply said (0: a fresh kernel);
                                    `%kguard` replies carry it              */

  kg_evq_t *evq;                /*  the state machine's event queue (kg__fire) */

  /* deadlines */
  int64_t state_deadline_ms;    /*  start timeout, evidence, grace, backoff  */
  kg__stop_t stop_reason;
  int64_t backoff_ms;           /*  delay chosen by the policy               */

  /* EXITING .. EXITED (the exit phases are states: kg_state.h) */
  kg_shutdown_t *shutdown;      /*  running, the exit code, the frontend's
                                    shutdown_request (kg_shutdown.h)         */

  /* diagnosis (phase 2) */
  kg_classifier_t *rules;
  kg_diagnosis_t *diag;         /*  the running kernel's evidence            */
  kg_diagnosis_t *prev_diag;    /*  the previous kernel's, for its notices   */
  kg_policy_t *policy;
  kg_incident_slot_t *incidents;/*  the current incident and where it was
                                    written (kg_incident_slot.h)             */
  kg_failing_t *failing;        /*  the failing request: id, code, header,
                                    replied yet (kg_failing.h; kg_sup_guard.c
                                    sets it)                                 */
  /*  The running request and ipykernel's stop_on_error probe: kg_gate. */
  int64_t trim_at_ms;           /*  give freed message memory back then      */
  kg_devcheck_t *devcheck;      /*  suspicion and device probe: its id and
                                    deadline, the held reply and idle
                                    (kg_devcheck.h; kg_sup_devcheck.c drives it)    */
  int exit_status;              /*  wait status of the stopped kernel        */
  bool exit_known;              /*  it ended by itself (not killed by us)    */
  kg_backend_t backend;         /*  known backend (diagnosis or probe)       */
  bool diagnostic;              /*  the kernel being started is diagnostic   */
  bool want_diagnostic;         /*  the requested restart is diagnostic      */
  kg_restore_t *restore;        /*  what resume-prepare said, what the next
                                    kernel gets (kg_restore.h)               */
  kg_notice_due_t *due;         /*  the notice due at the next READY, why
                                    kguard is DOWN (kg_notice_due.h)         */
  kg_helper_t *ckpt;            /*  `kguard ckpt resume-prepare`             */
  kg_helper_t *probe;           /*  `python -m kguard.probe` (versions)      */
  char **kernel_envp;           /*  environment of the running kernel        */
  int kernel_starts;            /*  kernels started or promoted, this kguard */
  kg_hangwatch_t *hang;         /*  pings the kernel while a cell runs, and
                                    why it was declared hung (kg_hangwatch.h;
                                    kg_sup_hang.c drives it)                 */
  kg_preflight_t *preflight;    /*  `kguard doctor --preflight` (kg_sup_gpu.c) */
  bool preflight_after_sticky;  /*  this start follows a sticky error        */
  long prev_kernel_pid;         /*  the stopped kernel's pid, for the memory note */
  kg_inband_doctor_t *doctor;   /*  `%kguard doctor` and the cell it answers
                                    (kg_inband_doctor.h; kg_sup_gpu.c)       */

  kg_relay_stats_t *stats;      /*  relayed and dropped counts, the drop log
                                    (kg_relay_stats.h)                       */
};

typedef struct kg_supervisor_t kg_sup_t;

/* kg_sup_util.c (calls no other supervisor file, only its classes) */
/*  Replace the owned string *field with a copy of value (NULL or "" clear
    it; out of memory keeps the old value). */
void kg__set_str(char **field, const char *value);
void kg__free_envp(char ***envp_p);
/*  The earliest of n deadlines (monotonic ms; 0 or less = none), or 0. */
int64_t kg__earliest(const int64_t *deadlines, size_t n);
#define KG__EARLIEST(...) \
  kg__earliest((const int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))   /* free a NULL-terminated array */
/*  The kernel's language (kg_language.h): its cached kernel_info_reply,
    else the kernelspec's, else argv's guess. Borrowed. */
const char *kg__language(const kg_sup_t *S);
/*  The diagnostic kernel's label ("" unless S->diagnostic). Static text. */
const char *kg__diag_label(kg_sup_t *S);
/*  Post event to the state machine's queue (kg_evq; the supervisor bound
    its table): applied now, or after the running transition. */
void kg__fire(kg_sup_t *S, kg_event_t event);
bool kg__events_pending(const kg_sup_t *S);     /* a transition is waiting in the queue */
/*  A message of type could not be sent to `to` ("frontend", "kernel")
    with rc (a peer that does not read: KG_EQFULL; one that is gone:
    -EHOSTUNREACH): counted as unsent, logged at a bounded rate. */
void kg__unsent(kg_sup_t *S, const char *to, const char *type, int rc);
/*  Doom every request queued behind the running cell (they are answered,
    never run) and drop the held non-requests. */
void kg__doom_queue(kg_sup_t *S);

/* kg_sup_kernel.c: the entry action of STARTING; 0, or a negative code with
   the down reason set in S->due (the caller fires SPAWN_FAILED) */
int kg__kernel_start(kg_sup_t *S);

/* kg_supervisor.c */
void kg__enter(kg_sup_t *S, kg_state_t st);   /* a state's entry action */
void kg__on_signal(kg_sup_t *S);              /* drain the signalfd */
void kg__timers(kg_sup_t *S);                 /* act on deadlines reached */
long kg__timeout_ms(kg_sup_t *S);             /* until the next deadline */

/* kg_sup_relay.c */
void kg__on_front(kg_sup_t *S, kg_channel_t ch);
void kg__on_kernel(kg_sup_t *S, kg_channel_t ch);
/*  Log the dropped-message summary if its interval ended (or now, if force). */
void kg__droplog_flush(kg_sup_t *S, int64_t now, bool force);
void kg__dispatch_front(kg_sup_t *S, kg_channel_t ch, kg_msg_t **msg_p);
void kg__flush_held(kg_sup_t *S);
void kg__relay_timers(kg_sup_t *S, int64_t now);
int64_t kg__relay_deadline(const kg_sup_t *S);
void kg__send_nudge(kg_sup_t *S);

/* kg_sup_relay.c, shared with kg_sup_relay_kernel.c */
int kg__relay_recv(kg_sup_t *S, void *socket, const char *side, kg_channel_t ch,
                   kg_msg_t **msg_p);
bool kg__relay_accept(kg_sup_t *S, kg_msg_t *msg, const char *side, kg_channel_t ch);
void kg__relay_note_size(kg_sup_t *S, const kg_msg_t *msg);
bool kg__relay_holds_queue(const kg_pending_entry_t *e);
bool kg__relay_kernel_busy(kg_sup_t *S);
void kg__relay_abort_queue(kg_sup_t *S, kg_msg_t *reply);

/* kg_sup_synth.c */
void kg__publish(kg_sup_t *S, const char *type, const cJSON *parent, cJSON **content_p,
                 cJSON **metadata_p);
void kg__publish_status(kg_sup_t *S, const cJSON *parent, const char *state);
void kg__status_busy(kg_sup_t *S, const cJSON *header);
void kg__status_idle(kg_sup_t *S, const cJSON *header);
void kg__settle_status(kg_sup_t *S, const char *except_id);
void kg__reply(kg_sup_t *S, kg_pending_entry_t *e, const char *type, cJSON **content_p);
void kg__answer_aborted(kg_sup_t *S, kg_pending_entry_t *e, const cJSON *error_metadata);
void kg__answer_error(kg_sup_t *S, kg_pending_entry_t *e, const char *ename,
                      const char *evalue);
void kg__answer_kernel_info(kg_sup_t *S, kg_pending_entry_t *e);
void kg__answer_all(kg_sup_t *S, bool doomed_only, const char *ename, const char *evalue);
void kg__answer_stream(kg_sup_t *S, kg_pending_entry_t *e, const char *text, bool ok);
cJSON *kg__error_content(const char *ename, const char *evalue);

/* kg_sup_guard.c */
void kg__guard_kernel_started(kg_sup_t *S);
void kg__guard_iopub(kg_sup_t *S, kg_msg_t *msg);
void kg__guard_reply(kg_sup_t *S, kg_msg_t *msg);
void kg__guard_failing_done(kg_sup_t *S, kg_msg_t *reply);
void kg__guard_raw(kg_sup_t *S, int which, const char *data, size_t len);
void kg__guard_drain_pipes(kg_sup_t *S);
bool kg__guard_child_exit(kg_sup_t *S);
void kg__guard_enter_closing(kg_sup_t *S);
void kg__guard_after_stop(kg_sup_t *S);
void kg__guard_on_ready(kg_sup_t *S);
void kg__guard_enter_down(kg_sup_t *S);   /* DOWN's notice; then the caller flushes */
void kg__guard_down_answer(kg_sup_t *S);  /* KernelDown for every request still pending */
void kg__guard_confirm(kg_sup_t *S, const kg_match_t *probe);

/* kg_sup_notify.c */
void kg__notice_fill(kg_sup_t *S, const kg_diagnosis_t *diag, kg_notice_info_t *info);
void kg__notice_fill_current(kg_sup_t *S, kg_notice_info_t *info);
void kg__notice_publish(kg_sup_t *S, kg_notice_kind_t kind, const kg_notice_info_t *info,
                        const cJSON *parent, const char *extra);
void kg__incident_open(kg_sup_t *S, bool sticky);
void kg__incident_cell_count(kg_sup_t *S, const char *parent, int count);
void kg__write_incident(kg_sup_t *S);

/* kg_sup_helpers.c */
void kg__start_probe(kg_sup_t *S);
void kg__guard_start_restore(kg_sup_t *S);
void kg__guard_helpers_poll(kg_sup_t *S);
void kg__guard_helpers_timers(kg_sup_t *S, int64_t now);
int64_t kg__helpers_deadline(const kg_sup_t *S);
void kg__restore_progress_text(kg_sup_t *S, char *buf, size_t len);

/* kg_sup_devcheck.c */
bool kg__check_pending(const kg_sup_t *S);
void kg__check_start(kg_sup_t *S);
bool kg__check_iopub(kg_sup_t *S, kg_msg_t *msg);
/*  True if msg is the probe's reply (consumed); *confirmed then says it
    proved the suspicion, with the matching family in *match. */
bool kg__check_reply(kg_sup_t *S, kg_msg_t *msg, bool *confirmed, kg_match_t *match);
int64_t kg__check_deadline(const kg_sup_t *S);
/*  True if the probe's deadline passed: a hung device, confirmed. */
bool kg__check_timers(kg_sup_t *S, int64_t now);

/* kg_sup_inband.c */
bool kg__inband_match(kg_msg_t *msg);
bool kg__guard_inband(kg_sup_t *S, kg_msg_t *msg, kg_channel_t ch);

/* kg_sup_gpu.c: the pre-flight probe and `%kguard doctor` (issue 13) */
int kg__gpu_init(kg_sup_t *S);
void kg__gpu_destroy(kg_sup_t *S);
void kg__preflight_kernel_started(kg_sup_t *S, bool after_sticky);
bool kg__preflight_holds_ready(const kg_sup_t *S);
void kg__preflight_down_notice(kg_sup_t *S);
void kg__doctor_start(kg_sup_t *S, kg_pending_entry_t *e);
void kg__gpu_poll(kg_sup_t *S);
void kg__gpu_timers(kg_sup_t *S, int64_t now);
int64_t kg__gpu_deadline(const kg_sup_t *S);
int kg__gpu_fds(const kg_sup_t *S, int *fds, int max);

/* kg_sup_hang.c: a kernel that stops answering its heartbeat mid-cell */
int kg__hang_init(kg_sup_t *S);
void kg__hang_forget(kg_sup_t *S);            /* the kernel process is gone */
void kg__hang_timers(kg_sup_t *S, int64_t now);
int64_t kg__hang_deadline(const kg_sup_t *S);

/* kg_sup_kenv.c */
void kg__guard_env(kg_sup_t *S, char ***envp_p);
/*  The warm standby's environment: as a plain start's, without the
    diagnostic and resume variables, with KGUARD_STANDBY=1 and
    KGUARD_HANDOVER_FILE=handover (read by kguard.resume() once promoted). */
void kg__guard_env_standby(kg_sup_t *S, const char *handover, char ***envp_p);
/*  The restore's variables alone ("NAME=value", NULL-terminated, possibly
    empty), as the kernel's environment would have them; NULL on allocation
    failure. Free with kg__free_envp. */
char **kg__resume_envp(kg_sup_t *S);

/* kg_sup_standby.c: the warm standby (kg_sup_kernel.c, kg_supervisor.c and the
   loop call it; it calls kg_kernel, kg_kenv and kg_sup_kernel's argv) */
void kg__standby_start(kg_sup_t *S);          /* after READY, if configured */
bool kg__standby_promote(kg_sup_t *S);        /* at STARTING: true if it took over */
void kg__standby_reap(kg_sup_t *S);           /* SIGCHLD: a standby that died */
void kg__standby_drain(kg_sup_t *S);          /* read (and drop) its output */
void kg__standby_timers(kg_sup_t *S, int64_t now);   /* nudges until it is warm */
int64_t kg__standby_deadline(const kg_sup_t *S);     /* the next nudge, or 0 */
void kg__standby_stop(kg_sup_t *S);           /* kguard is exiting */
/* kg_sup_kenv.c */
/*  The inner argv with {connection_file} (and the frontend's path, already
    substituted by jupyter_client) replaced by conn_path; NULL-terminated,
    free with kg__free_envp. NULL on allocation failure. */
char **kg__kernel_argv(kg_sup_t *S, const char *conn_path);

#endif
