/*  kg_exec: the decisions of `kguard exec` on the state engine (kg_fsm,
    the states and rows of kg_exec_states.h): the next function judges an
    event in the current state, acts (stops the tree, reports, starts the
    restore) and names the state it leads to; entering a state arms its
    deadline. Every transition runs from the event queue, never from
    inside another one. */
#include "kg_exec_priv.h"

#include <assert.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_exit.h"
#include "kg_log.h"
#include "kg_throughput.h"

void
kg_ex_run_queue(kg_exec_s *E)
{
  assert(E);
  kg_fsm_run(E->fsm, kg_ex_now(E));
}

/*  Stop the whole group with sig, then KILL after grace_ms; what follows
    is plan's (with the outcome already recorded for an exit). */
static void
s_stop(kg_exec_s *E, int sig, int64_t grace_ms, kg_ex_after_event_t plan)
{
  kg_ex_plan(E, plan);
  E->killed = false;
  kg_ex_kill_tree(E, sig);
  E->stop_grace_ms = grace_ms;
  kg_ex_enter(E, KG_EX_STOPPING);
  if (kg_ex_group_gone(E))
    kg_ex_fire(E, KG_EXE_GROUP_GONE, 0);
}

/*  A scheduler's (or a user's) signal. A second one never waits for what
    the first granted: the group is killed, a restore stopped, node 0's
    coordinator no longer waited for. */
static void
s_preempt(kg_exec_s *E, int sig)
{
  kg_ex_state_t st = kg_ex_state(E);
  if (st == KG_EX_ENDING) {
    kg_notice("exec: signal %d: not waiting for the coordinator to end", sig);
    kg_ex_enter(E, KG_EX_DONE);
    return;
  }
  if (E->preempted && st == KG_EX_STOPPING) {
    kg_notice("exec: second signal %d while stopping: killing the group now", sig);
    kg_ex_kill_tree(E, SIGKILL);
    E->killed = true;
    return;
  }
  if (E->preempted && st == KG_EX_RESTORING) {
    kg_notice("exec: second signal %d while restoring: stopping the restore now", sig);
    kg_child_destroy(&E->helper);
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
    return;
  }
  E->preempted = true;
  E->outcome = KG_EXEC_OUT_RETRYABLE;
  if (E->multi)
    kg_ex_node_send(E, "preempted", NULL);
  switch (st) {
  case KG_EX_RUNNING:
  case KG_EX_SUSPECT: {
    /* The training gets the scheduler's own signal (SIGUSR1 = checkpoint
       now, SIGTERM = the end is near) and the grace to seal and exit. */
    int fwd = sig == SIGHUP ? SIGTERM : sig;
    char grace[32];
    kg_notice("exec: signal %d: passing it to the command, %s to seal and exit, then "
              "exit %d (retryable)", sig,
              kg_throughput_duration(E->cfg.preempt_grace_ms, grace, sizeof grace),
              KG_EXEC_EXIT_RETRYABLE);
    s_stop(E, fwd, E->cfg.preempt_grace_ms, KG_EX_AFTER_EV_STOP_EXIT);
    break;
  }
  case KG_EX_STOPPING:
    kg_ex_plan(E, KG_EX_AFTER_EV_END);   /* no restart after the group is gone */
    break;
  case KG_EX_RESTORING:
    break;                       /* the helper finishes; then exit */
  case KG_EX_BACKOFF:
  case KG_EX_JOINING:
  case KG_EX_WAITING:
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
    break;
  case KG_EX_DONE:
  case KG_EX_ENDING:
  case KG_EX_STATE_COUNT:
    break;
  }
}

/*  A proven fault: the whole local tree is killed at once. The kill grace
    is for healthy processes sealing on a scheduler's signal; after a fault
    nothing this node's processes could still seal would be chosen (it is
    sealed after T), and a poisoned process may ignore TERM for good. */
static void
s_kill_proven(kg_exec_s *E, kg_ex_after_event_t plan)
{
  if (E->mode == KG_EXEC_MODE_AGENT && E->fault_rank >= 0)
    kg_notice("exec: killing rank %d (the poisoned one) and this node's other ranks now",
              E->cfg.node_rank * E->nranks + E->fault_rank);
  else
    kg_notice("exec: killing the command's whole tree now (a proven fault gets no grace)");
  s_stop(E, SIGKILL, E->cfg.kill_grace_ms, plan);
  E->killed = true;
}

/*  Before the policy: a GPU of the job that needs a reset is never
    restarted on, whatever the fault (the same-fault-twice rule is for the
    code's faults). True when it ends the job: 200, for other hardware. */
static bool
s_hardware(kg_exec_s *E, const kg_match_t *m, const char *why)
{
  kg_gpuhealth_result_t res;
  cJSON *rec = NULL;
  char line[sizeof E->hw_line];
  if (!E->gpuwatch
      || kg_gpuwatch_check(E->gpuwatch, m && m->family ? m->family->id : NULL,
                           m ? m->line : NULL, &res, &rec, line, sizeof line)
           != KG_GPUHEALTH_NEEDS_RESET) {
    cJSON_Delete(rec);
    return false;
  }
  snprintf(E->hw_line, sizeof E->hw_line, "%s", line);
  kg_error("exec: %s; drain this node: ending with 200 so the scheduler runs the job on "
           "other hardware (no restart on this GPU)", line);
  kg_ex_incident_begin(E, "hardware", line);
  cJSON *inc = kg_incident_json(E->incident);
  cJSON_AddStringToObject(inc, "proof", why);
  cJSON_AddStringToObject(inc, "action", "drain this node");
  if (rec)
    cJSON_AddItemToObject(inc, "gpu_health", rec);
  kg_ex_incident_write(E);
  E->outcome = KG_EXEC_OUT_HARDWARE;
  s_kill_proven(E, KG_EX_AFTER_EV_STOP_EXIT);
  return true;
}

/*  Multi-node: this node's health check after its proven fault, into its
    incident ("gpu_health", which its report to the coordinator carries);
    a GPU that needs a reset is said here too, in the words the
    coordinator's decision repeats. */
static void
s_health_report(kg_exec_s *E, const kg_match_t *m)
{
  kg_gpuhealth_result_t res;
  cJSON *rec = NULL;
  char line[sizeof E->hw_line];
  if (!E->gpuwatch)
    return;
  if (kg_gpuwatch_check(E->gpuwatch, m && m->family ? m->family->id : NULL,
                        m ? m->line : NULL, &res, &rec, line, sizeof line)
      == KG_GPUHEALTH_NEEDS_RESET)
    kg_error("exec: %s; the coordinator is told: no restart on this GPU", line);
  if (rec) {
    if (res.verdict == KG_GPUHEALTH_NEEDS_RESET)
      cJSON_AddStringToObject(rec, "line", line);
    cJSON_AddItemToObject(kg_incident_json(E->incident), "gpu_health", rec);
  }
}

/*  Proof of a sticky fault: decide with the policy, record, stop. */
static void
s_fault(kg_exec_s *E, const char *why)
{
  /* The failure or the stall after the text is the proof: the suspicion
     becomes the established fault (T stays the text's time). */
  if (kg_diagnosis_suspect(E->diag))
    kg_diagnosis_confirm(E->diag, NULL, kg_clock_wall_ms());
  const kg_match_t *m = kg_diagnosis_match(E->diag);
  E->fault_wall_ms = kg_diagnosis_fault_time(E->diag);
  if (E->fault_wall_ms < 0)
    E->fault_wall_ms = kg_clock_wall_ms();
  kg_diagnosis_signature(E->diag, NULL, E->signature, sizeof E->signature);
  if (E->multi) {
    /* The coordinator counts the budget job-wide and picks the step; this
       node's GPUs are read here, where they are, and the reading travels
       in the report (kg_ex_node_report) so the coordinator never restarts
       the job on a GPU that needs a reset. */
    kg_notice("exec: sticky %s (%s) proven on this node: %s; reporting it to the coordinator",
              m && m->family ? m->family->id : "error", m ? m->line : "", why);
    E->sticky_report = true;
    kg_ex_incident_begin(E, "job", "the coordinator decides for the whole job");
    cJSON_AddStringToObject(kg_incident_json(E->incident), "proof", why);
    s_health_report(E, m);
    kg_ex_incident_write(E);
    kg_ex_node_send(E, "fault", kg_ex_node_report(E));
    s_kill_proven(E, KG_EX_AFTER_EV_STOP_REPORT);
    return;
  }
  if (s_hardware(E, m, why))
    return;
  int64_t delay = 0;
  const char *reason = NULL;
  kg_policy_action_t act = kg_policy_decide(E->policy, kg_ex_now(E), E->signature,
                                            &delay, &reason);
  /* Back-off is for the same failure coming back; another one restarts at
     once. */
  delay = kg_exec_backoff(delay, E->last_signature, E->signature);
  snprintf(E->last_signature, sizeof E->last_signature, "%s", E->signature);
  kg_notice("exec: sticky %s (%s) proven: %s; %s", m && m->family ? m->family->id : "error",
            m ? m->line : "", why, reason ? reason : "");
  kg_ex_incident_begin(E, act == KG_POLICY_RESTART ? "restart" : "give-up", reason);
  cJSON_AddStringToObject(kg_incident_json(E->incident), "proof", why);
  kg_ex_incident_write(E);
  E->delay_ms = delay;
  if (act == KG_POLICY_GIVE_UP) {
    E->outcome = KG_EXEC_OUT_GAVE_UP;
    s_kill_proven(E, KG_EX_AFTER_EV_STOP_EXIT);
  } else {
    s_kill_proven(E, KG_EX_AFTER_EV_STOP_RESTART);
    /* The checkpoint is chosen and verified while the tree goes: nothing
       of it can seal any more (KILL), and what it sealed after T is
       quarantined. */
    kg_ex_restore(E);
  }
}

static void
s_judge(kg_exec_s *E, kg_exec_evidence_t ev, int status, int64_t step)
{
  kg_exec_verdict_t v = kg_exec_judge(ev, status, step, E->step_at_suspicion);
  if (v == KG_EXEC_PROOF) {
    char how[64] = "", d[32];
    if (ev == KG_EXEC_EV_STALL)
      snprintf(how, sizeof how, "no progress for %s",
               kg_throughput_duration(kg_exec_stall_ms(E->cfg.stall_ms, E->pace.longest_gap_ms),
                                      d, sizeof d));
    else
      kg_child_describe(status, how, sizeof how);
    char why[128];
    snprintf(why, sizeof why, "%s after the sticky text",
             ev == KG_EXEC_EV_STALL ? how : ev == KG_EXEC_EV_LEADER_EXIT
             ? "the command failed" : "a process of the group failed");
    if (ev != KG_EXEC_EV_STALL) {
      size_t n = strlen(why);
      snprintf(why + n, sizeof why - n, " (%s)", how);
    }
    s_fault(E, why);
  } else if (v == KG_EXEC_CLEARED) {
    kg_notice("exec: the sticky text was not a fault (%s): carrying on",
              ev == KG_EXEC_EV_STEP ? "training made progress" : "the command succeeded");
    kg_diagnosis_reset(E->diag);
    if (ev == KG_EXEC_EV_LEADER_EXIT) {
      E->outcome = KG_EXEC_OUT_SUCCESS;
      s_stop(E, SIGTERM, E->cfg.kill_grace_ms, KG_EX_AFTER_EV_STOP_EXIT);
    } else {
      kg_ex_enter(E, KG_EX_RUNNING);
    }
  }
}

static void
s_leader_exit_running(kg_exec_s *E, int status)
{
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (kg_diagnosis_feed_exit(E->diag, code, sig, kg_clock_wall_ms()) == KG_DIAG_STICKY) {
    s_fault(E, "the command died with a sticky signature");
    return;
  }
  if (code == 0) {
    E->outcome = KG_EXEC_OUT_SUCCESS;
    if (E->multi)
      kg_ex_node_send(E, "done", NULL);
  } else {
    E->outcome = KG_EXEC_OUT_COMMAND_FAILED;
    E->outcome_status = status;
    if (E->multi) {
      /* Maybe a consequence of a fault on another node: the coordinator
         decides once every node has reported. */
      cJSON *f = cJSON_CreateObject();
      cJSON_AddNumberToObject(f, "code", kg_exec_exit_code(KG_EXEC_OUT_COMMAND_FAILED, status));
      kg_ex_node_send(E, "failed", f);
      s_stop(E, SIGTERM, E->cfg.kill_grace_ms, KG_EX_AFTER_EV_STOP_REPORT);
      return;
    }
  }
  s_stop(E, SIGTERM, E->cfg.kill_grace_ms, KG_EX_AFTER_EV_STOP_EXIT);
}

static void
s_group_gone(kg_exec_s *E)
{
  kg_ex_incident_refresh(E);
  E->incident_open = false;
  if (E->lost) {
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
    return;
  }
  if (E->multi && E->preempted) {
    /* The coordinator ends the job retryable once every node stopped. */
    cJSON *f = cJSON_CreateObject();
    cJSON_AddNumberToObject(f, "gen", E->generation - 1);
    cJSON_AddItemToObject(f, "report", kg_ex_node_report(E));
    kg_ex_node_send(E, "stopped", f);
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
    return;
  }
  if (kg_ex_after(E) == KG_EX_AFTER_REPORT) {
    /* Every node verifies its own ranks' checkpoints, in parallel, now
       that nothing of its tree can seal any more; the coordinator only
       merges the listings. */
    kg_ex_node_list_begin(E);
    if (kg_ex_node_list_next(E) == 0)
      kg_ex_node_send_stopped(E);
    return;
  }
  if (kg_ex_after(E) == KG_EX_AFTER_RESTART && !E->preempted) {
    if (E->restored)
      kg_ex_enter(E, KG_EX_BACKOFF);
    else if (E->helper)
      kg_ex_enter(E, KG_EX_RESTORING);   /* the restore still runs */
    else
      kg_ex_restore(E);
    return;
  }
  if (E->preempted)
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
  else
    kg_ex_done(E, E->outcome, E->outcome_status);
}

/* ---- what each state does with an event --------------------------------
   A state's handler judges the event, acts, and names the state it leads
   to (kg_ex_enter), or none: the event changes nothing. */

static void
s_on_running(kg_exec_s *E, kg_ex_event_t ev)
{
  if (ev.kind == KG_EXE_STICKY) {
    kg_ex_enter(E, KG_EX_SUSPECT);
  } else if (ev.kind == KG_EXE_LEADER_EXIT) {
    s_leader_exit_running(E, (int) ev.arg);
  } else if (ev.kind == KG_EXE_PEER_FAULT) {
    kg_notice("exec: node %lld reported a failure: stopping this node's tree",
              (long long) ev.arg);
    s_stop(E, SIGTERM, E->cfg.kill_grace_ms, KG_EX_AFTER_EV_STOP_REPORT);
  }
}

static void
s_on_suspect(kg_exec_s *E, kg_ex_event_t ev)
{
  if (ev.kind == KG_EXE_PROC_EXIT)
    s_judge(E, KG_EXEC_EV_PROC_EXIT, (int) ev.arg, 0);
  else if (ev.kind == KG_EXE_LEADER_EXIT)
    s_judge(E, KG_EXEC_EV_LEADER_EXIT, (int) ev.arg, 0);
  else if (ev.kind == KG_EXE_STEP)
    s_judge(E, KG_EXEC_EV_STEP, 0, ev.arg);
  else if (ev.kind == KG_EXE_DEADLINE)
    s_judge(E, KG_EXEC_EV_STALL, 0, 0);
  else if (ev.kind == KG_EXE_PEER_FAULT)
    s_fault(E, "the job failed while the sticky text stood");
}

static void
s_on_stopping(kg_exec_s *E, kg_ex_event_t ev)
{
  if (ev.kind == KG_EXE_HELPER_DONE && !E->multi) {
    kg_ex_helper_done(E);   /* the restore, overlapped with the teardown */
  } else if (ev.kind == KG_EXE_GROUP_GONE) {
    s_group_gone(E);
  } else if (ev.kind == KG_EXE_PEER_FAULT && kg_ex_after(E) == KG_EX_AFTER_EXIT && E->multi
             && E->outcome == KG_EXEC_OUT_SUCCESS) {
    /* finished here; the others' trouble is theirs */
  } else if (ev.kind == KG_EXE_DEADLINE && !E->killed) {
    kg_notice("exec: the group did not stop within its grace: SIGKILL");
    kg_ex_kill_tree(E, SIGKILL);
    E->killed = true;
  }
}

static void
s_on_restoring(kg_exec_s *E, kg_ex_event_t ev)
{
  if (ev.kind == KG_EXE_BEGIN)
    kg_ex_start_choose(E);
  else if (ev.kind == KG_EXE_HELPER_DONE)
    kg_ex_helper_done(E);
}

static void
s_on_backoff(kg_exec_s *E, kg_ex_event_t ev)
{
  if (ev.kind == KG_EXE_DEADLINE && kg_ex_devices_free(E)) {
    if (kg_ex_start_command(E) != 0)
      kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
    else
      kg_ex_enter(E, KG_EX_RUNNING);
  }
}

static void
s_on_waiting(kg_exec_s *E, kg_ex_event_t ev)
{
  if (ev.kind == KG_EXE_HELPER_DONE) {
    kg_ex_node_listed(E);
    if (kg_ex_node_list_next(E) == 0)
      kg_ex_node_send_stopped(E);
  } else if (ev.kind == KG_EXE_DECISION) {
    kg_ex_decision(E);
  } else if (ev.kind == KG_EXE_DEADLINE) {
    kg_error("exec: no decision from the coordinator (retryable)");
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
  }
}

/*  Node 0's coordinator ended, or its time to end is up (kg_child_destroy
    ends it in the teardown). */
static void
s_on_ending(kg_exec_s *E, kg_ex_event_t ev)
{
  if (ev.kind == KG_EXE_COORD_ENDED || ev.kind == KG_EXE_DEADLINE)
    kg_ex_enter(E, KG_EX_DONE);
}

/*  Indexed by state; NULL: the state takes no event (DONE). */
static void (*const s_on[KG_EX_STATE_COUNT])(kg_exec_s *, kg_ex_event_t) = {
  [KG_EX_RUNNING] = s_on_running,     [KG_EX_SUSPECT] = s_on_suspect,
  [KG_EX_STOPPING] = s_on_stopping,   [KG_EX_RESTORING] = s_on_restoring,
  [KG_EX_BACKOFF] = s_on_backoff,     [KG_EX_DONE] = NULL,
  [KG_EX_JOINING] = kg_ex_node_join_step, [KG_EX_WAITING] = s_on_waiting,
  [KG_EX_ENDING] = s_on_ending,
};

/*  The coordinator is lost: infrastructure, not a GPU fault. */
static void
s_link_lost(kg_exec_s *E)
{
  char quiet[32];
  kg_error("exec: the coordinator is lost (no message for %s): infrastructure, not a "
           "GPU fault; stopping, exit %d (retryable)",
           kg_throughput_duration(E->cfg.heartbeat_ms, quiet, sizeof quiet),
           KG_EXEC_EXIT_RETRYABLE);
  kg_ex_state_t st = kg_ex_state(E);
  if (st == KG_EX_RUNNING || st == KG_EX_SUSPECT) {
    E->outcome = KG_EXEC_OUT_RETRYABLE;
    s_stop(E, SIGTERM, E->cfg.kill_grace_ms, KG_EX_AFTER_EV_STOP_EXIT);
  } else if (st == KG_EX_STOPPING) {
    kg_ex_plan(E, KG_EX_AFTER_EV_END);
    E->outcome = KG_EXEC_OUT_RETRYABLE;
  } else if (st != KG_EX_DONE && st != KG_EX_ENDING) {
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
  }
}

/*  One event: those every state takes alike first (a scheduler's signal,
    the coordinator lost or failed, a decision that ends the job early),
    then the state's own handler. */
static void
s_step(kg_exec_s *E, kg_ex_event_t ev)
{
  kg_ex_state_t st = kg_ex_state(E);
  if (ev.kind == KG_EXE_SIGNAL) {
    s_preempt(E, (int) ev.arg);
    return;
  }
  if (ev.kind == KG_EXE_LINK_LOST) {
    s_link_lost(E);
    return;
  }
  if (ev.kind == KG_EXE_COORD_ENDED && st == KG_EX_JOINING) {
    /* Its usage code only at the start (before any command ran) means it
       could not start; later the heartbeat rule judges a coordinator that
       is gone. */
    if (WIFEXITED(ev.arg) && WEXITSTATUS(ev.arg) == KG_EXIT_USAGE) {
      kg_error("exec: the coordinator could not start (its message above): exit %d",
               KG_EXIT_USAGE);
      E->exit_code = KG_EXIT_USAGE;
      kg_ex_enter(E, KG_EX_DONE);
    }
    return;
  }
  if (ev.kind == KG_EXE_DECISION && st != KG_EX_WAITING && st != KG_EX_JOINING) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(E->decision, "action");
    if (cJSON_IsString(a) && strcmp(a->valuestring, "end") == 0 && st != KG_EX_DONE
        && st != KG_EX_ENDING)
      kg_ex_end_early(E);
    return;
  }
  if (s_on[st])
    s_on[st](E, ev);
}

/* ---- the rows ---------------------------------------------------------- */

/*  SUSPECT: the suspicion's step and time, and the stall deadline: proof
    comes from a failure before it, or from no progress until it. */
static void
s_enter_suspect(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_exec_s *E = arg;
  E->step_at_suspicion = E->pace.last_step;
  E->fault_mono_ms = kg_fsm_now(E->fsm);
  const kg_match_t *m = kg_diagnosis_suspect(E->diag) ? kg_diagnosis_suspicion(E->diag)
                                                         : kg_diagnosis_match(E->diag);
  int64_t stall = kg_exec_stall_ms(E->cfg.stall_ms, E->pace.longest_gap_ms);
  char words[512];
  kg_exec_stall_words(E->cfg.stall_ms, E->pace.longest_gap_ms, words, sizeof words);
  kg_notice("exec: sticky error text seen (%s): a fault once a process fails or "
            "training stalls for %s", m && m->family ? m->family->id : "?", words);
  kg_fsm_set_deadline(E->fsm, E->fault_mono_ms + stall);
}

/*  STOPPING: the grace its stop gave the tree (the signal went with the
    transition, before anything else it started); then KILL. */
static void
s_enter_stopping(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_exec_s *E = arg;
  kg_fsm_set_deadline(E->fsm, kg_fsm_now(E->fsm) + E->stop_grace_ms);
}

/*  BACKOFF: the policy's (or the coordinator's) delay. */
static void
s_enter_backoff(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_exec_s *E = arg;
  kg_fsm_set_deadline(E->fsm, kg_fsm_now(E->fsm) + (E->delay_ms > 0 ? E->delay_ms : 0));
}

/*  JOINING: the join timeout, and a heartbeat's worth for the last word. */
static void
s_enter_joining(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_exec_s *E = arg;
  kg_fsm_set_deadline(E->fsm,
                      kg_fsm_now(E->fsm) + E->cfg.join_timeout_ms + E->cfg.heartbeat_ms);
}

/*  ENDING: said once, so that a wait is never a mystery. */
static void
s_enter_ending(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_exec_s *E = arg;
  kg_notice("exec: exit %d once the coordinator has delivered its last decision (at most "
            "%d s; a signal ends the wait at once)", E->exit_code, KG_EX_ENDING_MS / 1000);
}

static const kg_fsm_row_t s_rows[KG_EX_STATE_COUNT] = {
  [KG_EX_RUNNING] = {NULL, 0, KG_FSM_NONE},
  [KG_EX_SUSPECT] = {s_enter_suspect, 0, KG_EXE_DEADLINE},
  [KG_EX_STOPPING] = {s_enter_stopping, 0, KG_EXE_DEADLINE},
  [KG_EX_RESTORING] = {NULL, 0, KG_FSM_NONE},
  [KG_EX_BACKOFF] = {s_enter_backoff, 0, KG_EXE_DEADLINE},
  [KG_EX_DONE] = {NULL, 0, KG_FSM_NONE},
  [KG_EX_JOINING] = {s_enter_joining, 0, KG_EXE_DEADLINE},
  [KG_EX_WAITING] = {NULL, KG_EX_DECISION_WAIT_MS, KG_EXE_DEADLINE},
  [KG_EX_ENDING] = {s_enter_ending, KG_EX_ENDING_MS, KG_EXE_DEADLINE},
};

/*  The next function: the decision code, which names the state (if any)
    the event leads to. */
static int
s_next(void *arg, int state, const kg_fsm_event_t *ev)
{
  (void) state;   /* kg_ex_state(E): the same, until a state is named */
  kg_exec_s *E = arg;
  E->to = KG_FSM_NONE;
  E->stepping = true;
  s_step(E, (kg_ex_event_t){(kg_ex_event_kind_t) ev->id, ev->arg});
  E->stepping = false;
  int to = E->to;
  E->to = KG_FSM_NONE;
  return to;
}

static void
s_trace(void *arg, int from, const kg_fsm_event_t *ev, int to)
{
  (void) arg;
  if (to != KG_FSM_NONE && to != from)
    kg_debug("exec: %s -> %s (%s)", kg_ex_state_names[from], kg_ex_state_names[to],
             kg_ex_event_names[ev->id]);
}

static const kg_fsm_def_t s_def = {
  .nstates = KG_EX_STATE_COUNT,
  .nevents = KG_EXE_COUNT,
  .state_names = kg_ex_state_names,
  .event_names = kg_ex_event_names,
  .rows = s_rows,
  .next = s_next,
  .trace = s_trace,
};

const kg_fsm_def_t *
kg_ex_states(void)
{
  return &s_def;
}

int
kg_ex_states_start(kg_exec_s *E, kg_ex_state_t initial)
{
  assert(E && !E->fsm && E->loop);
  E->to = KG_FSM_NONE;
  if (!(E->fsm = kg_fsm_new(&s_def, E, KG_EX_QUEUE))
      || !(E->after = kg_fsm_new(kg_ex_after_states(), E, 4)))
    return KG_ENOMEM;
  int64_t now = kg_ex_now(E);
  int rc = kg_fsm_start(E->after, KG_EX_AFTER_EXIT, now);
  if (rc == 0 && initial == KG_EX_JOINING)
    rc = kg_ex_join_start(E);
  return rc != 0 ? rc : kg_fsm_start(E->fsm, (int) initial, now);
}

void
kg_exec_config_default(kg_exec_config_t *config)
{
  memset(config, 0, sizeof *config);
  config->max_restarts = 3;
  config->stall_ms = -1;   /* auto: kg_exec_stall_ms */
  config->kill_grace_ms = 10000;
  config->preempt_grace_ms = 25000;
  config->backoff_initial_ms = 1000;
  config->nnodes = 1;
  config->nproc_per_node = 1;
  config->heartbeat_ms = 30000;
  config->join_timeout_ms = 600000;   /* torchrun's rendezvous join timeout */
  config->standby_imports = "torch";
  config->standby_max_age_ms = 3600000;
}
