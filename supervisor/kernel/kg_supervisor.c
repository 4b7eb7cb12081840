/*  kg_supervisor: set-up, the kernel's life cycle, signals and timers.

    The event loop lives in kg_sup_loop.c, routing in kg_sup_relay.c, messages kguard
    writes itself in kg_sup_synth.c, the sticky-error machinery in kg_sup_guard.c;
    this file owns the child process, the entry actions of the state machine
    (kg_state) and the deadlines the loop waits for.
*/
#include "kg_sup_priv.h"
#include "kg_language.h"
#include "kg_sup_parent.h"

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
#include "kg_log.h"
#include "kg_paths.h"
#include "kg_safepath.h"
#include "kg_socket.h"

static void s_apply_cb(void *arg, kg_event_t event);


/* ------------------------------------------------------------------------
   Set-up and teardown. */

/*  The configuration as kg_supervisor_new fills it in: the only writer.
    Everything else reads it through the const S->cfg. */
static kg__config_t *
s_rw(kg_sup_t *S)
{
  return (kg__config_t *) S->cfg;
}

static int
s_open_logs(kg_sup_t *S)
{
  char stamp[32];
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/logs/kguard-%s-%ld.log", s_rw(S)->state_dir, stamp, (long) getpid());
  if ((S->own_log = kg_safepath_fopen_append(path, 0600)))
    kg_log_set_file(S->own_log);
  else
    kg_warning("unable to open %s: %s", path, strerror(errno));
  snprintf(s_rw(S)->kernel_log_path, sizeof s_rw(S)->kernel_log_path, "%.3900s/logs/kernel-%s-%ld.log",
           s_rw(S)->state_dir, stamp, (long) getpid());
  S->klog = kg_rotlog_open(s_rw(S)->kernel_log_path, kg_rotlog_limit(KG__KLOG_ENV, KG__KLOG_BYTES));
  if (!S->klog)
    kg_warning("unable to open %s: %s", s_rw(S)->kernel_log_path, strerror(errno));
  return 0;
}

static int
s_copy_argv(kg_sup_t *S, char *const *argv)
{
  size_t n = 0;
  while (argv[n])
    n++;
  s_rw(S)->inner_argv = calloc(n + 1, sizeof *s_rw(S)->inner_argv);
  if (!s_rw(S)->inner_argv)
    return KG_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (!(s_rw(S)->inner_argv[i] = strdup(argv[i])))
      return KG_ENOMEM;
  s_rw(S)->inner_argc = n;
  return 0;
}

kg_supervisor_t *
kg_supervisor_new(const kg_supervisor_config_t *config, int *exit_code)
{
  *exit_code = KG_EXIT_SYSTEM;
  kg_sup_t *S = calloc(1, sizeof *S);
  if (!S)
    return NULL;
  S->cfg = calloc(1, sizeof *S->cfg);
  if (!S->cfg) {
    free(S);
    return NULL;
  }
  S->execution_count = 0;
  S->state = KG_ST_STARTING;
  snprintf(s_rw(S)->conn_path, sizeof s_rw(S)->conn_path, "%s", config->connection_file);
  snprintf(s_rw(S)->name, sizeof s_rw(S)->name, "%s", config->name ? config->name : "");
  s_rw(S)->inner_message_interrupts = config->interrupt_mode
                                && strcmp(config->interrupt_mode, "message") == 0;
  if (s_copy_argv(S, config->inner_argv) != 0)
    goto fail;
  if (config->language && *config->language && !(s_rw(S)->spec_language = strdup(config->language)))
    goto fail;

  /* Signals first: libzmq's threads must inherit the blocked mask. */
  static const int signals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, 0};
  S->sig = kg_sigsrc_new(signals);
  if (!S->sig) {
    kg_error("unable to set up the signal fd: %s", strerror(errno));
    goto fail;
  }
  if (kg__parent_init(S) != 0) {
    kg_error("unable to watch the launcher: %s", strerror(errno));
    goto fail;
  }
  int rc = kg_paths_state_dir(s_rw(S)->state_dir, sizeof s_rw(S)->state_dir);
  if (rc) {
    kg_error("unable to create the state directory %s: %s", s_rw(S)->state_dir, kg_strerror(rc));
    goto fail;
  }
  s_open_logs(S);
  if (kg_paths_exe(s_rw(S)->exe, sizeof s_rw(S)->exe) != 0)
    snprintf(s_rw(S)->exe, sizeof s_rw(S)->exe, "kguard");
  if (kg_paths_python_dir(s_rw(S)->python_dir, sizeof s_rw(S)->python_dir) != 0)
    kg_warning("kguard's Python package was not found (%s); the kernel will not "
               "have kguard.save", s_rw(S)->python_dir);
  if (config->checkpoints && *config->checkpoints) {
    if (config->checkpoints[0] == '/')
      snprintf(s_rw(S)->ckpt_dir, sizeof s_rw(S)->ckpt_dir, "%s", config->checkpoints);
    else {
      char cwd[PATH_MAX];
      if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, ".");
      snprintf(s_rw(S)->ckpt_dir, sizeof s_rw(S)->ckpt_dir, "%.2000s/%.2000s", cwd, config->checkpoints);
    }
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
      snprintf(cwd, sizeof cwd, ".");
    snprintf(s_rw(S)->ckpt_dir, sizeof s_rw(S)->ckpt_dir, "%.3000s/kguard-checkpoints", cwd);
  }

  /* The frontend's connection file. */
  S->front_info = kg_conninfo_new();
  if (!S->front_info)
    goto fail;
  char err[256] = "";
  rc = kg_conninfo_load(S->front_info, s_rw(S)->conn_path, err, sizeof err);
  if (rc) {
    if (rc == KG_ECONNFILE || rc == KG_ESCHEME) {
      kg_error("invalid connection file %s: %s", s_rw(S)->conn_path,
               *err ? err : kg_strerror(rc));
      *exit_code = KG_EXIT_USAGE;
    } else {
      kg_error("unable to read the connection file %s%s%s", *err ? err : s_rw(S)->conn_path,
               *err ? "" : ": ", *err ? "" : kg_strerror(rc));   /* err names the file */
      *exit_code = rc == -ENOENT || rc == -EACCES || rc == -EISDIR ? KG_EXIT_USAGE
                                                                    : KG_EXIT_SYSTEM;
    }
    goto fail;
  }
  S->stats = kg_relay_stats_new(KG__DROPLOG_BURST, KG__DROPLOG_INTERVAL_MS);
  if (!S->stats)
    goto fail;

  /* Diagnosis: the rules are data; bad rules are a configuration error. */
  char rules_path[PATH_MAX];
  if (config->rules_file)
    snprintf(rules_path, sizeof rules_path, "%s", config->rules_file);
  else if (getenv("KGUARD_RULES") && *getenv("KGUARD_RULES"))
    snprintf(rules_path, sizeof rules_path, "%s", getenv("KGUARD_RULES"));
  else
    kg_classifier_default_path(rules_path, sizeof rules_path);
  rc = kg_classifier_load_file(rules_path, &S->rules, err, sizeof err);
  if (rc) {
    kg_error("unable to load the rules %s: %s", rules_path, *err ? err : kg_strerror(rc));
    *exit_code = KG_EXIT_USAGE;
    goto fail;
  }
  S->diag = kg_diagnosis_new(S->rules);
  S->prev_diag = kg_diagnosis_new(S->rules);
  s_rw(S)->policy_config = config->policy;
  s_rw(S)->standby = config->standby;
  S->policy = kg_policy_new(&s_rw(S)->policy_config);
  S->gate = kg_gate_new(config->stale_window_ms);
  S->devcheck = kg_devcheck_new();
  S->restore = kg_restore_new();
  S->failing = kg_failing_new();
  S->evq = kg_evq_new();
  S->ckpt = kg_helper_new("checkpoint restore", 1024u * 1024u, KG__HELPER_STALL_MS);
  S->probe = kg_helper_new("version probe", 1024u * 1024u, KG__HELPER_STALL_MS);
  S->pending = kg_pending_new(KG__HELD_MAX);
  S->shutdown = kg_shutdown_new();
  S->incidents = kg_incident_slot_new();
  S->due = kg_notice_due_new();
  if (!S->diag || !S->prev_diag || !S->policy || !S->pending || !S->shutdown || !S->incidents
      || !S->due || !S->gate || !S->devcheck || !S->restore || !S->failing || !S->evq
      || !S->ckpt || !S->probe || kg__gpu_init(S) != 0)
    goto fail;
  kg_evq_bind(S->evq, s_apply_cb, S);   /* kg__fire, from any file, applies here */

  rc = kg_paths_runtime_dir(s_rw(S)->runtime_dir, sizeof s_rw(S)->runtime_dir);
  if (rc) {
    kg_error("unable to create a runtime directory: %s", kg_strerror(rc));
    s_rw(S)->runtime_dir[0] = '\0';
    goto fail;
  }
  snprintf(s_rw(S)->inner_conn_path, sizeof s_rw(S)->inner_conn_path, "%.4000s/kernel.json", s_rw(S)->runtime_dir);

  S->ctx = zmq_ctx_new();
  if (!S->ctx) {
    kg_error("unable to create the zmq context: %s", zmq_strerror(errno));
    goto fail;
  }
  if (kg__hang_init(S) != 0)   /* its pinger's sockets live in ctx */
    goto fail;
  S->front = kg_front_bind(S->ctx, S->front_info, &rc);   /* logs what failed */
  if (!S->front)
    goto fail;
  kg_kernel_opts_t kopts = {.ctx = S->ctx, .runtime_dir = S->cfg->runtime_dir,
                            .conn_path = S->cfg->inner_conn_path, .key_from = S->front_info,
                            .log = S->klog, .ring_bytes = KG__RING_BYTES};
  S->kernel = kg_kernel_new(&kopts);
  if (!S->kernel)
    goto fail;
  if (S->cfg->standby) {
    /*  A second kernel object with endpoints of its own; the two swap at a
        promotion (kg_sup_standby.c). */
    snprintf(s_rw(S)->standby_conn_path, sizeof s_rw(S)->standby_conn_path,
             "%.4000s/standby.json", S->cfg->runtime_dir);
    kopts.conn_path = S->cfg->standby_conn_path;
    kopts.tag = "s";
    kg_kernel_t *standby = kg_kernel_new(&kopts);
    if (!(S->standby = kg_standby_slot_new(&standby, KG__STANDBY_MAX_FAILURES)))
      goto fail;
  }
  char uuid[37];
  kg_uuid4(uuid);   /* until the kernel's own session is seen */
  kg__set_str(&S->session, uuid);
  if (!S->session)
    goto fail;
  kg_shutdown_begin(S->shutdown);
  kg_notice("kguard %s supervising `%s` (pid %ld, state dir %s)", s_rw(S)->name, s_rw(S)->inner_argv[0],
            (long) getpid(), s_rw(S)->state_dir);
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
  kg_standby_slot_destroy(&S->standby);
  kg_helper_destroy(&S->ckpt);
  kg_helper_destroy(&S->probe);
  kg__gpu_destroy(S);
  kg_hangwatch_destroy(&S->hang);   /* before the context it has sockets in */
  kg_front_destroy(&S->front);
  if (S->ctx)
    zmq_ctx_term(S->ctx);
  if (S->cfg->runtime_dir[0])
    kg_paths_remove_tree(S->cfg->runtime_dir);
  kg_conninfo_destroy(&S->front_info);
  kg_relay_stats_destroy(&S->stats);
  kg_pending_destroy(&S->pending);
  kg_gate_destroy(&S->gate);
  kg_evq_destroy(&S->evq);
  kg_diagnosis_destroy(&S->diag);
  kg_diagnosis_destroy(&S->prev_diag);
  kg_policy_destroy(&S->policy);
  kg_classifier_destroy(&S->rules);
  kg_incident_slot_destroy(&S->incidents);
  cJSON_Delete(S->info_cache);
  kg_notice_due_destroy(&S->due);
  kg_shutdown_destroy(&S->shutdown);
  free(S->session);
  kg_devcheck_destroy(&S->devcheck);
  kg_restore_destroy(&S->restore);
  kg_failing_destroy(&S->failing);
  kg__free_envp(&S->kernel_envp);
  kg__config_t *C = s_rw(S);
  if (C->inner_argv)
    for (size_t i = 0; i < C->inner_argc; i++)
      free(C->inner_argv[i]);
  free(C->inner_argv);
  free(C->spec_language);
  free(C);
  kg_rotlog_close(&S->klog);
  kg_parentwatch_destroy(&S->parent);
  kg_sigsrc_destroy(&S->sig);
  if (S->own_log) {
    kg_log_set_file(NULL);
    fclose(S->own_log);
  }
  free(S);
  *self_p = NULL;
}

/* ------------------------------------------------------------------------
   The state machine's entry actions. */

/*  The shutdown states' entry actions. Everything ends within
    jupyter_client's 2.5 s: the kernel's shutdown_reply awaited 1 s, then
    0.3 s for it to exit on its own, SIGTERM, SIGKILL, 0.5 s each. */
static void
s_enter_exit(kg_sup_t *S, kg_state_t st)
{
  int64_t now = kg_clock_mono_ms();
  bool alive = kg_kernel_alive(S->kernel);
  if (!alive && st != KG_ST_EXITED) {
    kg__fire(S, KG_EV_CHILD_EXIT);   /* no kernel to wait for */
    return;
  }
  switch (st) {
  case KG_ST_EXITING:
    S->state_deadline_ms = now + KG__SHUTDOWN_REPLY_MS;
    break;
  case KG_ST_EXIT_WAIT: {
    /* The kernel did not answer in time: answer for it. */
    kg_pending_entry_t *e = kg_pending_find(S->pending, kg_shutdown_id(S->shutdown));
    if (e) {
      cJSON *content = cJSON_CreateObject();
      cJSON_AddStringToObject(content, "status", "ok");
      cJSON_AddBoolToObject(content, "restart", kg_shutdown_restart(S->shutdown));
      kg__reply(S, e, "shutdown_reply", &content);
      kg_pending_remove(S->pending, kg_shutdown_id(S->shutdown));
    }
    S->state_deadline_ms = now + 300;
    break;
  }
  case KG_ST_EXIT_TERM:
    kg_kernel_signal(S->kernel, SIGTERM);
    S->state_deadline_ms = now + 500;
    break;
  case KG_ST_EXIT_KILL:
    kg_kernel_signal(S->kernel, SIGKILL);
    S->state_deadline_ms = now + 500;
    break;
  default:   /* EXITED */
    if (alive)
      kg_warning("the kernel did not go away after SIGKILL; exiting anyway");
    S->state_deadline_ms = 0;
    break;
  }
}


void
kg__enter(kg_sup_t *S, kg_state_t st)
{
  switch (st) {
  case KG_ST_STARTING: {
    bool after_sticky = S->stop_reason == KG__STOP_STICKY;   /* reset by the start */
    if (kg__kernel_start(S) != 0)
      kg__fire(S, KG_EV_SPAWN_FAILED);
    else {
      kg__guard_kernel_started(S);   /* fresh evidence for the fresh kernel */
      kg__preflight_kernel_started(S, after_sticky);   /* the device, beside it */
    }
    break;
  }
  case KG_ST_READY:
    S->state_deadline_ms = 0;
    kg_notice("kernel #%d ready (pid %ld)", S->kernel_starts,
              (long) kg_kernel_pid(S->kernel));
    kg__guard_on_ready(S);
    kg__flush_held(S);
    kg__standby_start(S);   /* the next restart's kernel, warming up */
    break;
  case KG_ST_CLOSING:
    S->state_deadline_ms = kg_clock_mono_ms() + KG__EVIDENCE_MS;
    kg__guard_enter_closing(S);
    break;
  case KG_ST_STOPPING:
    if (kg_kernel_alive(S->kernel)) {
      kg_kernel_signal(S->kernel, SIGTERM);
      S->state_deadline_ms = kg_clock_mono_ms() + KG__TERM_GRACE_MS;
    } else
      kg__guard_after_stop(S);
    break;
  case KG_ST_KILLING:
    kg_info("kernel #%d ignored SIGTERM: SIGKILL to its group", S->kernel_starts);
    kg_kernel_signal(S->kernel, SIGKILL);
    S->state_deadline_ms = kg_clock_mono_ms() + 2000;
    break;
  case KG_ST_RESTORING:
    kg__guard_start_restore(S);
    break;
  case KG_ST_BACKOFF:
    S->state_deadline_ms = kg_clock_mono_ms() + S->backoff_ms;
    if (S->backoff_ms <= 0)
      kg__fire(S, KG_EV_TIMER);
    else
      kg_notice("next kernel in %lld ms", (long long) S->backoff_ms);
    break;
  case KG_ST_DOWN:
    S->state_deadline_ms = 0;
    kg__guard_enter_down(S);
    /* In order: KernelDown for each held request (a `%kguard restart`
       among them leaves DOWN; what follows it then waits for the new
       kernel), then for the requests still pending. */
    kg__flush_held(S);
    if (S->state == KG_ST_DOWN && !kg__events_pending(S))
      kg__guard_down_answer(S);
    break;
  case KG_ST_EXITING:
    kg__standby_stop(S);   /* it holds nothing: no grace needed */
    s_enter_exit(S, st);
    break;
  case KG_ST_EXIT_WAIT:
  case KG_ST_EXIT_TERM:
  case KG_ST_EXIT_KILL:
  case KG_ST_EXITED:
    s_enter_exit(S, st);
    break;
  case KG_ST_NONE:
  case KG_ST_COUNT:
    break;
  }
}

/*  Apply one event: the table says where it leads, the new state's entry
    action runs. Events the entry action posts wait in the queue. */
static void
s_apply(kg_sup_t *S, kg_event_t event)
{
  kg_state_t next = kg_state_next(S->state, event);
  if (next == KG_ST_NONE) {
    kg_debug("event %s ignored in state %s", kg_event_name(event), kg_state_name(S->state));
    return;
  }
  kg_info("state %s --%s--> %s", kg_state_name(S->state), kg_event_name(event),
          kg_state_name(next));
  S->state = next;
  kg__enter(S, next);
}

/*  The queue's apply function (bound in kg_supervisor_new): kg__fire posts
    an event; outside a transition it is applied at once (and whatever the
    entry actions post after it, in order); inside one (an entry action
    posting the next event) it waits until the current transition has
    finished, so no transition ever runs inside another. */
static void
s_apply_cb(void *arg, kg_event_t event)
{
  s_apply(arg, event);
}


/* ------------------------------------------------------------------------
   Signals, children, timers. */

static void
s_on_child_exit(kg_sup_t *S)
{
  kg__guard_drain_pipes(S);
  char how[64];
  kg_child_describe(kg_kernel_status(S->kernel), how, sizeof how);
  if (kg_state_exiting(S->state)) {
    kg_info("kernel exited (%s)", how);
    kg__fire(S, KG_EV_CHILD_EXIT);
    return;
  }
  if (S->state == KG_ST_STOPPING || S->state == KG_ST_KILLING) {
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

void
kg__on_signal(kg_sup_t *S)
{
  int sig;
  while ((sig = kg_sigsrc_read(S->sig)) > 0) {
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
          && (S->state == KG_ST_READY || S->state == KG_ST_STARTING)) {
        kg_info("interrupt: SIGINT to the kernel's process group");
        kg_kernel_signal(S->kernel, SIGINT);
      }
      break;
    default:
      kg_notice("received SIG%s: shutting down", sigabbrev_np(sig));
      if (!kg_state_exiting(S->state))
        kg__fire(S, KG_EV_SHUTDOWN);
      break;
    }
  }
}

void
kg__timers(kg_sup_t *S)
{
  int64_t now = kg_clock_mono_ms();
  kg__relay_timers(S, now);
  kg__guard_helpers_timers(S, now);
  switch (S->state) {
  case KG_ST_STARTING:
    if (kg_ready_nudge_due(kg_kernel_ready(S->kernel), now)) {
      kg__send_nudge(S);
      kg_ready_nudge_scheduled(kg_kernel_ready(S->kernel), now);
    }
    if (S->state == KG_ST_STARTING && now >= S->state_deadline_ms) {
      kg_error("kernel #%d did not become ready within %d s", S->kernel_starts,
               KG__START_TIMEOUT_MS / 1000);
      S->stop_reason = KG__STOP_TIMEOUT;
      kg__fire(S, KG_EV_START_TIMEOUT);
    }
    break;
  case KG_ST_CLOSING:
    if (now >= S->state_deadline_ms)
      kg__fire(S, KG_EV_EVIDENCE_DONE);
    break;
  case KG_ST_STOPPING:
    if (now >= S->state_deadline_ms && kg_kernel_alive(S->kernel))
      kg__fire(S, KG_EV_TIMER);   /* → KILLING */
    break;
  case KG_ST_KILLING:
    if (now >= S->state_deadline_ms && kg_kernel_alive(S->kernel)) {
      kg_warning("kernel #%d still not reaped after SIGKILL", S->kernel_starts);
      S->state_deadline_ms = now + 2000;
    }
    break;
  case KG_ST_BACKOFF:
    if (now >= S->state_deadline_ms)
      kg__fire(S, KG_EV_TIMER);
    break;
  case KG_ST_EXITING:
  case KG_ST_EXIT_WAIT:
  case KG_ST_EXIT_TERM:
  case KG_ST_EXIT_KILL:
    if (now >= S->state_deadline_ms)
      kg__fire(S, KG_EV_TIMER);
    break;
  default:
    break;
  }
}

long
kg__timeout_ms(kg_sup_t *S)
{
  int64_t now = kg_clock_mono_ms();
  int64_t next = now + 60000;
  int64_t cands[6] = {0, 0, 0, 0, kg__relay_deadline(S),
                      S->parent ? kg_parentwatch_deadline_ms(S->parent) : 0};
  switch (S->state) {
  case KG_ST_STARTING:
    cands[0] = S->state_deadline_ms;
    cands[1] = kg_ready_deadline(kg_kernel_ready(S->kernel));   /* 0 once ready */
    break;
  case KG_ST_CLOSING:
  case KG_ST_STOPPING:
  case KG_ST_KILLING:
  case KG_ST_BACKOFF:
  case KG_ST_EXITING:
  case KG_ST_EXIT_WAIT:
  case KG_ST_EXIT_TERM:
  case KG_ST_EXIT_KILL:
    cands[0] = S->state_deadline_ms;
    break;
  default:
    break;
  }
  cands[2] = kg__helpers_deadline(S);
  int64_t e = kg__earliest(cands, sizeof cands / sizeof cands[0]);   /* the launcher's too */
  if (e > 0 && e < next)
    next = e;
  return next <= now ? 0 : (long) (next - now);
}
