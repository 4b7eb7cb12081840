/*  kg_fsm: the state engine, on a recording machine whose entry actions
    post events as the kernel supervisor's do: transitions never nest and
    apply in order, each row's deadline is armed at entry and posts its
    event when it passes, an entry action may replace it, a re-entry runs
    the action again, ignored events change nothing, a full queue refuses.
    Pure: the times are the test's. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kg_error.h"
#include "kg_fsm.h"
#include "kg_test.h"

/*  A small life cycle: IDLE --WORK--> BUSY --DONE--> IDLE; BUSY's deadline
    posts TIMER, which leads to STUCK; STUCK re-enters itself on TIMER;
    REST posts WORK from its entry (a chain); SLEEP's entry sets its own
    delay. */
#define T_STATES(X) X(IDLE) X(BUSY) X(STUCK) X(REST) X(SLEEP)
#define T_EVENTS(X) X(WORK) X(DONE) X(TIMER) X(PAUSE) X(NAP) X(FLOOD)

enum {
#define X(n) T_##n,
  T_STATES(X)
#undef X
  T_NSTATES
};
enum {
#define X(n) T_EV_##n,
  T_EVENTS(X)
#undef X
  T_NEVENTS
};
static const char *const s_state_names[] = {
#define X(n) #n,
  T_STATES(X)
#undef X
};
static const char *const s_event_names[] = {
#define X(n) #n,
  T_EVENTS(X)
#undef X
};

typedef struct {
  kg_fsm_t *fsm;
  char log[512];                /*  "IDLE>BUSY(WORK) ..." as entered          */
  int depth, max_depth;         /*  entry actions running at once            */
  int flood;                    /*  events the next entry posts              */
  int flood_refused;
} s_machine_t;

static void
s_note(s_machine_t *m, const char *text)
{
  size_t n = strlen(m->log);
  snprintf(m->log + n, sizeof m->log - n, "%s%s", n ? " " : "", text);
}

static void
s_enter(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_machine_t *m = arg;
  m->depth++;
  if (m->depth > m->max_depth)
    m->max_depth = m->depth;
  int to = kg_fsm_state(m->fsm);
  char text[64];
  snprintf(text, sizeof text, "%s>%s(%s)", kg_fsm_state_name(m->fsm, from),
           kg_fsm_state_name(m->fsm, to), kg_fsm_event_name(m->fsm, ev->id));
  s_note(m, text);
  if (to == T_REST) {
    /* posted from inside: waits until this action has returned */
    KG_CHECK_INT(kg_fsm_post(m->fsm, T_EV_WORK, 7, 0), 0);
    KG_CHECK(kg_fsm_pending(m->fsm));
    KG_CHECK_INT(kg_fsm_state(m->fsm), T_REST);
  }
  if (to == T_SLEEP)
    kg_fsm_set_deadline(m->fsm, kg_fsm_now(m->fsm) + ev->arg);   /* a delay known now */
  for (; m->flood > 0; m->flood--)
    if (kg_fsm_post(m->fsm, T_EV_PAUSE, 0, 0) == KG_ETOOBIG)
      m->flood_refused++;
  m->depth--;
}

static const kg_fsm_row_t s_rows[T_NSTATES] = {
  [T_IDLE] = {s_enter, 0, KG_FSM_NONE},
  [T_BUSY] = {s_enter, 100, T_EV_TIMER},
  [T_STUCK] = {s_enter, 50, T_EV_TIMER},
  [T_REST] = {s_enter, 0, KG_FSM_NONE},
  [T_SLEEP] = {s_enter, 0, T_EV_DONE},
};

static int
s_next(void *arg, int state, const kg_fsm_event_t *ev)
{
  static const int table[T_NSTATES][T_NEVENTS] = {
    /*          WORK    DONE    TIMER    PAUSE   NAP      FLOOD */
    [T_IDLE] = {T_BUSY, -1,     -1,      T_REST, T_SLEEP, T_IDLE},
    [T_BUSY] = {-1,     T_IDLE, T_STUCK, -1,     -1,      -1},
    [T_STUCK] = {-1,    T_IDLE, T_STUCK, -1,     -1,      -1},
    [T_REST] = {T_BUSY, -1,     -1,      -1,     -1,      -1},
    [T_SLEEP] = {-1,    T_IDLE, -1,      -1,     -1,      -1},
  };
  return table[state][ev->id];
}

static int s_ignored;

static void
s_trace(void *arg, int from, const kg_fsm_event_t *ev, int to)
{
  if (to == KG_FSM_NONE)
    s_ignored++;
}

static const kg_fsm_def_t s_def = {
  .nstates = T_NSTATES,
  .nevents = T_NEVENTS,
  .state_names = s_state_names,
  .event_names = s_event_names,
  .rows = s_rows,
  .next = s_next,
  .trace = s_trace,
};

static void
s_setup(s_machine_t *m, int queue_max)
{
  memset(m, 0, sizeof *m);
  m->fsm = kg_fsm_new(&s_def, m, queue_max);
  KG_CHECK(m->fsm != NULL);
  s_ignored = 0;
}

KG_TEST(transitions_apply_in_order_never_nested)
{
  s_machine_t m;
  s_setup(&m, 16);
  KG_CHECK_INT(kg_fsm_state(m.fsm), KG_FSM_NONE);
  KG_CHECK_INT(kg_fsm_post(m.fsm, T_EV_WORK, 0, 0), KG_EUSAGE);   /* not started */
  KG_CHECK_INT(kg_fsm_start(m.fsm, T_IDLE, 1000), 0);
  KG_CHECK_INT(kg_fsm_start(m.fsm, T_IDLE, 1000), KG_EUSAGE);   /* once */
  /* REST's entry posts WORK: applied after it returned */
  KG_CHECK_INT(kg_fsm_post(m.fsm, T_EV_PAUSE, 0, 1010), 0);
  KG_CHECK_STR(m.log, "NONE>IDLE(NONE) IDLE>REST(PAUSE) REST>BUSY(WORK)");
  KG_CHECK_INT(m.max_depth, 1);
  KG_CHECK(!kg_fsm_pending(m.fsm));
  KG_CHECK_INT(kg_fsm_state(m.fsm), T_BUSY);
  /* an event the state ignores changes nothing */
  KG_CHECK_INT(kg_fsm_post(m.fsm, T_EV_PAUSE, 0, 1020), 0);
  KG_CHECK_INT(kg_fsm_state(m.fsm), T_BUSY);
  KG_CHECK_INT(s_ignored, 1);
  KG_CHECK_INT(kg_fsm_post(m.fsm, T_NEVENTS, 0, 1020), KG_EUSAGE);
  KG_CHECK_INT(kg_fsm_post(m.fsm, -1, 0, 1020), KG_EUSAGE);
  kg_fsm_destroy(&m.fsm);
  KG_CHECK(m.fsm == NULL);
  kg_fsm_destroy(&m.fsm);   /* safe twice */
}

KG_TEST(deadlines_post_their_event)
{
  s_machine_t m;
  s_setup(&m, 16);
  kg_fsm_start(m.fsm, T_IDLE, 1000);
  KG_CHECK_INT(kg_fsm_deadline(m.fsm), 0);
  kg_fsm_post(m.fsm, T_EV_WORK, 0, 2000);
  KG_CHECK_INT(kg_fsm_deadline(m.fsm), 2100);   /* BUSY's 100 ms from the event */
  KG_CHECK(!kg_fsm_tick(m.fsm, 2099));
  KG_CHECK_INT(kg_fsm_state(m.fsm), T_BUSY);
  KG_CHECK(kg_fsm_tick(m.fsm, 2100));
  KG_CHECK_INT(kg_fsm_state(m.fsm), T_STUCK);
  KG_CHECK_INT(kg_fsm_deadline(m.fsm), 2150);
  /* STUCK's deadline re-enters it: the action runs again, the deadline again */
  m.log[0] = '\0';
  KG_CHECK(kg_fsm_tick(m.fsm, 2160));
  KG_CHECK_STR(m.log, "STUCK>STUCK(TIMER)");
  KG_CHECK_INT(kg_fsm_deadline(m.fsm), 2210);
  /* leaving disarms it (IDLE has none) */
  kg_fsm_post(m.fsm, T_EV_DONE, 0, 2170);
  KG_CHECK_INT(kg_fsm_deadline(m.fsm), 0);
  KG_CHECK(!kg_fsm_tick(m.fsm, 9999));
  kg_fsm_destroy(&m.fsm);
}

KG_TEST(an_entry_action_sets_its_own_deadline)
{
  s_machine_t m;
  s_setup(&m, 16);
  kg_fsm_start(m.fsm, T_IDLE, 0);
  kg_fsm_post(m.fsm, T_EV_NAP, 250, 5000);   /* the event's arg: the delay */
  KG_CHECK_INT(kg_fsm_state(m.fsm), T_SLEEP);
  KG_CHECK_INT(kg_fsm_now(m.fsm), 5000);
  KG_CHECK_INT(kg_fsm_deadline(m.fsm), 5250);
  KG_CHECK(kg_fsm_tick(m.fsm, 5250));
  KG_CHECK_INT(kg_fsm_state(m.fsm), T_IDLE);
  kg_fsm_set_deadline(m.fsm, -5);   /* nonsense disarms */
  KG_CHECK_INT(kg_fsm_deadline(m.fsm), 0);
  kg_fsm_destroy(&m.fsm);
}

KG_TEST(a_full_queue_refuses)
{
  s_machine_t m;
  s_setup(&m, 4);
  kg_fsm_start(m.fsm, T_IDLE, 0);
  m.flood = 6;   /* IDLE's re-entry posts 6 PAUSEs: 4 wait, 2 are refused */
  KG_CHECK_INT(kg_fsm_post(m.fsm, T_EV_FLOOD, 0, 0), 0);
  KG_CHECK_INT(m.flood_refused, 2);
  /* the 4 apply in order: IDLE --PAUSE--> REST, whose WORK waits behind
     the other 3 PAUSEs (ignored by REST), then REST --WORK--> BUSY */
  KG_CHECK_INT(kg_fsm_state(m.fsm), T_BUSY);
  KG_CHECK_INT(s_ignored, 3);
  KG_CHECK_INT(m.max_depth, 1);
  kg_fsm_destroy(&m.fsm);
}

KG_TEST(names_and_bad_definitions)
{
  s_machine_t m;
  s_setup(&m, 1);
  KG_CHECK_STR(kg_fsm_state_name(m.fsm, T_STUCK), "STUCK");
  KG_CHECK_STR(kg_fsm_event_name(m.fsm, T_EV_TIMER), "TIMER");
  KG_CHECK_STR(kg_fsm_state_name(m.fsm, KG_FSM_NONE), "NONE");
  KG_CHECK_STR(kg_fsm_event_name(m.fsm, T_NEVENTS), "NONE");
  KG_CHECK_INT(kg_fsm_start(m.fsm, T_NSTATES, 0), KG_EUSAGE);
  kg_fsm_destroy(&m.fsm);
  KG_CHECK(kg_fsm_new(&s_def, NULL, 0) == NULL);
  KG_CHECK(kg_fsm_new(NULL, NULL, 4) == NULL);
  kg_fsm_def_t no_next = s_def;
  no_next.next = NULL;
  KG_CHECK(kg_fsm_new(&no_next, NULL, 4) == NULL);
}

/*  Queued events wait for kg_fsm_run, then apply in order (a wake-up's
    events gathered first, judged after); run inside a transition, or with
    nothing queued, does nothing. */
KG_TEST(queued_events_wait_for_run)
{
  s_machine_t m;
  s_setup(&m, 4);
  KG_CHECK_INT(kg_fsm_queue(m.fsm, T_EV_WORK, 0), KG_EUSAGE);   /* not started */
  KG_CHECK_INT(kg_fsm_start(m.fsm, T_IDLE, 1000), 0);
  KG_CHECK_INT(kg_fsm_queue(m.fsm, T_EV_WORK, 0), 0);
  KG_CHECK_INT(kg_fsm_queue(m.fsm, T_EV_DONE, 0), 0);
  KG_CHECK_INT(kg_fsm_state(m.fsm), T_IDLE);
  KG_CHECK(kg_fsm_pending(m.fsm));
  KG_CHECK_STR(m.log, "NONE>IDLE(NONE)");
  kg_fsm_run(m.fsm, 1010);
  KG_CHECK_STR(m.log, "NONE>IDLE(NONE) IDLE>BUSY(WORK) BUSY>IDLE(DONE)");
  KG_CHECK(!kg_fsm_pending(m.fsm));
  KG_CHECK_INT(kg_fsm_now(m.fsm), 1010);
  kg_fsm_run(m.fsm, 1020);   /* nothing waits: nothing happens */
  KG_CHECK_INT(kg_fsm_now(m.fsm), 1010);
  KG_CHECK_INT(kg_fsm_queue(m.fsm, T_NEVENTS, 0), KG_EUSAGE);
  for (int i = 0; i < 4; i++)
    KG_CHECK_INT(kg_fsm_queue(m.fsm, T_EV_PAUSE, 0), 0);
  KG_CHECK_INT(kg_fsm_queue(m.fsm, T_EV_PAUSE, 0), KG_ETOOBIG);
  kg_fsm_destroy(&m.fsm);
}

KG_TEST_MAIN(KG_CASE(transitions_apply_in_order_never_nested), KG_CASE(deadlines_post_their_event),
             KG_CASE(an_entry_action_sets_its_own_deadline), KG_CASE(a_full_queue_refuses),
             KG_CASE(names_and_bad_definitions), KG_CASE(queued_events_wait_for_run))
