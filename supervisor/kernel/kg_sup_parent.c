/*  kg_sup_parent: shut kguard down when its launcher is gone (the watch
    itself is kg_parentwatch's, and registers its own sources with the
    loop; its death signal comes through the supervisor's kg_sigsrc). */
#include "kg_sup_priv.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_log.h"
#include "kg_parentwatch.h"

#define S_POLL_MS 1000   /* without a pidfd: how often the launcher is looked at */

int
kg__parent_init(kg_sup_t *S)
{
  const char *off = getenv("KGUARD_PARENT_WATCH");
  if (off && strcmp(off, "0") == 0) {
    kg_info("launcher watch off (KGUARD_PARENT_WATCH=0)");
    return 0;
  }
  const char *jpy = getenv("JPY_PARENT_PID");
  pid_t target = 0;
  if (kg_parentwatch_target(jpy, getppid(), &target) != 0)
    kg_warning("JPY_PARENT_PID=%s is not a process id; watching the parent instead", jpy);
  S->parent = kg_parentwatch_new(target, KG__PDEATH_SIG, S_POLL_MS);
  if (!S->parent)
    return -errno;
  kg_info("watching the launcher, pid %ld (%s)", (long) kg_parentwatch_pid(S->parent),
          kg_parentwatch_how(S->parent));
  return 0;
}

/*  The launcher is gone (called once): log it and shut down as on
    SIGTERM. */
static void
s_gone(kg_loop_t *loop, void *arg)
{
  kg_sup_t *S = arg;
  kg_notice("the launcher (pid %ld) is gone: shutting down with its kernel",
            (long) kg_parentwatch_pid(S->parent));
  if (!kg_state_exiting(kg__state(S)))
    kg__fire(S, KG_EV_SHUTDOWN);
}

int
kg__parent_attach(kg_sup_t *S)
{
  if (!S->parent)
    return 0;
  return kg_parentwatch_attach(S->parent, S->loop, s_gone, S) < 0 ? KG_ENOMEM : 0;
}
