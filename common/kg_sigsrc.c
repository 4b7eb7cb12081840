/*  kg_sigsrc: a signalfd over a list of signals (see kg_sigsrc.h). */
#include "kg_sigsrc.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct kg_sigsrc_t {
  int fd;                       /*  the signalfd                  */
  sigset_t old_mask;            /*  restored on destroy           */
};

kg_sigsrc_t *
kg_sigsrc_new(const int *signals)
{
  sigset_t set;
  sigemptyset(&set);
  if (!signals || !signals[0]) {
    errno = EINVAL;
    return NULL;
  }
  for (const int *s = signals; *s; s++)
    if (sigaddset(&set, *s) != 0)
      return NULL;   /* errno EINVAL */
  kg_sigsrc_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  if (sigprocmask(SIG_BLOCK, &set, &self->old_mask) != 0) {
    free(self);
    return NULL;
  }
  signal(SIGPIPE, SIG_IGN);
  self->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (self->fd < 0) {
    int e = errno;
    sigprocmask(SIG_SETMASK, &self->old_mask, NULL);
    free(self);
    errno = e;
    return NULL;
  }
  return self;
}

void
kg_sigsrc_destroy(kg_sigsrc_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_sigsrc_t *self = *self_p;
  close(self->fd);
  sigprocmask(SIG_SETMASK, &self->old_mask, NULL);
  free(self);
  *self_p = NULL;
}

int
kg_sigsrc_fd(const kg_sigsrc_t *self)
{
  assert(self);
  return self->fd;
}

int
kg_sigsrc_read(kg_sigsrc_t *self)
{
  assert(self);
  struct signalfd_siginfo si;
  ssize_t n;
  do
    n = read(self->fd, &si, sizeof si);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return errno == EAGAIN ? 0 : -errno;
  if (n != (ssize_t) sizeof si)
    return -EIO;
  return (int) si.ssi_signo;
}
