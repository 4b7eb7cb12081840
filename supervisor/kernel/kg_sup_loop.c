/*  kg_sup_loop: kg_supervisor_run, a kguard kernel on its loop (kg_loop):
    each concern's sources registered in the order they are dispatched, the
    first state entered, the loop run until EXITED's entry action stops it.
    Part of the kg_supervisor class (its private interface is
    kg_sup_priv.h). */
#include "kg_sup_priv.h"

#include <assert.h>
#include <stdlib.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_exit.h"
#include "kg_log.h"

int
kg__loop_attach(kg_sup_t *S)
{
  /* The order is the dispatch order (kg_sup_priv.h): signals before the
     sockets, the kernel's messages before its raw pipes, the frontend last;
     the state's deadline is the last timer. */
  int (*const attach[])(kg_sup_t *) = {
    kg__signals_attach, kg__parent_attach, kg__relay_kernel_attach, kg__pipes_attach,
    kg__helpers_attach, kg__gpu_attach,    kg__standby_attach,      kg__relay_front_attach,
    kg__hang_attach,    kg__state_attach,
  };
  for (size_t i = 0; i < sizeof attach / sizeof attach[0]; i++)
    if (attach[i](S) != 0)
      return KG_ENOMEM;
  return 0;
}

int
kg_supervisor_run(kg_supervisor_t *S)
{
  assert(S);
  if (kg__loop_attach(S) != 0) {
    kg_error("unable to set up the event loop: %s", kg_strerror(KG_ENOMEM));
    return KG_EXIT_SYSTEM;
  }
  kg__publish_status(S, NULL, "starting");   /* once, at process start */
  kg_fsm_start(S->fsm, KG_ST_STARTING, kg_loop_now(S->loop));
  int rc = kg_loop_run(S->loop);
  if (rc < 0) {
    kg_error("unable to wait for events: %s", kg_strerror(rc));
    S->shutdown.exit_code = KG_EXIT_SYSTEM;
  }
  kg__droplog_flush(S, kg_clock_mono_ms(), true);
  char *totals = kg_relay_stats_totals(S->stats);
  kg_notice("kguard exiting: %s", totals ? totals : "(out of memory)");
  free(totals);
  return S->shutdown.exit_code;
}
