/*  kg_sup_kernel: the supervisor's side of STARTING's entry action: the
    start deadline, the kernel's argv (its connection file placeholder
    pointing at the private file) and environment (kg_kenv.c), then the
    kernel object (kg_kernel.h) starts it (and resets its readiness).

    Arrows: kg_supervisor.c -> kg_sup_kernel.c -> kg_kernel.c, kg_kenv.c;
    the caller fires SPAWN_FAILED on failure, or tells the guard of the
    fresh kernel, so no transition runs in here and nothing above is called.
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
  S->state_deadline_ms = kg_clock_mono_ms() + KG__START_TIMEOUT_MS;
  S->stop_reason = KG__STOP_NONE;
  kg_gate_set_running(S->gate, NULL);

  char **argv = s_expand_argv(S);
  kg__free_envp(&S->kernel_envp);
  if (argv)
    kg__guard_env(S, &S->kernel_envp);
  int rc = 0;
  if (!argv || !S->kernel_envp) {
    kg__free_envp(&argv);
    free(S->down_reason);
    S->down_reason = strdup("unable to prepare the kernel's connection");
    return KG_ENOMEM;
  }
  char banner[PATH_MAX + 100];
  snprintf(banner, sizeof banner, "\n--- kguard: kernel #%d starting: %s%s ---\n",
           kg_kernel_generation(S->kernel) + 1, argv[0],
           S->diagnostic ? " (diagnostic)" : "");
  rc = kg_kernel_start(S->kernel, argv, S->kernel_envp, banner);
  kg__free_envp(&argv);
  if (rc) {
    free(S->down_reason);
    S->down_reason = strdup(kg_kernel_reason(S->kernel));
    if (rc == KG_ESPAWN)
      kg_error("%s; kguard stays up and answers requests with KernelDown "
               "(fix the kernelspec, then `%%kguard restart`)", kg_kernel_reason(S->kernel));
    return rc;
  }
  kg_notice("kernel #%d started: pid %ld%s", kg_kernel_generation(S->kernel),
            (long) kg_kernel_pid(S->kernel),
            S->diagnostic ? " (diagnostic, not for timing)" : "");
  return 0;
}
