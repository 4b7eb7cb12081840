/*  kg_sup_relay: what the frontend sends, on its way to the inner kernel,
    and kguard's queues (the kernel's side is kg_sup_relay_kernel.c, which
    calls into this file, never the other way). Where each message goes is
    kg_gate's decision (pure); this file carries it out.

    Requests from the frontend are verified with the frontend's key (forged,
    unsigned, replayed or malformed ones are dropped, counted and logged,
    never relayed), remembered by msg_id with their routing identities, and
    forwarded on the matching kernel socket with the signature they came
    with (both sides share the key). Only headers are parsed on the fast
    path; contents only where kguard needs them.

    The kernel has at most ONE execute_request at a time: shell messages are
    forwarded in arrival order until an execute_request is in flight; the
    ones after it wait in kguard's shell queue (whatever their type, so the
    order is kept exactly) until its reply has arrived and what the kernel
    said before it has been judged. A cell waiting its turn therefore never
    reaches a kernel that a sticky error poisoned, and kguard implements
    ipykernel's stop_on_error itself (kg__relay_abort_queue). `%kguard`
    cells keep their place in that order; control messages never wait
    behind it. The held queue is a source of the loop, due whenever it can
    move.
*/
#include "kg_sup_priv.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_date.h"
#include "kg_error.h"
#include "kg_log.h"

#define S_BATCH 256   /* messages taken from one socket per wake-up */
#define S_CLOCK_MESSAGES 2   /* a session's clock is known from its messages
                                measured, this one included: one before it */

static bool
s_ends_with(const char *s, const char *suffix)
{
  size_t a = s ? strlen(s) : 0, b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/*  Receive one message; 1 if one was taken, 0 if none, -1 on a socket
    error. Oversized messages are counted and skipped. */
int
kg__relay_recv(kg_sup_t *S, void *socket, const char *side, kg_channel_t ch, kg_msg_t **msg_p)
{
  for (;;) {
    int rc = kg_msg_recv(socket, ZMQ_DONTWAIT, msg_p);
    if (rc == 0)
      return 1;
    if (rc == -EAGAIN || rc == -EINTR)
      return 0;
    if (rc == KG_ETOOBIG) {
      if (kg_relay_stats_oversized(S->stats, kg_clock_mono_ms()) == KG_RATELOG_FULL)
        kg_warning("dropped an oversized message on the %s %s channel", side,
                   kg_channel_name(ch));
      continue;
    }
    if (rc != -ETERM)
      kg_error("unable to receive on the %s %s channel: %s", side, kg_channel_name(ch),
               kg_strerror(rc));
    return -1;
  }
}

/*  Check a message from the frontend (kg_front_check: signature, header,
    replay, date, reflection); on failure count, log, return false. The
    kernel shares the frontend's key, so what passes goes on with the
    signature it came with (kg_msg_send). */
bool
kg__relay_accept(kg_sup_t *S, kg_msg_t *msg, const char *side, kg_channel_t ch)
{
  int rc = kg_front_check(S->front, msg, kg_clock_wall_ms());
  if (rc == 0)
    return true;
  /* Anyone who reaches the ports can send these: the log gets the first
     few of each kind, then a summary per interval (kg__relay_timers). */
  if (kg_relay_stats_rejected(S->stats, rc, kg_clock_mono_ms()) == KG_RATELOG_FULL)
    kg_warning("dropped a message on the %s %s channel: %s (%lu forged, %lu malformed so far)",
               side, kg_channel_name(ch), kg_strerror(rc),
               kg_relay_stats_count(S->stats, KG_RELAY_FORGED),
               kg_relay_stats_count(S->stats, KG_RELAY_MALFORMED));
  return false;
}

/*  ipykernel batches output into messages of several MB. glibc keeps
    freed blocks that size in the heap (its mmap threshold grows to the
    largest block freed), so without a trim kguard would stay at its peak
    for the rest of the session. Trimming once the burst is over keeps the
    burst itself fast (blocks are reused) and the idle process small. */
void
kg__relay_note_size(kg_sup_t *S, const kg_msg_t *msg)
{
  if (kg_msg_size(msg) >= KG__TRIM_MIN)
    S->trim_at_ms = kg_clock_mono_ms() + KG__TRIM_DELAY_MS;
}

/*  To the kernel, never blocking: a kernel that does not read its channel
    gets what it cannot take yet queued (kg_kernel_send); when even that
    queue is full the message is dropped, and a request is answered with an
    error so that its sender does not wait for ever. */
static void
s_forward(kg_sup_t *S, kg_channel_t ch, kg_msg_t *msg, kg_pending_entry_t *e)
{
  if (kg_msg_set_idents(msg, NULL, 0) != 0)
    return;
  /* a request is answered, a burst of anything else (comm_msg) may not
     crowd requests out of the queue */
  int rc = kg_kernel_send(S->kernel, ch, msg, e ? KG_OUTQ_REQUEST : KG_OUTQ_BULK);
  if (rc) {
    kg__unsent(S->stats, "kernel", kg_msg_type(msg), rc);
    if (e && !e->doomed)
      kg__answer_error(S, e, "KernelBusy",
                       rc == KG_EQFULL
                         ? "the kernel is not reading its requests: kguard's queue to it is "
                           "full, so this request was not sent"
                         : "kguard could not send this request to the kernel");
    return;
  }
  if (e)
    e->forwarded = true;
  kg_relay_stats_relayed(S->stats);
}

/*  The request's entry, for a message taken from kguard's queue: NULL for a
    non-request (comm_msg...), and *answered true when it is a request that
    kguard has answered meanwhile (doomed, aborted, expired): drop it. */
static kg_pending_entry_t *
s_queued_entry(kg_sup_t *S, kg_msg_t *msg, bool *answered)
{
  *answered = false;
  if (!s_ends_with(kg_msg_type(msg), "_request"))
    return NULL;
  kg_pending_entry_t *e = kg_pending_find(S->pending, kg_msg_id(msg));
  *answered = !e || e->doomed || e->forwarded;
  return e;
}

/*  It is msg's turn: forward it, or for a `%kguard` cell handle it, or
    while DOWN answer it. */
static void
s_deliver(kg_sup_t *S, kg_channel_t ch, kg_msg_t *msg, kg_pending_entry_t *e)
{
  if (strcmp(kg_msg_type(msg), "execute_request") == 0 && kg__inband_match(msg)) {
    kg__guard_inband(S, msg, ch);
    return;
  }
  if (kg__state(S) == KG_ST_DOWN) {
    if (e && strcmp(e->msg_type, "kernel_info_request") == 0)
      kg__answer_kernel_info(S, e);
    else if (e)
      kg__answer_error(S, e, "KernelDown", S->due.down_reason
                                           ? S->due.down_reason
                                           : "the kernel is down");
    return;
  }
  s_forward(S, ch, msg, e);
}

/*  One execute_request in flight: the kernel never has a queue of its own,
    so a cell waiting its turn can never run in a kernel that a sticky error
    has poisoned meanwhile. (An execute_request ipykernel drops unanswered,
    without code or silent, does not hold the queue.) */
bool
kg__relay_holds_queue(const kg_pending_entry_t *e)
{
  return e->forwarded && !e->doomed && e->well_formed
         && strcmp(e->msg_type, "execute_request") == 0;
}

/*  An execute the kernel is running, or kguard's stop_on_error probe. */
bool
kg__relay_kernel_busy(kg_sup_t *S)
{
  if (kg_gate_abort_active(S->gate))
    return true;
  for (size_t i = 0; i < kg_pending_count(S->pending); i++)
    if (kg__relay_holds_queue(kg_pending_at(S->pending, i)))
      return true;
  return false;
}

/*  Nothing more goes in: the kernel is busy, or a suspicion is being
    checked (kg_sup_devcheck.c; requests wait, and follow the stale rule if the
    fault is confirmed). */
static bool
s_execute_in_flight(kg_sup_t *S)
{
  return kg__check_pending(S) || kg__relay_kernel_busy(S);
}

/*  The stale-request rule (kg_gate.h): e reached kguard after a fault and
    before (or just after) the user could see it: answered, never run. */
static void
s_answer_stale(kg_sup_t *S, kg_pending_entry_t *e)
{
  const char *id = kg_gate_incident(S->gate);
  bool died = kg_gate_fault_cause(S->gate) == KG_GATE_FAULT_DIED;
  size_t len = strlen(id) + 512;
  char *evalue = malloc(len);
  if (!evalue) {
    kg__answer_error(S, e, "KernelRestarted", "this request did not run");
    return;
  }
  snprintf(evalue, len,
           "this request did not run: it was sent before the %s%s%s%s could be seen "
           "(it reached kguard during the restart, or less than %.3g s after kguard's "
           "notice); kguard does not run it in the fresh kernel. Run the cell again if "
           "you still want it.",
           died ? "kernel's death" : "sticky GPU error", *id ? " (incident " : "", id,
           *id ? ")" : "", (double) kg_gate_window_ms(S->gate) / 1000.0);
  kg_notice("stale execute_request %s answered KernelRestarted (stale-request rule)",
            e->msg_id);
  kg__answer_error(S, e, "KernelRestarted", evalue);
  free(evalue);
}

/*  The frontend's shutdown_request: remembered (its id, never doomed nor
    answered as an ordinary request; its restart flag, echoed if kguard
    replies). */
static void
s_shutdown_requested(kg_sup_t *S, kg_pending_entry_t *e, kg_msg_t *msg)
{
  const cJSON *restart = cJSON_GetObjectItemCaseSensitive(kg_msg_json(msg, KG_PART_CONTENT),
                                                          "restart");
  kg__set_str(&S->shutdown.request_id, e ? e->msg_id : NULL);   /* an earlier one is forgotten */
  S->shutdown.restart = cJSON_IsTrue(restart);
  kg_notice("shutdown requested%s", cJSON_IsTrue(restart) ? " (restart)" : "");
}

/*  kguard's own reply to a control request it handles itself: status ok,
    and for a shutdown its restart flag. */
static void
s_reply_ok(kg_sup_t *S, kg_pending_entry_t *e, const char *type, bool shutdown)
{
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "status", "ok");
  if (shutdown)
    cJSON_AddBoolToObject(content, "restart", S->shutdown.restart);
  kg__reply(S, e, type, &content);
  kg_pending_remove(S->pending, e->msg_id);
}

/*  The gate decided that kguard answers e itself. */
static void
s_answer(kg_sup_t *S, kg_channel_t ch, kg_msg_t *msg, kg_pending_entry_t *e, kg_gate_why_t why)
{
  switch (why) {
  case KG_GATE_WHY_STALE:
    s_answer_stale(S, e);
    break;
  case KG_GATE_WHY_DOWN:
    s_deliver(S, ch, msg, e);   /* DOWN: kguard answers */
    break;
  case KG_GATE_WHY_SHUTDOWN:
    s_shutdown_requested(S, e, msg);
    if (e)
      s_reply_ok(S, e, "shutdown_reply", true);
    kg__fire(S, KG_EV_SHUTDOWN);
    break;
  case KG_GATE_WHY_SIGNAL:
    kg_info("interrupt_request: SIGINT to the kernel's process group");
    kg_kernel_signal(S->kernel, SIGINT);
    if (e)
      s_reply_ok(S, e, "interrupt_reply", false);
    break;
  case KG_GATE_WHY_INTERRUPT:
    if (e)
      s_reply_ok(S, e, "interrupt_reply", false);
    break;
  case KG_GATE_WHY_INFO:
    if (e)
      kg__answer_kernel_info(S, e);
    break;
  case KG_GATE_WHY_NONE:
    break;
  }
}

/*  What the gate needs to know of a request from the frontend on ch. */
static kg_gate_input_t
s_gate_input(kg_sup_t *S, kg_channel_t ch, kg_msg_t *msg, bool inband)
{
  kg_gate_input_t in = {
    .state = kg__state(S),
    .channel = ch,
    .kind = kg_gate_kind(kg_msg_type(msg), inband),
    .in_flight = s_execute_in_flight(S),
    .queue_waiting = kg_pending_held_shell(S->pending) > 0,
    .now_ms = kg_clock_mono_ms(),
    .kernel_alive = kg_kernel_alive(S->kernel),
    .info_cached = S->info_cache != NULL,
    .interrupt_by_signal = !S->cfg->inner_message_interrupts,
  };
  if (in.kind == KG_GATE_MSG_EXECUTE) {
    in.sent_wall_ms = kg_date_header_ms(kg_msg_json(msg, KG_PART_HEADER));
    /* the date is on that frontend's clock: known from its session's
       earlier messages (this one is among those measured) */
    unsigned long measured = 0;
    in.clock.known = kg_front_clock(S->front, kg_msg_session(msg), &in.clock.offset_ms,
                                    &measured)
                     && measured >= S_CLOCK_MESSAGES;
  }
  return in;
}

/*  The gate dropped a request of type: say so where it helps (a reply on
    stdin nobody asked for is worth a rate-limited warning). */
static void
s_dropped(kg_sup_t *S, kg_channel_t ch, const char *type, const kg_gate_input_t *in)
{
  if (kg_state_exiting(in->state))
    kg_debug("%s ignored: shutting down", type);
  else if (ch == KG_CH_STDIN) {
    if (kg_relay_stats_unexpected(S->stats, in->now_ms) == KG_RATELOG_FULL)
      kg_warning("dropped %s on the frontend stdin channel: no input_request is waiting "
                 "for it%s", type,
                 kg_state_gate_open(in->state) ? "" : " (the kernel that asked is gone)");
  } else
    kg_debug("%s dropped: nothing can take it now", type);
}

void
kg__dispatch_front(kg_sup_t *S, kg_channel_t ch, kg_msg_t **msg_p)
{
  kg_msg_t *msg = *msg_p;
  const char *type = kg_msg_type(msg);
  bool inband = strcmp(type, "execute_request") == 0 && kg__inband_match(msg);
  kg_gate_input_t in = s_gate_input(S, ch, msg, inband);
  kg_gate_decision_t d = kg_gate_decide(S->gate, &in);
  if (d.action == KG_GATE_DROP) {
    s_dropped(S, ch, type, &in);
    return;
  }
  if (ch == KG_CH_STDIN) {
    /* the one reply to the kernel's input_request (kg_gate_input_asked):
       no reply comes back, and a second one is dropped */
    kg_gate_input_asked(S->gate, NULL);
    s_forward(S, ch, msg, NULL);
    return;
  }
  if (ch == KG_CH_CONTROL && in.kind == KG_GATE_MSG_INBAND) {
    /* `kguard restart` on control: out of band, at once, like an
       interrupt. What was queued behind the running cell goes with it. */
    bool was_ready = in.state == KG_ST_READY;
    kg__guard_inband(S, msg, ch);
    if (was_ready && kg__state(S) == KG_ST_STOPPING)
      kg__doom_queue(S);
    return;
  }
  /* Every request kguard lets in is recorded (a `%kguard` cell delivered
     now records itself); one kguard handles itself goes on unrecorded,
     without a reply, if it must. */
  bool own = (d.action == KG_GATE_ANSWER && d.why != KG_GATE_WHY_STALE
              && d.why != KG_GATE_WHY_DOWN)
             || (d.action == KG_GATE_FORWARD && in.kind == KG_GATE_MSG_SHUTDOWN);
  kg_pending_entry_t *e = NULL;
  if (in.kind != KG_GATE_MSG_OTHER && (!inband || d.action == KG_GATE_HOLD)) {
    e = kg_pending_add(S->pending, msg, ch, in.now_ms);
    if (!e && !own) {
      kg_relay_stats_unrecorded(S->stats);
      kg_warning("dropped a %s: unable to record it", type);
      return;
    }
  }
  switch (d.action) {
  case KG_GATE_FORWARD:
    if (in.kind == KG_GATE_MSG_SHUTDOWN && ch == KG_CH_CONTROL) {
      s_shutdown_requested(S, e, msg);
      s_forward(S, ch, msg, e);
      kg__fire(S, KG_EV_SHUTDOWN_REQUEST);   /* its reply awaited */
    } else
      s_deliver(S, ch, msg, e);
    return;
  case KG_GATE_ANSWER:
    s_answer(S, ch, msg, e, d.why);
    return;
  case KG_GATE_HOLD:
  case KG_GATE_DROP:
    break;
  }
  if (kg_pending_hold(S->pending, msg_p, ch) != 0) {
    kg_warning("held queue full: %s answered with an error", type);
    if (e)
      kg__answer_error(S, e, "KernelBusy",
                       "kguard's queue of requests waiting for the kernel is full");
  }
}

/*  A bounded batch from the frontend's socket of channel ch: KG_LOOP_MORE
    unless a receive found it empty. */
static int
s_read_front(kg_sup_t *S, kg_channel_t ch)
{
  for (int i = 0; i < S_BATCH; i++) {
    kg_msg_t *msg = NULL;
    if (kg__relay_recv(S, kg_front_socket(S->front, ch), "frontend", ch, &msg) <= 0)
      return KG_LOOP_OK;
    kg__relay_note_size(S, msg);
    if (kg__relay_accept(S, msg, "frontend", ch))
      kg__dispatch_front(S, ch, &msg);
    kg_msg_destroy(&msg);
  }
  return KG_LOOP_MORE;
}

/*  The frontend's socket of channel ch woke up (kg__relay_front_attach):
    what it holds is read, then what waits in its send queue is sent as
    far as it goes, since either wake-up may mean its peer took some. */
static int
s_on_front(kg_loop_t *loop, int id, int events, void *arg)
{
  kg__src_t *src = arg;
  kg_sup_t *S = src->S;
  kg_channel_t ch = (kg_channel_t) src->which;
  int rc = (events & KG_LOOP_IN) ? s_read_front(S, ch) : KG_LOOP_OK;
  kg_front_flush(S->front, ch);
  return rc;
}

/*  kguard's held queue is a source of its own: due whenever it can move
    (a held message can be delivered or answered, or a suspicion found the
    kernel idle: the device probe goes in), so whatever made that possible
    (a helper that answered a cell, raw output, a reply) need not flush it. */
static bool
s_can_flush(kg_sup_t *S)
{
  if (kg__events_pending(S))
    return false;
  if (kg__state(S) == KG_ST_READY && !kg_devcheck_holding(S->devcheck) && !kg__relay_kernel_busy(S)
      && !kg_devcheck_probing(S->devcheck) && kg_diagnosis_suspect(S->diag))
    return true;
  bool down = kg__state(S) == KG_ST_DOWN, open = kg_state_gate_open(kg__state(S));
  size_t held = kg_pending_held(S->pending), shell = kg_pending_held_shell(S->pending);
  if ((open || down) && held > shell)
    return true;
  return shell > 0 && (down || (open && !s_execute_in_flight(S)));
}

static int64_t
s_held_when(void *arg)
{
  return s_can_flush(arg) ? 1 : 0;   /* 1: at once (any time past) */
}

static int
s_flush(kg_loop_t *loop, int id, void *arg)
{
  kg__flush_held(arg);
  return KG_LOOP_OK;
}

int
kg__relay_front_attach(kg_sup_t *S)
{
  if (kg_loop_timer_of(S->loop, s_held_when, s_flush, S) < 0)
    return KG_ENOMEM;
  static const kg_channel_t chans[] = {KG_CH_SHELL, KG_CH_CONTROL, KG_CH_STDIN};
  for (size_t i = 0; i < sizeof chans / sizeof chans[0]; i++) {
    kg__src_t *src = &S->src.front[chans[i]];
    *src = (kg__src_t){S, chans[i]};
    void *socket = kg_front_socket(S->front, chans[i]);
    if (socket && kg_loop_socket(S->loop, socket, KG_LOOP_IN | KG_LOOP_OUT, s_on_front, src) < 0)
      return KG_ENOMEM;
  }
  return 0;
}

/*  Deliver what kguard holds, as far as it can now: the control queue when
    the gate is open; the shell queue in order until an execute_request is
    in flight. While DOWN, everything is answered (a `%kguard restart` among
    it leaves DOWN, and what follows it waits for the new kernel). */
void
kg__flush_held(kg_sup_t *S)
{
  kg_channel_t ch;
  kg_msg_t *msg;
  bool answered;
  if (kg__state(S) == KG_ST_READY && !kg_devcheck_holding(S->devcheck) && !kg__relay_kernel_busy(S))
    kg__check_start(S);   /* a suspicion while the kernel is idle */
  /* (a posted transition, e.g. a `%kguard restart` just handled, stops the
     delivery: what follows waits for the state it leads to) */
  while ((kg_state_gate_open(kg__state(S)) || kg__state(S) == KG_ST_DOWN) && !kg__events_pending(S)
         && (msg = kg_pending_unhold(S->pending, false, &ch))) {
    kg_pending_entry_t *e = s_queued_entry(S, msg, &answered);
    if (!answered)
      s_deliver(S, ch, msg, e);
    kg_msg_destroy(&msg);
  }
  while (((kg_state_gate_open(kg__state(S)) && !s_execute_in_flight(S))
          || kg__state(S) == KG_ST_DOWN)
         && !kg__events_pending(S) && (msg = kg_pending_unhold(S->pending, true, &ch))) {
    kg_pending_entry_t *e = s_queued_entry(S, msg, &answered);
    if (!answered)
      s_deliver(S, ch, msg, e);
    kg_msg_destroy(&msg);
  }
}

/*  stop_on_error as ipykernel does it: after an error reply to a request
    that asked for it (and was not silent), every execute_request queued at
    that moment is answered "aborted", in order; the other requests among
    them still go to the kernel. */
void
kg__relay_abort_queue(kg_sup_t *S, kg_msg_t *reply)
{
  const cJSON *meta = kg_msg_json(reply, KG_PART_METADATA);
  size_t n = kg_pending_held_shell(S->pending), aborted = 0;
  kg_channel_t ch;
  bool answered;
  for (size_t i = 0; i < n && kg__state(S) == KG_ST_READY; i++) {
    kg_msg_t *msg = kg_pending_unhold(S->pending, true, &ch);
    if (!msg)
      break;
    kg_pending_entry_t *e = s_queued_entry(S, msg, &answered);
    if (!answered && e && strcmp(e->msg_type, "execute_request") == 0) {
      kg__answer_aborted(S, e, meta);
      aborted++;
    } else if (!answered)
      s_deliver(S, ch, msg, e);
    kg_msg_destroy(&msg);
  }
  if (aborted)
    kg_notice("stop_on_error: %zu queued execute_request(s) aborted", aborted);
}

