/*  kg_sigsrc: a signalfd over the signals kguard handles in its loop. */
#include "kg_sigsrc.h"

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
kg_sigsrc_new(void)
{
  kg_sigsrc_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
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
  return self->fd;
}

int
kg_sigsrc_read(kg_sigsrc_t *self)
{
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
