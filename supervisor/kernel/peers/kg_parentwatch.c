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
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_sigsrc.h"

#define S_PERIOD_MS_DEFAULT 1000   /* without a pidfd: how often the launcher is looked at */

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct kg_parentwatch_t {
  pid_t target;                 /*  the launcher; 0 = watching nobody        */
  pid_t ppid0;                  /*  getppid() at creation (> 1), or 0        */
  int pidfd;                    /*  readable when target exits, or -1        */
  int epfd;                     /*  one fd for the loop: pidfd + signals, or -1 */
  kg_sigsrc_t *sig;             /*  the armed death signal, or NULL          */
  int period_ms;                /*  fallback polling period                  */
  int64_t deadline_ms;          /*  next fallback check, INT64_MAX if none   */
  bool gone;                    /*  sticky answer                            */
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

kg_parentwatch_t *
kg_parentwatch_new(pid_t target, int pdeath_sig, int period_ms)
{
  kg_parentwatch_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->pidfd = self->epfd = -1;
  self->deadline_ms = INT64_MAX;
  self->period_ms = period_ms > 0 ? period_ms : S_PERIOD_MS_DEFAULT;
  pid_t ppid = getppid();
  self->ppid0 = ppid > 1 ? ppid : 0;
  if (target > 1 && target != ppid && !s_is_ancestor(target))
    target = self->ppid0;       /* not our launcher: watch the parent */
  if (target <= 1)
    return self;                /* nobody to watch */
  self->target = target;

  self->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (self->epfd < 0)
    goto fail;
  int fd = (int) syscall(SYS_pidfd_open, target, 0);
  if (fd >= 0) {
    self->pidfd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(self->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
      goto fail;
  } else if (errno == ESRCH) {
    self->gone = true;          /* already dead before we looked */
  } else {
    self->deadline_ms = 0;      /* no pidfd (old kernel, seccomp): poll */
  }
  if (pdeath_sig > 0) {
    const int signals[] = {pdeath_sig, 0};
    self->sig = kg_sigsrc_new(signals);
    if (!self->sig)
      goto fail;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = kg_sigsrc_fd(self->sig)};
    if (epoll_ctl(self->epfd, EPOLL_CTL_ADD, kg_sigsrc_fd(self->sig), &ev) != 0)
      goto fail;
    if (prctl(PR_SET_PDEATHSIG, pdeath_sig) != 0)
      goto fail;
    /* The parent may have died before the signal was armed: re-check. */
    if (self->ppid0 && getppid() != self->ppid0)
      self->gone = true;
  }
  return self;

fail:;
  int e = errno;
  kg_parentwatch_destroy(&self);
  errno = e;
  return NULL;
}

void
kg_parentwatch_destroy(kg_parentwatch_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_parentwatch_t *self = *self_p;
  if (self->sig)
    prctl(PR_SET_PDEATHSIG, 0);
  kg_sigsrc_destroy(&self->sig);   /* and the mask it found */
  if (self->pidfd >= 0)
    close(self->pidfd);
  if (self->epfd >= 0)
    close(self->epfd);
  free(self);
  *self_p = NULL;
}

int
kg_parentwatch_fd(const kg_parentwatch_t *self)
{
  assert(self);
  return self->epfd;
}

int64_t
kg_parentwatch_deadline_ms(const kg_parentwatch_t *self)
{
  assert(self);
  return self->gone ? 0 : self->deadline_ms;
}

bool
kg_parentwatch_check(kg_parentwatch_t *self, int64_t now_ms)
{
  if (self->gone || !self->target)
    return self->gone;
  /* Drain: the death signal is a hint, decided by the checks below. */
  while (self->sig && kg_sigsrc_read(self->sig) > 0)
    ;
  if (self->pidfd >= 0) {
    struct pollfd p = {.fd = self->pidfd, .events = POLLIN};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP)))
      self->gone = true;
  } else if (s_pid_gone(self->target)) {
    self->gone = true;
  }
  if (self->ppid0 && getppid() != self->ppid0)
    self->gone = true;          /* the direct parent died: reparented */
  if (self->deadline_ms != INT64_MAX)
    self->deadline_ms = now_ms + self->period_ms;
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
