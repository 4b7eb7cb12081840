/*  kg_ratelog: per-kind counts in windows, the first few in full, then a
    summary per window. See the header for the rules. */
#include "kg_ratelog.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  unsigned long in_window;     /*  events in the open window               */
  unsigned long unshown;       /*  of which QUIET                          */
  unsigned long total;         /*  since creation                          */
  bool hushed;                 /*  overflowed in an earlier window         */
} s_kind_t;

struct kg_ratelog_t {
  size_t nkinds;
  const char *const *names;
  unsigned burst;
  int64_t interval_ms;
  bool open;                   /*  a window is open                        */
  int64_t window_start;
  bool closed_once;            /*  last_close is valid                     */
  int64_t last_close;
  s_kind_t *kinds;
};

kg_ratelog_t *
kg_ratelog_new(size_t nkinds, const char *const *names, unsigned burst, int64_t interval_ms)
{
  if (nkinds == 0 || !names || interval_ms <= 0)
    return NULL;
  kg_ratelog_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->kinds = calloc(nkinds, sizeof *self->kinds);
  if (!self->kinds) {
    free(self);
    return NULL;
  }
  self->nkinds = nkinds;
  self->names = names;
  self->burst = burst;
  self->interval_ms = interval_ms;
  return self;
}

void
kg_ratelog_destroy(kg_ratelog_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free((*self_p)->kinds);
  free(*self_p);
  *self_p = NULL;
}

kg_ratelog_verdict_t
kg_ratelog_note(kg_ratelog_t *self, size_t kind, int64_t now)
{
  assert(self);
  if (kind >= self->nkinds)
    return KG_RATELOG_QUIET;
  if (!self->open) {
    /*  A whole interval without any window: every kind is news again. */
    if (self->closed_once && now - self->last_close >= self->interval_ms)
      for (size_t i = 0; i < self->nkinds; i++)
        self->kinds[i].hushed = false;
    self->open = true;
    self->window_start = now;
  }
  s_kind_t *k = &self->kinds[kind];
  k->total++;
  k->in_window++;
  if (!k->hushed && k->in_window <= self->burst)
    return KG_RATELOG_FULL;
  k->unshown++;
  return KG_RATELOG_QUIET;
}

int64_t
kg_ratelog_deadline(const kg_ratelog_t *self)
{
  assert(self);
  return self->open ? self->window_start + self->interval_ms : 0;
}

/*  Append to a growing string; false on allocation failure. */
static bool s_append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool
s_append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
    va_end(ap);
    if (n < 0)
      return false;
    if (*buf && *len + (size_t) n < *cap) {
      *len += (size_t) n;
      return true;
    }
    size_t want = (*cap ? *cap : 64);
    while (want <= *len + (size_t) n)
      want *= 2;
    char *g = realloc(*buf, want);
    if (!g)
      return false;
    *buf = g;
    *cap = want;
  }
}

char *
kg_ratelog_summary(kg_ratelog_t *self, int64_t now, bool force)
{
  if (!self->open || (!force && now < kg_ratelog_deadline(self)))
    return NULL;
  bool any_unshown = false;
  unsigned long all = 0;
  for (size_t i = 0; i < self->nkinds; i++) {
    any_unshown = any_unshown || self->kinds[i].unshown > 0;
    all += self->kinds[i].total;
  }
  char *line = NULL;
  size_t len = 0, cap = 0;
  bool ok = true;
  if (any_unshown) {
    int64_t span = now - self->window_start;
    ok = s_append(&line, &len, &cap, "dropped in the last %lld.%01lld s:",
                  (long long) (span / 1000), (long long) (span % 1000 / 100));
    const char *sep = " ";
    for (size_t i = 0; ok && i < self->nkinds; i++) {
      s_kind_t *k = &self->kinds[i];
      if (!k->in_window)
        continue;
      ok = s_append(&line, &len, &cap, "%s%lu %s", sep, k->in_window, self->names[i]);
      if (ok && k->unshown)
        ok = s_append(&line, &len, &cap, " (%lu not shown)", k->unshown);
      sep = ", ";
    }
    if (ok)
      ok = s_append(&line, &len, &cap, "; %lu in all since start", all);
  }
  /*  Close the window: who overflowed stays hushed, who was absent is not. */
  for (size_t i = 0; i < self->nkinds; i++) {
    s_kind_t *k = &self->kinds[i];
    if (k->unshown)
      k->hushed = true;
    else if (!k->in_window)
      k->hushed = false;
    k->in_window = k->unshown = 0;
  }
  self->open = false;
  self->closed_once = true;
  self->last_close = now;
  if (!ok) {
    free(line);
    return NULL;
  }
  return line;
}

unsigned long
kg_ratelog_total(const kg_ratelog_t *self, size_t kind)
{
  assert(self);
  return kind < self->nkinds ? self->kinds[kind].total : 0;
}
