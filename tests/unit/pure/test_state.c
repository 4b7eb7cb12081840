/*  The supervisor's state table (kg_state), every state x event: the exit
    phases and the TERM→KILL escalation are states, shutdown is never left,
    and every state can reach EXITED and is reachable from STARTING. Pure:
    no sockets, no clock. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kg_error.h"
#include "kg_evq.h"
#include "kg_state.h"
#include "kg_test.h"

KG_TEST(state_every_state_event)
{
  for (int st = 0; st < KG_ST_COUNT; st++) {
    KG_CHECK(strcmp(kg_state_name((kg_state_t) st), "NONE") != 0);
    for (int ev = 0; ev < KG_EV_COUNT; ev++) {
      kg_state_t next = kg_state_next((kg_state_t) st, (kg_event_t) ev);
      char where[96];
      snprintf(where, sizeof where, "%s --%s-->", kg_state_name((kg_state_t) st),
               kg_event_name((kg_event_t) ev));
      if (next != KG_ST_NONE && (next < 0 || next >= KG_ST_COUNT))
        fprintf(stderr, "%s out of range\n", where);
      KG_CHECK(next == KG_ST_NONE || (next >= 0 && next < KG_ST_COUNT));
      /* once shutting down, never back to running a kernel */
      if (kg_state_exiting((kg_state_t) st) && next != KG_ST_NONE && !kg_state_exiting(next))
        fprintf(stderr, "%s leaves shutdown\n", where);
      KG_CHECK(!kg_state_exiting((kg_state_t) st) || next == KG_ST_NONE || kg_state_exiting(next));
      /* EXITED is final */
      if (st == KG_ST_EXITED)
        KG_CHECK_INT(next, KG_ST_NONE);
      /* the kernel's end always finishes a shutdown */
      if (ev == KG_EV_CHILD_EXIT && kg_state_exiting((kg_state_t) st) && st != KG_ST_EXITED)
        KG_CHECK_INT(next, KG_ST_EXITED);
    }
    KG_CHECK_INT(kg_state_gate_open((kg_state_t) st), st == KG_ST_READY);
  }
  KG_CHECK_STR(kg_event_name((kg_event_t) KG_EV_COUNT), "?");
  /* a failing device at the start stops the fresh kernel; nowhere else */
  KG_CHECK_INT(kg_state_next(KG_ST_STARTING, KG_EV_PREFLIGHT_FAILED), KG_ST_STOPPING);
  KG_CHECK_INT(kg_state_next(KG_ST_READY, KG_EV_PREFLIGHT_FAILED), KG_ST_NONE);
  /* a kernel that stops answering mid-cell is stopped from READY only (in
     CLOSING it is being stopped already; elsewhere there is no cell) */
  for (int st = 0; st < KG_ST_COUNT; st++)
    KG_CHECK_INT(kg_state_next((kg_state_t) st, KG_EV_HUNG),
                 st == KG_ST_READY ? KG_ST_STOPPING : KG_ST_NONE);
  KG_CHECK_STR(kg_state_name(KG_ST_NONE), "NONE");
}

KG_TEST(state_exit_phases)
{
  /* a forwarded shutdown_request: reply, wait, TERM, KILL, each on its deadline */
  kg_state_t s = kg_state_next(KG_ST_READY, KG_EV_SHUTDOWN_REQUEST);
  KG_CHECK_INT(s, KG_ST_EXITING);
  KG_CHECK_INT(kg_state_next(s, KG_EV_SHUTDOWN_REPLIED), KG_ST_EXIT_WAIT);
  s = kg_state_next(s, KG_EV_TIMER);   /* no reply: kguard answers for it */
  KG_CHECK_INT(s, KG_ST_EXIT_WAIT);
  s = kg_state_next(s, KG_EV_TIMER);
  KG_CHECK_INT(s, KG_ST_EXIT_TERM);
  s = kg_state_next(s, KG_EV_TIMER);
  KG_CHECK_INT(s, KG_ST_EXIT_KILL);
  s = kg_state_next(s, KG_EV_TIMER);
  KG_CHECK_INT(s, KG_ST_EXITED);
  /* a signal while the reply is awaited terminates at once */
  KG_CHECK_INT(kg_state_next(KG_ST_EXITING, KG_EV_SHUTDOWN), KG_ST_EXIT_TERM);
  KG_CHECK_INT(kg_state_next(KG_ST_EXIT_TERM, KG_EV_SHUTDOWN), KG_ST_NONE);
  /* a second shutdown_request changes nothing */
  KG_CHECK_INT(kg_state_next(KG_ST_EXIT_WAIT, KG_EV_SHUTDOWN_REQUEST), KG_ST_NONE);
  /* a late shutdown_reply is not a phase change */
  KG_CHECK_INT(kg_state_next(KG_ST_EXIT_TERM, KG_EV_SHUTDOWN_REPLIED), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next(KG_ST_READY, KG_EV_SHUTDOWN_REPLIED), KG_ST_NONE);
}

KG_TEST(state_term_then_kill)
{
  /* the restart path's TERM→KILL: the grace is STOPPING's deadline */
  KG_CHECK_INT(kg_state_next(KG_ST_STOPPING, KG_EV_TIMER), KG_ST_KILLING);
  KG_CHECK_INT(kg_state_next(KG_ST_KILLING, KG_EV_TIMER), KG_ST_NONE);   /* once */
  KG_CHECK(!kg_state_gate_open(KG_ST_KILLING));
  /* once the group is gone, KILLING goes on as STOPPING would */
  static const kg_event_t after[] = {KG_EV_STOPPED_RESTART, KG_EV_STOPPED_RESTORE,
                                     KG_EV_STOPPED_GIVE_UP, KG_EV_SHUTDOWN,
                                     KG_EV_SHUTDOWN_REQUEST, KG_EV_USER_RESTART, KG_EV_STICKY};
  for (size_t i = 0; i < sizeof after / sizeof after[0]; i++)
    KG_CHECK_INT(kg_state_next(KG_ST_KILLING, after[i]), kg_state_next(KG_ST_STOPPING, after[i]));
}

/*  Reachability over the table: from STARTING every state can be reached,
    and from every state EXITED can. */
static void
s_reach(kg_state_t from, bool seen[KG_ST_COUNT])
{
  if (seen[from])
    return;
  seen[from] = true;
  for (int ev = 0; ev < KG_EV_COUNT; ev++) {
    kg_state_t next = kg_state_next(from, (kg_event_t) ev);
    if (next != KG_ST_NONE)
      s_reach(next, seen);
  }
}

KG_TEST(state_reachability)
{
  bool seen[KG_ST_COUNT] = {false};
  s_reach(KG_ST_STARTING, seen);
  for (int st = 0; st < KG_ST_COUNT; st++) {
    if (!seen[st])
      fprintf(stderr, "%s unreachable from STARTING\n", kg_state_name((kg_state_t) st));
    KG_CHECK(seen[st]);
    bool from[KG_ST_COUNT] = {false};
    s_reach((kg_state_t) st, from);
    if (!from[KG_ST_EXITED])
      fprintf(stderr, "no way out of %s\n", kg_state_name((kg_state_t) st));
    KG_CHECK(from[KG_ST_EXITED]);
  }
}

/*  The event queue with a recording apply: a table machine whose entry
    actions post the next event, as the supervisor's do. */
typedef struct {
  kg_evq_t *q;
  kg_state_t state;
  int depth, max_depth;         /*  applies running at once                  */
  kg_state_t seen[64];
  int n_seen;
  int posts_left;               /*  for the overflow case                     */
} s_machine_t;

static void
s_apply(void *arg, kg_event_t ev)
{
  s_machine_t *m = arg;
  m->depth++;
  if (m->depth > m->max_depth)
    m->max_depth = m->depth;
  kg_state_t next = kg_state_next(m->state, ev);
  if (next != KG_ST_NONE) {
    m->state = next;
    if (m->n_seen < 64)
      m->seen[m->n_seen++] = next;
    /* entry actions that post (STOPPING's group already gone, BACKOFF's
       zero delay), like kg_supervisor.c's */
    if (next == KG_ST_STOPPING)
      kg_evq_post(m->q, KG_EV_STOPPED_RESTART, s_apply, m);
    else if (next == KG_ST_BACKOFF) {
      kg_evq_post(m->q, KG_EV_TIMER, s_apply, m);
      /* queued behind TIMER: the state has not changed yet here */
      KG_CHECK(kg_evq_pending(m->q));
      KG_CHECK_INT(m->state, KG_ST_BACKOFF);
    }
  }
  while (m->posts_left > 0) {   /* flood from inside a transition */
    m->posts_left--;
    int rc = kg_evq_post(m->q, KG_EV_USER_RESTART, s_apply, m);
    if (m->posts_left < 1)
      KG_CHECK_INT(rc, KG_ETOOBIG);   /* the 17th waiting event */
  }
  m->depth--;
}

KG_TEST(evq_posts_wait_for_the_running_transition)
{
  s_machine_t m = {.q = kg_evq_new(), .state = KG_ST_READY};
  KG_CHECK(m.q != NULL);
  KG_CHECK(!kg_evq_pending(m.q));
  /* the kernel dies: READY → STOPPING → (posted) BACKOFF → (posted) STARTING,
     each applied after the one that posted it returned */
  KG_CHECK_INT(kg_evq_post(m.q, KG_EV_CHILD_EXIT, s_apply, &m), 0);
  KG_CHECK_INT(m.state, KG_ST_STARTING);
  KG_CHECK_INT(m.n_seen, 3);
  KG_CHECK_INT(m.seen[0], KG_ST_STOPPING);
  KG_CHECK_INT(m.seen[1], KG_ST_BACKOFF);
  KG_CHECK_INT(m.seen[2], KG_ST_STARTING);
  KG_CHECK_INT(m.max_depth, 1);   /* never nested */
  KG_CHECK(!kg_evq_pending(m.q));
  /* an event the state ignores changes nothing */
  KG_CHECK_INT(kg_evq_post(m.q, KG_EV_RESTORED, s_apply, &m), 0);
  KG_CHECK_INT(m.state, KG_ST_STARTING);
  kg_evq_destroy(&m.q);
  KG_CHECK(m.q == NULL);
  kg_evq_destroy(&m.q);   /* safe twice */
}

KG_TEST(evq_overflow_is_refused)
{
  s_machine_t m = {.q = kg_evq_new(), .state = KG_ST_DOWN, .posts_left = KG_EVQ_MAX + 1};
  /* the first apply (DOWN ignores TIMER) posts 17 more: 16 wait, the 17th
     is refused; the 16 are applied in order: DOWN → STARTING → STOPPING,
     whose posted STOPPED_RESTART waits behind the other 14 (ignored while
     STOPPING), then → BACKOFF → STARTING */
  KG_CHECK_INT(kg_evq_post(m.q, KG_EV_TIMER, s_apply, &m), 0);
  KG_CHECK_INT(m.max_depth, 1);
  KG_CHECK_INT(m.n_seen, 4);
  KG_CHECK_INT(m.seen[0], KG_ST_STARTING);
  KG_CHECK_INT(m.seen[1], KG_ST_STOPPING);
  KG_CHECK_INT(m.seen[2], KG_ST_BACKOFF);
  KG_CHECK_INT(m.seen[3], KG_ST_STARTING);
  KG_CHECK_INT(m.state, KG_ST_STARTING);
  KG_CHECK(!kg_evq_pending(m.q));
  kg_evq_destroy(&m.q);
}

/*  kg_evq_fire: the files that post events do not know the supervisor;
    they fire on the queue, which applies the table it was bound to, with
    the same ordering as kg_evq_post. Unbound, an event is refused. */
KG_TEST(evq_fire_applies_the_bound_table)
{
  s_machine_t m = {.q = kg_evq_new(), .state = KG_ST_READY};
  KG_CHECK(m.q != NULL);
  KG_CHECK_INT(kg_evq_fire(m.q, KG_EV_CHILD_EXIT), KG_EINTERNAL);   /* nothing bound */
  KG_CHECK_INT(m.state, KG_ST_READY);
  KG_CHECK(!kg_evq_pending(m.q));
  kg_evq_bind(m.q, s_apply, &m);
  KG_CHECK_INT(kg_evq_fire(m.q, KG_EV_CHILD_EXIT), 0);
  KG_CHECK_INT(m.state, KG_ST_STARTING);   /* STOPPING, BACKOFF, STARTING in turn */
  KG_CHECK_INT(m.n_seen, 3);
  KG_CHECK_INT(m.max_depth, 1);            /* never nested */
  kg_evq_destroy(&m.q);
}

KG_TEST_MAIN(KG_CASE(state_every_state_event), KG_CASE(state_exit_phases),
             KG_CASE(state_term_then_kill), KG_CASE(state_reachability),
             KG_CASE(evq_posts_wait_for_the_running_transition), KG_CASE(evq_overflow_is_refused),
             KG_CASE(evq_fire_applies_the_bound_table))
