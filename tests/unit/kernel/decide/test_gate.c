/*  kg_gate proven by tables: every kernel state x channel x message kind x
    queue x timing of the stale-request rule x what kguard knows of the
    kernel (alive, kernel_info cached, interrupts by signal), without
    sockets or a clock. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kg_gate.h"
#include "kg_test.h"

enum { PH_NO_FAULT = 0, PH_BEFORE_NOTICE, PH_IN_WINDOW, PH_AFTER_WINDOW, PH_COUNT };

/*  A gate in the given phase, and the time a message arrives in it. */
static kg_gate_t *
s_gate_in_phase(int phase, int64_t *now)
{
  kg_gate_t *g = kg_gate_new(2000);
  *now = 500;
  if (phase >= PH_BEFORE_NOTICE) {
    kg_gate_fault(g, KG_GATE_FAULT_STICKY, 1000);
    kg_gate_set_incident(g, "20261203T000000Z-abc");
    *now = 1300;   /* 0.3 s after T: during the restart */
  }
  if (phase >= PH_IN_WINDOW) {
    kg_gate_notice(g, 5000, 1700000005000);
    *now = 5300;   /* 0.3 s after the notice */
  }
  if (phase == PH_AFTER_WINDOW)
    *now = 7000;   /* the window is [notice, notice + 2 s) */
  return g;
}

/*  One row of the table: a state, a channel, a kind of request and what
    surrounds it. */
typedef struct {
  int st, kind, flight, queued, ph, asked, sent;
  kg_channel_t chan;
  bool alive, cached, by_signal;
} s_row_t;

/*  The gate's decision for row r (*d), and the same input's with no fault
    at all (*base). */
static void
s_decide(const s_row_t *r, kg_gate_decision_t *d, kg_gate_decision_t *base)
{
  /* the request's header date: unknown, before, after the notice */
  static const int64_t sent_at[] = {0, 1700000004000, 1700000005100};
  int64_t now;
  kg_gate_t *g = s_gate_in_phase(r->ph, &now);
  if (r->asked)   /* the kernel's input_request is out */
    kg_gate_input_asked(g, "input-request-1");
  kg_gate_input_t in = {.state = (kg_state_t) r->st, .channel = r->chan,
                        .kind = (kg_gate_msg_t) r->kind, .in_flight = r->flight,
                        .queue_waiting = r->queued, .now_ms = now,
                        .sent_wall_ms = sent_at[r->sent],
                        .clock = {0, true},   /* kguard's own clock */
                        .kernel_alive = r->alive, .info_cached = r->cached,
                        .interrupt_by_signal = r->by_signal};
  *d = kg_gate_decide(g, &in);
  kg_gate_t *clean = kg_gate_new(2000);
  *base = kg_gate_decide(clean, &in);
  kg_gate_destroy(&clean);
  kg_gate_destroy(&g);
}

/*  What kguard handles itself, whatever the queues hold: true when row r is
    one of those (its decision d checked). */
static bool
s_expect_own(const s_row_t *r, kg_gate_decision_t d)
{
  bool open = kg_state_gate_open((kg_state_t) r->st);
  bool control = r->chan == KG_CH_CONTROL;
  if (kg_state_exiting((kg_state_t) r->st)) {
    KG_CHECK_INT(d.action, KG_GATE_DROP);
  } else if (r->chan == KG_CH_STDIN) {
    /* only to a kernel that asked for input */
    KG_CHECK_INT(d.action, open && r->asked ? KG_GATE_FORWARD : KG_GATE_DROP);
  } else if (control && r->kind == KG_GATE_MSG_SHUTDOWN) {
    KG_CHECK_INT(d.action, open && r->alive ? KG_GATE_FORWARD : KG_GATE_ANSWER);
    KG_CHECK_INT(d.why, open && r->alive ? KG_GATE_WHY_NONE : KG_GATE_WHY_SHUTDOWN);
  } else if (control && r->kind == KG_GATE_MSG_INTERRUPT && r->by_signal) {
    KG_CHECK_INT(d.action, KG_GATE_ANSWER);
    KG_CHECK_INT(d.why, open && r->alive ? KG_GATE_WHY_SIGNAL : KG_GATE_WHY_INTERRUPT);
  } else if (control && r->kind == KG_GATE_MSG_INBAND) {
    KG_CHECK_INT(d.action, KG_GATE_FORWARD);
  } else if (r->kind == KG_GATE_MSG_KERNEL_INFO && !open
             && (r->cached || r->st == KG_ST_DOWN)) {
    KG_CHECK_INT(d.action, KG_GATE_ANSWER);
    KG_CHECK_INT(d.why, KG_GATE_WHY_INFO);
  } else {
    return false;
  }
  return true;
}

/*  What the gate must decide for an ordinary request in row r (d),
    against the same input with no fault (base). */
static void
s_expect_request(const s_row_t *r, kg_gate_decision_t d, kg_gate_decision_t base)
{
  bool open = kg_state_gate_open((kg_state_t) r->st);
  /* before the notice always; in the window unless its header says it
     was made after the notice */
  bool stale = r->ph == PH_BEFORE_NOTICE || (r->ph == PH_IN_WINDOW && r->sent != 2);
  int k = r->kind == KG_GATE_MSG_SHUTDOWN || r->kind == KG_GATE_MSG_INTERRUPT
                  || r->kind == KG_GATE_MSG_KERNEL_INFO
            ? KG_GATE_MSG_REQUEST : r->kind;
  if (r->st == KG_ST_DOWN) {
    /* no kernel: kguard answers requests, keeps %kguard in order */
    if (k == KG_GATE_MSG_EXECUTE || k == KG_GATE_MSG_REQUEST) {
      KG_CHECK_INT(d.action, KG_GATE_ANSWER);
      KG_CHECK_INT(d.why, KG_GATE_WHY_DOWN);
    } else if (k == KG_GATE_MSG_INBAND)
      KG_CHECK_INT(d.action, r->queued ? KG_GATE_HOLD : KG_GATE_FORWARD);
    else
      KG_CHECK_INT(d.action, KG_GATE_DROP);
    return;
  }
  if (k == KG_GATE_MSG_EXECUTE && stale) {
    /* a Run All's cells during a restart: never run, whatever else holds */
    if (d.action != KG_GATE_ANSWER || d.why != KG_GATE_WHY_STALE)
      fprintf(stderr, "not answered stale: state %s ch %d kind %d flight %d queued %d "
              "phase %d\n", kg_state_name((kg_state_t) r->st), (int) r->chan, r->kind,
              r->flight, r->queued, r->ph);
    KG_CHECK_INT(d.action, KG_GATE_ANSWER);
    KG_CHECK_INT(d.why, KG_GATE_WHY_STALE);
    return;
  }
  /* outside the rule the fault changes nothing */
  KG_CHECK_INT(d.action, base.action);
  KG_CHECK(d.action != KG_GATE_ANSWER && d.action != KG_GATE_DROP);
  if (r->chan == KG_CH_SHELL) {
    /* one execute in flight, arrival order, %kguard even when closed */
    bool turn = !r->queued && (open ? !r->flight : k == KG_GATE_MSG_INBAND);
    KG_CHECK_INT(d.action, turn ? KG_GATE_FORWARD : KG_GATE_HOLD);
  } else
    KG_CHECK_INT(d.action, open ? KG_GATE_FORWARD : KG_GATE_HOLD);
}

KG_TEST(gate_table_every_state)
{
  static const kg_channel_t chans[] = {KG_CH_SHELL, KG_CH_CONTROL, KG_CH_STDIN};
  size_t rows = 0;
  s_row_t r;
  for (r.st = 0; r.st < KG_ST_COUNT; r.st++)
    for (size_t c = 0; c < 3; c++)
      for (r.kind = 0; r.kind < KG_GATE_MSG_COUNT; r.kind++)
        for (r.flight = 0; r.flight < 2; r.flight++)
          for (r.queued = 0; r.queued < 2; r.queued++)
            for (r.ph = 0; r.ph < PH_COUNT; r.ph++)
              for (r.asked = 0; r.asked < 2; r.asked++)
                for (r.sent = 0; r.sent < 3; r.sent++)
                  for (int known = 0; known < 8; known++) {
                    r.chan = chans[c];
                    r.alive = known & 1;
                    r.cached = known & 2;
                    r.by_signal = known & 4;
                    kg_gate_decision_t d, base;
                    s_decide(&r, &d, &base);
                    rows++;
                    if (!s_expect_own(&r, d))
                      s_expect_request(&r, d, base);
                  }
  KG_CHECK_INT(rows, KG_ST_COUNT * 3 * KG_GATE_MSG_COUNT * 2 * 2 * PH_COUNT * 2 * 3 * 8);
}

/*  Message types to kinds: the requests kguard handles itself have their
    own kinds; a %kguard cell is an execute_request that says so. */
KG_TEST(gate_kinds)
{
  static const struct {
    const char *type;
    bool inband;
    kg_gate_msg_t kind;
  } rows[] = {
    {"execute_request", false, KG_GATE_MSG_EXECUTE},
    {"execute_request", true, KG_GATE_MSG_INBAND},
    {"shutdown_request", false, KG_GATE_MSG_SHUTDOWN},
    {"interrupt_request", false, KG_GATE_MSG_INTERRUPT},
    {"kernel_info_request", false, KG_GATE_MSG_KERNEL_INFO},
    {"complete_request", false, KG_GATE_MSG_REQUEST},
    {"comm_info_request", true, KG_GATE_MSG_REQUEST},   /* only an execute can be a cell */
    {"comm_msg", false, KG_GATE_MSG_OTHER},
    {"input_reply", false, KG_GATE_MSG_OTHER},
    {"_request", false, KG_GATE_MSG_REQUEST},
    {"request", false, KG_GATE_MSG_OTHER},
    {"", false, KG_GATE_MSG_OTHER},
    {NULL, false, KG_GATE_MSG_OTHER},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    KG_CHECK_INT(kg_gate_kind(rows[i].type, rows[i].inband), rows[i].kind);
}

/*  Spot rows stated outright (the reported runs). */
KG_TEST(gate_table_rows)
{
  static const struct {
    kg_state_t state;
    kg_channel_t ch;
    kg_gate_msg_t kind;
    bool flight, queued;
    int phase;
    int64_t sent;
    kg_gate_action_t action;
    kg_gate_why_t why;
    bool asked;   /* the kernel's input_request is out */
  } rows[] = {
    /* Run All cells arriving while kguard restarts: answered, not held */
    {KG_ST_STOPPING, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, false, false, PH_BEFORE_NOTICE, 0,
     KG_GATE_ANSWER, KG_GATE_WHY_STALE, false},
    {KG_ST_RESTORING, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, false, false, PH_BEFORE_NOTICE, 0,
     KG_GATE_ANSWER, KG_GATE_WHY_STALE, false},
    {KG_ST_STARTING, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, false, false, PH_BEFORE_NOTICE, 0,
     KG_GATE_ANSWER, KG_GATE_WHY_STALE, false},
    /* ...and in the fresh kernel, just after the notice */
    {KG_ST_READY, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, false, false, PH_IN_WINDOW, 0,
     KG_GATE_ANSWER, KG_GATE_WHY_STALE, false},
    /* in the window, made after the notice (the frontend had it): it runs */
    {KG_ST_READY, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, false, false, PH_IN_WINDOW, 1700000005100,
     KG_GATE_FORWARD, KG_GATE_WHY_NONE, false},
    /* ... made before it (queued on a slow link): answered */
    {KG_ST_READY, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, false, false, PH_IN_WINDOW, 1700000004000,
     KG_GATE_ANSWER, KG_GATE_WHY_STALE, false},
    /* before the notice the date does not matter */
    {KG_ST_STARTING, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, false, false, PH_BEFORE_NOTICE,
     1700000099000, KG_GATE_ANSWER, KG_GATE_WHY_STALE, false},
    /* after the window it runs */
    {KG_ST_READY, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, false, false, PH_AFTER_WINDOW, 0,
     KG_GATE_FORWARD, KG_GATE_WHY_NONE, false},
    /* kernel_info during the restart waits for the fresh kernel */
    {KG_ST_STARTING, KG_CH_SHELL, KG_GATE_MSG_REQUEST, false, false, PH_BEFORE_NOTICE, 0,
     KG_GATE_HOLD, KG_GATE_WHY_NONE, false},
    /* %kguard status during the restart is answered by kguard */
    {KG_ST_BACKOFF, KG_CH_SHELL, KG_GATE_MSG_INBAND, false, false, PH_BEFORE_NOTICE, 0,
     KG_GATE_FORWARD, KG_GATE_WHY_NONE, false},
    /* one execute in flight: the next waits */
    {KG_ST_READY, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, true, false, PH_NO_FAULT, 0, KG_GATE_HOLD,
     KG_GATE_WHY_NONE, false},
    {KG_ST_READY, KG_CH_SHELL, KG_GATE_MSG_REQUEST, false, true, PH_NO_FAULT, 0, KG_GATE_HOLD,
     KG_GATE_WHY_NONE, false},
    /* control never waits behind the shell queue */
    {KG_ST_READY, KG_CH_CONTROL, KG_GATE_MSG_REQUEST, true, true, PH_NO_FAULT, 0,
     KG_GATE_FORWARD, KG_GATE_WHY_NONE, false},
    {KG_ST_CLOSING, KG_CH_CONTROL, KG_GATE_MSG_REQUEST, false, false, PH_BEFORE_NOTICE, 0,
     KG_GATE_HOLD, KG_GATE_WHY_NONE, false},
    {KG_ST_DOWN, KG_CH_SHELL, KG_GATE_MSG_EXECUTE, false, false, PH_IN_WINDOW, 0, KG_GATE_ANSWER,
     KG_GATE_WHY_DOWN, false},
    {KG_ST_READY, KG_CH_STDIN, KG_GATE_MSG_OTHER, true, true, PH_IN_WINDOW, 0,
     KG_GATE_FORWARD, KG_GATE_WHY_NONE, true},
    /* an input_reply nobody asked for never reaches the kernel */
    {KG_ST_READY, KG_CH_STDIN, KG_GATE_MSG_OTHER, true, false, PH_NO_FAULT, 0,
     KG_GATE_DROP, KG_GATE_WHY_NONE, false},
    {KG_ST_STOPPING, KG_CH_STDIN, KG_GATE_MSG_OTHER, false, false, PH_BEFORE_NOTICE, 0,
     KG_GATE_DROP, KG_GATE_WHY_NONE, false},
    /* the requests kguard handles itself (the kernel runs; interrupts by signal) */
    {KG_ST_READY, KG_CH_CONTROL, KG_GATE_MSG_SHUTDOWN, true, true, PH_NO_FAULT, 0,
     KG_GATE_FORWARD, KG_GATE_WHY_NONE, false},
    {KG_ST_STARTING, KG_CH_CONTROL, KG_GATE_MSG_SHUTDOWN, false, false, PH_NO_FAULT, 0,
     KG_GATE_ANSWER, KG_GATE_WHY_SHUTDOWN, false},
    {KG_ST_READY, KG_CH_SHELL, KG_GATE_MSG_SHUTDOWN, true, false, PH_NO_FAULT, 0,
     KG_GATE_HOLD, KG_GATE_WHY_NONE, false},   /* on shell: an ordinary request */
    {KG_ST_READY, KG_CH_CONTROL, KG_GATE_MSG_INTERRUPT, true, true, PH_NO_FAULT, 0,
     KG_GATE_ANSWER, KG_GATE_WHY_SIGNAL, false},
    {KG_ST_STOPPING, KG_CH_CONTROL, KG_GATE_MSG_INTERRUPT, false, false, PH_BEFORE_NOTICE, 0,
     KG_GATE_ANSWER, KG_GATE_WHY_INTERRUPT, false},
    {KG_ST_DOWN, KG_CH_SHELL, KG_GATE_MSG_KERNEL_INFO, false, false, PH_NO_FAULT, 0,
     KG_GATE_ANSWER, KG_GATE_WHY_INFO, false},
    {KG_ST_READY, KG_CH_SHELL, KG_GATE_MSG_KERNEL_INFO, false, false, PH_NO_FAULT, 0,
     KG_GATE_FORWARD, KG_GATE_WHY_NONE, false},
    /* `kguard restart` on control: at once, also while the gate is closed */
    {KG_ST_CLOSING, KG_CH_CONTROL, KG_GATE_MSG_INBAND, false, true, PH_BEFORE_NOTICE, 0,
     KG_GATE_FORWARD, KG_GATE_WHY_NONE, false},
    {KG_ST_EXITING, KG_CH_CONTROL, KG_GATE_MSG_SHUTDOWN, false, false, PH_NO_FAULT, 0,
     KG_GATE_DROP, KG_GATE_WHY_NONE, false},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    int64_t now;
    kg_gate_t *g = s_gate_in_phase(rows[i].phase, &now);
    if (rows[i].asked)
      kg_gate_input_asked(g, "input-request-1");
    kg_gate_input_t in = {.state = rows[i].state, .channel = rows[i].ch, .kind = rows[i].kind,
                          .in_flight = rows[i].flight, .queue_waiting = rows[i].queued,
                          .now_ms = now, .sent_wall_ms = rows[i].sent, .clock = {0, true},
                          .kernel_alive = true, .interrupt_by_signal = true};
    kg_gate_decision_t d = kg_gate_decide(g, &in);
    if (d.action != rows[i].action || d.why != rows[i].why)
      fprintf(stderr, "row %zu: %s/%d, expected %s/%d\n", i, kg_gate_action_name(d.action),
              d.why, kg_gate_action_name(rows[i].action), rows[i].why);
    KG_CHECK_INT(d.action, rows[i].action);
    KG_CHECK_INT(d.why, rows[i].why);
    kg_gate_destroy(&g);
  }
}

/*  Every order of {fault, notice, request} at times 1, 2, 3 (ms): the
    request is stale exactly when it comes after the fault (a notice only
    starts the window, and 1 ms later the window is still open). */
KG_TEST(gate_stale_every_arrival_order)
{
  static const char *orders[] = {"FNR", "FRN", "NFR", "NRF", "RFN", "RNF"};
  for (size_t o = 0; o < 6; o++) {
    kg_gate_t *g = kg_gate_new(2000);
    bool stale = false, fault_seen = false;
    for (int i = 0; i < 3; i++) {
      int64_t t = i + 1;
      switch (orders[o][i]) {
      case 'F':
        kg_gate_fault(g, KG_GATE_FAULT_STICKY, t);
        fault_seen = true;
        break;
      case 'N':
        kg_gate_notice(g, t, 1700000000000 + t);
        break;
      case 'R':
        stale = kg_gate_stale(g, t, 0);
        KG_CHECK_INT(stale, fault_seen);
        break;
      }
    }
    kg_gate_destroy(&g);
  }
}

/*  The window's edges, one T per incident, the user's restart, a death. */
KG_TEST(gate_stale_window_edges)
{
  kg_gate_t *g = kg_gate_new(-1);
  KG_CHECK_INT(kg_gate_window_ms(g), KG_GATE_STALE_WINDOW_MS_DEFAULT);
  KG_CHECK(!kg_gate_stale(g, 10, 0));
  kg_gate_notice(g, 10, 0);   /* no fault: nothing */
  KG_CHECK(!kg_gate_stale(g, 11, 0));
  kg_gate_fault(g, KG_GATE_FAULT_STICKY, 1000);
  KG_CHECK(!kg_gate_stale(g, 999, 0));   /* arrived before T: doomed elsewhere */
  KG_CHECK(kg_gate_stale(g, 1000, 0));
  kg_gate_fault(g, KG_GATE_FAULT_DIED, 3000);   /* same incident: T kept */
  KG_CHECK_INT(kg_gate_fault_cause(g), KG_GATE_FAULT_STICKY);
  KG_CHECK(kg_gate_stale(g, 60000, 0));   /* no notice yet: stale however long */
  kg_gate_set_incident(g, "inc-1");
  KG_CHECK_STR(kg_gate_incident(g), "inc-1");
  kg_gate_notice(g, 61000, 1700000061000);
  KG_CHECK(kg_gate_stale(g, 62999, 0));
  KG_CHECK(!kg_gate_stale(g, 63000, 0));
  /* a new fault after the window: a new incident, a new T */
  kg_gate_fault(g, KG_GATE_FAULT_DIED, 70000);
  KG_CHECK_INT(kg_gate_fault_cause(g), KG_GATE_FAULT_DIED);
  KG_CHECK_STR(kg_gate_incident(g), "");
  KG_CHECK(kg_gate_stale(g, 70001, 0));
  kg_gate_clear(g);   /* %kguard restart: what follows is for the new kernel */
  KG_CHECK(!kg_gate_stale(g, 70002, 0));
  kg_gate_destroy(&g);
  KG_CHECK(g == NULL);
  /* window 0: the rule ends with the notice */
  g = kg_gate_new(0);
  kg_gate_fault(g, KG_GATE_FAULT_STICKY, 5);
  kg_gate_notice(g, 6, 1700000000006);
  KG_CHECK(!kg_gate_stale(g, 6, 0));
  kg_gate_destroy(&g);
}

/*  Told by the failing cell's reply before the notice: a request made after
    that runs (kguard run re-runs cells as soon as it has the reply); one
    made before is stale until the window after the notice ends. */
KG_TEST(gate_told_before_notice)
{
  kg_gate_t *g = kg_gate_new(2000);
  kg_gate_fault(g, KG_GATE_FAULT_STICKY, 1000);
  kg_gate_told(g, 1700000001200);   /* the failing reply, with kguard's metadata */
  KG_CHECK(kg_gate_stale(g, 1300, 1700000000900));    /* made before it */
  KG_CHECK(kg_gate_stale(g, 1300, 0));                /* no date */
  KG_CHECK(!kg_gate_stale(g, 1300, 1700000001250));   /* made after it */
  kg_gate_told(g, 1700000009999);   /* only the first counts */
  KG_CHECK(!kg_gate_stale(g, 1300, 1700000001250));
  kg_gate_notice(g, 5000, 1700000005000);
  KG_CHECK(kg_gate_stale(g, 5300, 1700000000900));    /* in the window, made before */
  KG_CHECK(!kg_gate_stale(g, 5300, 1700000001250));
  KG_CHECK(!kg_gate_stale(g, 7000, 1700000000900));   /* after the window */
  kg_gate_destroy(&g);
}

/*  A frontend whose clock is off kguard's (a laptop's browser and a remote
    GPU server): the request's date is read on that frontend's own clock,
    as measured from its earlier messages (the smallest arrival - date,
    here with a 20 ms delivery), so neither a clock ahead turns a request
    made before the notice into a fresh one, nor a clock behind turns one
    made after it into a stale one. Each row: the frontend's skew, when the
    request was really made relative to the notice (kguard's clock),
    whether its clock is known, and the verdict inside the window. */
KG_TEST(gate_skewed_frontend_clocks)
{
  enum { NOTICE_WALL = 1700000005000LL, DELIVERY = 20 };
  static const struct {
    int64_t skew, made_rel;
    bool known, dated;
    bool stale;
  } rows[] = {
    /* Run All: made 1 s before the notice, held up on the link */
    {0, -1000, true, true, true},
    {+10000, -1000, true, true, true},      /* ahead: still stale */
    {-10000, -1000, true, true, true},
    {+3600000, -1000, true, true, true},    /* an hour ahead */
    {-3600000, -1000, true, true, true},
    /* made 100 ms after the notice reached kguard's log: it runs */
    {0, +100, true, true, false},
    {+10000, +100, true, true, false},
    {-10000, +100, true, true, false},      /* behind: not refused for that */
    {+3600000, +100, true, true, false},
    {-3600000, +100, true, true, false},
    /* what remains is the link's one-way delay, as with synchronised
       clocks: made 10 ms before the notice, measured with 20 ms delivery */
    {+10000, -10, true, true, false},
    /* its session's first message: its clock is unknown, so its date */
    {+10000, +100, false, true, true},
    {0, +100, true, false, true},           /* no date */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_gate_t *g = kg_gate_new(2000);
    kg_gate_fault(g, KG_GATE_FAULT_STICKY, 1000);
    kg_gate_notice(g, 5000, NOTICE_WALL);
    /* the frontend dates by its clock: kguard's time + skew */
    int64_t date = rows[i].dated ? NOTICE_WALL + rows[i].made_rel + rows[i].skew : 0;
    kg_gate_clock_t clock = {-rows[i].skew + DELIVERY, rows[i].known};
    kg_gate_input_t in = {.state = KG_ST_READY, .channel = KG_CH_SHELL,
                          .kind = KG_GATE_MSG_EXECUTE, .now_ms = 5300,
                          .sent_wall_ms = date, .clock = clock};
    kg_gate_decision_t d = kg_gate_decide(g, &in);
    bool stale = d.action == KG_GATE_ANSWER && d.why == KG_GATE_WHY_STALE;
    if (stale != rows[i].stale)
      fprintf(stderr, "row %zu (skew %+lld ms, made %+lld ms): %s\n", i,
              (long long) rows[i].skew, (long long) rows[i].made_rel,
              stale ? "stale" : "runs");
    KG_CHECK_INT(stale, rows[i].stale);
    KG_CHECK_INT(d.action, rows[i].stale ? KG_GATE_ANSWER : KG_GATE_FORWARD);
    kg_gate_destroy(&g);
  }
  kg_gate_clock_t unknown = {5, false}, known = {-10000, true};
  KG_CHECK_INT(kg_gate_made_ms(1700000010000, unknown), 0);
  KG_CHECK_INT(kg_gate_made_ms(0, known), 0);
  KG_CHECK_INT(kg_gate_made_ms(1700000010000, known), 1700000000000);
}

/*  ipykernel's stop_on_error: after an error reply nothing goes in until the
    idle for it and the answer to kguard's probe, each arrival order, or the
    deadline; ids of any length. */
KG_TEST(gate_abort_probe_sequence)
{
  char long_id[4097];
  memset(long_id, 'r', sizeof long_id - 1);
  long_id[sizeof long_id - 1] = 0;
  for (int idle_first = 0; idle_first < 2; idle_first++) {
    kg_gate_t *g = kg_gate_new(-1);
    KG_CHECK(!kg_gate_abort_active(g));
    KG_CHECK(kg_gate_abort_deadline(g) == 0);
    /* idle already seen: the probe goes at once; else it waits for the idle */
    KG_CHECK_INT(kg_gate_abort_begin(g, long_id, idle_first, 100), idle_first);
    if (!idle_first) {
      KG_CHECK(kg_gate_abort_active(g));
      KG_CHECK(kg_gate_abort_deadline(g) == 100 + KG_GATE_ABORT_PROBE_MS);
      KG_CHECK(!kg_gate_abort_idle(g, "another"));
      KG_CHECK(!kg_gate_abort_idle(g, NULL));
      KG_CHECK(kg_gate_abort_idle(g, long_id));
      KG_CHECK(!kg_gate_abort_idle(g, long_id));   /* once */
    }
    kg_gate_abort_probe_sent(g, "probe-1");
    KG_CHECK(kg_gate_abort_active(g));
    KG_CHECK(kg_gate_abort_deadline(g) == 100 + KG_GATE_ABORT_PROBE_MS);
    KG_CHECK(!kg_gate_abort_answered(g, long_id));
    KG_CHECK(kg_gate_abort_active(g));
    KG_CHECK(kg_gate_abort_answered(g, "probe-1"));
    KG_CHECK(!kg_gate_abort_active(g));
    KG_CHECK(kg_gate_abort_deadline(g) == 0);
    /* a kernel that is gone ends the wait */
    kg_gate_abort_begin(g, "x", false, 500);
    kg_gate_abort_clear(g);
    KG_CHECK(!kg_gate_abort_active(g));
    /* a reply without a parent: no idle can match it, no wait */
    KG_CHECK(!kg_gate_abort_begin(g, NULL, false, 600));
    KG_CHECK(!kg_gate_abort_active(g));
    kg_gate_destroy(&g);
  }
  kg_gate_t *g = kg_gate_new(-1);
  KG_CHECK(kg_gate_running(g) == NULL);
  kg_gate_set_running(g, long_id);
  KG_CHECK_STR(kg_gate_running(g), long_id);
  kg_gate_set_running(g, "");
  KG_CHECK(kg_gate_running(g) == NULL);
  kg_gate_destroy(&g);
}

KG_TEST_MAIN(KG_CASE(gate_table_every_state), KG_CASE(gate_kinds), KG_CASE(gate_table_rows), KG_CASE(gate_told_before_notice),
             KG_CASE(gate_skewed_frontend_clocks),
             KG_CASE(gate_stale_every_arrival_order), KG_CASE(gate_stale_window_edges),
             KG_CASE(gate_abort_probe_sequence))
