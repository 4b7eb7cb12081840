/*  kg_rotlog: a size-bounded append-only log with one rotation
    (kg_rotlog.h). */
#include "kg_rotlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_file.h"
#include "kg_log.h"
#include "kg_error.h"
#include "kg_safepath.h"

struct kg_rotlog_t {
  int fd;
  char *path;
  size_t max, size;
  unsigned long rotations;
};

/*  Through kg_safepath_open: never a planted link, only the user's own
    regular file, mode 0600. The fd, or -1 with errno set. */
static int
s_open(const char *path, int extra)
{
  int fd = kg_safepath_open(path, O_APPEND | extra, 0600);
  if (fd < 0) {
    errno = fd == KG_EUNSAFEPATH ? EPERM : -fd;
    return -1;
  }
  return fd;
}

kg_rotlog_t *
kg_rotlog_open(const char *path, size_t max_bytes)
{
  kg_rotlog_t *self = calloc(1, sizeof *self);
  if (!self || !(self->path = strdup(path))) {
    free(self);
    errno = ENOMEM;
    return NULL;
  }
  self->max = max_bytes < KG_ROTLOG_MIN_BYTES ? KG_ROTLOG_MIN_BYTES : max_bytes;
  self->fd = s_open(path, 0);
  struct stat st;
  if (self->fd < 0 || fstat(self->fd, &st) != 0) {
    int e = errno;
    kg_rotlog_close(&self);
    errno = e;
    return NULL;
  }
  self->size = (size_t) st.st_size;
  return self;
}

void
kg_rotlog_close(kg_rotlog_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  if ((*self_p)->fd >= 0)
    close((*self_p)->fd);
  free((*self_p)->path);
  free(*self_p);
  *self_p = NULL;
}

/*  PATH becomes PATH.1 and a fresh PATH starts. On failure the current
    file goes on (over its bound) rather than losing the log. */
static void
s_rotate(kg_rotlog_t *self)
{
  size_t n = strlen(self->path) + 3;
  char *old = malloc(n);
  if (!old)
    return;
  snprintf(old, n, "%s.1", self->path);
  int fd = -1;
  if (rename(self->path, old) == 0)
    fd = s_open(self->path, O_TRUNC);
  free(old);
  if (fd < 0)
    return;
  close(self->fd);
  self->fd = fd;
  self->size = 0;
  self->rotations++;
  char line[160];
  int len = snprintf(line, sizeof line,
                     "[kguard: this log is bounded at %zu bytes; what came before is in "
                     "the file of the same name ending in .1]\n", self->max);
  if (len > 0 && kg_file_write_all(self->fd, line, (size_t) len) == 0)
    self->size += (size_t) len;
}

void
kg_rotlog_write(kg_rotlog_t *self, const void *data, size_t len)
{
  if (!self || self->fd < 0 || len == 0)
    return;
  const char *p = data;
  if (self->size > 0 && self->size + len > self->max)
    s_rotate(self);
  size_t room = self->max > self->size ? self->max - self->size : 0;
  if (len > room && self->size < self->max / 2) {   /* a fresh file: only its end fits */
    p += len - room;
    len = room;
  }
  if (kg_file_write_all(self->fd, p, len) == 0)
    self->size += len;
}

size_t
kg_rotlog_max(const kg_rotlog_t *self)
{
  return self->max;
}

size_t
kg_rotlog_size(const kg_rotlog_t *self)
{
  return self->size;
}

unsigned long
kg_rotlog_rotations(const kg_rotlog_t *self)
{
  return self->rotations;
}

size_t
kg_rotlog_limit(const char *name, size_t fallback)
{
  const char *v = getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = NULL;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  unsigned long long unit = 1;
  if (end && (*end == 'K' || *end == 'k'))
    unit = 1024ull, end++;
  else if (end && (*end == 'M' || *end == 'm'))
    unit = 1024ull * 1024ull, end++;
  else if (end && (*end == 'G' || *end == 'g'))
    unit = 1024ull * 1024ull * 1024ull, end++;
  if (errno || end == v || *end || v[0] == '-' || n > (unsigned long long) SIZE_MAX / unit
      || n * unit < KG_ROTLOG_MIN_BYTES) {
    kg_warning("%s=%s: must be a number of bytes of at least 64K (a K, M or G suffix "
               "allowed); using %zu", name, v, fallback);
    return fallback;
  }
  return (size_t) (n * unit);
}
