/*  kg_sup_hang: a kernel that stops answering while a cell runs (stopped
    with SIGSTOP, or wedged with every thread frozen). kguard answers the
    frontend's heartbeat itself, so without this Jupyter would see a live
    kernel while the cell waits forever.

    While the kernel is READY and an execute it was sent is outstanding, a
    kg_kernel_hb pinger (one per kernel process, on its heartbeat endpoint:
    a new process has a fresh socket, and echoes of the old one's pings
    must not count) pings it; ipykernel echoes on a thread of its own, also
    while a cell computes. After KGUARD_KERNEL_HB_MISSES missed beats in a
    row (default 5, one per KGUARD_KERNEL_HB_PERIOD, default 1 s) the kernel
    is declared hung: the event HUNG stops it (SIGCONT first, so a stopped
    process can take its SIGTERM), the requests are answered KernelDied
    naming why (S->hang.reason), a notice says so, and a fresh kernel
    starts with the restore, as after a death. Its fields are S->hang.
*/
#include "kg_sup_priv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_child.h"
#include "kg_error.h"
#include "kg_log.h"

void
kg__hang_init(kg__hang_t *hang)
{
  char err[256] = "";
  if (kg_kernel_hb_config_env(&hang->cfg, err, sizeof err) != 0) {
    kg_warning("%s: the kernel heartbeat check uses its defaults (%d misses of %d ms)", err,
               KG_KHB_MISSES_DEFAULT, KG_KHB_PERIOD_MS_DEFAULT);
    hang->cfg = (kg_kernel_hb_config_t){.period_ms = KG_KHB_PERIOD_MS_DEFAULT,
                                        .max_missed = KG_KHB_MISSES_DEFAULT};
  }
}

void
kg__hang_forget(kg__hang_t *hang)
{
  kg_kernel_hb_destroy(&hang->pinger);
  hang->pid = 0;
}

void
kg__hang_destroy(kg__hang_t *hang)
{
  kg__hang_forget(hang);
  free(hang->reason);
  hang->reason = NULL;
}

/*  The running kernel process is watched (its pinger made when first
    needed, a new one for a new process): false if it cannot be. */
static bool
s_watch(kg_sup_t *S)
{
  pid_t pid = kg_kernel_pid(S->kernel);
  if (S->hang.pinger && pid > 0 && S->hang.pid == pid)
    return true;
  kg__hang_forget(&S->hang);
  char endpoint[1024];
  if (pid <= 0 || kg_kernel_endpoint(S->kernel, KG_CH_HB, endpoint, sizeof endpoint) != 0)
    return false;
  S->hang.pinger = kg_kernel_hb_new(S->ctx, endpoint, &S->hang.cfg);
  S->hang.pid = S->hang.pinger ? pid : 0;
  return S->hang.pinger != NULL;
}

/*  Watched while READY with a request outstanding. */
static bool
s_want(kg_sup_t *S)
{
  return kg__state(S) == KG_ST_READY && kg_kernel_alive(S->kernel)
         && kg_pending_running(S->pending) != NULL;
}

/*  The pinger's next tick; at once when it must be armed or disarmed (a
    pinger that could not be made is tried again a period later). */
static int64_t
s_when(void *arg)
{
  kg_sup_t *S = arg;
  int64_t deadline = S->hang.pinger ? kg_kernel_hb_deadline(S->hang.pinger) : 0;
  bool want = s_want(S);
  if (want && !deadline)
    return S->hang.retry_ms ? S->hang.retry_ms : 1;   /* 1: at once (any time past) */
  if (!want && deadline)
    return 1;
  return deadline;
}

static int
s_tick(kg_loop_t *loop, int id, void *arg)
{
  kg_sup_t *S = arg;
  int64_t now = kg_loop_now(loop);
  if (!s_want(S)) {
    if (S->hang.pinger)
      kg_kernel_hb_arm(S->hang.pinger, false, now);   /* its misses forgotten */
    return KG_LOOP_OK;
  }
  if (!s_watch(S)) {
    S->hang.retry_ms = now + S->hang.cfg.period_ms;
    return KG_LOOP_OK;
  }
  S->hang.retry_ms = 0;
  kg_kernel_hb_arm(S->hang.pinger, true, now);
  if (kg_kernel_hb_tick(S->hang.pinger, now) != KG_KHB_HUNG)
    return KG_LOOP_OK;
  char *why = kg_kernel_hb_describe(&S->hang.cfg, kg_child_proc_state(S->hang.pid));
  if (why) {   /* out of memory keeps the older reason (or none) */
    free(S->hang.reason);
    S->hang.reason = why;
  }
  kg_warning("kernel #%d (pid %ld) hangs: %s; stopping it", S->kernel_starts,
             (long) kg_kernel_pid(S->kernel), S->hang.reason ? S->hang.reason : "no heartbeat");
  kg_kernel_signal(S->kernel, SIGCONT);   /* a stopped process takes SIGTERM only then */
  S->stop_reason = KG__STOP_HUNG;
  kg_gate_fault(S->gate, KG_GATE_FAULT_DIED, now);
  kg__fire(S, KG_EV_HUNG);
  return KG_LOOP_OK;
}

int
kg__hang_attach(kg_sup_t *S)
{
  return kg_loop_timer_of(S->loop, s_when, s_tick, S) < 0 ? KG_ENOMEM : 0;
}
