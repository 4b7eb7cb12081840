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

    The pinger per process, its configuration and the hang's reason are
    kg_hangwatch's (issue 9); this file is the wiring: when to watch, and
    what a hang does to the supervisor.

    Arrows: kg_sup_helpers.c (the loop's timer hook), kg_sup_guard.c,
    kg_supervisor.c -> kg_sup_hang.c -> kg_hangwatch, kg_kernel, kg_gate,
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
  kg_kernel_hb_config_t cfg;
  if (kg_kernel_hb_config_env(&cfg, err, sizeof err) != 0) {
    kg_warning("%s: the kernel heartbeat check uses its defaults (%d misses of %d ms)", err,
               KG_KHB_MISSES_DEFAULT, KG_KHB_PERIOD_MS_DEFAULT);
    S->hang = kg_hangwatch_new(S->ctx, NULL);
  } else
    S->hang = kg_hangwatch_new(S->ctx, &cfg);
  return S->hang ? 0 : KG_ENOMEM;
}

void
kg__hang_forget(kg_sup_t *S)
{
  if (S->hang)
    kg_hangwatch_forget(S->hang);
}

/*  The running kernel process is watched (its pinger made when first
    needed, a new one for a new process): false if it cannot be. */
static bool
s_watch(kg_sup_t *S)
{
  pid_t pid = kg_kernel_pid(S->kernel);
  if (kg_hangwatch_watches(S->hang, pid))
    return true;
  kg_hangwatch_forget(S->hang);
  char endpoint[1024];
  if (pid <= 0 || kg_kernel_endpoint(S->kernel, KG_CH_HB, endpoint, sizeof endpoint) != 0)
    return false;
  return kg_hangwatch_watch(S->hang, pid, endpoint) == 0;
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
  int64_t deadline = kg_hangwatch_deadline(S->hang);
  bool want = s_want(S);
  if (want && !deadline)
    return S->hang_retry_ms ? S->hang_retry_ms : 1;
  if (!want && deadline)
    return 1;   /* 1: at once (any time past) */
  return deadline;
}

static int
s_tick(kg_loop_t *loop, int id, void *arg)
{
  kg_sup_t *S = arg;
  int64_t now = kg_loop_now(loop);
  if (!s_want(S)) {
    kg_hangwatch_idle(S->hang, now);
    return KG_LOOP_OK;
  }
  if (!s_watch(S)) {
    S->hang_retry_ms = now + kg_hangwatch_config(S->hang)->period_ms;
    return KG_LOOP_OK;
  }
  S->hang_retry_ms = 0;
  if (!kg_hangwatch_tick(S->hang, now))
    return KG_LOOP_OK;
  const char *why = kg_hangwatch_reason(S->hang);
  kg_warning("kernel #%d (pid %ld) hangs: %s; stopping it", S->kernel_starts,
             (long) kg_kernel_pid(S->kernel), why ? why : "no heartbeat");
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
