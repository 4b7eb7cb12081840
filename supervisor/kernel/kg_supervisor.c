/*  kg_supervisor: the kernel supervisor's set-up and teardown, its signals
    and the kernel process's end. The loop is kg_sup_loop.c, the states'
    rows kg_sup_states.c, the relay kg_sup_relay*.c, the messages kguard
    writes itself kg_sup_synth.c, the sticky-error machinery kg_sup_guard.c.
*/
#include "kg_sup_priv.h"
#include "kg_language.h"

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
#include "kg_socket.h"



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
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    S->own_log = fdopen(fd, "a");
    if (S->own_log)
      kg_log_set_file(S->own_log);
    else
      close(fd);
  } else
    kg_warning("unable to open %s: %s", path, strerror(errno));
  snprintf(s_rw(S)->kernel_log_path, sizeof s_rw(S)->kernel_log_path, "%.3900s/logs/kernel-%s-%ld.log",
           s_rw(S)->state_dir, stamp, (long) getpid());
  S->log_fd = open(s_rw(S)->kernel_log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (S->log_fd < 0)
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
  S->log_fd = -1;
  S->execution_count = 0;
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
  signal(SIGPIPE, SIG_IGN);   /* a pipe closed under kguard is a write error */
  S->sig = kg_sigsrc_new(signals);
  if (!S->sig) {
    kg_error("unable to set up the signal fd: %s", strerror(errno));
    goto fail;
  }
  S->loop = kg_loop_new();
  if (!S->loop)
    goto fail;
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
      kg_error("unable to read connection file %s: %s", s_rw(S)->conn_path,
               *err ? err : kg_strerror(rc));
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
  S->fsm = kg_fsm_new(kg__states(), S, KG__EVENTS_MAX);
  S->ckpt = kg_helper_new("checkpoint restore", 1024u * 1024u, KG__HELPER_STALL_MS);
  S->probe = kg_helper_new("version probe", 1024u * 1024u, KG__HELPER_STALL_MS);
  S->pending = kg_pending_new(KG__HELD_MAX);
  S->shutdown = kg_shutdown_new();
  S->incidents = kg_incident_slot_new();
  S->due = kg_notice_due_new();
  if (!S->diag || !S->prev_diag || !S->policy || !S->pending || !S->shutdown || !S->incidents
      || !S->due || !S->gate || !S->devcheck || !S->restore || !S->failing || !S->fsm
      || !S->ckpt || !S->probe || kg__gpu_init(S) != 0)
    goto fail;

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
  kg_front_set_loop(S->front, S->loop);
  kg_kernel_opts_t kopts = {.ctx = S->ctx, .runtime_dir = S->cfg->runtime_dir,
                            .conn_path = S->cfg->inner_conn_path, .key_from = S->front_info,
                            .log_fd = S->log_fd, .ring_bytes = KG__RING_BYTES,
                            .loop = S->loop};
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
  kg_fsm_destroy(&S->fsm);
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
  if (S->log_fd >= 0)
    close(S->log_fd);
  kg_loop_destroy(&S->loop);
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
