/*  kg_fdq: a bounded, never-blocking output queue for a borrowed
    descriptor (kg_fdq.h). */
#include "kg_fdq.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_clock.h"

struct kg_fdq_t {
  int fd;
  bool direct;          /*  a regular file or a character device other
                            than a terminal: writes never wait on a reader */
  bool failed;
  size_t max;
  char *buf;            /*  queued bytes are buf[head, head + len)         */
  size_t head, len, alloc;
  uint64_t dropped;
};

kg_fdq_t *
kg_fdq_new(int fd, size_t max)
{
  if (max == 0)
    return NULL;
  kg_fdq_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->fd = fd;
  self->max = max;
  struct stat st;
  if (fstat(fd, &st) == 0)
    self->direct = S_ISREG(st.st_mode) || (S_ISCHR(st.st_mode) && !isatty(fd));
  return self;
}

void
kg_fdq_destroy(kg_fdq_t **self_p)
{
  kg_fdq_t *self = *self_p;
  if (!self)
    return;
  free(self->buf);
  free(self);
  *self_p = NULL;
}

/*  Whether fd takes bytes now without waiting. */
static bool
s_writable(kg_fdq_t *self, int timeout_ms)
{
  if (self->direct)
    return true;
  struct pollfd p = {.fd = self->fd, .events = POLLOUT};
  int n;
  do
    n = poll(&p, 1, timeout_ms);
  while (n < 0 && errno == EINTR);
  if (n > 0 && (p.revents & (POLLERR | POLLNVAL)))
    return true;   /* the write says what is wrong */
  return n > 0 && (p.revents & (POLLOUT | POLLHUP));
}

/*  Write from buf what fd takes now; returns the bytes written. */
static size_t
s_put(kg_fdq_t *self, const char *buf, size_t len, int timeout_ms)
{
  size_t done = 0;
  while (done < len && !self->failed && s_writable(self, done ? 0 : timeout_ms)) {
    size_t n = len - done;
    if (!self->direct && n > PIPE_BUF)
      n = PIPE_BUF;
    ssize_t w = write(self->fd, buf + done, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno == EAGAIN)
      break;
    if (w <= 0) {
      self->failed = true;
      break;
    }
    done += (size_t) w;
  }
  return done;
}

/*  Send what is queued, waiting for the descriptor at most timeout_ms; a
    failed descriptor turns what is left into dropped bytes. */
static void
s_send_queued(kg_fdq_t *self, int timeout_ms)
{
  size_t w = s_put(self, self->buf + self->head, self->len, timeout_ms);
  self->head += w;
  self->len -= w;
  if (self->failed) {
    self->dropped += self->len;
    self->len = 0;
  }
  if (self->len == 0)
    self->head = 0;
}

void
kg_fdq_write(kg_fdq_t *self, const void *data, size_t len)
{
  assert(self);
  const char *buf = data;
  s_send_queued(self, 0);   /* what waits goes first */
  if (self->len == 0 && !self->failed) {
    size_t w = s_put(self, buf, len, 0);
    buf += w;
    len -= w;
  }
  if (len == 0)
    return;
  if (self->failed || self->len + len > self->max) {
    self->dropped += len;
    return;
  }
  if (self->head + self->len + len > self->alloc) {
    if (self->head > 0) {
      memmove(self->buf, self->buf + self->head, self->len);
      self->head = 0;
    }
    if (self->len + len > self->alloc) {
      size_t alloc = self->alloc ? self->alloc : 65536;
      while (alloc < self->len + len)
        alloc *= 2;
      char *grown = realloc(self->buf, alloc);
      if (!grown) {
        self->dropped += len;
        return;
      }
      self->buf = grown;
      self->alloc = alloc;
    }
  }
  memcpy(self->buf + self->head + self->len, buf, len);
  self->len += len;
}

void
kg_fdq_flush(kg_fdq_t *self)
{
  assert(self);
  s_send_queued(self, 0);
}

bool
kg_fdq_pending(const kg_fdq_t *self)
{
  assert(self);
  return self->len > 0;
}

int
kg_fdq_fd(const kg_fdq_t *self)
{
  assert(self);
  return self->fd;
}

bool
kg_fdq_failed(const kg_fdq_t *self)
{
  assert(self);
  return self->failed;
}

uint64_t
kg_fdq_take_dropped(kg_fdq_t *self)
{
  assert(self);
  if (self->len > 0)
    return 0;
  uint64_t d = self->dropped;
  self->dropped = 0;
  return d;
}

size_t
kg_fdq_drain(kg_fdq_t *self, int timeout_ms)
{
  assert(self);
  int64_t end = kg_clock_mono_ms() + timeout_ms;
  for (int64_t left = timeout_ms; self->len > 0 && left > 0; left = end - kg_clock_mono_ms())
    s_send_queued(self, (int) left);
  return self->len;
}
