/*  The coordinator's life (kg_coord_states.c, its rows in kg_coord.c) as a
    table: every state x event against the expected one written out here;
    the join deadline leads to OVER; nothing leaves OVER; and lives run on
    the state engine with the test's clock: the join deadline ends the job
    at exactly its time, the start is chosen before the job runs, a
    pre-emption while choosing ends it. */
#include <stdio.h>
#include <string.h>

#include "kg_coord_states.h"
#include "kg_fsm.h"
#include "kg_test.h"

#define N KG_COORD_NONE
enum {
  J = KG_COORD_JOINING, C = KG_COORD_CHOOSING, R = KG_COORD_RUNNING, S = KG_COORD_STOPPING,
  O = KG_COORD_OVER
};

KG_TEST(every_state_and_event)
{
  /*  CHECKED CHOSEN STOP RESUMED END DEADLINE */
  static const int want[KG_COORD_STATE_COUNT][KG_COORD_EV_COUNT] = {
    [J] = {C, N, N, N, O, O},   /* a stop while joining: nothing runs yet */
    [C] = {N, R, N, N, O, N},   /* listing: nothing runs yet either; a
                                   pre-emption ends the job (END) */
    [R] = {N, N, S, N, O, N},   /* checked or chosen again: a late word */
    [S] = {N, N, N, R, O, N},   /* more reports while stopping: one stop */
    [O] = {N, N, N, N, N, N},   /* final */
  };
  for (int st = 0; st < KG_COORD_STATE_COUNT; st++)
    for (int ev = 0; ev < KG_COORD_EV_COUNT; ev++) {
      int got = kg_coord_next((kg_coord_state_t) st, (kg_coord_event_t) ev);
      if (got != want[st][ev])
        fprintf(stderr, "%s x %s: %d, want %d\n", kg_coord_state_names[st],
                kg_coord_event_names[ev], got, want[st][ev]);
      KG_CHECK_INT(got, want[st][ev]);
    }
  KG_CHECK_INT(kg_coord_next(KG_COORD_NONE, KG_COORD_EV_END), N);
  KG_CHECK_INT(kg_coord_next(KG_COORD_JOINING, KG_COORD_EV_COUNT), N);
  KG_CHECK_STR(kg_coord_state_names[S], "STOPPING");
  KG_CHECK_STR(kg_coord_event_names[KG_COORD_EV_RESUMED], "RESUMED");
  KG_CHECK_STR(kg_coord_state_names[C], "CHOOSING");
  KG_CHECK_STR(kg_coord_event_names[KG_COORD_EV_CHOSEN], "CHOSEN");
}

KG_TEST(every_deadline_leads_somewhere)
{
  const kg_fsm_def_t *def = kg_coord_states();
  KG_CHECK_INT(def->nstates, KG_COORD_STATE_COUNT);
  KG_CHECK_INT(def->nevents, KG_COORD_EV_COUNT);
  for (int st = 0; st < KG_COORD_STATE_COUNT; st++) {
    const kg_fsm_row_t *row = &def->rows[st];
    KG_CHECK(row->enter != NULL);
    /* only the join is timed (by its entry: the job's --join-timeout) */
    KG_CHECK_INT(row->on_deadline != KG_FSM_NONE, st == J);
    KG_CHECK_INT(row->deadline_ms, 0);
    if (row->on_deadline != KG_FSM_NONE)
      KG_CHECK(kg_coord_next((kg_coord_state_t) st, (kg_coord_event_t) row->on_deadline)
               != N);
  }
}

/*  The table on the engine, entry actions replaced by ones that need no
    sockets: JOINING arms the join timeout from its entry's time, as the
    coordinator's does. */
typedef struct {
  kg_fsm_t *fsm;
  int64_t join_timeout;
  int entered[KG_COORD_STATE_COUNT];
} s_life_t;

static void
s_enter(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  s_life_t *L = arg;
  int st = kg_fsm_state(L->fsm);
  L->entered[st]++;
  if (st == J)
    kg_fsm_set_deadline(L->fsm, kg_fsm_now(L->fsm) + L->join_timeout);
}

static int
s_next(void *arg, int state, const kg_fsm_event_t *ev)
{
  (void) arg;
  return kg_coord_next((kg_coord_state_t) state, (kg_coord_event_t) ev->id);
}

static kg_fsm_t *
s_life(s_life_t *L, kg_fsm_def_t *def, kg_fsm_row_t *rows)
{
  *def = *kg_coord_states();
  for (int st = 0; st < KG_COORD_STATE_COUNT; st++)
    rows[st] = (kg_fsm_row_t){s_enter, def->rows[st].deadline_ms, def->rows[st].on_deadline};
  def->rows = rows;
  def->next = s_next;
  def->trace = NULL;
  memset(L, 0, sizeof *L);
  L->join_timeout = 600000;
  L->fsm = kg_fsm_new(def, L, 8);
  return L->fsm;
}

KG_TEST(join_deadline_on_the_tests_clock)
{
  kg_fsm_def_t def;
  kg_fsm_row_t rows[KG_COORD_STATE_COUNT];
  s_life_t L;
  KG_CHECK(s_life(&L, &def, rows) != NULL);
  KG_CHECK_INT(kg_fsm_start(L.fsm, J, 1000), 0);
  KG_CHECK_INT(kg_fsm_deadline(L.fsm), 601000);
  /* a stop while joining changes nothing, the deadline included */
  KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_STOP, 1, 2000), 0);
  KG_CHECK_INT(kg_fsm_state(L.fsm), J);
  KG_CHECK_INT(kg_fsm_deadline(L.fsm), 601000);
  KG_CHECK(!kg_fsm_tick(L.fsm, 600999));
  KG_CHECK_INT(kg_fsm_state(L.fsm), J);
  KG_CHECK(kg_fsm_tick(L.fsm, 601000));
  KG_CHECK_INT(kg_fsm_state(L.fsm), O);
  KG_CHECK_INT(kg_fsm_deadline(L.fsm), 0);
  kg_fsm_destroy(&L.fsm);
}

/*  A node pre-empted while the nodes list their checkpoints: its listing
    will not come, and the job's end is the only way out of CHOOSING. */
KG_TEST(a_preemption_while_choosing_ends_the_job)
{
  kg_fsm_def_t def;
  kg_fsm_row_t rows[KG_COORD_STATE_COUNT];
  s_life_t L;
  KG_CHECK(s_life(&L, &def, rows) != NULL);
  KG_CHECK_INT(kg_fsm_start(L.fsm, J, 0), 0);
  KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_CHECKED, 0, 10), 0);
  KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_END, 200, 20), 0);
  KG_CHECK_INT(kg_fsm_state(L.fsm), O);
  KG_CHECK_INT(L.entered[R], 0);   /* no rank ever started */
  KG_CHECK_INT(L.entered[S], 0);
  kg_fsm_destroy(&L.fsm);
}

KG_TEST(a_generation_stops_once_and_resumes)
{
  kg_fsm_def_t def;
  kg_fsm_row_t rows[KG_COORD_STATE_COUNT];
  s_life_t L;
  KG_CHECK(s_life(&L, &def, rows) != NULL);
  KG_CHECK_INT(kg_fsm_start(L.fsm, J, 0), 0);
  KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_CHECKED, 0, 10), 0);
  KG_CHECK_INT(kg_fsm_state(L.fsm), C);
  KG_CHECK_INT(L.entered[C], 1);   /* one start sent */
  KG_CHECK_INT(kg_fsm_deadline(L.fsm), 0);   /* the join deadline is gone */
  /* a stop while the nodes list their checkpoints: nothing runs to stop */
  KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_STOP, 1, 12), 0);
  KG_CHECK_INT(kg_fsm_state(L.fsm), C);
  KG_CHECK_INT(L.entered[S], 0);
  KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_CHOSEN, 0, 15), 0);
  KG_CHECK_INT(kg_fsm_state(L.fsm), R);
  KG_CHECK(!kg_fsm_tick(L.fsm, 10000000));
  /* the fault, then the node's own stop and its peers' failures */
  for (int i = 0; i < 3; i++)
    KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_STOP, i, 20 + i), 0);
  KG_CHECK_INT(kg_fsm_state(L.fsm), S);
  KG_CHECK_INT(L.entered[S], 1);   /* one stop broadcast per generation */
  KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_RESUMED, 0, 30), 0);
  KG_CHECK_INT(kg_fsm_state(L.fsm), R);
  KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_STOP, 0, 40), 0);
  KG_CHECK_INT(L.entered[S], 2);   /* the next generation stops again */
  KG_CHECK_INT(kg_fsm_post(L.fsm, KG_COORD_EV_END, 86, 50), 0);
  KG_CHECK_INT(kg_fsm_state(L.fsm), O);
  for (int ev = 0; ev < KG_COORD_EV_COUNT; ev++)
    KG_CHECK_INT(kg_fsm_post(L.fsm, ev, 0, 60), 0);
  KG_CHECK_INT(kg_fsm_state(L.fsm), O);
  KG_CHECK_INT(L.entered[O], 1);
  kg_fsm_destroy(&L.fsm);
}

KG_TEST_MAIN(KG_CASE(every_state_and_event), KG_CASE(every_deadline_leads_somewhere),
             KG_CASE(join_deadline_on_the_tests_clock),
             KG_CASE(a_preemption_while_choosing_ends_the_job),
             KG_CASE(a_generation_stops_once_and_resumes))
