/*  kg_sup_relay_kernel: what the inner kernel says, on its way to the
    frontend (iopub, replies, stdin requests), the relay's deadlines (one
    timer each), and kguard's own kernel_info nudges. Replies are routed
    back by parent msg_id; the reply that ends the in-flight execute lets
    the next request in (kg_sup_relay.c's queue) only after what the kernel
    wrote before it has been judged; a suspected cell's reply and idle wait
    for the device probe (kg_sup_devcheck.c).
*/
#include "kg_sup_priv.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"

#define S_BATCH 256   /* messages taken from one socket per wake-up */

static bool
s_ends_with(const char *s, const char *suffix)
{
  size_t a = s ? strlen(s) : 0, b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool
s_is_nudge(kg_sup_t *S, const char *parent)
{
  return kg_ready_is_nudge(kg_kernel_ready(S->kernel), parent);
}

static void
s_check_ready(kg_sup_t *S)
{
  if (kg__state(S) == KG_ST_STARTING && kg_ready_done(kg_kernel_ready(S->kernel))
      && !kg__preflight_holds_ready(S))   /* and the device's verdict, if one is due */
    kg__fire(S, KG_EV_KERNEL_READY);
}

/*  The in-flight execute_request's reply arrived: before the next request
    goes in, judge everything the kernel wrote before replying (a sticky
    sign on raw stderr is in the pipe already: the kernel wrote it before it
    sent the reply). */
static void
s_settle_evidence(kg_sup_t *S)
{
  kg__guard_drain_pipes(S);
}

/*  An execute_request the kernel went idle for without replying must not
    hold the queue for ever. */
static int64_t
s_running_expiry(const kg_sup_t *S)
{
  kg_pending_entry_t *run = kg_pending_running(S->pending);
  return run ? kg_pending_idle_expiry(S->pending, run) : 0;
}

static void s_release_reply(kg_sup_t *S);

/*  A suspicion that came while the kernel is idle (output that arrived
    after its cell's reply, a background thread): probe at once. */
static void
s_check_if_idle(kg_sup_t *S)
{
  if (kg__state(S) == KG_ST_READY && !kg_devcheck_probing(S->devcheck)
      && !kg_devcheck_holding(S->devcheck) && kg_diagnosis_suspect(S->diag)
      && !kg__relay_kernel_busy(S))
    kg__check_start(S);
}

/*  A kernel_info_request of kguard's own: a readiness nudge, or the probe
    after an error reply. */
static void
s_send_nudge(kg_sup_t *S)
{
  cJSON *content = cJSON_CreateObject();
  kg_msg_t *m = kg_msg_new("kernel_info_request", S->session, NULL, &content);
  if (!m)
    return;
  kg_ready_remember(kg_kernel_ready(S->kernel), kg_msg_id(m));
  if (kg_kernel_send(S->kernel, KG_CH_SHELL, m, KG_OUTQ_NOWAIT) != 0)
    kg_debug("nudge not sent (kernel not connected yet, or not reading)");
  kg_msg_destroy(&m);
}

/* ------------------------------------------------------------------------
   From the kernel. */

static void
s_route_back(kg_sup_t *S, kg_msg_t *msg, kg_pending_entry_t *e, kg_channel_t ch)
{
  if (kg_msg_set_idents(msg, e->idents, e->ident_count) != 0)
    return;
  int rc = kg_front_send(S->front, ch, msg);
  if (rc)
    kg__unsent(S->stats, "frontend", kg_msg_type(msg), rc);
  else
    kg_relay_stats_relayed(S->stats);
}

/*  After an error reply that made the kernel abort its own queue: kguard's
    probe, whose reply says the kernel has stopped aborting. */
static void
s_send_probe(kg_sup_t *S)
{
  s_send_nudge(S);
  kg_gate_abort_probe_sent(S->gate, kg_ready_last(kg_kernel_ready(S->kernel)));
}

/*  A status message with a parent: the gate and the ledger learn that a
    request runs (busy) or is done (idle). Returns its execution_state, or
    NULL for any other message. */
static const char *
s_status_seen(kg_sup_t *S, kg_msg_t *msg, const char *parent)
{
  if (strcmp(kg_msg_type(msg), "status") != 0 || !parent || !*parent)
    return NULL;
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(kg_msg_json(msg, KG_PART_CONTENT),
                                                     "execution_state");
  const char *state = cJSON_IsString(st) ? st->valuestring : NULL;
  kg_pending_entry_t *e = kg_pending_find(S->pending, parent);
  if (state && strcmp(state, "busy") == 0 && e
      && strcmp(e->msg_type, "execute_request") == 0)
    kg_gate_set_running(S->gate, parent);
  if (state && strcmp(state, "idle") == 0 && e && e->forwarded && !e->idle_ms)
    e->idle_ms = kg_clock_mono_ms();   /* idle before (or without) its reply */
  if (state && strcmp(state, "idle") == 0 && kg_gate_abort_idle(S->gate, parent))
    s_send_probe(S);   /* see s_kernel_reply */
  return state;
}

/*  Whether kernel output for parent reaches the frontend in this state. */
static bool
s_iopub_shown(kg_sup_t *S, const char *parent)
{
  switch (kg__state(S)) {
  case KG_ST_READY:
  case KG_ST_EXITING:
  case KG_ST_EXIT_WAIT:
  case KG_ST_EXIT_TERM:
  case KG_ST_EXIT_KILL:
  case KG_ST_EXITED:
    return true;
  case KG_ST_CLOSING:
  case KG_ST_STOPPING:
  case KG_ST_KILLING:
    /* Only the failing request's outputs: the user sees the real traceback;
       the queued requests are answered by kguard. */
    return kg__failing_is(&S->failing, parent);
  default:
    /* not the new kernel's own `starting`: kguard sent one already */
    return parent && *parent;
  }
}

static void
s_kernel_iopub(kg_sup_t *S, kg_msg_t *msg)
{
  kg_ready_saw_iopub(kg_kernel_ready(S->kernel));
  const char *parent = kg_msg_parent_id(msg);
  if (s_is_nudge(S, parent)) {
    s_check_ready(S);
    return;
  }
  if (kg__check_iopub(S, msg))
    return;   /* kguard's device probe: never shown */
  /* Output while READY is relayed before it is classified: classifying it
     cannot change where it goes (a failing cell's own output is relayed in
     CLOSING too), and a stream message can be megabytes, so parsing it
     first would hold up the frontend and every message behind it. */
  if (kg__state(S) == KG_ST_READY && strcmp(kg_msg_type(msg), "stream") == 0) {
    if (kg_front_send(S->front, KG_CH_IOPUB, msg) == 0)
      kg_relay_stats_relayed(S->stats);
    kg__guard_iopub(S, msg);
    return;
  }
  const char *state = s_status_seen(S, msg, parent);
  kg__guard_iopub(S, msg);
  if (!s_iopub_shown(S, parent))
    return;
  /* The suspected cell's idle waits for the probe's verdict, like its
     reply (s_release_reply publishes it). */
  if (state && strcmp(state, "idle") == 0
      && kg_devcheck_hold_idle(S->devcheck, parent, kg_msg_json(msg, KG_PART_PARENT)))
    return;
  /* One busy and one idle per request. kguard may have said busy for it
     already (it answers it itself), or idle for it (the kernel was gone). */
  if (state && strcmp(state, "busy") == 0) {
    if (kg_pending_busy_is_open(S->pending, parent))
      return;
    kg_pending_busy_open(S->pending, kg_msg_json(msg, KG_PART_PARENT), kg_msg_session(msg));
  } else if (state && strcmp(state, "idle") == 0) {
    /* The failing cell's idle waits for kguard's notice (published once the
       fresh kernel is ready, or on going DOWN): frontends stop collecting a
       cell's output at its idle. The ledger keeps it open until then. */
    if (kg__state(S) == KG_ST_CLOSING || kg__state(S) == KG_ST_STOPPING || kg__state(S) == KG_ST_KILLING)
      return;
    if (!kg_pending_busy_close(S->pending, parent))
      return;
  }
  int rc = kg_front_send(S->front, KG_CH_IOPUB, msg);
  if (rc == 0)
    kg_relay_stats_relayed(S->stats);
  s_check_ready(S);
}

/*  The kernel's kernel_info_reply content, kept to answer frontends while
    no kernel can. */
static void
s_cache_info(kg_sup_t *S, kg_msg_t *msg)
{
  cJSON *content = kg_msg_json(msg, KG_PART_CONTENT);
  if (content) {
    cJSON_Delete(S->info_cache);
    S->info_cache = cJSON_Duplicate(content, 1);
  }
}

/*  An execute_reply's execution_count (kept as the kernel's), or -1. */
static int
s_exec_count(kg_sup_t *S, kg_msg_t *msg)
{
  const cJSON *count = cJSON_GetObjectItemCaseSensitive(kg_msg_json(msg, KG_PART_CONTENT),
                                                        "execution_count");
  if (!cJSON_IsNumber(count))
    return -1;
  S->execution_count = count->valueint;
  return count->valueint;
}

/*  A reply to no recorded request: one that expired is still routed back
    to its asker; anything else is dropped (and counted). */
static void
s_route_unknown(kg_sup_t *S, kg_msg_t *msg, const char *parent)
{
  const char *type = kg_msg_type(msg);
  kg_pending_entry_t *x = kg_pending_find_expired(S->pending, parent);
  if (x) {
    kg_info("late %s for an expired request: routed", type);
    s_route_back(S, msg, x, x->channel);
    kg_pending_remove(S->pending, parent);
  } else {
    kg_relay_stats_unrouted(S->stats);
    kg_debug("%s for an unknown request dropped", type);
  }
}

/*  The in-flight cell failed with stop_on_error: what was queued behind it
    is aborted, and nothing more goes in until the kernel has stopped
    aborting. */
static void
s_abort_queue(kg_sup_t *S, kg_msg_t *msg, const char *parent, bool idle_seen)
{
  kg__relay_abort_queue(S, msg);
  /* ipykernel itself goes on aborting every execute_request that
     reaches it until an event it schedules (call_later(0)) after this
     reply has been dispatched; one that lands first is aborted although
     it was sent after the error. So nothing more goes in until kguard's
     probe, a kernel_info_request (never aborted) sent once the kernel
     said idle for this request (so after it scheduled that event), has
     been answered: by then the event is queued ahead of anything new. */
  if (kg_gate_abort_begin(S->gate, parent, idle_seen, kg_clock_mono_ms()))
    s_send_probe(S);
}

static void
s_kernel_reply(kg_sup_t *S, kg_channel_t ch, kg_msg_t **msg_p)
{
  kg_msg_t *msg = *msg_p;
  bool confirmed;
  kg_match_t match;
  if (kg__check_reply(S, msg, &confirmed, &match)) {
    if (confirmed)
      kg__guard_confirm(S, &match);
    s_release_reply(S);
    return;
  }
  const char *parent = kg_msg_parent_id(msg);
  const char *type = kg_msg_type(msg);
  bool is_info = strcmp(type, "kernel_info_reply") == 0;
  if (is_info)
    s_cache_info(S, msg);
  if (s_is_nudge(S, parent)) {
    if (is_info) {
      kg_ready_saw_reply(kg_kernel_ready(S->kernel));
      s_check_ready(S);
    }
    if (kg_gate_abort_answered(S->gate, parent))
      kg__flush_held(S);   /* the kernel has stopped aborting */
    return;
  }
  bool is_exec = strcmp(type, "execute_reply") == 0;
  kg_pending_entry_t *e = kg_pending_find(S->pending, parent);
  /* The reply that ends the in-flight execute_request: the next request
     goes in only after what the kernel said before it has been judged. */
  bool ends_flight = is_exec && e && kg__relay_holds_queue(e);
  bool idle_seen = e && e->idle_ms > 0;
  bool abort_queue = false;
  if (ends_flight) {
    kg_gate_input_asked(S->gate, NULL);   /* its input() is over, answered or not */
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(kg_msg_json(msg, KG_PART_CONTENT),
                                                       "status");
    abort_queue = cJSON_IsString(st) && strcmp(st->valuestring, "error") == 0 && !e->silent
                  && e->stop_on_error;
    if (kg__state(S) == KG_ST_READY)
      s_settle_evidence(S);
    if (kg__state(S) == KG_ST_READY && kg_diagnosis_suspect(S->diag)
        && kg_devcheck_hold_reply(S->devcheck, msg_p)) {
      /* The cell showed a suspicion: its reply (and idle) wait for the
         device probe, which goes in now that the kernel is idle. */
      kg__check_start(S);
      if (!kg_devcheck_probing(S->devcheck))   /* not probed (not Python, send failed): go on */
        s_release_reply(S);
      return;
    }
  }
  int reply_count = is_exec ? s_exec_count(S, msg) : -1;
  kg__guard_reply(S, msg);
  if (reply_count >= 0)
    kg__incident_cell_count(S, parent, reply_count);
  e = kg_pending_find(S->pending, parent);
  if (!e) {
    s_route_unknown(S, msg, parent);
    if (ends_flight)
      kg__flush_held(S);
    return;
  }
  if (e->doomed)
    return;   /* kguard answers it (KernelRestarted) */
  s_route_back(S, msg, e, e->channel);
  bool failing = kg__failing_is(&S->failing, parent);
  if (s_ends_with(type, "_reply")) {
    kg_pending_remove(S->pending, parent);
    if (failing && is_exec)
      kg__guard_failing_done(S, msg);
    if (strcmp(type, "shutdown_reply") == 0)
      kg__fire(S, KG_EV_SHUTDOWN_REPLIED);   /* EXITING → EXIT_WAIT */
  }
  if (ends_flight && kg__state(S) == KG_ST_READY) {
    if (abort_queue)
      s_abort_queue(S, msg, parent, idle_seen);
    kg__flush_held(S);
  }
  (void) ch;
}

static void
s_kernel_stdin(kg_sup_t *S, kg_msg_t *msg)
{
  const char *parent = kg_msg_parent_id(msg);
  kg_pending_entry_t *e = kg_pending_find(S->pending, parent);
  if (!e)
    e = kg_pending_find_expired(S->pending, parent);
  if (!e || e->doomed || !kg_state_gate_open(kg__state(S))) {
    kg_relay_stats_unrouted(S->stats);
    kg_info("%s with no waiting request dropped", kg_msg_type(msg));
    return;
  }
  if (strcmp(kg_msg_type(msg), "input_request") == 0)
    kg_gate_input_asked(S->gate, kg_msg_id(msg));   /* one input_reply may go in */
  s_route_back(S, msg, e, KG_CH_STDIN);
}

/*  The probe decided (or was not sent): the suspected cell's reply goes on
    its way as if it had just arrived, then its idle. Confirmed: the gate is
    closed by now, and the reply carries the sticky notice's metadata. */
static void
s_release_reply(kg_sup_t *S)
{
  kg_msg_t *msg;
  cJSON *idle;
  kg_devcheck_release(S->devcheck, &msg, &idle);
  if (msg) {
    s_kernel_reply(S, KG_CH_SHELL, &msg);
    kg_msg_destroy(&msg);
  }
  /* its idle, if the kernel said it meanwhile (confirmed: kguard publishes
     it after the notice, as for any failing cell) */
  if (idle && kg__state(S) == KG_ST_READY)
    kg__status_idle(S, idle);
  cJSON_Delete(idle);
  kg__flush_held(S);
}

/*  Split a message from the kernel and check its header. Its signature is
    NOT checked: the kernel holds the frontend's key and is reachable only
    through kguard's 0700 runtime directory, and the frontend checks every
    message it is given; kguard forwards them byte for byte (kg_msg_send
    with the same key reuses the received signature). What kguard writes or
    changes itself is signed by kguard. */
static bool
s_accept_kernel(kg_sup_t *S, kg_msg_t *msg, kg_channel_t ch)
{
  int rc = kg_msg_parse_trusted(msg, kg_kernel_signer(S->kernel));
  if (rc == 0)
    rc = kg_msg_check_header(msg);
  if (rc == 0)
    return true;
  if (kg_relay_stats_rejected_kernel(S->stats, rc, kg_clock_mono_ms()) == KG_RATELOG_FULL)
    kg_warning("dropped a message on the kernel %s channel: %s", kg_channel_name(ch),
               kg_strerror(rc));
  return false;
}

/*  A bounded batch from the kernel's socket of channel ch: KG_LOOP_MORE
    unless a receive found it empty. */
static int
s_on_kernel(kg_sup_t *S, kg_channel_t ch)
{
  void *socket = kg_kernel_socket(S->kernel, ch);
  for (int i = 0; i < S_BATCH && kg_kernel_socket(S->kernel, ch) == socket; i++) {
    kg_msg_t *msg = NULL;
    if (kg__relay_recv(S, socket, "kernel", ch, &msg) <= 0)
      return KG_LOOP_OK;
    if (s_accept_kernel(S, msg, ch)) {
      const char *session = kg_msg_session(msg);
      if (session && *session && (!S->session || strcmp(session, S->session) != 0)) {
        kg__set_str(&S->session, session);
        kg_front_kernel_session(S->front, session);   /* never accepted from a frontend */
      }
      if (ch == KG_CH_IOPUB)
        s_kernel_iopub(S, msg);
      else if (ch == KG_CH_STDIN)
        s_kernel_stdin(S, msg);
      else {
        kg__relay_note_size(S, msg);
        s_kernel_reply(S, ch, &msg);
        kg_msg_destroy(&msg);
        s_check_if_idle(S);
        continue;
      }
      s_check_if_idle(S);
    }
    kg__relay_note_size(S, msg);
    kg_msg_destroy(&msg);
  }
  return KG_LOOP_MORE;
}

void
kg__droplog_flush(kg_sup_t *S, int64_t now, bool force)
{
  char *line = kg_relay_stats_drop_summary(S->stats, now, force);
  if (line)
    kg_warning("%s", line);
  free(line);
}

/* ------------------------------------------------------------------------
   The kernel side's sources: its sockets (fresh ones at each start), and
   the relay's deadlines, each a timer of its own.

   No send blocks (kg_kernel_send, kg_front_send): what a peer that is not
   reading cannot take waits in the socket's queue (kg_outq), flushed when
   the socket may take more: when it woke up or was read from (either may
   have processed the peer's "read some" command). The DEALERs and the
   frontend's ROUTERs are therefore registered for output too: the loop
   looks at a socket only when its fd woke, it was sent on or its batch
   was cut short, so a ROUTER whose ZMQ_POLLOUT stays true while one peer
   is full costs one look per wake-up, and a peer that never reads costs
   no busy loop (a flush that sends nothing is no send). */

static void *
s_kernel_socket(void *arg)
{
  kg__src_t *src = arg;
  return kg_kernel_socket(src->S->kernel, (kg_channel_t) src->which);
}

/*  The kernel's socket of a channel woke up: read, then send what waits
    in its queue as far as it goes (either wake-up may mean the kernel
    took some). */
static int
s_on_kernel_socket(kg_loop_t *loop, int id, int events, void *arg)
{
  kg__src_t *src = arg;
  kg_channel_t ch = (kg_channel_t) src->which;
  int rc = (events & KG_LOOP_IN) ? s_on_kernel(src->S, ch) : KG_LOOP_OK;
  kg_kernel_flush(src->S->kernel, ch);
  return rc;
}

/*  STARTING: kernel_info nudges until the kernel answered and iopub flows. */
static int64_t
s_nudge_when(void *arg)
{
  kg_sup_t *S = arg;
  return kg__state(S) == KG_ST_STARTING ? kg_ready_deadline(kg_kernel_ready(S->kernel)) : 0;
}

static int
s_nudge(kg_loop_t *loop, int id, void *arg)
{
  kg_sup_t *S = arg;
  int64_t now = kg_loop_now(loop);
  if (kg_ready_nudge_due(kg_kernel_ready(S->kernel), now)) {
    s_send_nudge(S);
    kg_ready_nudge_scheduled(kg_kernel_ready(S->kernel), now);
  }
  return KG_LOOP_OK;
}

/*  The dropped-message summary, once per interval while drops happen. */
static int64_t
s_droplog_when(void *arg)
{
  return kg_relay_stats_deadline(((kg_sup_t *) arg)->stats);
}

static int
s_droplog(kg_loop_t *loop, int id, void *arg)
{
  kg__droplog_flush(arg, kg_loop_now(loop), false);
  return KG_LOOP_OK;
}

/*  The device probe that did not answer: a hung device, confirmed. */
static int64_t
s_devcheck_when(void *arg)
{
  return kg_devcheck_deadline(((kg_sup_t *) arg)->devcheck);
}

static int
s_devcheck_expired(kg_loop_t *loop, int id, void *arg)
{
  kg_sup_t *S = arg;
  if (kg__check_expired(S, kg_loop_now(loop))) {
    kg__guard_confirm(S, NULL);
    s_release_reply(S);
  }
  return KG_LOOP_OK;
}

/*  Freed message memory goes back to the system after a burst. */
static int64_t
s_trim_when(void *arg)
{
  return ((kg_sup_t *) arg)->trim_at_ms;
}

static int
s_trim(kg_loop_t *loop, int id, void *arg)
{
  kg_sup_t *S = arg;
  S->trim_at_ms = 0;
  malloc_trim(0);
  return KG_LOOP_OK;
}

/*  The running request the kernel went idle for without a reply. */
static int64_t
s_expiry_when(void *arg)
{
  return s_running_expiry(arg);
}

static int
s_expire(kg_loop_t *loop, int id, void *arg)
{
  kg_sup_t *S = arg;
  if (kg_pending_expire(S->pending, kg_loop_now(loop)) > 0)
    kg__flush_held(S);
  return KG_LOOP_OK;
}

/*  No idle, or no answer to kguard's probe, after an error reply: the next
    request goes in anyway. */
static int64_t
s_abort_when(void *arg)
{
  return kg_gate_abort_deadline(((kg_sup_t *) arg)->gate);
}

static int
s_abort_expired(kg_loop_t *loop, int id, void *arg)
{
  kg_sup_t *S = arg;
  kg_warning("no idle or no answer to kguard's probe after an error: the next request "
             "goes in");
  kg_gate_abort_clear(S->gate);
  kg__flush_held(S);
  return KG_LOOP_OK;
}

int
kg__relay_kernel_attach(kg_sup_t *S)
{
  static const kg_channel_t chans[] = {KG_CH_SHELL, KG_CH_CONTROL, KG_CH_STDIN, KG_CH_IOPUB};
  for (size_t i = 0; i < sizeof chans / sizeof chans[0]; i++) {
    kg__src_t *src = &S->src.kernel[chans[i]];
    *src = (kg__src_t){S, chans[i]};
    int events = chans[i] == KG_CH_IOPUB ? KG_LOOP_IN : KG_LOOP_IN | KG_LOOP_OUT;
    if (kg_loop_socket_of(S->loop, s_kernel_socket, events, s_on_kernel_socket, src) < 0)
      return KG_ENOMEM;
  }
  if (kg_loop_timer_of(S->loop, s_nudge_when, s_nudge, S) < 0
      || kg_loop_timer_of(S->loop, s_droplog_when, s_droplog, S) < 0
      || kg_loop_timer_of(S->loop, s_devcheck_when, s_devcheck_expired, S) < 0
      || kg_loop_timer_of(S->loop, s_trim_when, s_trim, S) < 0
      || kg_loop_timer_of(S->loop, s_expiry_when, s_expire, S) < 0
      || kg_loop_timer_of(S->loop, s_abort_when, s_abort_expired, S) < 0)
    return KG_ENOMEM;
  return 0;
}
