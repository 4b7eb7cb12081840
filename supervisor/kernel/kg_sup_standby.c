/*  kg_sup_standby: the warm standby (`kguard kernel --standby`).

    A second inner kernel, started once the active one is ready, from the
    same argv with its own private connection file and sockets (a kg_kernel
    of its own, tag "s"), its environment as the kernel's without the
    diagnostic and resume variables, plus KGUARD_STANDBY=1 (ipython_startup
    imports KGUARD_STANDBY_IMPORTS ahead, and nothing touches a GPU) and
    KGUARD_HANDOVER_FILE. Nothing it says reaches the frontend: its shell
    and iopub are read only until it is warm, its output is read and
    dropped (kept in its log).

    At the next start (a sticky fault, the kernel's death, a restart asked
    for), once the old process is gone and the restore done, the standby is
    promoted: the two kernel objects swap, the hand-over file gets the
    KGUARD_RESUME_* a cold start would have had in its environment, and the
    readiness is seen as for any start (kernel_info). A diagnostic restart
    starts cold (its variables must be in the environment at start). A
    standby that died before promotion is released; after
    KG__STANDBY_MAX_FAILURES such deaths no more are started (a cold start
    is the fallback). Its fields are S->standby.
*/
#include "kg_sup_priv.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"

#define S_BATCH 64   /* messages taken from one of its sockets per wake-up */

/*  The standby's kernel object, or NULL (no --standby). */
static kg_kernel_t *
s_kernel(const kg_sup_t *S)
{
  return S->standby.kernel;
}

/*  The hand-over file of the standby object (beside its connection file). */
static void
s_handover_path(kg_sup_t *S, char *buf, size_t size)
{
  snprintf(buf, size, "%s.handover", kg_kernel_conn_path(s_kernel(S)));
}

void
kg__standby_start(kg_sup_t *S)
{
  kg_kernel_t *standby = s_kernel(S);
  if (!S->cfg->standby || !standby || S->diagnostic || kg_kernel_present(standby)
      || S->standby.failures >= KG__STANDBY_MAX_FAILURES)
    return;
  char handover[PATH_MAX + 16];
  s_handover_path(S, handover, sizeof handover);
  if (unlink(handover) != 0 && errno != ENOENT)
    kg_warning("unable to remove %s: %s", handover, strerror(errno));
  char **argv = kg__kernel_argv(S, kg_kernel_conn_path(standby));
  char **envp = NULL;
  if (argv)
    kg__guard_env_standby(S, handover, &envp);
  int rc = argv && envp ? 0 : KG_ENOMEM;
  if (rc == 0) {
    char banner[PATH_MAX + 100];
    snprintf(banner, sizeof banner, "\n--- kguard: warm standby starting: %s ---\n", argv[0]);
    rc = kg_kernel_start(standby, argv, envp, banner);
  }
  kg__free_envp(&argv);
  kg__free_envp(&envp);
  if (rc) {
    S->standby.failures++;
    kg_warning("the warm standby did not start (%s); restarts start cold",
               rc == KG_ENOMEM ? "out of memory" : kg_kernel_reason(standby));
    return;
  }
  S->standby.started_ms = kg_loop_now(S->loop);
  S->standby.warm = false;
  kg_notice("warm standby started: pid %ld", (long) kg_kernel_pid(standby));
}

/*  What a cold start would have had in its environment (kg__resume_envp),
    as a JSON object, for kguard.resume() in the promoted process; written
    atomically, so the kernel never reads half. 0, or a negative code. */
static int
s_write_handover(kg_sup_t *S, const char *path)
{
  char **vars = kg__resume_envp(S);
  cJSON *o = vars ? cJSON_CreateObject() : NULL;
  for (char **v = vars; o && *v; v++) {
    const char *eq = strchr(*v, '=');
    char *name = strndup(*v, (size_t) (eq - *v));
    if (!name || !cJSON_AddStringToObject(o, name, eq + 1)) {
      cJSON_Delete(o);
      o = NULL;
    }
    free(name);
  }
  kg__free_envp(&vars);
  char *text = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  if (!text)
    return KG_ENOMEM;
  int rc = kg_file_write_atomic(path, text, strlen(text), 0600);
  free(text);
  return rc;
}

bool
kg__standby_promote(kg_sup_t *S)
{
  kg__standby_reap(S);   /* one that ended since the last SIGCHLD was read */
  kg_kernel_t *standby = s_kernel(S);
  if (!standby || !kg_kernel_alive(standby) || S->diagnostic || kg_kernel_present(S->kernel))
    return false;
  /* Never promote a dying standby (killed, not reapable yet): start cold;
     its SIGCHLD releases it later (kg__standby_reap). */
  if (kg_kernel_exiting(standby)) {
    kg_info("the warm standby (pid %ld) is exiting: starting a fresh kernel",
            (long) kg_kernel_pid(standby));
    return false;
  }
  char handover[PATH_MAX + 16];
  s_handover_path(S, handover, sizeof handover);
  int rc = s_write_handover(S, handover);
  if (rc) {
    kg_warning("unable to hand the restore over to the warm standby (%s: %s); "
               "starting a fresh kernel instead", handover, kg_strerror(rc));
    kg_kernel_signal(standby, SIGKILL);
    kg_kernel_release(standby, NULL, NULL);
    return false;
  }
  int64_t age_ms = kg_loop_now(S->loop) - S->standby.started_ms;
  bool warm = S->standby.warm;
  S->standby.kernel = S->kernel;   /* the old kernel's object: the next standby's */
  S->kernel = standby;
  S->standby.warm = false;
  /*  Its readiness is seen again, as the kernel's (nudges on the relay's
      schedule); the ids of the warm-up nudges stay remembered, so their
      late replies are never taken for a frontend's. */
  kg_ready_reset(kg_kernel_ready(S->kernel), kg_clock_mono_ms());
  /*  What a cold start would have had (the pre-flight and %kguard doctor
      run with it); the standby's own lacks only the hand-over. */
  kg__free_envp(&S->kernel_envp);
  kg__guard_env(S, &S->kernel_envp);
  kg_notice("kernel #%d started: pid %ld (the warm standby%s, started %.1f s ago, takes "
            "over%s)", S->kernel_starts, (long) kg_kernel_pid(S->kernel),
            warm ? "" : ", not yet warm",
            (double) age_ms / 1000.0,
            kg_restore_pending(S->restore) ? "; the restore handed over" : "");
  return true;
}

void
kg__standby_reap(kg_sup_t *S)
{
  kg_kernel_t *standby = s_kernel(S);
  if (!standby || !kg_kernel_alive(standby) || kg_kernel_reap(standby) != 1)
    return;
  int st = kg_kernel_release(standby, NULL, NULL);
  bool last = ++S->standby.failures >= KG__STANDBY_MAX_FAILURES;
  char how[64];
  if (WIFSIGNALED(st))
    snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(st));
  else
    snprintf(how, sizeof how, "exit code %d", WEXITSTATUS(st));
  kg_warning("the warm standby ended before it was needed (%s)%s", how,
             last ? "; no more are started" : "");
}

/*  While it warms up: its shell and iopub (nothing of it reaches the
    frontend; its answer to a nudge and any iopub mean it is warm), its
    pipes (read and dropped: kept in its log, never evidence), and its
    nudges. */
static bool
s_warming(const kg_sup_t *S)
{
  kg_kernel_t *standby = s_kernel(S);
  return standby && kg_kernel_alive(standby) && !S->standby.warm;
}

static void *
s_standby_socket(void *arg)
{
  kg__src_t *src = arg;
  return s_warming(src->S) ? kg_kernel_socket(s_kernel(src->S), (kg_channel_t) src->which)
                           : NULL;
}

static int
s_on_standby_socket(kg_loop_t *loop, int id, int events, void *arg)
{
  kg__src_t *src = arg;
  kg_sup_t *S = src->S;
  kg_kernel_t *standby = s_kernel(S);
  kg_ready_t *ready = kg_kernel_ready(standby);
  void *sock = kg_kernel_socket(standby, (kg_channel_t) src->which);
  int n = 0;
  for (; n < S_BATCH; n++) {   /* bounded: the loop goes on */
    kg_msg_t *m = NULL;
    if (kg_msg_recv(sock, ZMQ_DONTWAIT, &m) != 0)
      break;
    if (kg_msg_parse(m, kg_kernel_signer(standby)) == 0) {
      if (src->which == KG_CH_IOPUB)
        kg_ready_saw_iopub(ready);
      else if (kg_ready_is_nudge(ready, kg_msg_parent_id(m))
               && strcmp(kg_msg_type(m), "kernel_info_reply") == 0)
        kg_ready_saw_reply(ready);
    }
    kg_msg_destroy(&m);
  }
  if (kg_ready_done(ready) && !S->standby.warm) {
    S->standby.warm = true;
    kg_notice("warm standby ready: pid %ld, %lld ms after its start",
              (long) kg_kernel_pid(standby),
              (long long) (kg_loop_now(loop) - S->standby.started_ms));
  }
  return n == S_BATCH ? KG_LOOP_MORE : KG_LOOP_OK;
}

static int
s_standby_pipe_fd(void *arg)
{
  kg__src_t *src = arg;
  kg_kernel_t *standby = s_kernel(src->S);
  return standby ? kg_kernel_output_fd(standby, src->which) : -1;
}

static int
s_on_standby_pipe(kg_loop_t *loop, int id, int events, void *arg)
{
  kg_kernel_t *standby = s_kernel(((kg__src_t *) arg)->S);
  if (standby && kg_kernel_present(standby))
    kg_kernel_drain(standby, NULL, NULL);
  return KG_LOOP_OK;
}

static int64_t
s_nudge_when(void *arg)
{
  kg_sup_t *S = arg;
  return s_warming(S) ? kg_ready_deadline(kg_kernel_ready(s_kernel(S))) : 0;
}

static int
s_nudge(kg_loop_t *loop, int id, void *arg)
{
  kg_sup_t *S = arg;
  kg_kernel_t *standby = s_kernel(S);
  kg_ready_t *ready = kg_kernel_ready(standby);
  int64_t now = kg_loop_now(loop);
  if (!kg_ready_nudge_due(ready, now))
    return KG_LOOP_OK;
  cJSON *content = cJSON_CreateObject();
  kg_msg_t *m = kg_msg_new("kernel_info_request", S->session, NULL, &content);
  if (!m)
    return KG_LOOP_OK;
  kg_ready_remember(ready, kg_msg_id(m));
  (void) kg_kernel_send(standby, KG_CH_SHELL, m, KG_OUTQ_NOWAIT);   /* not connected yet: the next nudge */
  kg_msg_destroy(&m);
  kg_ready_nudge_scheduled(ready, now);
  return KG_LOOP_OK;
}

int
kg__standby_attach(kg_sup_t *S)
{
  if (!S->standby.kernel)
    return 0;
  static const kg_channel_t chans[] = {KG_CH_SHELL, KG_CH_IOPUB};
  for (size_t i = 0; i < 2; i++) {
    kg__src_t *src = &S->src.standby[chans[i]];
    *src = (kg__src_t){S, chans[i]};
    if (kg_loop_socket_of(S->loop, s_standby_socket, KG_LOOP_IN, s_on_standby_socket, src) < 0)
      return KG_ENOMEM;
  }
  for (int which = 1; which <= 2; which++) {
    S->src.standby_pipe[which] = (kg__src_t){S, which};
    if (kg_loop_fd_of(S->loop, s_standby_pipe_fd, KG_LOOP_IN, s_on_standby_pipe,
                      &S->src.standby_pipe[which]) < 0)
      return KG_ENOMEM;
  }
  return kg_loop_timer_of(S->loop, s_nudge_when, s_nudge, S) < 0 ? KG_ENOMEM : 0;
}

void
kg__standby_stop(kg_sup_t *S)
{
  kg_kernel_t *standby = s_kernel(S);
  if (standby && kg_kernel_present(standby)) {
    kg_kernel_signal(standby, SIGKILL);
    kg_kernel_release(standby, NULL, NULL);
  }
}
