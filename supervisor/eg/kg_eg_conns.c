/*  kg_eg_conns: bounded concurrent request connections (see kg_eg_conns.h). */
#include "kg_eg_conns.h"

#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

typedef struct {
  int fd;                       /*  -1: free                                */
  uint64_t order;               /*  admission order: the smallest is oldest */
  int64_t deadline;
  size_t len;
  char buf[KG_EG_REQUEST_MAX];
} s_slot_t;

struct kg_eg_conns_t {
  s_slot_t *slots;
  size_t max;
  int64_t timeout_ms;
  uint64_t admitted;
};

kg_eg_conns_t *
kg_eg_conns_new(size_t max, int64_t timeout_ms)
{
  if (max == 0 || timeout_ms <= 0)
    return NULL;
  kg_eg_conns_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->slots = calloc(max, sizeof *self->slots);
  if (!self->slots) {
    free(self);
    return NULL;
  }
  for (size_t i = 0; i < max; i++)
    self->slots[i].fd = -1;
  self->max = max;
  self->timeout_ms = timeout_ms;
  return self;
}

void
kg_eg_conns_destroy(kg_eg_conns_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free((*self_p)->slots);
  free(*self_p);
  *self_p = NULL;
}

static s_slot_t *
s_find(kg_eg_conns_t *self, int fd)
{
  for (size_t i = 0; i < self->max; i++)
    if (self->slots[i].fd == fd && fd >= 0)
      return &self->slots[i];
  return NULL;
}

int
kg_eg_conns_admit(kg_eg_conns_t *self, int fd, int64_t now)
{
  s_slot_t *free_slot = NULL, *oldest = NULL;
  for (size_t i = 0; i < self->max; i++) {
    s_slot_t *s = &self->slots[i];
    if (s->fd < 0 && !free_slot)
      free_slot = s;
    if (s->fd >= 0 && (!oldest || s->order < oldest->order))
      oldest = s;
  }
  int evicted = -1;
  if (!free_slot) {
    evicted = oldest->fd;
    free_slot = oldest;
  }
  free_slot->fd = fd;
  free_slot->order = ++self->admitted;
  free_slot->deadline = now + self->timeout_ms;
  free_slot->len = 0;
  return evicted;
}

static void
s_free(s_slot_t *s)
{
  s->fd = -1;
  s->len = 0;
}

/*  Judge the bytes so far: a whole request, a refused one, or (only before
    EOF) not yet whole. */
static kg_eg_conn_verdict_t
s_judge(s_slot_t *s, bool eof, kg_eg_request_t *req, char *err, size_t errlen)
{
  if (s->len == 0)
    return eof ? KG_EG_CONN_EMPTY : KG_EG_CONN_MORE;
  int rc = kg_eg_request_parse(s->buf, s->len, req, err, errlen);
  if (rc == 0)
    return KG_EG_CONN_REQUEST;
  if (rc == KG_EBADJSON && !eof)
    return KG_EG_CONN_MORE;
  return KG_EG_CONN_BAD;
}

kg_eg_conn_verdict_t
kg_eg_conns_feed(kg_eg_conns_t *self, int fd, const char *data, size_t len,
                 kg_eg_request_t *req, char *err, size_t errlen)
{
  s_slot_t *s = s_find(self, fd);
  if (!s) {
    kg_errf(err, errlen, "connection %d is not open", fd);
    return KG_EG_CONN_BAD;
  }
  if (len > sizeof s->buf - s->len) {
    kg_errf(err, errlen, "request longer than %d bytes", KG_EG_REQUEST_MAX);
    s_free(s);
    return KG_EG_CONN_BAD;
  }
  memcpy(s->buf + s->len, data, len);
  s->len += len;
  kg_eg_conn_verdict_t v = s_judge(s, false, req, err, errlen);
  if (v != KG_EG_CONN_MORE)
    s_free(s);
  return v;
}

kg_eg_conn_verdict_t
kg_eg_conns_eof(kg_eg_conns_t *self, int fd, kg_eg_request_t *req, char *err, size_t errlen)
{
  s_slot_t *s = s_find(self, fd);
  if (!s)
    return KG_EG_CONN_EMPTY;
  kg_eg_conn_verdict_t v = s_judge(s, true, req, err, errlen);
  s_free(s);
  return v;
}

void
kg_eg_conns_remove(kg_eg_conns_t *self, int fd)
{
  s_slot_t *s = s_find(self, fd);
  if (s)
    s_free(s);
}

int
kg_eg_conns_expired(kg_eg_conns_t *self, int64_t now)
{
  for (size_t i = 0; i < self->max; i++) {
    s_slot_t *s = &self->slots[i];
    if (s->fd >= 0 && s->deadline <= now) {
      int fd = s->fd;
      s_free(s);
      return fd;
    }
  }
  return -1;
}

int64_t
kg_eg_conns_deadline(const kg_eg_conns_t *self)
{
  int64_t d = 0;
  for (size_t i = 0; i < self->max; i++)
    if (self->slots[i].fd >= 0 && (d == 0 || self->slots[i].deadline < d))
      d = self->slots[i].deadline;
  return d;
}

size_t
kg_eg_conns_fds(const kg_eg_conns_t *self, int *out, size_t n)
{
  size_t k = 0;
  for (size_t i = 0; i < self->max && k < n; i++)
    if (self->slots[i].fd >= 0)
      out[k++] = self->slots[i].fd;
  return k;
}

size_t
kg_eg_conns_count(const kg_eg_conns_t *self)
{
  size_t k = 0;
  for (size_t i = 0; i < self->max; i++)
    k += self->slots[i].fd >= 0;
  return k;
}

int
kg_eg_conns_fd_at(const kg_eg_conns_t *self, size_t i)
{
  return i < self->max ? self->slots[i].fd : -1;
}
