/*  kg_sup_parent: shut kguard down when its launcher is gone (the watch
    itself is kg_parentwatch's): its fd and, without a pidfd, its polling
    deadline are sources of the loop. */
#include "kg_sup_priv.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_log.h"
#include "kg_parentwatch.h"

/*  The death signal kguard arms on itself. Not one of the loop's signals
    (those shut down unconditionally); SIGUSR2 is unused elsewhere in
    kguard. */
#define S_PDEATH_SIG SIGUSR2
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
  S->parent = kg_parentwatch_new(target, S_PDEATH_SIG, S_POLL_MS);
  if (!S->parent)
    return -errno;
  kg_info("watching the launcher, pid %ld (%s)", (long) kg_parentwatch_pid(S->parent),
          kg_parentwatch_how(S->parent));
  return 0;
}

/*  The launcher is gone (once): log it and shut down as on SIGTERM. */
static void
s_check(kg_sup_t *S, int64_t now_ms)
{
  if (S->parent_gone || !kg_parentwatch_check(S->parent, now_ms))
    return;
  S->parent_gone = true;
  kg_notice("the launcher (pid %ld) is gone: shutting down with its kernel",
            (long) kg_parentwatch_pid(S->parent));
  if (!kg_state_exiting(kg__state(S)))
    kg__fire(S, KG_EV_SHUTDOWN);
}

static int
s_fd_of(void *arg)
{
  kg_sup_t *S = arg;
  return S->parent_gone ? -1 : kg_parentwatch_fd(S->parent);
}

static int
s_on_fd(kg_loop_t *loop, int id, int events, void *arg)
{
  s_check(arg, kg_loop_now(loop));
  return KG_LOOP_OK;
}

/*  The fallback's next look (INT64_MAX: the fd covers everything). */
static int64_t
s_when(void *arg)
{
  kg_sup_t *S = arg;
  int64_t d = S->parent_gone ? 0 : kg_parentwatch_deadline_ms(S->parent);
  return d == INT64_MAX ? 0 : d;
}

static int
s_on_deadline(kg_loop_t *loop, int id, void *arg)
{
  s_check(arg, kg_loop_now(loop));
  return KG_LOOP_OK;
}

int
kg__parent_attach(kg_sup_t *S)
{
  if (!S->parent)
    return 0;
  if (kg_loop_fd_of(S->loop, s_fd_of, KG_LOOP_IN, s_on_fd, S) < 0
      || kg_loop_timer_of(S->loop, s_when, s_on_deadline, S) < 0)
    return KG_ENOMEM;
  return 0;
}
