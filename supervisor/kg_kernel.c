/*  kg_kernel: starting the inner kernel (the entry action of STARTING): a
    fresh private connection file with its own random key in kguard's 0700
    runtime directory, the kernel-side sockets (one routing id for shell,
    control and stdin so the kernel's input_request finds its way), the
    argv with {connection_file} (or the frontend's path, already substituted
    by jupyter_client) pointing at that file, the environment (kg_kenv.c),
    and the process (kg_child) with captured pipes.

    Arrows: kg_supervisor.c -> kg_kernel.c -> kg_kenv.c, kg_guard.c
    (kg__guard_kernel_started); the caller fires SPAWN_FAILED on failure, so
    no transition runs in here.
*/
#include "kg_sup_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"
#include "kg_socket.h"

static int
s_connect_kernel(kg_sup_t *S)
{
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    kg_socket_close(&S->kern[ch]);
  snprintf(S->routing_id, sizeof S->routing_id, "kguard-%ld-%d", (long) getpid(), S->generation);
  static const kg_channel_t chans[] = {KG_CH_SHELL, KG_CH_IOPUB, KG_CH_STDIN, KG_CH_CONTROL};
  for (size_t i = 0; i < 4; i++) {
    int rc = 0;
    S->kern[chans[i]] = kg_socket_connect(S->ctx, S->inner_info, chans[i], S->routing_id, &rc);
    if (!S->kern[chans[i]]) {
      kg_error("unable to connect to the kernel's %s channel: %s", kg_channel_name(chans[i]),
               kg_strerror(rc));
      return rc ? rc : KG_EINTERNAL;
    }
  }
  return 0;
}

/*  Replace every occurrence of pattern in a with repl (new string). */
static char *
s_replace(const char *a, const char *pattern, const char *repl)
{
  size_t pl = strlen(pattern), rl = strlen(repl), count = 0;
  for (const char *h = a; pl && (h = strstr(h, pattern)); h += pl)
    count++;
  char *out = malloc(strlen(a) + count * rl + 1);
  if (!out)
    return NULL;
  char *o = out;
  const char *h;
  while (pl && (h = strstr(a, pattern))) {
    memcpy(o, a, (size_t) (h - a));
    o += h - a;
    memcpy(o, repl, rl);
    o += rl;
    a = h + pl;
  }
  strcpy(o, a);
  return out;
}

/*  The inner argv with its connection file placeholder pointing at the inner
    kernel's own file. jupyter_client formats the WHOLE kernelspec argv, so
    the inner part arrives with the frontend's path already in place of
    {connection_file}: both forms are replaced. */
static char **
s_expand_argv(kg_sup_t *S)
{
  char **argv = calloc(S->cfg->inner_argc + 1, sizeof *argv);
  if (!argv)
    return NULL;
  for (size_t i = 0; i < S->cfg->inner_argc; i++) {
    char *a = s_replace(S->cfg->inner_argv[i], "{connection_file}", S->cfg->inner_conn_path);
    argv[i] = a ? s_replace(a, S->cfg->conn_path, S->cfg->inner_conn_path) : NULL;
    free(a);
    if (!argv[i]) {
      kg__free_envp(&argv);
      return NULL;
    }
  }
  return argv;
}

int
kg__kernel_start(kg_sup_t *S)
{
  S->generation++;
  S->got_info_reply = false;
  S->got_iopub = false;
  S->nudge_interval_ms = 50;
  S->next_nudge_ms = kg_clock_mono_ms();
  S->state_deadline_ms = kg_clock_mono_ms() + KG__START_TIMEOUT_MS;
  S->stop_reason = KG__STOP_NONE;
  S->we_killed = false;
  kg_gate_set_running(S->gate, NULL);

  snprintf(S->inner_info->transport, sizeof S->inner_info->transport, "ipc");
  snprintf(S->inner_info->ip, sizeof S->inner_info->ip, "%.200s/k", S->cfg->runtime_dir);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    S->inner_info->ports[ch] = 1 + ch + 5 * (S->generation % 10000);
  /* The frontend's key (the file lives in kguard's 0700 runtime dir): the
     kernel's signatures go to the frontend as they are, no HMAC again. */
  int rc = kg_conninfo_share_key(S->inner_info, S->front_info);
  if (rc == 0) {
    kg_signer_destroy(&S->inner_signer);
    S->inner_signer = kg_signer_new(S->inner_info->key, S->inner_info->key_len, 0);
    if (!S->inner_signer)
      rc = KG_ENOMEM;
  }
  if (rc == 0 && (rc = kg_conninfo_save(S->inner_info, S->cfg->inner_conn_path)) != 0)
    kg_error("unable to write %s: %s", S->cfg->inner_conn_path, kg_strerror(rc));
  if (rc == 0)
    rc = s_connect_kernel(S);

  char **argv = rc == 0 ? s_expand_argv(S) : NULL;
  kg__free_envp(&S->kernel_envp);
  if (argv)
    kg__guard_env(S, &S->kernel_envp);
  if (!argv || !S->kernel_envp) {
    if (rc == 0)
      rc = KG_ENOMEM;
  }
  if (rc == 0) {
    kg_ring_clear(S->out_ring);
    kg_ring_clear(S->err_ring);
    if (S->log_fd >= 0)
      dprintf(S->log_fd, "\n--- kguard: kernel #%d starting: %s%s ---\n", S->generation,
              argv[0], S->diagnostic ? " (diagnostic)" : "");
    /* The keeper: the kernel's whole group (DataLoader workers, Popen'd
       children) dies with kguard, even when kguard is SIGKILLed. */
    kg_child_opts_t opts = {.argv = argv, .envp = S->kernel_envp, .capture = true,
                            .keeper = true};
    rc = kg_child_spawn(&opts, &S->child);
    if (rc) {
      free(S->down_reason);
      char buf[PATH_MAX + 200];
      snprintf(buf, sizeof buf, "unable to start the kernel `%s`: %s", argv[0],
               kg_strerror(rc));
      S->down_reason = strdup(buf);
      kg_error("%s; kguard stays up and answers requests with KernelDown "
               "(fix the kernelspec, then `%%kguard restart`)", buf);
    }
  }
  kg__free_envp(&argv);
  if (rc) {
    if (!S->down_reason)
      S->down_reason = strdup("unable to prepare the kernel's connection");
    return rc;
  }
  kg__guard_kernel_started(S);
  kg_notice("kernel #%d started: pid %ld%s", S->generation, (long) kg_child_pid(S->child),
            S->diagnostic ? " (diagnostic, not for timing)" : "");
  return 0;
}

