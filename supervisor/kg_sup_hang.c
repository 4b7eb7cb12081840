/*  kg_sup_hang: a kernel that stops answering while a cell runs (issue 10:
    stopped with SIGSTOP, or wedged with every thread frozen). kguard answers
    the frontend's heartbeat itself, so without this Jupyter would see a live
    kernel while the cell waits forever.

    While the kernel is READY and an execute it was sent is outstanding, a
    kg_kernel_hb pinger (one per kernel process, on its heartbeat endpoint)
    pings it; ipykernel echoes on a thread of its own, also while a cell
    computes. After KGUARD_KERNEL_HB_MISSES missed beats in a row (default
    5, one per KGUARD_KERNEL_HB_PERIOD, default 1 s) the kernel is declared
    hung: the event HUNG stops it (SIGCONT first, so a stopped process can
    take its SIGTERM), the requests are answered KernelDied naming why, a
    notice says so, and a fresh kernel starts with the restore, as after a
    death.

    Arrows: kg_helpers.c (the loop's timer hook), kg_guard.c,
    kg_supervisor.c -> kg_sup_hang.c -> kg_kernel_hb, kg_kernel, kg_gate,
    kg_sup_util (kg__fire). Never up.
*/
#include "kg_sup_priv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"

int
kg__hang_init(kg_sup_t *S)
{
  char err[256] = "";
  if (kg_kernel_hb_config_env(&S->hb_cfg, err, sizeof err) != 0) {
    kg_warning("%s: the kernel heartbeat check uses its defaults (%d misses of %d ms)", err,
               KG_KHB_MISSES_DEFAULT, KG_KHB_PERIOD_MS_DEFAULT);
    S->hb_cfg = (kg_kernel_hb_config_t){.period_ms = KG_KHB_PERIOD_MS_DEFAULT,
                                        .max_missed = KG_KHB_MISSES_DEFAULT};
  }
  return 0;
}

void
kg__hang_forget(kg_sup_t *S)
{
  kg_kernel_hb_destroy(&S->hb);
  S->hb_pid = 0;
}

/*  The pinger of the running kernel process, made when first needed. */
static kg_kernel_hb_t *
s_pinger(kg_sup_t *S)
{
  pid_t pid = kg_kernel_pid(S->kernel);
  if (S->hb && S->hb_pid == pid)
    return S->hb;
  kg__hang_forget(S);
  char endpoint[1024];
  if (pid <= 0 || kg_kernel_endpoint(S->kernel, KG_CH_HB, endpoint, sizeof endpoint) != 0)
    return NULL;
  S->hb = kg_kernel_hb_new(S->ctx, endpoint, &S->hb_cfg);
  if (S->hb)
    S->hb_pid = pid;
  return S->hb;
}

void
kg__hang_timers(kg_sup_t *S, int64_t now)
{
  bool want = S->state == KG_ST_READY && kg_kernel_alive(S->kernel)
              && kg_pending_running(S->pending) != NULL;
  if (!want) {
    if (S->hb)
      kg_kernel_hb_arm(S->hb, false, now);
    return;
  }
  kg_kernel_hb_t *hb = s_pinger(S);
  if (!hb)
    return;
  kg_kernel_hb_arm(hb, true, now);
  if (kg_kernel_hb_tick(hb, now) != KG_KHB_HUNG)
    return;
  char st = kg_kernel_hb_proc_state(kg_kernel_pid(S->kernel));
  char why[256];
  snprintf(why, sizeof why, "it stopped answering its heartbeat for %.3g s%s",
           (double) (S->hb_cfg.period_ms * S->hb_cfg.max_missed) / 1000.0,
           st == 'T' ? " (the process is stopped: SIGSTOP)" : "");
  kg__set_str(&S->hang_reason, why);
  kg_warning("kernel #%d (pid %ld) hangs: %s; stopping it", S->kernel_starts,
             (long) kg_kernel_pid(S->kernel), why);
  kg_kernel_signal(S->kernel, SIGCONT);   /* a stopped process takes SIGTERM only then */
  S->stop_reason = KG__STOP_HUNG;
  kg_gate_fault(S->gate, KG_GATE_FAULT_DIED, now);
  kg__fire(S, KG_EV_HUNG);
}

int64_t
kg__hang_deadline(const kg_sup_t *S)
{
  return S->hb ? kg_kernel_hb_deadline(S->hb) : 0;
}
