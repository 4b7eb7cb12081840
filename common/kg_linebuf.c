/*  kg_linebuf: line reassembly over chunked byte streams. */
#include "kg_linebuf.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct kg_linebuf_t {
  char *buf;        /* max_line + 1 bytes                                   */
  size_t len;       /* bytes of the current line held                      */
  size_t max_line;  /* longest line handed out whole                       */
  bool discarding;  /* the current line was cut: drop until the newline    */
  bool started;     /* the current line has at least one byte (first_ms)   */
  int64_t first_ms; /* arrival time of the current line's first byte       */
};

kg_linebuf_t *
kg_linebuf_new(size_t max_line)
{
  kg_linebuf_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->max_line = max_line ? max_line : 4096;
  self->buf = malloc(self->max_line + 1);
  if (!self->buf) {
    free(self);
    return NULL;
  }
  return self;
}

void
kg_linebuf_destroy(kg_linebuf_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free((*self_p)->buf);
  free(*self_p);
  *self_p = NULL;
}

static void
s_emit(kg_linebuf_t *self, bool truncated, kg_linebuf_fn *fn, void *arg)
{
  assert(self);
  size_t n = self->len;
  if (n && self->buf[n - 1] == '\r')
    n--;
  self->buf[n] = '\0';
  if (fn)
    fn(arg, self->buf, n, truncated, self->first_ms);
  self->len = 0;
}

void
kg_linebuf_feed(kg_linebuf_t *self, const char *data, size_t len, int64_t now_ms,
                kg_linebuf_fn *fn, void *arg)
{
  assert(self);
  size_t i = 0;
  while (i < len) {
    if (!self->started) {
      self->started = true;
      self->first_ms = now_ms;
    }
    const char *nl = memchr(data + i, '\n', len - i);
    size_t chunk = (nl ? (size_t) (nl - (data + i)) : len - i);
    if (!self->discarding) {
      size_t room = self->max_line - self->len;
      size_t take = chunk < room ? chunk : room;
      memcpy(self->buf + self->len, data + i, take);
      self->len += take;
      if (chunk > room) {
        /* Overlong: hand out what fits now, flagged, and drop the rest. */
        s_emit(self, true, fn, arg);
        self->discarding = true;
      }
    }
    i += chunk;
    if (nl) {
      if (!self->discarding)
        s_emit(self, false, fn, arg);
      self->discarding = false;
      self->started = false;
      self->len = 0;
      i++;
    }
  }
}

void
kg_linebuf_flush(kg_linebuf_t *self, kg_linebuf_fn *fn, void *arg)
{
  if (self->len && !self->discarding)
    s_emit(self, false, fn, arg);
  self->len = 0;
  self->started = false;
  self->discarding = false;
}

const char *
kg_linebuf_pending(const kg_linebuf_t *self, size_t *len)
{
  assert(self);
  if (len)
    *len = self->discarding ? 0 : self->len;
  return self->buf;
}
