/*  The kernel supervisor's rows (kg_sup_states.c) against its table
    (kg_state.c): every state has an entry action; a state's deadline posts
    an event that state does not ignore, so no state waits for a deadline
    that leads nowhere; the states without a deadline of their own are
    exactly those left by what happens outside (the kernel's readiness, the
    restore's end, a user's restart) or final. */
#include <stdio.h>

#include "kg_fsm.h"
#include "kg_state.h"
#include "kg_test.h"

/*  Declared in the kernel supervisor's private header, which a test may
    not include: the definition is all this test reads. */
const kg_fsm_def_t *kg__states(void);

KG_TEST(every_deadline_leads_somewhere)
{
  const kg_fsm_def_t *def = kg__states();
  KG_CHECK_INT(def->nstates, KG_ST_COUNT);
  KG_CHECK_INT(def->nevents, KG_EV_COUNT);
  for (int st = 0; st < KG_ST_COUNT; st++) {
    const kg_fsm_row_t *row = &def->rows[st];
    KG_CHECK(row->enter != NULL);
    bool timed = row->deadline_ms > 0 || st == KG_ST_BACKOFF;   /* BACKOFF: the policy's */
    if (timed != (row->on_deadline != KG_FSM_NONE))
      fprintf(stderr, "%s: a deadline without its event, or the other way\n",
              kg_state_names[st]);
    KG_CHECK(timed == (row->on_deadline != KG_FSM_NONE));
    if (row->on_deadline != KG_FSM_NONE) {
      kg_state_t to = kg_state_next((kg_state_t) st, (kg_event_t) row->on_deadline);
      if (to == KG_ST_NONE)
        fprintf(stderr, "%s ignores its own deadline's %s\n", kg_state_names[st],
                kg_event_names[row->on_deadline]);
      KG_CHECK(to != KG_ST_NONE);
    }
  }
  /* the untimed ones */
  KG_CHECK_INT(def->rows[KG_ST_READY].deadline_ms, 0);
  KG_CHECK_INT(def->rows[KG_ST_RESTORING].deadline_ms, 0);   /* the helper's stall deadline */
  KG_CHECK_INT(def->rows[KG_ST_DOWN].deadline_ms, 0);
  KG_CHECK_INT(def->rows[KG_ST_EXITED].deadline_ms, 0);
  /* the shutdown fits in jupyter_client's 2.5 s before it kills kguard */
  int64_t exit_total = 0;
  for (int st = KG_ST_EXITING; st < KG_ST_EXITED; st++)
    exit_total += def->rows[st].deadline_ms;
  KG_CHECK(exit_total <= 2500);
}

KG_TEST_MAIN(KG_CASE(every_deadline_leads_somewhere))
