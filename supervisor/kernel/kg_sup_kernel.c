/*  kg_sup_kernel: the supervisor's side of STARTING's entry action: the
    kernel's argv (its connection file placeholder pointing at the private
    file) and environment (kg_sup_kenv.c), then the kernel object
    (kg_kernel.h) starts it (and resets its readiness), or the warm standby
    takes over. The caller posts SPAWN_FAILED on failure, or tells the guard
    of the fresh kernel: no transition runs in here.
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

int
kg__kernel_start(kg_sup_t *S)
{
  S->stop_reason = KG__STOP_NONE;
  kg_gate_set_running(S->gate, NULL);
  S->kernel_starts++;

  /*  A warm standby takes over: no process to start, only its readiness
      (kernel_info) to see, as for a fresh one. */
  if (kg__standby_promote(S))
    return 0;

  char **argv = kg__kernel_argv(S, kg_kernel_conn_path(S->kernel));
  kg__free_envp(&S->kernel_envp);
  if (argv)
    kg__guard_env(S, &S->kernel_envp);
  int rc = 0;
  if (!argv || !S->kernel_envp) {
    kg__free_envp(&argv);
    kg__due_set_down(&S->due, "unable to prepare the kernel's connection");
    return KG_ENOMEM;
  }
  char banner[PATH_MAX + 100];
  snprintf(banner, sizeof banner, "\n--- kguard: kernel #%d starting: %s%s ---\n",
           S->kernel_starts, argv[0],
           S->diagnostic ? " (diagnostic)" : "");
  rc = kg_kernel_start(S->kernel, argv, S->kernel_envp, banner);
  kg__free_envp(&argv);
  if (rc) {
    kg__due_set_down(&S->due, kg_kernel_reason(S->kernel));
    if (rc == KG_ESPAWN)
      kg_error("%s; kguard stays up and answers requests with KernelDown "
               "(fix the kernelspec, then `%%kguard restart`)", kg_kernel_reason(S->kernel));
    return rc;
  }
  kg_notice("kernel #%d started: pid %ld%s", S->kernel_starts,
            (long) kg_kernel_pid(S->kernel),
            S->diagnostic ? " (diagnostic, not for timing)" : "");
  return 0;
}
