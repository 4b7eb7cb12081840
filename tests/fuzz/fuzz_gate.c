/*  Fuzz the gate (supervisor/kernel/decide/kg_gate): random sequences of frontend
    messages and supervisor events, decoded from the input, drive a small
    model of the supervisor's use of the gate (kg_sup_relay.c: dispatch, hold,
    flush, doom; kg_sup_guard.c / kg_supervisor.c: faults, notice; kg_sup_inband.c:
    `%kguard restart`). Each decision is checked against the gate's
    invariants (kg_gate.h):

      I1 a request is answered at most once (by kguard or by the kernel);
      I2 nothing is forwarded to a kernel that is not running: FORWARD of
         anything but a `%kguard` cell only in a gate-open state, never
         while DOWN or exiting; one execute_request on shell at a time;
      I3 no stale execute is forwarded: an execute_request that reaches
         kguard after a fault and before the user could see it (a reference
         model of the rule, written from kg_gate.h, not from kg_gate.c) is
         answered STALE, and one that is not stale is never answered so;
      I4 held requests are eventually answered or forwarded: when the input
         ends, the model runs the kernel back to READY (or leaves it DOWN),
         and every request that was not dropped by a shutdown is answered
         or forwarded, both queues empty.

    The requests kguard handles itself (shutdown, a signal-mode interrupt,
    kernel_info while no kernel answers, `%kguard` on control) are kinds
    like the others; what the gate is told of the kernel (alive, its
    kernel_info cached, interrupts by signal) comes from the input. Header
    dates come from the input too (a string through kg_date_ms, the parser
    of a field the frontend writes), and so do the stale window and the
    abort-probe ids. Input layout: byte 0-1 the
    window; then ops, one byte each plus operands (see s_step). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_date.h"
#include "kg_gate.h"
#include "kg_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_MAX_REQ 64
#define S_WALL0 1700000000000LL   /*  wall clock = monotonic + this */

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_gate: invariant failed: %s (line %d)\n", #cond,    \
              __LINE__);                                                       \
      abort();                                                                 \
    }                                                                          \
  } while (0)

typedef enum { R_NEW = 0, R_HELD, R_FORWARDED, R_ANSWERED, R_DROPPED } s_status_t;

typedef struct {
  kg_gate_msg_t kind;
  kg_channel_t ch;
  bool request;                 /*  a *_request (else comm_msg, input_reply) */
  bool restart;                 /*  a `%kguard restart` (else status)       */
  bool alive, cached, by_signal;  /*  what the gate is told of the kernel    */
  int64_t sent_wall;             /*  on the frontend's clock                 */
  kg_gate_clock_t clock;        /*  that clock as kguard measured it        */
  s_status_t status;
  int answers;                  /*  I1                                       */
  bool shutdown_drop;           /*  dropped while exiting: exempt from I4    */
} s_req_t;

/*  The reference stale rule (kg_gate.h, "The stale-request rule"). */
typedef struct {
  bool fault;
  int64_t t, notice, told;
} s_ref_t;

typedef struct {
  const uint8_t *p, *end;
  kg_gate_t *gate;
  kg_state_t st;
  int64_t now;
  int64_t window;
  s_ref_t ref;
  s_req_t req[S_MAX_REQ];
  int n_req;
  int held_shell[S_MAX_REQ], n_shell;     /*  FIFO of indices */
  int held_ctrl[S_MAX_REQ], n_ctrl;
  int in_flight;                          /*  execute in the kernel, or -1 */
  int abort_for;                          /*  error reply's request, or -1 */
  bool probe_out;
} s_model_t;

static unsigned
s_byte(s_model_t *m)
{
  return m->p < m->end ? *m->p++ : 0;
}

static int64_t
s_wall(const s_model_t *m)
{
  return m->now + S_WALL0;
}

static bool
s_ref_stale(const s_model_t *m, int64_t sent, kg_gate_clock_t clock)
{
  const s_ref_t *r = &m->ref;
  if (!r->fault || m->now < r->t)
    return false;
  if (r->notice && m->now >= r->notice + m->window)
    return false;
  /* the date read on the frontend's own clock; unknown clock: undated */
  int64_t made = clock.known && sent > 0 ? sent + clock.offset_ms : 0;
  return r->told == 0 || made <= 0 || made < r->told;
}

static void
s_answer(s_model_t *m, int i)
{
  s_req_t *r = &m->req[i];
  if (!r->request) {
    r->status = R_DROPPED;   /* a comm_msg kguard cannot deliver: nothing to answer */
    return;
  }
  r->answers++;
  CHECK(r->answers == 1);                              /* I1 */
  r->status = R_ANSWERED;
}

static void s_fire(s_model_t *m, kg_event_t ev);

/*  The supervisor's fault bookkeeping: the gate and the reference. */
static void
s_fault(s_model_t *m, kg_gate_fault_t cause)
{
  kg_gate_fault(m->gate, cause, m->now);
  if (!(m->ref.fault && m->ref.notice == 0)) {
    m->ref.fault = true;
    m->ref.t = m->now;
    m->ref.notice = 0;
    m->ref.told = 0;
  }
  kg_gate_set_incident(m->gate, "20261203T000000Z-fuzz00");
}

/*  Everything queued for this kernel is answered (KernelRestarted...),
    the running cell included: it never reaches a kernel (kg__doom_queue,
    kg__guard_enter_closing). */
static void
s_doom(s_model_t *m)
{
  for (int k = 0; k < m->n_shell; k++)
    s_answer(m, m->held_shell[k]);
  for (int k = 0; k < m->n_ctrl; k++)
    s_answer(m, m->held_ctrl[k]);
  m->n_shell = m->n_ctrl = 0;
  if (m->in_flight >= 0)
    s_answer(m, m->in_flight);
  m->in_flight = -1;
  m->abort_for = -1;
  m->probe_out = false;
  kg_gate_abort_clear(m->gate);
}

/*  A `%kguard` cell handled by kguard (kg_sup_inband.c). */
static void
s_inband(s_model_t *m, int i)
{
  s_answer(m, i);
  if (!m->req[i].restart)
    return;
  if (m->st == KG_ST_CLOSING || m->st == KG_ST_STOPPING || m->st == KG_ST_KILLING
      || m->st == KG_ST_RESTORING || kg_state_exiting(m->st))
    return;   /* "a restart is already in progress" */
  kg_gate_clear(m->gate);
  m->ref.fault = false;
  m->ref.notice = 0;
  bool was_ready = m->st == KG_ST_READY;
  s_fire(m, KG_EV_USER_RESTART);
  if (was_ready && m->req[i].ch == KG_CH_CONTROL)
    s_doom(m);   /* out of band: what was queued behind the running cell goes */
}

/*  It is request i's turn (kg_sup_relay.c s_deliver). */
static void
s_deliver(s_model_t *m, int i)
{
  s_req_t *r = &m->req[i];
  if (r->kind == KG_GATE_MSG_INBAND) {
    s_inband(m, i);
    return;
  }
  if (m->st == KG_ST_DOWN) {
    s_answer(m, i);   /* KernelDown */
    return;
  }
  CHECK(kg_state_gate_open(m->st));                    /* I2 */
  if (r->kind == KG_GATE_MSG_EXECUTE && r->ch == KG_CH_SHELL) {
    CHECK(m->in_flight < 0);                           /* I2: one at a time */
    m->in_flight = i;
  }
  r->status = R_FORWARDED;
}

/*  kg__flush_held: control first when open; shell in order while nothing
    runs. */
static void
s_flush(s_model_t *m)
{
  while ((kg_state_gate_open(m->st) || m->st == KG_ST_DOWN) && m->n_ctrl > 0) {
    int i = m->held_ctrl[0];
    memmove(m->held_ctrl, m->held_ctrl + 1, (size_t) --m->n_ctrl * sizeof(int));
    s_deliver(m, i);
  }
  while (((kg_state_gate_open(m->st) && m->in_flight < 0 && !kg_gate_abort_active(m->gate))
          || m->st == KG_ST_DOWN)
         && m->n_shell > 0) {
    int i = m->held_shell[0];
    memmove(m->held_shell, m->held_shell + 1, (size_t) --m->n_shell * sizeof(int));
    kg_state_t before = m->st;
    s_deliver(m, i);
    if (m->st != before)
      break;   /* a restart just handled: what follows waits for its state */
  }
}

static void
s_fire(s_model_t *m, kg_event_t ev)
{
  kg_state_t next = kg_state_next(m->st, ev);
  bool was_ready = m->st == KG_ST_READY;
  if (ev == KG_EV_CHILD_EXIT && !kg_state_exiting(m->st) && m->st != KG_ST_STOPPING
      && m->st != KG_ST_KILLING) {
    /* died on its own (kg_supervisor.c s_on_child_exit) */
    if (was_ready)
      s_doom(m);
    s_fault(m, KG_GATE_FAULT_DIED);
  }
  if (next == KG_ST_NONE)
    return;
  if (ev == KG_EV_STICKY && was_ready) {
    s_fault(m, KG_GATE_FAULT_STICKY);
    s_doom(m);   /* kg__guard_enter_closing */
  }
  if (!kg_state_gate_open(next) && m->in_flight >= 0 && next != KG_ST_CLOSING) {
    /* the kernel is gone with the running cell: kguard answers it */
    s_answer(m, m->in_flight);
    m->in_flight = -1;
  }
  if (!kg_state_gate_open(next)) {
    m->abort_for = -1;
    m->probe_out = false;
    kg_gate_abort_clear(m->gate);
  }
  if (kg_state_exiting(next) && !kg_state_exiting(m->st)) {
    /* shutting down: what is held is dropped with kguard */
    for (int k = 0; k < m->n_shell; k++)
      m->req[m->held_shell[k]].status = R_DROPPED, m->req[m->held_shell[k]].shutdown_drop = true;
    for (int k = 0; k < m->n_ctrl; k++)
      m->req[m->held_ctrl[k]].status = R_DROPPED, m->req[m->held_ctrl[k]].shutdown_drop = true;
    m->n_shell = m->n_ctrl = 0;
  }
  m->st = next;
}

/*  The fields of a new request r, drawn from the input's bytes: its
    channel, kind, what surrounds it, its header's date and the frontend's
    clock. */
static void
s_draw_request(s_model_t *m, s_req_t *r)
{
  unsigned b = s_byte(m);
  static const kg_channel_t chans[] = {KG_CH_SHELL, KG_CH_SHELL, KG_CH_CONTROL, KG_CH_STDIN};
  r->ch = chans[b & 3];
  r->kind = (kg_gate_msg_t) ((b >> 2) % KG_GATE_MSG_COUNT);
  if (r->ch == KG_CH_STDIN)
    r->kind = KG_GATE_MSG_OTHER;   /* input_reply */
  r->request = r->kind != KG_GATE_MSG_OTHER;
  r->restart = (b >> 4) & 1;
  r->alive = (b >> 5) & 1;
  r->cached = (b >> 6) & 1;
  r->by_signal = (b >> 7) & 1;
  /* the header's date: none, relative to now, or a string to parse */
  unsigned d = s_byte(m);
  switch (d & 3) {
  case 0:
    r->sent_wall = 0;
    break;
  case 1:
    r->sent_wall = s_wall(m) - (int64_t) (d >> 2) * 50;
    break;
  case 2:
    r->sent_wall = s_wall(m) + (int64_t) (d >> 2) * 50;   /* a clock ahead */
    break;
  default: {
    size_t n = d >> 2;
    if (n > (size_t) (m->end - m->p))
      n = (size_t) (m->end - m->p);
    char iso[64];
    memcpy(iso, m->p, n);
    iso[n] = '\0';
    m->p += n;
    r->sent_wall = kg_date_ms(iso);
  }
  }
  /* the frontend's clock: known or not, up to 2 min off either way */
  unsigned c = s_byte(m);
  r->clock = (kg_gate_clock_t) {((int64_t) (c >> 1) - 64) * 2000, (c & 1) != 0};
}

/*  The gate's invariants for request r's decision dec (I2-I4 and the
    reference's staleness). */
static void
s_check_decision(s_model_t *m, const s_req_t *r, kg_gate_decision_t dec)
{
  CHECK(dec.action == KG_GATE_FORWARD || dec.action == KG_GATE_ANSWER
        || dec.action == KG_GATE_HOLD || dec.action == KG_GATE_DROP);
  CHECK((dec.action == KG_GATE_ANSWER) == (dec.why != KG_GATE_WHY_NONE));
  /* I3, both ways: the reference says stale exactly when the gate does */
  bool stale = r->kind == KG_GATE_MSG_EXECUTE && r->ch != KG_CH_STDIN && m->st != KG_ST_DOWN
               && s_ref_stale(m, r->sent_wall, r->clock);
  CHECK(stale == (dec.why == KG_GATE_WHY_STALE));
  if (dec.why == KG_GATE_WHY_DOWN)
    CHECK(m->st == KG_ST_DOWN && r->request);
  /* I2 */
  if (dec.action == KG_GATE_FORWARD && r->kind != KG_GATE_MSG_INBAND)
    CHECK(kg_state_gate_open(m->st));
  if (dec.action == KG_GATE_FORWARD && r->ch == KG_CH_SHELL && r->kind == KG_GATE_MSG_EXECUTE)
    CHECK(m->in_flight < 0 && !kg_gate_abort_active(m->gate) && m->n_shell == 0);
  /* a request is never dropped outside a shutdown (I4) */
  if (dec.action == KG_GATE_DROP)
    CHECK(!r->request);
  if (dec.action == KG_GATE_HOLD)
    CHECK(r->ch != KG_CH_STDIN);
}

/*  Carry out decision dec for request i, as kg__dispatch_front does. */
static void
s_apply(s_model_t *m, int i, kg_gate_decision_t dec)
{
  s_req_t *r = &m->req[i];
  switch (dec.action) {
  case KG_GATE_FORWARD:
    if (r->ch == KG_CH_STDIN)
      r->status = R_FORWARDED;
    else
      s_deliver(m, i);
    break;
  case KG_GATE_ANSWER:
    s_answer(m, i);
    break;
  case KG_GATE_HOLD:
    r->status = R_HELD;
    if (r->ch == KG_CH_SHELL)
      m->held_shell[m->n_shell++] = i;
    else
      m->held_ctrl[m->n_ctrl++] = i;
    break;
  case KG_GATE_DROP:
    r->status = R_DROPPED;
    break;
  }
}

/*  A message arrives from the frontend (kg__dispatch_front). */
static void
s_arrive(s_model_t *m)
{
  if (m->n_req >= S_MAX_REQ)
    return;
  int i = m->n_req++;
  s_req_t *r = &m->req[i];
  memset(r, 0, sizeof *r);
  s_draw_request(m, r);
  if (kg_state_exiting(m->st)) {
    r->status = R_DROPPED;
    r->shutdown_drop = true;
    return;
  }
  kg_gate_input_t in = {.state = m->st, .channel = r->ch, .kind = r->kind,
                        .in_flight = m->in_flight >= 0 || kg_gate_abort_active(m->gate),
                        .queue_waiting = m->n_shell > 0, .now_ms = m->now,
                        .sent_wall_ms = r->kind == KG_GATE_MSG_EXECUTE ? r->sent_wall : 0,
                        .clock = r->clock, .kernel_alive = r->alive,
                        .info_cached = r->cached, .interrupt_by_signal = r->by_signal};
  kg_gate_decision_t dec = kg_gate_decide(m->gate, &in);
  if (r->ch == KG_CH_CONTROL && r->kind == KG_GATE_MSG_INBAND) {
    CHECK(dec.action == KG_GATE_FORWARD);
    s_inband(m, i);   /* `kguard restart`: out of band, at once */
    return;
  }
  /* what kguard handles itself */
  if (dec.why == KG_GATE_WHY_SHUTDOWN || dec.why == KG_GATE_WHY_SIGNAL
      || dec.why == KG_GATE_WHY_INTERRUPT)
    CHECK(r->ch == KG_CH_CONTROL);
  if (dec.why == KG_GATE_WHY_SIGNAL)
    CHECK(kg_state_gate_open(m->st) && r->alive && r->by_signal);
  if (dec.why == KG_GATE_WHY_INFO)
    CHECK(!kg_state_gate_open(m->st) && r->kind == KG_GATE_MSG_KERNEL_INFO
          && (r->cached || m->st == KG_ST_DOWN));
  if (r->kind == KG_GATE_MSG_SHUTDOWN && r->ch == KG_CH_CONTROL) {
    CHECK(dec.action == (kg_state_gate_open(m->st) && r->alive ? KG_GATE_FORWARD
                                                               : KG_GATE_ANSWER));
    if (dec.action == KG_GATE_FORWARD) {
      r->status = R_FORWARDED;   /* the kernel replies; its reply ends the wait */
      s_fire(m, KG_EV_SHUTDOWN_REQUEST);
    } else {
      s_answer(m, i);
      s_fire(m, KG_EV_SHUTDOWN);
    }
    return;
  }
  s_check_decision(m, r, dec);
  s_apply(m, i, dec);
}

/*  The running cell's reply comes back from the kernel. error: with
    stop_on_error (kg__relay_abort_queue, then the probe of kg_gate.h). */
static void
s_exec_reply(s_model_t *m, bool error, bool idle_seen)
{
  if (m->in_flight < 0 || !kg_state_gate_open(m->st))
    return;
  int i = m->in_flight;
  s_answer(m, i);
  m->in_flight = -1;
  if (!error)
    return;
  char id[32];
  snprintf(id, sizeof id, "req-%d", i);
  m->abort_for = i;
  m->probe_out = false;
  if (kg_gate_abort_begin(m->gate, id, idle_seen, m->now)) {
    kg_gate_abort_probe_sent(m->gate, "probe");
    m->probe_out = true;
  }
  /* queued execute_requests are answered "aborted"; other requests go in */
  int n = m->n_shell;
  for (int k = 0; k < n && m->st == KG_ST_READY && m->n_shell > 0; k++) {
    int j = m->held_shell[0];
    memmove(m->held_shell, m->held_shell + 1, (size_t) --m->n_shell * sizeof(int));
    if (m->req[j].kind == KG_GATE_MSG_EXECUTE)
      s_answer(m, j);
    else if (m->req[j].kind == KG_GATE_MSG_INBAND)
      s_inband(m, j);
    else
      m->req[j].status = R_FORWARDED;   /* never counted as running */
  }
}

/*  One op from the input. */
static void
s_step(s_model_t *m, unsigned op)
{
  switch (op % 10) {
  case 0:
  case 1:
  case 2:
    s_arrive(m);
    break;
  case 3: {
    bool error = s_byte(m) & 1;   /* two statements: the order of reading */
    bool idle = s_byte(m) & 1;
    s_exec_reply(m, error, idle);
    break;
  }
  case 4: {   /* a supervisor event */
    unsigned e = s_byte(m) % KG_EV_COUNT;
    s_fire(m, (kg_event_t) e);
    break;
  }
  case 5:   /* time passes: 0 .. 6.3 s */
    m->now += (int64_t) (s_byte(m) & 63) * 100;
    break;
  case 6:   /* kguard publishes the notice */
    kg_gate_notice(m->gate, m->now, s_wall(m));
    if (m->ref.fault && m->ref.notice == 0) {
      m->ref.notice = m->now > 0 ? m->now : 1;
      if (m->ref.told == 0)
        m->ref.told = s_wall(m);
    }
    break;
  case 7:   /* the failing cell's reply with kguard's metadata */
    kg_gate_told(m->gate, s_wall(m));
    if (m->ref.fault && m->ref.notice == 0 && m->ref.told == 0)
      m->ref.told = s_wall(m);
    break;
  case 8: {   /* the probe's sequence, with ids from the input */
    char id[16];
    unsigned b = s_byte(m);
    snprintf(id, sizeof id, "req-%d", m->abort_for);
    if ((b & 3) == 0 && kg_gate_abort_idle(m->gate, (b & 4) ? "other" : id)) {
      kg_gate_abort_probe_sent(m->gate, "probe");
      m->probe_out = true;
    } else if ((b & 3) == 1)
      (void) kg_gate_abort_answered(m->gate, (b & 4) ? "nope" : "probe");
    else if ((b & 3) == 2 && kg_gate_abort_active(m->gate)
             && m->now >= kg_gate_abort_deadline(m->gate))
      kg_gate_abort_clear(m->gate);
    break;
  }
  default:
    kg_gate_set_running(m->gate, (s_byte(m) & 1) ? "req-0" : NULL);
    break;
  }
  s_flush(m);
}

/*  I4: run the kernel back to READY (or DOWN) and let everything drain. */
static void
s_settle(s_model_t *m)
{
  static const kg_event_t progress[] = {KG_EV_EVIDENCE_DONE, KG_EV_STOPPED_RESTART,
                                        KG_EV_RESTORED, KG_EV_TIMER, KG_EV_KERNEL_READY};
  /* each round lets at least one held execute run and end: enough rounds
     for a queue of every request there can be, plus the restart's steps */
  for (int round = 0; round < 2 * S_MAX_REQ + 16; round++) {
    m->now += 10000;   /* past any window and probe deadline */
    if (kg_gate_abort_active(m->gate) && m->now >= kg_gate_abort_deadline(m->gate))
      kg_gate_abort_clear(m->gate);
    s_exec_reply(m, false, true);
    for (size_t k = 0; k < sizeof progress / sizeof progress[0]; k++)
      if (m->st != KG_ST_READY && m->st != KG_ST_DOWN && !kg_state_exiting(m->st))
        s_fire(m, progress[k]);
    s_flush(m);
  }
  if (kg_state_exiting(m->st))
    return;   /* shutting down: held messages go with kguard */
  CHECK(m->st == KG_ST_READY || m->st == KG_ST_DOWN);
  CHECK(m->n_shell == 0 && m->n_ctrl == 0);
  CHECK(m->in_flight < 0);
  for (int i = 0; i < m->n_req; i++) {
    const s_req_t *r = &m->req[i];
    if (r->request && !r->shutdown_drop)
      CHECK(r->status == R_ANSWERED || r->status == R_FORWARDED);
    CHECK(r->answers <= 1);
  }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  s_model_t m;
  memset(&m, 0, sizeof m);
  m.p = data;
  m.end = data + size;
  unsigned w = s_byte(&m) | s_byte(&m) << 8;
  /* the window as `--stale-window` allows: default, or 0 .. 86400 s */
  m.window = w == 0xFFFF ? KG_GATE_STALE_WINDOW_MS_DEFAULT : (int64_t) w * 1318;
  m.gate = kg_gate_new(w == 0xFFFF ? -1 : m.window);
  if (!m.gate)
    return 0;
  CHECK(kg_gate_window_ms(m.gate) == m.window);
  m.st = KG_ST_READY;
  m.now = 1000;
  m.in_flight = m.abort_for = -1;
  while (m.p < m.end)
    s_step(&m, s_byte(&m));
  s_settle(&m);
  kg_gate_destroy(&m.gate);
  return 0;
}
