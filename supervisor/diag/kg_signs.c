/*  kg_signs: earlier signs that may make the fault time earlier. */
#include "kg_signs.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int64_t t;
  char *parent;        /* NULL for raw evidence                            */
} s_sign_t;

struct kg_signs_t {
  s_sign_t sign[KG_SIGNS_MAX];
  size_t n;
};

kg_signs_t *
kg_signs_new(void)
{
  return calloc(1, sizeof(kg_signs_t));
}

void
kg_signs_clear(kg_signs_t *self)
{
  assert(self);
  for (size_t i = 0; i < self->n; i++)
    free(self->sign[i].parent);
  self->n = 0;
}

void
kg_signs_destroy(kg_signs_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_signs_clear(*self_p);
  free(*self_p);
  *self_p = NULL;
}

void
kg_signs_prune(kg_signs_t *self, const char *parent, int64_t now)
{
  assert(self);
  size_t w = 0;
  for (size_t i = 0; i < self->n; i++) {
    s_sign_t *p = &self->sign[i];
    bool stale = p->parent ? (parent && strcmp(p->parent, parent) != 0)
                           : (now - p->t > KG_SIGNS_RAW_TTL_MS);
    if (stale)
      free(p->parent);
    else
      self->sign[w++] = *p;
  }
  self->n = w;
}

void
kg_signs_add(kg_signs_t *self, const char *parent, int64_t t)
{
  assert(self);
  char *copy = NULL;
  if (parent && !(copy = strdup(parent)))
    return;
  if (self->n == KG_SIGNS_MAX) {
    free(self->sign[0].parent);
    memmove(self->sign, self->sign + 1, (KG_SIGNS_MAX - 1) * sizeof self->sign[0]);
    self->n--;
  }
  self->sign[self->n].t = t;
  self->sign[self->n].parent = copy;
  self->n++;
}

int64_t
kg_signs_earliest(const kg_signs_t *self, const char *parent, int64_t t)
{
  assert(self);
  for (size_t i = 0; i < self->n; i++) {
    const s_sign_t *p = &self->sign[i];
    if ((!p->parent || !parent || strcmp(p->parent, parent) == 0) && p->t < t)
      t = p->t;
  }
  return t;
}
