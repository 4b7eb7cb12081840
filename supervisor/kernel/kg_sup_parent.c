/*  kg_sup_parent: shut kguard down when its launcher is gone. */
#include "kg_sup_parent.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_log.h"
#include "kg_parentwatch.h"
#include "kg_sup_priv.h"

/*  The death signal kguard arms on itself. Not one kg_sigsrc handles (those
    shut down unconditionally); SIGUSR2 is unused elsewhere in kguard. */
#define S_PDEATH_SIG SIGUSR2

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
  S->parent = kg_parentwatch_new(target, S_PDEATH_SIG, 1000);
  if (!S->parent)
    return -errno;
  kg_info("watching the launcher, pid %ld (%s)", (long) kg_parentwatch_pid(S->parent),
          kg_parentwatch_how(S->parent));
  return 0;
}

void
kg__parent_poll(kg_sup_t *S, bool fd_ready, int64_t now_ms)
{
  if (!S->parent || S->parent_gone)
    return;
  if (!fd_ready && now_ms < kg_parentwatch_deadline_ms(S->parent))
    return;
  if (!kg_parentwatch_check(S->parent, now_ms))
    return;
  S->parent_gone = true;
  kg_notice("the launcher (pid %ld) is gone: shutting down with its kernel",
            (long) kg_parentwatch_pid(S->parent));
  if (!kg_state_exiting(S->state))
    kg__fire(S, KG_EV_SHUTDOWN);
}
