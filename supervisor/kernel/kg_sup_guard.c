/*  kg_sup_guard: what kguard does with what the kernel says.

    Every evidence source goes to kg_diagnosis: iopub `error` and `stream`,
    error execute_replies, the raw stdout/stderr pipes and the process's
    death. ADVICE: a notice, a record, no restart. STICKY: the gate closes
    (CLOSING), every other outstanding request is doomed (answered
    KernelRestarted), an incident record is written (a probe child adds the
    versions, never the poisoned process), the group is stopped, kg_policy
    decides, a checkpoint child restores the last consistent checkpoint
    sealed before T, and the fresh kernel gets the KGUARD_RESUME_* variables.
    Once the kernel is gone, every request it said busy for without saying
    idle gets its idle from kguard (after the failing cell's notice).
    The probe and checkpoint children are kg_sup_helpers.c's, `%kguard`
    cells kg_sup_inband.c's, the kernel's environment kg_sup_kenv.c's.
*/
#include "kg_sup_priv.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_jsonscan.h"
#include "kg_log.h"
#include "kg_notice.h"


/* ------------------------------------------------------------------------
   Evidence. */

static void
s_set_failing(kg_sup_t *S, const char *parent)
{
  kg_pending_entry_t *e = parent ? kg_pending_find(S->pending, parent) : NULL;
  if (!e && kg_gate_running(S->gate))
    e = kg_pending_find(S->pending, kg_gate_running(S->gate));   /* the kernel said busy for it */
  /* Only a guess if neither the evidence nor the kernel's busy status named it. */
  bool guessed = e == NULL;
  if (!e)
    e = kg_pending_running(S->pending);
  if (e)
    kg__failing_set(&S->failing, e->msg_id, e->code, e->header, guessed);
  else
    kg__failing_set(&S->failing, parent, NULL, NULL, guessed);
}

static void
s_on_event(kg_sup_t *S, kg_diag_event_t ev, const char *parent)
{
  if (ev == KG_DIAG_NONE)
    return;
  if (ev == KG_DIAG_SUSPECT) {
    const kg_match_t *sm = kg_diagnosis_suspicion(S->diag);
    if (kg__state(S) != KG_ST_READY) {
      kg_notice("GPU error text (%s) in the output while the kernel is %s: logged only",
                sm && sm->family ? sm->family->id : "?", kg_state_name(kg__state(S)));
      kg_diagnosis_clear_suspicion(S->diag);
      return;
    }
    kg_devcheck_suspected(S->devcheck, kg_clock_mono_ms());
    kg_warning("suspicion: GPU error text (%s) in %s output, not raised by the cell; the "
               "device is probed when the cell ends", sm && sm->family ? sm->family->id : "?",
               sm && sm->source == KG_SRC_STREAM ? "printed" : "raw pipe");
    return;
  }
  const kg_match_t *m = kg_diagnosis_match(S->diag);
  if (kg_diagnosis_backend(S->diag) != KG_BACKEND_UNKNOWN)
    S->backend = kg_diagnosis_backend(S->diag);
  if (ev == KG_DIAG_ADVICE) {
    kg_pending_entry_t *e = parent ? kg_pending_find(S->pending, parent) : NULL;
    if (!e)
      e = kg_pending_running(S->pending);
    kg_warning("non-sticky GPU error (%s): advice, no restart",
               m && m->family ? m->family->id : "?");
    /* A record of the advice, then the notice (the record's path is in it),
       naming the advised cell; the sticky failing request is kept aside. */
    kg__failing_t sticky = S->failing;
    S->failing = (kg__failing_t){0};
    kg__failing_set(&S->failing, e ? e->msg_id : NULL, e ? e->code : NULL, NULL, e == NULL);
    kg__incident_set_aside(&S->incidents);   /* the sticky one, if any */
    kg__incident_open(S, false);
    kg_notice_info_t info;
    kg__notice_fill_current(S, &info);
    info.restored_step = -1;
    info.checkpoint_restored = false;
    kg__notice_publish(S, KG_NOTICE_ADVICE, &info, e ? e->header : NULL, NULL);
    kg__incident_put_back(&S->incidents);
    kg__failing_clear(&S->failing);
    S->failing = sticky;
    return;
  }
  /* STICKY */
  if (kg__state(S) != KG_ST_READY && kg__state(S) != KG_ST_STARTING)
    return;
  kg_error("sticky GPU error (%s, rule %s): closing the gate",
           m && m->family ? m->family->id : "?", m && m->rule_id ? m->rule_id : "?");
  s_set_failing(S, parent ? parent : kg_diagnosis_parent(S->diag));
  S->stop_reason = KG__STOP_STICKY;
  kg_gate_fault(S->gate, KG_GATE_FAULT_STICKY, kg_clock_mono_ms());
  if (kg__state(S) == KG_ST_STARTING) {
    kg__incident_open(S, true);   /* no CLOSING from STARTING: record it now */
    kg__start_probe(S);           /* versions, from a fresh process */
  }
  kg__fire(S, KG_EV_STICKY);
}

/*  The device probe confirmed the suspicion (probe: its error as matched,
    NULL for no answer): a sticky fault with T at the first evidence. */
void
kg__guard_confirm(kg_sup_t *S, const kg_match_t *probe)
{
  kg_diag_event_t ev = kg_diagnosis_confirm(S->diag, probe, kg_clock_wall_ms());
  if (ev == KG_DIAG_STICKY)
    kg_gate_fault(S->gate, KG_GATE_FAULT_STICKY, kg_devcheck_suspect_ms(S->devcheck));
  s_on_event(S, ev, NULL);
}

void
kg__guard_kernel_started(kg_sup_t *S)
{
  /* Keep the previous kernel's evidence for the notice shown once the fresh
     kernel is ready. */
  kg_diagnosis_t *t = S->prev_diag;
  S->prev_diag = S->diag;
  S->diag = t;
  kg_diagnosis_reset(S->diag);
  if (S->backend != KG_BACKEND_UNKNOWN)
    kg_diagnosis_set_backend(S->diag, S->backend);
  free(S->failing.msg_id);   /* no reply can come from a gone kernel; */
  S->failing.msg_id = NULL;  /* its code and header stay for the notice */
  S->failing.replied = false;
  kg_gate_abort_clear(S->gate);   /* that kernel is gone */
  kg_devcheck_reset(S->devcheck);   /* its probe and held reply too */
  /* The fresh kernel counts from the start: `%kguard` cells answered before
     its first reply carry its count (0), not the dead kernel's. */
  S->execution_count = 0;
}

/*  A stream's text, piece by piece (kg_jsonscan_stream). */
typedef struct {
  kg_sup_t *S;
  bool is_stderr;               /* set by kg_jsonscan_stream before any piece */
  const char *parent;
  kg_diag_event_t ev;
} s_stream_feed_t;

static int
s_stream_piece(const char *text, size_t len, void *arg)
{
  s_stream_feed_t *f = arg;
  kg_diag_event_t ev = kg_diagnosis_feed(f->S->diag, KG_SRC_STREAM,
                                         f->is_stderr ? "stderr" : "stdout", f->parent, text,
                                         len, kg_clock_wall_ms());
  if (ev > f->ev)
    f->ev = ev;
  return 0;
}

/*  The whole lines of a stream's text may go undecoded when none of them
    can matter (kg_diagnosis_may_skip_json): most output, read raw once. */
static bool
s_stream_skip(const char *raw, size_t len, void *arg)
{
  s_stream_feed_t *f = arg;
  return kg_diagnosis_may_skip_json(f->S->diag, raw, len);
}

#define S_STREAM_PIECE (256u * 1024u)   /* raw bytes of a stream's text per feed */

void
kg__guard_iopub(kg_sup_t *S, kg_msg_t *msg)
{
  const char *type = kg_msg_type(msg);
  bool is_error = strcmp(type, "error") == 0;
  if (!is_error && strcmp(type, "stream") != 0)
    return;
  const char *parent = kg_msg_parent_id(msg);
  kg_diag_event_t ev;
  if (is_error) {
    cJSON *content = kg_msg_json(msg, KG_PART_CONTENT);
    if (!content)
      return;
    ev = kg_diagnosis_feed_error(S->diag, KG_SRC_IOPUB_ERROR, content, parent, kg_clock_wall_ms());
  } else {
    /* Read straight from the frame in bounded pieces: a stream message can
       be a hundred MB, and a whole decoded copy would double kguard's peak
       memory (the frame itself is shared with the frontend's send). */
    s_stream_feed_t f = {.S = S, .parent = parent, .ev = KG_DIAG_NONE};
    /* malformed text: the pieces decoded before it still count */
    (void) kg_jsonscan_stream(kg_msg_part(msg, KG_PART_CONTENT), S_STREAM_PIECE, &f.is_stderr,
                              s_stream_piece, s_stream_skip, &f);
    ev = f.ev;
  }
  s_on_event(S, ev, parent);
}

void
kg__guard_reply(kg_sup_t *S, kg_msg_t *msg)
{
  if (strcmp(kg_msg_type(msg), "execute_reply") != 0)
    return;
  cJSON *content = kg_msg_json(msg, KG_PART_CONTENT);
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(content, "status");
  const char *parent = kg_msg_parent_id(msg);
  if (cJSON_IsString(status) && strcmp(status->valuestring, "error") == 0)
    s_on_event(S, kg_diagnosis_feed_error(S->diag, KG_SRC_EXECUTE_REPLY, content, parent,
                                          kg_clock_wall_ms()),
               parent);
  /* The failing cell's real reply carries kguard's notice metadata. */
  if (kg__failing_is(&S->failing, parent) && kg_diagnosis_sticky(S->diag)) {
    cJSON *meta = cJSON_Duplicate(kg_msg_json(msg, KG_PART_METADATA), 1);
    if (!meta)
      meta = cJSON_CreateObject();
    kg_notice_info_t info;
    kg__notice_fill_current(S, &info);
    info.restarted = true;
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "kguard");
    cJSON_AddItemToObject(meta, "kguard", kg_notice_metadata(KG_NOTICE_STICKY_RESTART, &info));
    kg_msg_set_json(msg, KG_PART_METADATA, meta);
    cJSON_Delete(meta);
    /* The frontend learns of the fault from this reply: a request made
       after it was made by someone who knew (kg_gate.h). */
    kg_gate_told(S->gate, kg_clock_wall_ms());
  }
}

void
kg__guard_raw(kg_sup_t *S, int which, const char *data, size_t len)
{
  kg_diag_event_t ev = kg_diagnosis_feed(S->diag, which == 1 ? KG_SRC_RAW_STDOUT
                                                             : KG_SRC_RAW_STDERR,
                                         NULL, NULL, data, len, kg_clock_wall_ms());
  s_on_event(S, ev, NULL);
}

/*  Read what the kernel's pipes hold now and judge it. The loop does the
    same when the pipes wake it; the relay calls this before it lets the
    next request in, so that what the kernel wrote before replying is judged
    first. */
static void
s_raw_output(void *arg, int which, const char *data, size_t len)
{
  kg__guard_raw(arg, which, data, len);
}

void
kg__guard_drain_pipes(kg_sup_t *S)
{
  kg_kernel_drain(S->kernel, s_raw_output, S);   /* RAW_OUTPUT, judged here */
}

static int
s_pipe_fd(void *arg)
{
  kg__src_t *src = arg;
  return kg_kernel_output_fd(src->S->kernel, src->which);
}

static int
s_on_pipe(kg_loop_t *loop, int id, int events, void *arg)
{
  kg__guard_drain_pipes(((kg__src_t *) arg)->S);
  return KG_LOOP_OK;
}

int
kg__pipes_attach(kg_sup_t *S)
{
  for (int which = 1; which <= 2; which++) {
    S->src.pipe[which] = (kg__src_t){S, which};
    if (kg_loop_fd_of(S->loop, s_pipe_fd, KG_LOOP_IN, s_on_pipe, &S->src.pipe[which]) < 0)
      return KG_ENOMEM;
  }
  return 0;
}

bool
kg__guard_child_exit(kg_sup_t *S)
{
  int st = kg_kernel_status(S->kernel);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  kg_diag_event_t ev = kg_diagnosis_feed_exit(S->diag, code, sig, kg_clock_wall_ms());
  if (kg__state(S) == KG_ST_READY)
    kg__doom_queue(S);   /* cells queued behind the one that was running */
  if (kg__state(S) == KG_ST_CLOSING)
    return true;   /* already handled; the death is recorded as evidence */
  if (ev != KG_DIAG_STICKY && !kg_diagnosis_sticky(S->diag))
    return false;
  if (kg_diagnosis_backend(S->diag) != KG_BACKEND_UNKNOWN)
    S->backend = kg_diagnosis_backend(S->diag);
  s_set_failing(S, kg_diagnosis_parent(S->diag));
  kg__incident_open(S, true);
  kg__start_probe(S);   /* versions, from a fresh process */
  return true;
}

void
kg__guard_enter_closing(kg_sup_t *S)
{
  size_t doomed = 0;
  for (size_t i = 0; i < kg_pending_count(S->pending); i++) {
    kg_pending_entry_t *e = kg_pending_at(S->pending, i);
    if (kg__failing_is(&S->failing, e->msg_id))
      continue;
    e->doomed = true;
    doomed++;
  }
  /* Their messages wait in kguard's queue: none ever reaches a kernel. */
  size_t dropped = kg_pending_drop_held(S->pending, true);
  kg_notice("gate closed: %zu outstanding request(s) will be answered with KernelRestarted "
            "(%zu message(s) dropped from kguard's queue)", doomed, dropped);
  kg__incident_open(S, true);
  kg__start_probe(S);   /* versions, from a fresh process */
  if (!S->failing.msg_id || !kg_pending_find(S->pending, S->failing.msg_id))
    kg_fsm_set_deadline(S->fsm, kg_loop_now(S->loop));   /* no reply to wait for */
}

/*  The failing request's real execute_reply was relayed: its evidence is
    complete. (No other execute_request is in the kernel: the fault cannot
    belong to a later one.) */
void
kg__guard_failing_done(kg_sup_t *S, kg_msg_t *reply)
{
  (void) reply;
  S->failing.replied = true;
  if (kg__state(S) == KG_ST_CLOSING)
    kg__fire(S, KG_EV_EVIDENCE_DONE);
}

/* ------------------------------------------------------------------------
   After the kernel's group is gone: answer, decide, go on. */

static void
s_after_sticky(kg_sup_t *S)
{
  const kg_match_t *m = kg_diagnosis_match(S->diag);
  const char *title = m && m->family ? m->family->title : "sticky GPU error";
  const char *incident_id = kg__incident_id(&S->incidents);
  char evalue[1024];
  snprintf(evalue, sizeof evalue,
           "this request did not run: kguard restarted the kernel after a %s "
           "(incident %s). See the notice in the failing cell.",
           title, incident_id ? incident_id : "?");
  /* The failing cell's reply never came: answer it with the real error. */
  const char *failing_id = S->failing.msg_id;
  kg_pending_entry_t *f = failing_id ? kg_pending_find(S->pending, failing_id) : NULL;
  if (f && !S->failing.replied) {
    char fv[1024];
    snprintf(fv, sizeof fv, "%.800s (the kernel was stopped before it replied; incident %s)",
             m ? m->line : title, incident_id ? incident_id : "?");
    kg__answer_error(S, f, "KernelRestarted", fv);
  }
  kg__answer_all(S, false, "KernelRestarted", evalue);
  /* The kernel is gone: the idles it never published. The failing cell's
     waits for its notice (fresh kernel ready, or DOWN), so that frontends
     still collect the notice as that cell's output. */
  kg__settle_status(S, S->failing.msg_id);

  char sig[KG_DIAG_SIGNATURE_MAX] = "";
  kg_diagnosis_signature(S->diag, S->failing.code, sig, sizeof sig);
  int64_t delay = 0;
  const char *reason = NULL;
  /* A GPU that needs a reset is never restarted on: DOWN with the hardware
     notice, whatever the policy would allow. */
  char *hw = NULL;
  bool hw_reset = kg__gpuhealth_needs_reset(S, m && m->family ? m->family->id : NULL,
                                            m ? m->line : NULL, &hw);
  kg_policy_action_t act = hw_reset ? KG_POLICY_GIVE_UP
                                    : kg_policy_decide(S->policy, kg_clock_mono_ms(), sig,
                                                       &delay, &reason);
  if (hw_reset)
    reason = hw;
  kg_incident_t *incident = S->incidents.current.incident;
  if (incident) {
    kg_incident_set_diagnosis(incident, S->diag);
    if (S->exit_known)
      kg_incident_set_exit(incident, WIFEXITED(S->exit_status)
                                       ? WEXITSTATUS(S->exit_status) : -1,
                           WIFSIGNALED(S->exit_status) ? WTERMSIG(S->exit_status) : 0);
    kg_incident_set_restarts(incident, kg_policy_restart_count(S->policy));
    kg_incident_set_policy(incident, act == KG_POLICY_RESTART ? "restart" : "give-up",
                           reason, delay);
    cJSON_AddStringToObject(kg_incident_json(incident), "failure_signature", sig);
    kg__write_incident(S);
  }
  S->diagnostic = false;   /* an automatic restart is a normal one */
  if (hw_reset) {
    kg_error("%s", hw);
    kg__due_set_down(&S->due, hw);
    free(hw);
    S->stop_reason = KG__STOP_DEVICE;   /* DOWN's notice: the hardware's */
    kg__fire(S, KG_EV_STOPPED_GIVE_UP);
    return;
  }
  if (act == KG_POLICY_GIVE_UP) {
    kg_error("automatic restarts stopped: %s", reason ? reason : "");
    kg__due_set_gave_up(&S->due, reason);
    kg__fire(S, KG_EV_STOPPED_GIVE_UP);
    return;
  }
  S->backoff_ms = delay;
  kg__due_set(&S->due, KG__DUE_STICKY, NULL);   /* the failing request's parent */
  kg__fire(S, KG_EV_STOPPED_RESTORE);
}

/*  The kernel was stopped on request (%kguard restart): what waited is
    answered KernelRestarted, the policy forgets its faults, and a fresh
    kernel starts at once. */
static void
s_after_user_stop(kg_sup_t *S)
{
  kg__answer_all(S, false, "KernelRestarted",
                 "this request did not finish: the kernel was restarted on request "
                 "(%kguard restart)");
  kg__settle_status(S, NULL);
  kg_policy_reset(S->policy);
  S->diagnostic = S->want_diagnostic;
  S->backoff_ms = 0;
  kg__fire(S, KG_EV_STOPPED_RESTART);
}

/*  The kernel died, hung or never became ready (st: its wait status, how:
    in words): the notice, the stale window, the answers, then a restart
    or DOWN as the policy decides. */
static void
s_after_death(kg_sup_t *S, int st, const char *how)
{
  int64_t delay = 0;
  const char *reason = NULL;
  char evalue[512];
  if (S->stop_reason == KG__STOP_TIMEOUT)
    snprintf(evalue, sizeof evalue, "the kernel did not become ready in time");
  else if (S->stop_reason == KG__STOP_HUNG)
    snprintf(evalue, sizeof evalue,
             "the kernel hung while this request was outstanding: %s; kguard stopped it "
             "and starts a fresh kernel",
             S->hang.reason ? S->hang.reason : "");
  else
    snprintf(evalue, sizeof evalue,
             "the kernel process died (%s) while this request was outstanding; "
             "kguard starts a fresh kernel", how);
  kg_pending_entry_t *run = kg_pending_running(S->pending);
  cJSON *parent = run ? cJSON_Duplicate(run->header, 1) : NULL;
  /* A death can be the GPU's: one that needs a reset is not restarted on. */
  char *hw = NULL;
  bool hw_reset = S->stop_reason == KG__STOP_DIED && kg__gpuhealth_needs_reset(S, NULL, NULL, &hw);
  if (hw_reset)
    kg__write_incident(S);
  kg_policy_action_t act = hw_reset ? KG_POLICY_GIVE_UP
                                    : kg_policy_decide(S->policy, kg_clock_mono_ms(), NULL,
                                                       &delay, &reason);
  if (hw_reset)
    reason = hw;
  kg_notice_info_t info;
  kg__notice_fill_current(S, &info);
  info.family = hw_reset ? kg_classifier_family(S->rules, "ecc-hardware") : NULL;
  info.checkpoint_restored = false;
  info.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  info.signo = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  info.restarted = act == KG_POLICY_RESTART;
  info.reason = reason;
  if (S->stop_reason == KG__STOP_HUNG && act == KG_POLICY_RESTART)
    info.reason = evalue;   /* why kguard stopped it, not a death */
  /* The notice first: it is part of the running cell's output, which
     ends with kguard's reply and idle. */
  kg__notice_publish(S, act == KG_POLICY_RESTART ? KG_NOTICE_KERNEL_DIED : KG_NOTICE_DOWN,
                   &info, parent, NULL);
  /* the stale window starts */
  kg_gate_notice(S->gate, kg_clock_mono_ms(), kg_clock_wall_ms());
  cJSON_Delete(parent);
  kg__answer_all(S, false, "KernelDied", evalue);
  kg__settle_status(S, NULL);
  S->diagnostic = false;
  if (act == KG_POLICY_GIVE_UP) {
    char r[1200];
    snprintf(r, sizeof r, "The kernel died (%s) and %s", how, reason ? reason : "");
    if (hw_reset)
      kg_error("%s", hw);
    free(hw);
    kg__due_set_gave_up(&S->due, r);
    kg__fire(S, KG_EV_STOPPED_GIVE_UP);
    return;
  }
  S->backoff_ms = delay;
  kg__fire(S, KG_EV_STOPPED_RESTART);
}

void
kg__guard_after_stop(kg_sup_t *S)
{
  bool exited, signalled;
  kg_preflight_cancel(S->preflight);   /* verdict recorded; none is due any more */
  kg__hang_forget(&S->hang);                  /* its pinger goes with the process */
  if (kg_kernel_present(S->kernel))
    S->prev_kernel_pid = (long) kg_kernel_pid(S->kernel);
  int st = kg_kernel_release(S->kernel, &exited, &signalled);   /* and its group's leftovers */
  S->exit_status = st;
  S->exit_known = exited && !signalled;
  char how[64];
  kg_child_describe(st, how, sizeof how);
  switch (S->stop_reason) {
  case KG__STOP_STICKY:
    s_after_sticky(S);
    return;
  case KG__STOP_DEVICE:   /* the pre-flight: no loop, DOWN (down_reason set) */
    kg__fire(S, KG_EV_STOPPED_GIVE_UP);
    return;
  case KG__STOP_USER:
    s_after_user_stop(S);
    return;
  case KG__STOP_DIED:
  case KG__STOP_HUNG:
  case KG__STOP_TIMEOUT:
  case KG__STOP_NONE:
    s_after_death(S, st, how);
    return;
  }
}

/* ------------------------------------------------------------------------
   READY and DOWN. */

void
kg__guard_on_ready(kg_sup_t *S)
{
  kg__due_kind_t due = S->due.kind;
  if (due != KG__DUE_NONE) {
    const cJSON *parent = S->due.parent;
    kg_notice_info_t info;
    kg__notice_fill(S, S->prev_diag, &info);
    info.restarted = true;
    char extra[512] = "";
    const char *no_restore = kg_restore_error(S->restore);
    if (no_restore && !info.checkpoint_restored && due == KG__DUE_STICKY)
      snprintf(extra, sizeof extra, "No checkpoint was restored: %s.", no_restore);
    if (S->diagnostic) {
      size_t n = strlen(extra);
      snprintf(extra + n, sizeof extra - n, "%sThis kernel runs in %s.", n ? " " : "",
               kg__diag_label(S));
    }
    if (due == KG__DUE_STICKY) {
      kg__notice_publish(S, KG_NOTICE_STICKY_RESTART, &info, S->failing.header,
                         extra);
      /* the stale window starts */
    kg_gate_notice(S->gate, kg_clock_mono_ms(), kg_clock_wall_ms());
    }
    else if (due == KG__DUE_DIAGNOSTIC) {
      info.family = NULL;
      info.checkpoint_restored = false;
      kg__notice_publish(S, KG_NOTICE_DIAGNOSTIC, &info, cJSON_IsObject(parent) ? parent : NULL,
                       extra);
    }
    kg__due_set(&S->due, KG__DUE_NONE, NULL);
  }
  kg__settle_status(S, NULL);   /* the failing cell's idle, after its notice */
  kg_restore_handed_over(S->restore);
}

void
kg__guard_enter_down(kg_sup_t *S)
{
  const char *why = S->due.down_reason;
  kg_error("kguard is DOWN: %s", why ? why : "");
  if (S->stop_reason == KG__STOP_DEVICE)
    kg__preflight_down_notice(S);
  else if (S->stop_reason == KG__STOP_STICKY) {
    kg_notice_info_t info;
    kg__notice_fill_current(S, &info);
    info.checkpoint_restored = false;
    info.reason = why;
    kg__notice_publish(S, KG_NOTICE_DOWN, &info, S->failing.header, NULL);
  }
  kg_gate_notice(S->gate, kg_clock_mono_ms(), kg_clock_wall_ms());
  kg__due_set(&S->due, KG__DUE_NONE, NULL);
  kg__settle_status(S, NULL);
}

void
kg__guard_down_answer(kg_sup_t *S)
{
  const char *why = S->due.down_reason;
  size_t i = 0;
  while (i < kg_pending_count(S->pending)) {
    kg_pending_entry_t *e = kg_pending_at(S->pending, i);
    if (kg__shutdown_is(&S->shutdown, e->msg_id)) {
      i++;
      continue;
    }
    if (strcmp(e->msg_type, "kernel_info_request") == 0)
      kg__answer_kernel_info(S, e);
    else
      kg__answer_error(S, e, "KernelDown", why ? why : "kernel is down");
  }
}

