/*  kg_prefilter_builder: the literals the rules need, made into a prefilter. */
#include "kg_prefilter_builder.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_regex_lit.h"

struct kg_prefilter_builder_t {
  char **v;
  size_t n, cap;
  bool unusable;
};

kg_prefilter_builder_t *
kg_prefilter_builder_new(void)
{
  return calloc(1, sizeof(kg_prefilter_builder_t));
}

void
kg_prefilter_builder_destroy(kg_prefilter_builder_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_prefilter_builder_t *self = *self_p;
  for (size_t i = 0; i < self->n; i++)
    free(self->v[i]);
  free(self->v);
  free(self);
  *self_p = NULL;
}

static int
s_add(kg_prefilter_builder_t *self, const char *s, size_t len)
{
  assert(self);
  if (len < KG_PREFILTER_MIN_LITERAL) {
    self->unusable = true;
    return 0;
  }
  if (self->n == self->cap) {
    size_t cap = self->cap ? self->cap * 2 : 32;
    char **v = realloc(self->v, cap * sizeof *v);
    if (!v)
      return KG_ENOMEM;
    self->v = v;
    self->cap = cap;
  }
  if (!(self->v[self->n] = strndup(s, len)))
    return KG_ENOMEM;
  self->n++;
  return 0;
}

int
kg_prefilter_builder_any(kg_prefilter_builder_t *self, char *const *any)
{
  assert(self);
  int rc = 0;
  for (char *const *p = any; *p && !rc; p++)
    rc = s_add(self, *p, strlen(*p));
  return rc;
}

int
kg_prefilter_builder_all(kg_prefilter_builder_t *self, char *const *all)
{
  assert(self);
  if (!all[0]) {
    self->unusable = true;
    return 0;
  }
  const char *longest = all[0];
  for (char *const *p = all; *p; p++)
    if (strlen(*p) > strlen(longest))
      longest = *p;
  return s_add(self, longest, strlen(longest));
}

/*  kg_regex_literals callback: keep an alternative's literal (or note that
    it has none long enough: s_add). */
static int
s_on_literal(const char *lit, size_t len, void *arg)
{
  return s_add(arg, lit, len);
}

int
kg_prefilter_builder_regex(kg_prefilter_builder_t *self, const char *re)
{
  assert(self);
  return kg_regex_literals(re, s_on_literal, self);
}

void
kg_prefilter_builder_unusable(kg_prefilter_builder_t *self)
{
  assert(self);
  self->unusable = true;
}

int
kg_prefilter_builder_finish(kg_prefilter_builder_t *self, kg_prefilter_t **out)
{
  assert(self);
  *out = NULL;
  if (self->unusable || self->n == 0)
    return 0;
  *out = kg_prefilter_new((const char *const *) self->v, self->n);
  return *out ? 0 : KG_ENOMEM;
}
