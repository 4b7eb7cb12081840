/*  kg_state: the named paths through the state table (sticky restart,
    death, give-up, shutdown) and the events it ignores. test_state.c covers
    every state x event. */
#include <stdbool.h>

#include "kg_state.h"
#include "kg_test.h"

KG_TEST(state_table_paths)
{
  /* The sticky path: READY → CLOSING → STOPPING → RESTORING → BACKOFF → STARTING → READY */
  kg_state_t s = KG_ST_READY;
  s = kg_state_next(s, KG_EV_STICKY);
  KG_CHECK_INT(s, KG_ST_CLOSING);
  KG_CHECK(!kg_state_gate_open(s));
  s = kg_state_next(s, KG_EV_EVIDENCE_DONE);
  KG_CHECK_INT(s, KG_ST_STOPPING);
  s = kg_state_next(s, KG_EV_STOPPED_RESTORE);
  KG_CHECK_INT(s, KG_ST_RESTORING);
  s = kg_state_next(s, KG_EV_RESTORED);
  KG_CHECK_INT(s, KG_ST_BACKOFF);
  s = kg_state_next(s, KG_EV_TIMER);
  KG_CHECK_INT(s, KG_ST_STARTING);
  s = kg_state_next(s, KG_EV_KERNEL_READY);
  KG_CHECK_INT(s, KG_ST_READY);
  KG_CHECK(kg_state_gate_open(s));
  /* death and give-up; DOWN is left only by a user restart */
  KG_CHECK_INT(kg_state_next(KG_ST_READY, KG_EV_CHILD_EXIT), KG_ST_STOPPING);
  KG_CHECK_INT(kg_state_next(KG_ST_STOPPING, KG_EV_STOPPED_GIVE_UP), KG_ST_DOWN);
  KG_CHECK_INT(kg_state_next(KG_ST_DOWN, KG_EV_USER_RESTART), KG_ST_STARTING);
  KG_CHECK_INT(kg_state_next(KG_ST_STARTING, KG_EV_SPAWN_FAILED), KG_ST_DOWN);
  /* shutdown from everywhere but the shutdown states: a forwarded
     shutdown_request awaits the kernel's reply (EXITING), a signal
     terminates the kernel at once (EXIT_TERM) */
  for (int st = 0; st < KG_ST_COUNT; st++) {
    bool exiting = kg_state_exiting((kg_state_t) st);
    KG_CHECK_INT(kg_state_next((kg_state_t) st, KG_EV_SHUTDOWN_REQUEST),
                 exiting ? KG_ST_NONE : KG_ST_EXITING);
    if (!exiting)
      KG_CHECK_INT(kg_state_next((kg_state_t) st, KG_EV_SHUTDOWN), KG_ST_EXIT_TERM);
  }
  KG_CHECK_STR(kg_state_name(KG_ST_RESTORING), "RESTORING");
  KG_CHECK_STR(kg_event_name(KG_EV_STICKY), "STICKY");
}

KG_TEST(state_table_ignores)
{
  KG_CHECK_INT(kg_state_next(KG_ST_DOWN, KG_EV_TIMER), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next(KG_ST_DOWN, KG_EV_CHILD_EXIT), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next(KG_ST_CLOSING, KG_EV_STICKY), KG_ST_NONE);   /* once */
  KG_CHECK_INT(kg_state_next(KG_ST_RESTORING, KG_EV_USER_RESTART), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next(KG_ST_EXITING, KG_EV_USER_RESTART), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next(KG_ST_READY, KG_EV_KERNEL_READY), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next((kg_state_t) 99, KG_EV_TIMER), KG_ST_NONE);
}

KG_TEST_MAIN(KG_CASE(state_table_paths), KG_CASE(state_table_ignores))
