/*  kg_supervisor: the kernel supervisor's set-up and teardown, its signals
    and the kernel process's end. The loop is kg_sup_loop.c, the states'
    rows kg_sup_states.c, the relay kg_sup_relay*.c, the messages kguard
    writes itself kg_sup_synth.c, the sticky-error machinery kg_sup_guard.c.
*/
#include "kg_sup_priv.h"
#include "kg_language.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_exit.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"
#include "kg_paths.h"
#include "kg_safepath.h"
#include "kg_socket.h"



/* ------------------------------------------------------------------------
   Set-up and teardown. */

/*  The supervisor and its configuration in one allocation: the
    configuration is built in a local, copied here before the supervisor
    exists, and read through the const S->cfg ever after. */
typedef struct {
  kg_sup_t S;                   /*  first: the allocation is freed through it */
  kg__config_t cfg;
} s_alloc_t;

static void
s_config_free(const kg__config_t *C)
{
  if (C->runtime_dir[0])
    kg_paths_remove_tree(C->runtime_dir);
  for (size_t i = 0; C->inner_argv && i < C->inner_argc; i++)
    free(C->inner_argv[i]);
  free(C->inner_argv);
  free(C->spec_language);
}

static int
s_copy_argv(kg__config_t *C, char *const *argv)
{
  size_t n = 0;
  while (argv[n])
    n++;
  if (!(C->inner_argv = calloc(n + 1, sizeof *C->inner_argv)))
    return KG_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (!(C->inner_argv[i] = strdup(argv[i])))
      return KG_ENOMEM;
  C->inner_argc = n;
  return 0;
}

/*  The checkpoint directory: as given (relative to the working directory),
    else ./kguard-checkpoints. */
static void
s_ckpt_dir(kg__config_t *C, const char *given)
{
  if (given && *given == '/') {
    snprintf(C->ckpt_dir, sizeof C->ckpt_dir, "%s", given);
    return;
  }
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    snprintf(cwd, sizeof cwd, ".");
  if (given && *given)
    snprintf(C->ckpt_dir, sizeof C->ckpt_dir, "%.2000s/%.2000s", cwd, given);
  else
    snprintf(C->ckpt_dir, sizeof C->ckpt_dir, "%.3000s/kguard-checkpoints", cwd);
}

/*  Build the configuration in C (zeroed): copies of the command line, the
    state directory (created), the logs' paths, kguard's own paths, the
    private runtime directory (created, 0700) and the connection files in
    it. 0, or a negative code with the reason logged (C is then freed). */
static int
s_config(kg__config_t *C, const kg_supervisor_config_t *config)
{
  snprintf(C->conn_path, sizeof C->conn_path, "%s", config->connection_file);
  snprintf(C->name, sizeof C->name, "%s", config->name ? config->name : "");
  C->inner_message_interrupts = config->interrupt_mode
                                && strcmp(config->interrupt_mode, "message") == 0;
  C->policy_config = config->policy;
  C->stale_window_ms = config->stale_window_ms;
  C->standby = config->standby;
  int rc = s_copy_argv(C, config->inner_argv);
  if (rc == 0 && config->language && *config->language
      && !(C->spec_language = strdup(config->language)))
    rc = KG_ENOMEM;
  if (rc) {
    s_config_free(C);
    return rc;
  }
  rc = kg_paths_state_dir(C->state_dir, sizeof C->state_dir);
  if (rc) {
    kg_error("unable to create the state directory %s: %s", C->state_dir, kg_strerror(rc));
    s_config_free(C);
    return rc;
  }
  char stamp[32];
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  snprintf(C->own_log_path, sizeof C->own_log_path, "%.3900s/logs/kguard-%s-%ld.log",
           C->state_dir, stamp, (long) getpid());
  snprintf(C->kernel_log_path, sizeof C->kernel_log_path, "%.3900s/logs/kernel-%s-%ld.log",
           C->state_dir, stamp, (long) getpid());
  if (kg_paths_exe(C->exe, sizeof C->exe) != 0)
    snprintf(C->exe, sizeof C->exe, "kguard");
  if (kg_paths_python_dir(C->python_dir, sizeof C->python_dir) != 0)
    kg_warning("kguard's Python package was not found (%s); the kernel will not "
               "have kguard.save", C->python_dir);
  s_ckpt_dir(C, config->checkpoints);
  rc = kg_paths_runtime_dir(C->runtime_dir, sizeof C->runtime_dir);
  if (rc) {
    kg_error("unable to create a runtime directory: %s", kg_strerror(rc));
    C->runtime_dir[0] = '\0';
    s_config_free(C);
    return rc;
  }
  snprintf(C->inner_conn_path, sizeof C->inner_conn_path, "%.4000s/kernel.json",
           C->runtime_dir);
  snprintf(C->standby_conn_path, sizeof C->standby_conn_path, "%.4000s/standby.json",
           C->runtime_dir);
  return 0;
}

static void
s_open_logs(kg_sup_t *S)
{
  if ((S->own_log = kg_safepath_fopen_append(S->cfg->own_log_path, 0600)))
    kg_log_set_file(S->own_log);
  else
    kg_warning("unable to open %s: %s", S->cfg->own_log_path, strerror(errno));
  S->klog = kg_rotlog_open(S->cfg->kernel_log_path,
                           kg_rotlog_limit(KG__KLOG_ENV, KG__KLOG_BYTES));
  if (!S->klog)
    kg_warning("unable to open %s: %s", S->cfg->kernel_log_path, strerror(errno));
}

/*  The frontend's connection file. 0, or the exit code kguard ends with. */
static int
s_load_connection(kg_sup_t *S)
{
  char err[256] = "";
  S->front_info = kg_conninfo_new();
  if (!S->front_info)
    return KG_EXIT_SYSTEM;
  int rc = kg_conninfo_load(S->front_info, S->cfg->conn_path, err, sizeof err);
  if (rc == 0)
    return 0;
  if (rc == KG_ECONNFILE || rc == KG_ESCHEME) {
    kg_error("invalid connection file %s: %s", S->cfg->conn_path, *err ? err : kg_strerror(rc));
    return KG_EXIT_USAGE;
  }
  /* err, when set, names the file already. */
  kg_error("unable to read the connection file %s%s%s", *err ? err : S->cfg->conn_path,
           *err ? "" : ": ", *err ? "" : kg_strerror(rc));
  return rc == -ENOENT || rc == -EACCES || rc == -EISDIR ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
}

/*  The rules are data: bad rules are a configuration error. 0, or the
    exit code. */
static int
s_load_rules(kg_sup_t *S, const char *rules_file)
{
  char path[PATH_MAX], err[256] = "";
  if (rules_file)
    snprintf(path, sizeof path, "%s", rules_file);
  else if (getenv("KGUARD_RULES") && *getenv("KGUARD_RULES"))
    snprintf(path, sizeof path, "%s", getenv("KGUARD_RULES"));
  else
    kg_classifier_default_path(path, sizeof path);
  int rc = kg_classifier_load_file(path, &S->rules, err, sizeof err);
  if (rc == 0)
    return 0;
  kg_error("unable to load the rules %s: %s", path, *err ? err : kg_strerror(rc));
  return KG_EXIT_USAGE;
}

/*  A restore chosen before the start (`kguard run --resume`): resume-prepare's
    result, read from path, becomes what the first kernel is given, exactly as
    a restore after a fault is. 0, or the exit code after a line saying why. */
static int
s_load_resume(kg_sup_t *S, const char *path)
{
  char *text = NULL;
  size_t size = 0;
  int rc = kg_file_read(path, 1 << 20, &text, &size);
  if (rc != 0) {
    kg_error("--resume %s: %s", path, kg_strerror(rc));
    return KG_EXIT_USAGE;
  }
  bool ok = kg_restore_take_output(S->restore, text);
  free(text);
  if (!ok) {
    kg_error("--resume %s: not the JSON object `kguard ckpt resume-prepare` prints", path);
    return KG_EXIT_USAGE;
  }
  if (kg_restore_decide(S->restore))
    kg_notice("resuming from step %lld: %s", kg_restore_step(S->restore),
              kg_restore_archive(S->restore));
  else
    kg_notice("--resume %s: nothing to resume from%s%s", path,
              kg_restore_error(S->restore) ? ": " : "",
              kg_restore_error(S->restore) ? kg_restore_error(S->restore) : "");
  return 0;
}

/*  The signals, the loop and the launcher watch, first of all: libzmq's
    threads must inherit the blocked mask. 0, or -1 (said why). */
static int
s_open_signals(kg_sup_t *S)
{
  static const int signals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, KG__PDEATH_SIG, 0};
  signal(SIGPIPE, SIG_IGN);   /* a pipe closed under kguard is a write error */
  S->sig = kg_sigsrc_new(signals);
  if (!S->sig) {
    kg_error("unable to set up the signal fd: %s", strerror(errno));
    return -1;
  }
  S->loop = kg_loop_new();
  if (!S->loop)
    return -1;
  if (kg__parent_init(S) != 0) {
    kg_error("unable to watch the launcher: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/*  The parts that hold no socket: decisions, helpers, GPU probes. 0, or
    -1 (out of memory). */
static int
s_new_parts(kg_sup_t *S)
{
  S->stats = kg_relay_stats_new(KG__DROPLOG_BURST, KG__DROPLOG_INTERVAL_MS);
  S->diag = kg_diagnosis_new(S->rules);
  S->prev_diag = kg_diagnosis_new(S->rules);
  S->policy = kg_policy_new(&S->cfg->policy_config);
  S->gate = kg_gate_new(S->cfg->stale_window_ms);
  S->devcheck = kg_devcheck_new();
  S->restore = kg_restore_new();
  /* kguard.snapshot's memory: owned by this process, so the snapshots a
     kernel took outlive it and its restarts, and end with kguard. */
  S->snapdir = kg_snapdir_open(getenv("KGUARD_RUN_ID"), "");
  S->fsm = kg_fsm_new(kg__states(), S, KG__EVENTS_MAX);
  S->ckpt = kg_helper_new("checkpoint restore", KG__HELPER_OUT_MAX, KG__HELPER_STALL_MS);
  S->probe = kg_helper_new("version probe", KG__HELPER_OUT_MAX, KG__HELPER_STALL_MS);
  S->pending = kg_pending_new(KG__HELD_MAX);
  if (!S->stats || !S->diag || !S->prev_diag || !S->policy || !S->pending || !S->gate
      || !S->devcheck || !S->restore || !S->fsm || !S->ckpt || !S->probe
      || kg__gpu_init(S) != 0)
    return -1;
  kg__hang_init(&S->hang);
  return 0;
}

/*  The ZeroMQ context, the frontend's sockets bound, the kernel objects
    (and the standby's). 0, or -1 (logged). */
static int
s_open_sockets(kg_sup_t *S)
{
  S->ctx = zmq_ctx_new();
  if (!S->ctx) {
    kg_error("unable to create the zmq context: %s", zmq_strerror(errno));
    return -1;
  }
  int rc;
  S->front = kg_front_bind(S->ctx, S->front_info, &rc);   /* logs what failed */
  if (!S->front)
    return -1;
  kg_front_set_loop(S->front, S->loop);
  kg_kernel_opts_t kopts = {.ctx = S->ctx, .runtime_dir = S->cfg->runtime_dir,
                            .conn_path = S->cfg->inner_conn_path, .key_from = S->front_info,
                            .log = S->klog, .ring_bytes = KG__RING_BYTES,
                            .loop = S->loop};
  if (!(S->kernel = kg_kernel_new(&kopts)))
    return -1;
  if (S->cfg->standby) {
    /*  A second kernel object with endpoints of its own; the two swap at a
        promotion (kg_sup_standby.c). */
    kopts.conn_path = S->cfg->standby_conn_path;
    kopts.tag = "s";
    if (!(S->standby.kernel = kg_kernel_new(&kopts)))
      return -1;
  }
  return 0;
}

kg_supervisor_t *
kg_supervisor_new(const kg_supervisor_config_t *config, int *exit_code)
{
  assert(config && exit_code);
  *exit_code = KG_EXIT_SYSTEM;
  kg__config_t cfg = {0};
  if (s_config(&cfg, config) != 0)
    return NULL;
  s_alloc_t *a = calloc(1, sizeof *a);
  if (!a) {
    s_config_free(&cfg);
    return NULL;
  }
  a->cfg = cfg;   /* frozen from here on */
  kg_sup_t *S = &a->S;
  S->cfg = &a->cfg;

  if (s_open_signals(S) != 0)
    goto fail;
  s_open_logs(S);
  if ((*exit_code = s_load_connection(S)) != 0 || (*exit_code = s_load_rules(S, config->rules_file)) != 0)
    goto fail;
  *exit_code = KG_EXIT_SYSTEM;
  if (s_new_parts(S) != 0)
    goto fail;
  if (config->resume_file && (*exit_code = s_load_resume(S, config->resume_file)) != 0)
    goto fail;
  *exit_code = KG_EXIT_SYSTEM;
  if (s_open_sockets(S) != 0)
    goto fail;
  char uuid[37];
  kg_uuid4(uuid);   /* until the kernel's own session is seen */
  kg__set_str(&S->session, uuid);
  if (!S->session)
    goto fail;
  kg_notice("kguard %s supervising `%s` (pid %ld, state dir %s)", S->cfg->name,
            S->cfg->inner_argv[0], (long) getpid(), S->cfg->state_dir);
  *exit_code = 0;
  return S;

fail:
  kg_supervisor_destroy(&S);
  return NULL;
}

void
kg_supervisor_destroy(kg_supervisor_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_sup_t *S = *self_p;
  kg_kernel_destroy(&S->kernel);   /* its sockets close before the context */
  kg_kernel_destroy(&S->standby.kernel);
  kg_helper_destroy(&S->ckpt);
  kg_helper_destroy(&S->probe);
  kg__gpu_destroy(S);
  kg__hang_destroy(&S->hang);   /* its pinger's socket, before the context */
  kg_front_destroy(&S->front);
  if (S->ctx)
    zmq_ctx_term(S->ctx);
  s_config_free(S->cfg);   /* the runtime directory goes */
  kg_conninfo_destroy(&S->front_info);
  kg_relay_stats_destroy(&S->stats);
  kg_pending_destroy(&S->pending);
  kg_gate_destroy(&S->gate);
  kg_fsm_destroy(&S->fsm);
  kg_diagnosis_destroy(&S->diag);
  kg_diagnosis_destroy(&S->prev_diag);
  kg_policy_destroy(&S->policy);
  kg_classifier_destroy(&S->rules);
  kg__incidents_clear(&S->incidents);
  cJSON_Delete(S->info_cache);
  kg__due_set(&S->due, KG__DUE_NONE, NULL);
  kg__due_set_down(&S->due, NULL);
  free(S->shutdown.request_id);
  free(S->session);
  kg_devcheck_destroy(&S->devcheck);
  kg_restore_destroy(&S->restore);
  kg_snapdir_destroy(&S->snapdir);
  kg__failing_clear(&S->failing);
  kg__free_envp(&S->kernel_envp);
  kg_rotlog_close(&S->klog);
  kg_parentwatch_destroy(&S->parent);   /* its sources leave the loop */
  kg_loop_destroy(&S->loop);
  kg_sigsrc_destroy(&S->sig);
  if (S->own_log) {
    kg_log_set_file(NULL);
    fclose(S->own_log);
  }
  free(S);   /* with its configuration: one allocation (s_alloc_t) */
  *self_p = NULL;
}

/* ------------------------------------------------------------------------
   Signals and the kernel's end. */

static void
s_on_child_exit(kg_sup_t *S)
{
  kg__guard_drain_pipes(S);
  char how[64];
  kg_child_describe(kg_kernel_status(S->kernel), how, sizeof how);
  if (kg_state_exiting(kg__state(S))) {
    kg_info("kernel exited (%s)", how);
    kg__fire(S, KG_EV_CHILD_EXIT);
    return;
  }
  if (kg__state(S) == KG_ST_STOPPING || kg__state(S) == KG_ST_KILLING) {
    kg_info("kernel #%d stopped (%s)", S->kernel_starts, how);
    kg__guard_after_stop(S);
    return;
  }
  kg_warning("kernel #%d (pid %ld) died on its own: %s", S->kernel_starts,
             (long) kg_kernel_pid(S->kernel), how);
  S->stop_reason = kg__guard_child_exit(S) ? KG__STOP_STICKY : KG__STOP_DIED;
  kg_gate_fault(S->gate, S->stop_reason == KG__STOP_STICKY ? KG_GATE_FAULT_STICKY
                                                           : KG_GATE_FAULT_DIED,
                kg_clock_mono_ms());
  kg__fire(S, KG_EV_CHILD_EXIT);
}

static int
s_on_signal(kg_loop_t *loop, int sig, void *arg)
{
  kg_sup_t *S = arg;
  if (S->parent && kg_parentwatch_signal(S->parent, sig))
    return KG_LOOP_OK;   /* the launcher watch's hint */
  switch (sig) {
  case SIGCHLD:
    if (kg_kernel_alive(S->kernel) && kg_kernel_reap(S->kernel) == 1)
      s_on_child_exit(S);
    kg__standby_reap(S);
    kg__guard_helpers_poll(S);
    break;
  case SIGINT:
    /* jupyter_client's signal-mode interrupt: forward to the kernel's group. */
    if (kg_kernel_alive(S->kernel)
        && (kg__state(S) == KG_ST_READY || kg__state(S) == KG_ST_STARTING)) {
      kg_info("interrupt: SIGINT to the kernel's process group");
      kg_kernel_signal(S->kernel, SIGINT);
    }
    break;
  default:
    kg_notice("received SIG%s: shutting down", sigabbrev_np(sig));
    if (!kg_state_exiting(kg__state(S)))
      kg__fire(S, KG_EV_SHUTDOWN);
    break;
  }
  return KG_LOOP_OK;
}

int
kg__signals_attach(kg_sup_t *S)
{
  return kg_loop_signals(S->loop, S->sig, s_on_signal, S) < 0 ? KG_ENOMEM : 0;
}
