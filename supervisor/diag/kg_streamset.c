/*  kg_streamset: per-request stream line buffers, least recently used out. */
#include "kg_streamset.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *parent;        /* parent msg_id of the stream messages (owned)     */
  bool is_stderr;
  kg_linebuf_t *lb;    /* NULL: the slot is free                           */
  uint64_t used;       /* LRU tick                                         */
} s_slot_t;

struct kg_streamset_t {
  size_t max_line;
  s_slot_t slots[KG_STREAMSET_MAX];
  uint64_t tick;
};

kg_streamset_t *
kg_streamset_new(size_t max_line)
{
  kg_streamset_t *self = calloc(1, sizeof *self);
  if (self)
    self->max_line = max_line;
  return self;
}

void
kg_streamset_clear(kg_streamset_t *self)
{
  assert(self);
  for (size_t i = 0; i < KG_STREAMSET_MAX; i++) {
    free(self->slots[i].parent);
    kg_linebuf_destroy(&self->slots[i].lb);
    memset(&self->slots[i], 0, sizeof self->slots[i]);
  }
}

void
kg_streamset_destroy(kg_streamset_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_streamset_clear(*self_p);
  free(*self_p);
  *self_p = NULL;
}

static bool
s_same_parent(const char *a, const char *b)
{
  return a && b ? strcmp(a, b) == 0 : a == b;
}

kg_linebuf_t *
kg_streamset_get(kg_streamset_t *self, const char *name, const char *parent,
                 kg_streamset_evict_fn *evict, void *arg)
{
  assert(self);
  bool is_stderr = name && strcmp(name, "stderr") == 0;
  s_slot_t *free_slot = NULL, *lru = NULL;
  for (size_t i = 0; i < KG_STREAMSET_MAX; i++) {
    s_slot_t *s = &self->slots[i];
    if (!s->lb) {
      if (!free_slot)
        free_slot = s;
      continue;
    }
    if (s->is_stderr == is_stderr && s_same_parent(s->parent, parent)) {
      s->used = ++self->tick;
      return s->lb;
    }
    if (!lru || s->used < lru->used)
      lru = s;
  }
  char *copy = NULL;
  if (parent && !(copy = strdup(parent)))
    return NULL;
  s_slot_t *s = free_slot;
  if (s) {
    s->lb = kg_linebuf_new(self->max_line);
    if (!s->lb) {
      free(copy);
      return NULL;
    }
  } else {
    s = lru;   /* the least recently fed request's tail goes to evict first */
    if (evict)
      evict(arg, s->parent, s->lb);
    kg_linebuf_flush(s->lb, NULL, NULL);
    free(s->parent);
  }
  s->parent = copy;
  s->is_stderr = is_stderr;
  s->used = ++self->tick;
  return s->lb;
}

void
kg_streamset_each(kg_streamset_t *self, kg_streamset_evict_fn *fn, void *arg)
{
  assert(self);
  for (size_t i = 0; i < KG_STREAMSET_MAX; i++)
    if (self->slots[i].lb)
      fn(arg, self->slots[i].parent, self->slots[i].lb);
}
