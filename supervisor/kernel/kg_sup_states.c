/*  kg_sup_states: the kernel's life cycle on the state engine (kg_fsm):
    one row per state of kg_state.h (entry action, deadline, event on
    deadline), the table's next function, the transition log, and the
    state's deadline as a source of the loop. What each state does on
    entry is here; what it waits for is kg_state.c's table. Events are
    posted (kg__fire), never applied inside another transition.
*/
#include "kg_sup_priv.h"

#include <signal.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"

/*  The shutdown phases: everything ends within jupyter_client's 2.5 s. */
#define S_EXIT_WAIT_MS 300        /* EXIT_WAIT: the kernel exits on its own  */
#define S_EXIT_TERM_MS 500        /* EXIT_TERM: SIGTERM, then SIGKILL        */
#define S_EXIT_KILL_MS 500        /* EXIT_KILL: SIGKILL, then kguard exits   */

/* ------------------------------------------------------------------------
   Entry actions. */

static void
s_enter_starting(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  bool after_sticky = S->stop_reason == KG__STOP_STICKY;   /* reset by the start */
  if (kg__kernel_start(S) != 0)
    kg__fire(S, KG_EV_SPAWN_FAILED);
  else {
    kg__guard_kernel_started(S);   /* fresh evidence for the fresh kernel */
    kg__preflight_kernel_started(S, after_sticky);   /* the device, beside it */
  }
}

static void
s_enter_ready(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  kg_notice("kernel #%d ready (pid %ld)", S->kernel_starts, (long) kg_kernel_pid(S->kernel));
  kg__guard_on_ready(S);
  kg__flush_held(S);
  kg__standby_start(S);   /* the next restart's kernel, warming up */
}

static void
s_enter_closing(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg__guard_enter_closing(arg);
}

static void
s_enter_stopping(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  if (ev->id == KG_EV_START_TIMEOUT) {
    kg_error("kernel #%d did not become ready within %d s", S->kernel_starts,
             KG__START_TIMEOUT_MS / 1000);
    S->stop_reason = KG__STOP_TIMEOUT;
  }
  if (kg_kernel_alive(S->kernel))
    kg_kernel_signal(S->kernel, SIGTERM);   /* KILLING when the grace is over */
  else {
    kg_fsm_set_deadline(S->fsm, 0);
    kg__guard_after_stop(S);
  }
}

/*  Entered from STOPPING when the grace ran out, and again every
    KG__KILL_REAP_MS while the kernel is not reaped. */
static void
s_enter_killing(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  if (!kg_kernel_alive(S->kernel)) {
    kg_fsm_set_deadline(S->fsm, 0);
    kg__guard_after_stop(S);
    return;
  }
  if (from == KG_ST_KILLING) {
    kg_warning("kernel #%d still not reaped after SIGKILL", S->kernel_starts);
    return;
  }
  kg_info("kernel #%d ignored SIGTERM: SIGKILL to its group", S->kernel_starts);
  kg_kernel_signal(S->kernel, SIGKILL);
}

static void
s_enter_restoring(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg__guard_start_restore(arg);
}

static void
s_enter_backoff(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  if (S->backoff_ms <= 0) {
    kg__fire(S, KG_EV_TIMER);
    return;
  }
  kg_fsm_set_deadline(S->fsm, kg_fsm_now(S->fsm) + S->backoff_ms);
  kg_notice("next kernel in %lld ms", (long long) S->backoff_ms);
}

static void
s_enter_down(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  kg__guard_enter_down(S);
  /* In order: KernelDown for each held request (a `%kguard restart`
     among them leaves DOWN; what follows it then waits for the new
     kernel), then for the requests still pending. */
  kg__flush_held(S);
  if (kg__state(S) == KG_ST_DOWN && !kg__events_pending(S))
    kg__guard_down_answer(S);
}

/*  The shutdown phases wait for a kernel that is gone: on at once. */
static bool
s_kernel_gone(kg_sup_t *S)
{
  if (kg_kernel_alive(S->kernel))
    return false;
  kg_fsm_set_deadline(S->fsm, 0);
  kg__fire(S, KG_EV_CHILD_EXIT);
  return true;
}

static void
s_enter_exiting(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  kg__standby_stop(S);   /* it holds nothing: no grace needed */
  s_kernel_gone(S);      /* else its shutdown_reply is awaited */
}

/*  The kernel did not answer the shutdown_request in time: kguard answers
    for it. */
static void
s_enter_exit_wait(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  if (s_kernel_gone(S))
    return;
  kg_pending_entry_t *e = kg_pending_find(S->pending, S->shutdown.request_id);
  if (e) {
    cJSON *content = cJSON_CreateObject();
    cJSON_AddStringToObject(content, "status", "ok");
    cJSON_AddBoolToObject(content, "restart", S->shutdown.restart);
    kg__reply(S, e, "shutdown_reply", &content);
    kg_pending_remove(S->pending, S->shutdown.request_id);
  }
}

static void
s_enter_exit_term(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  if (!s_kernel_gone(S))
    kg_kernel_signal(S->kernel, SIGTERM);
}

static void
s_enter_exit_kill(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  if (!s_kernel_gone(S))
    kg_kernel_signal(S->kernel, SIGKILL);
}

static void
s_enter_exited(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_sup_t *S = arg;
  if (kg_kernel_alive(S->kernel))
    kg_warning("the kernel did not go away after SIGKILL; exiting anyway");
  kg_loop_stop(S->loop);   /* the loop ends; kg_supervisor_run returns */
}

/* ------------------------------------------------------------------------
   The rows and the table. */

static const kg_fsm_row_t s_rows[KG_ST_COUNT] = {
  [KG_ST_STARTING]  = {s_enter_starting,  KG__START_TIMEOUT_MS,  KG_EV_START_TIMEOUT},
  [KG_ST_READY]     = {s_enter_ready,     0,                     KG_FSM_NONE},
  [KG_ST_CLOSING]   = {s_enter_closing,   KG__EVIDENCE_MS,       KG_EV_EVIDENCE_DONE},
  [KG_ST_STOPPING]  = {s_enter_stopping,  KG__TERM_GRACE_MS,     KG_EV_TIMER},
  [KG_ST_KILLING]   = {s_enter_killing,   KG__KILL_REAP_MS,      KG_EV_TIMER},
  [KG_ST_RESTORING] = {s_enter_restoring, 0,                     KG_FSM_NONE},
  [KG_ST_BACKOFF]   = {s_enter_backoff,   0 /* the policy's */,  KG_EV_TIMER},
  [KG_ST_DOWN]      = {s_enter_down,      0,                     KG_FSM_NONE},
  [KG_ST_EXITING]   = {s_enter_exiting,   KG__SHUTDOWN_REPLY_MS, KG_EV_TIMER},
  [KG_ST_EXIT_WAIT] = {s_enter_exit_wait, S_EXIT_WAIT_MS,        KG_EV_TIMER},
  [KG_ST_EXIT_TERM] = {s_enter_exit_term, S_EXIT_TERM_MS,        KG_EV_TIMER},
  [KG_ST_EXIT_KILL] = {s_enter_exit_kill, S_EXIT_KILL_MS,        KG_EV_TIMER},
  [KG_ST_EXITED]    = {s_enter_exited,    0,                     KG_FSM_NONE},
};

static int
s_next(void *arg, int state, const kg_fsm_event_t *ev)
{
  return kg_state_next((kg_state_t) state, (kg_event_t) ev->id);
}

static void
s_trace(void *arg, int from, const kg_fsm_event_t *ev, int to)
{
  if (to == KG_FSM_NONE)
    kg_debug("event %s ignored in state %s", kg_event_names[ev->id], kg_state_names[from]);
  else
    kg_info("state %s --%s--> %s", kg_state_names[from], kg_event_names[ev->id],
            kg_state_names[to]);
}

static const kg_fsm_def_t s_def = {
  .nstates = KG_ST_COUNT,
  .nevents = KG_EV_COUNT,
  .state_names = kg_state_names,
  .event_names = kg_event_names,
  .rows = s_rows,
  .next = s_next,
  .trace = s_trace,
};

const kg_fsm_def_t *
kg__states(void)
{
  return &s_def;
}

/* ------------------------------------------------------------------------
   The state's deadline, a source of the loop. */

static int64_t
s_when(void *arg)
{
  return kg_fsm_deadline(((kg_sup_t *) arg)->fsm);
}

static int
s_deadline(kg_loop_t *loop, int id, void *arg)
{
  kg_fsm_tick(((kg_sup_t *) arg)->fsm, kg_loop_now(loop));
  return KG_LOOP_OK;
}

int
kg__state_attach(kg_sup_t *S)
{
  return kg_loop_timer_of(S->loop, s_when, s_deadline, S) < 0 ? KG_ENOMEM : 0;
}
