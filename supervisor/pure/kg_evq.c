/*  kg_evq: see kg_evq.h. */
#include "kg_evq.h"

#include <stdlib.h>

#include "kg_error.h"

struct kg_evq_t {
  kg_event_t ring[KG_EVQ_MAX];
  int head, count;
  bool applying;                /*  inside apply: posts only queue           */
  kg_evq_apply_fn *apply;       /*  bound by kg_evq_bind, for kg_evq_fire    */
  void *arg;
};

kg_evq_t *
kg_evq_new(void)
{
  return calloc(1, sizeof(kg_evq_t));
}

void
kg_evq_destroy(kg_evq_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free(*self_p);
  *self_p = NULL;
}

int
kg_evq_post(kg_evq_t *self, kg_event_t event, kg_evq_apply_fn *apply, void *arg)
{
  if (self->count == KG_EVQ_MAX)
    return KG_ETOOBIG;
  self->ring[(self->head + self->count++) % KG_EVQ_MAX] = event;
  if (self->applying)
    return 0;
  self->applying = true;
  while (self->count > 0) {
    kg_event_t ev = self->ring[self->head];
    self->head = (self->head + 1) % KG_EVQ_MAX;
    self->count--;
    apply(arg, ev);
  }
  self->applying = false;
  return 0;
}

void
kg_evq_bind(kg_evq_t *self, kg_evq_apply_fn *apply, void *arg)
{
  self->apply = apply;
  self->arg = arg;
}

int
kg_evq_fire(kg_evq_t *self, kg_event_t event)
{
  if (!self->apply)
    return KG_EINTERNAL;
  return kg_evq_post(self, event, self->apply, self->arg);
}

bool
kg_evq_pending(const kg_evq_t *self)
{
  return self->count > 0;
}
