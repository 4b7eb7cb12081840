/*  kg_ring: bounded byte ring plus an append-only log. */
#include "kg_ring.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct kg_ring_t {
  char *buf;                    /*  capacity bytes                          */
  size_t capacity;              /*  fixed size                              */
  size_t start;                 /*  index of the oldest byte                */
  size_t size;                  /*  bytes held                              */
  unsigned long long total;     /*  bytes ever appended                     */
  kg_rotlog_t *log;             /*  borrowed, NULL for none                 */
};

kg_ring_t *
kg_ring_new(size_t capacity, kg_rotlog_t *log)
{
  assert(capacity > 0);
  kg_ring_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->buf = malloc(capacity);
  if (!self->buf) {
    free(self);
    return NULL;
  }
  self->capacity = capacity;
  self->log = log;
  return self;
}

void
kg_ring_destroy(kg_ring_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free((*self_p)->buf);
  free(*self_p);
  *self_p = NULL;
}

void
kg_ring_append(kg_ring_t *self, const void *data, size_t len)
{
  assert(self);
  const char *p = data;
  self->total += len;
  kg_rotlog_write(self->log, p, len);   /* a full disk must not stop the relay */
  if (len >= self->capacity) {
    memcpy(self->buf, p + len - self->capacity, self->capacity);
    self->start = 0;
    self->size = self->capacity;
    return;
  }
  /* Copy in at most two runs (the write position may wrap once). */
  size_t end = (self->start + self->size) % self->capacity;
  size_t first = self->capacity - end < len ? self->capacity - end : len;
  memcpy(self->buf + end, p, first);
  memcpy(self->buf, p + first, len - first);
  size_t size = self->size + len;
  if (size > self->capacity) {
    self->start = (self->start + size - self->capacity) % self->capacity;
    size = self->capacity;
  }
  self->size = size;
}

size_t
kg_ring_size(const kg_ring_t *self)
{
  assert(self);
  return self->size;
}

unsigned long long
kg_ring_total(const kg_ring_t *self)
{
  assert(self);
  return self->total;
}

char *
kg_ring_tail(const kg_ring_t *self, size_t max)
{
  assert(self);
  size_t n = self->size < max ? self->size : max;
  char *out = malloc(n + 1);
  if (!out)
    return NULL;
  size_t first = (self->start + self->size - n) % self->capacity;
  for (size_t i = 0; i < n; i++)
    out[i] = self->buf[(first + i) % self->capacity];
  out[n] = '\0';
  return out;
}

void
kg_ring_clear(kg_ring_t *self)
{
  assert(self);
  self->start = 0;
  self->size = 0;
}
