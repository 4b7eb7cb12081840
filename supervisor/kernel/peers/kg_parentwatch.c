/*  kg_parentwatch: notice that the process that launched kguard is gone. */
#include "kg_parentwatch.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kg_error.h"

#define S_PERIOD_MS_DEFAULT 1000   /* without a pidfd: how often the launcher is looked at */

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct kg_parentwatch_t {
  pid_t target;                 /*  the launcher; 0 = watching nobody        */
  pid_t ppid0;                  /*  getppid() at creation (> 1), or 0        */
  int pidfd;                    /*  readable when target exits, or -1        */
  int pdeath_sig;               /*  the armed death signal, or 0             */
  int period_ms;                /*  fallback polling period                  */
  bool polling;                 /*  no pidfd: the fallback timer looks       */
  bool gone;                    /*  sticky answer                            */
  bool told;                    /*  on_gone was called                       */
  kg_loop_t *loop;              /*  attached to (not owned), or NULL         */
  int pidfd_id, timer_id;       /*  its registrations there, or 0            */
  int64_t due_ms;               /*  the timer's deadline (0: none)           */
  kg_parentwatch_gone_fn *on_gone;
  void *on_gone_arg;
};

int
kg_parentwatch_target(const char *jpy, pid_t ppid, pid_t *target_p)
{
  pid_t fallback = ppid > 1 ? ppid : 0;
  *target_p = fallback;
  if (!jpy)
    return 0;
  /* Strictly decimal digits: no sign, no spaces, no trailing junk. */
  if (!*jpy || strspn(jpy, "0123456789") != strlen(jpy) || strlen(jpy) > 10)
    return KG_EUSAGE;
  long long v = strtoll(jpy, NULL, 10);
  if (v > INT_MAX)
    return KG_EUSAGE;
  *target_p = v > 1 ? (pid_t) v : 0;
  return 0;
}

/*  True if pid no longer exists. EPERM means it exists (someone else's). */
static bool
s_pid_gone(pid_t pid)
{
  return kill(pid, 0) != 0 && errno == ESRCH;
}

/*  The parent of pid from /proc/pid/stat, or 0. The comm field may hold
    spaces and parentheses, so parse after its last ')'. */
static pid_t
s_parent_of(pid_t pid)
{
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *close_paren = strrchr(buf, ')');
  int ppid = 0;
  if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
    return 0;
  return (pid_t) ppid;
}

/*  True if pid is one of our ancestors (a stale JPY_PARENT_PID inherited
    from some other kernel, or a reused pid, is not). */
static bool
s_is_ancestor(pid_t pid)
{
  pid_t p = getppid();
  for (int hops = 0; hops < 32 && p > 1; hops++, p = s_parent_of(p))
    if (p == pid)
      return true;
  return false;
}

/*  True if sig is blocked in this thread's mask (a kg_sigsrc holds it). */
static bool
s_blocked(int sig)
{
  sigset_t now;
  return sigprocmask(SIG_BLOCK, NULL, &now) == 0 && sigismember(&now, sig) == 1;
}

kg_parentwatch_t *
kg_parentwatch_new(pid_t target, int pdeath_sig, int period_ms)
{
  if (pdeath_sig < 0 || (pdeath_sig > 0 && !s_blocked(pdeath_sig))) {
    errno = EINVAL;
    return NULL;
  }
  kg_parentwatch_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->pidfd = -1;
  self->period_ms = period_ms > 0 ? period_ms : S_PERIOD_MS_DEFAULT;
  pid_t ppid = getppid();
  self->ppid0 = ppid > 1 ? ppid : 0;
  if (target > 1 && target != ppid && !s_is_ancestor(target))
    target = self->ppid0;       /* not our launcher: watch the parent */
  if (target <= 1)
    return self;                /* nobody to watch */
  self->target = target;

  int fd = (int) syscall(SYS_pidfd_open, target, 0);
  if (fd >= 0)
    self->pidfd = fd;
  else if (errno == ESRCH)
    self->gone = true;          /* already dead before we looked */
  else
    self->polling = true;       /* no pidfd (old kernel, seccomp): poll */
  if (pdeath_sig > 0) {
    if (prctl(PR_SET_PDEATHSIG, pdeath_sig) != 0) {
      int e = errno;
      kg_parentwatch_destroy(&self);
      errno = e;
      return NULL;
    }
    self->pdeath_sig = pdeath_sig;
    /* The parent may have died before the signal was armed: re-check. */
    if (self->ppid0 && getppid() != self->ppid0)
      self->gone = true;
  }
  return self;
}

void
kg_parentwatch_destroy(kg_parentwatch_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_parentwatch_t *self = *self_p;
  if (self->loop) {
    kg_loop_remove(self->loop, self->pidfd_id);
    kg_loop_remove(self->loop, self->timer_id);
  }
  if (self->pdeath_sig)
    prctl(PR_SET_PDEATHSIG, 0);
  if (self->pidfd >= 0)
    close(self->pidfd);
  free(self);
  *self_p = NULL;
}

/*  Decide: is the launcher gone (sticky)? Never blocks. */
static bool
s_check(kg_parentwatch_t *self)
{
  if (self->gone || !self->target)
    return self->gone;
  if (self->pidfd >= 0) {
    struct pollfd p = {.fd = self->pidfd, .events = POLLIN};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP)))
      self->gone = true;
  } else if (s_pid_gone(self->target)) {
    self->gone = true;
  }
  if (self->ppid0 && getppid() != self->ppid0)
    self->gone = true;          /* the direct parent died: reparented */
  return self->gone;
}

/*  Look, and tell the owner once when the launcher is gone; then the
    watch's sources leave the loop (a pidfd of a dead process stays
    readable). */
static void
s_look(kg_parentwatch_t *self)
{
  int64_t now = kg_loop_now(self->loop);
  if (self->polling)
    self->due_ms = now + self->period_ms;
  if (!s_check(self) || self->told)
    return;
  self->told = true;
  self->due_ms = 0;
  kg_loop_remove(self->loop, self->pidfd_id);
  self->pidfd_id = 0;
  self->on_gone(self->loop, self->on_gone_arg);
}

static int
s_on_pidfd(kg_loop_t *loop, int id, int events, void *arg)
{
  s_look(arg);
  return KG_LOOP_OK;
}

static int64_t
s_when(void *arg)
{
  return ((kg_parentwatch_t *) arg)->due_ms;
}

static int
s_on_timer(kg_loop_t *loop, int id, void *arg)
{
  s_look(arg);
  return KG_LOOP_OK;
}

int
kg_parentwatch_attach(kg_parentwatch_t *self, kg_loop_t *loop, kg_parentwatch_gone_fn *on_gone,
                      void *arg)
{
  assert(self && loop && on_gone && !self->loop);
  self->loop = loop;
  self->on_gone = on_gone;
  self->on_gone_arg = arg;
  if (!self->target)
    return 0;
  /* Gone already, or polling: the first look is due at once. */
  if (self->gone || self->polling)
    self->due_ms = kg_loop_now(loop);
  if (self->pidfd >= 0 && !self->gone
      && (self->pidfd_id = kg_loop_fd(loop, self->pidfd, KG_LOOP_IN, s_on_pidfd, self)) < 0)
    return KG_ENOMEM;
  if ((self->timer_id = kg_loop_timer_of(loop, s_when, s_on_timer, self)) < 0)
    return KG_ENOMEM;
  return 0;
}

bool
kg_parentwatch_signal(kg_parentwatch_t *self, int signo)
{
  assert(self);
  if (!self->pdeath_sig || signo != self->pdeath_sig)
    return false;
  /* Only a hint: s_check decides. */
  if (self->loop)
    s_look(self);
  return true;
}

bool
kg_parentwatch_gone(const kg_parentwatch_t *self)
{
  assert(self);
  return self->gone;
}

pid_t
kg_parentwatch_pid(const kg_parentwatch_t *self)
{
  assert(self);
  return self->target;
}

const char *
kg_parentwatch_how(const kg_parentwatch_t *self)
{
  if (!self->target)
    return "off";
  return self->pidfd >= 0 ? "pidfd" : "poll";
}
