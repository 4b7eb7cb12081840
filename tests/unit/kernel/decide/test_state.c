/*  The kernel's state table (kg_state), every state x event: the exit
    phases and the TERM→KILL escalation are states, shutdown is never left,
    and every state can reach EXITED and is reachable from STARTING; the
    names come from the same lists as the enums. Pure: no sockets, no
    clock. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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
  /* KILLING's deadline re-enters it (SIGKILL sent, said again) until the
     group is gone */
  KG_CHECK_INT(kg_state_next(KG_ST_KILLING, KG_EV_TIMER), KG_ST_KILLING);
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

KG_TEST(state_names)
{
  KG_CHECK_STR(kg_state_names[KG_ST_STARTING], "STARTING");
  KG_CHECK_STR(kg_state_names[KG_ST_EXITED], "EXITED");
  KG_CHECK_STR(kg_event_names[KG_EV_KERNEL_READY], "KERNEL_READY");
  KG_CHECK_STR(kg_event_names[KG_EV_PREFLIGHT_FAILED], "PREFLIGHT_FAILED");
  KG_CHECK_STR(kg_state_name(KG_ST_COUNT), "NONE");
  /* every name distinct */
  for (int a = 0; a < KG_ST_COUNT; a++)
    for (int b = a + 1; b < KG_ST_COUNT; b++)
      KG_CHECK(strcmp(kg_state_names[a], kg_state_names[b]) != 0);
  for (int a = 0; a < KG_EV_COUNT; a++)
    for (int b = a + 1; b < KG_EV_COUNT; b++)
      KG_CHECK(strcmp(kg_event_names[a], kg_event_names[b]) != 0);
}

KG_TEST_MAIN(KG_CASE(state_every_state_event), KG_CASE(state_exit_phases),
             KG_CASE(state_term_then_kill), KG_CASE(state_reachability), KG_CASE(state_names))
