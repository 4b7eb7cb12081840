/*  kg_fsm: the state engine (see kg_fsm.h). */
#include "kg_fsm.h"

#include <assert.h>
#include <stdlib.h>

#include "kg_error.h"

struct kg_fsm_t {
  const kg_fsm_def_t *def;      /*  borrowed                                 */
  void *arg;                    /*  borrowed: given to def's functions       */
  int state;                    /*  KG_FSM_NONE before the start             */
  int64_t deadline;             /*  0: none                                  */
  int64_t now;                  /*  the time of the event being applied      */
  bool applying;                /*  inside a transition: posts only queue    */
  kg_fsm_event_t *ring;         /*  events waiting, in order                 */
  int head, count, cap;
};

kg_fsm_t *
kg_fsm_new(const kg_fsm_def_t *def, void *arg, int queue_max)
{
  if (!def || def->nstates <= 0 || def->nevents <= 0 || !def->rows || !def->next
      || queue_max < 1)
    return NULL;
  kg_fsm_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->ring = calloc((size_t) queue_max, sizeof *self->ring);
  if (!self->ring) {
    free(self);
    return NULL;
  }
  self->def = def;
  self->arg = arg;
  self->state = KG_FSM_NONE;
  self->cap = queue_max;
  return self;
}

void
kg_fsm_destroy(kg_fsm_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free((*self_p)->ring);
  free(*self_p);
  *self_p = NULL;
}

/*  Enter state on event: its deadline armed, the owner told, its action run. */
static void
s_enter(kg_fsm_t *self, int from, const kg_fsm_event_t *event, int state)
{
  assert(self);
  const kg_fsm_row_t *row = &self->def->rows[state];
  self->state = state;
  self->deadline = row->deadline_ms > 0 ? self->now + row->deadline_ms : 0;
  if (row->enter)
    row->enter(self->arg, from, event);
}

/*  Apply what waits, in order, until nothing does. */
static void
s_drain(kg_fsm_t *self)
{
  assert(self);
  self->applying = true;
  while (self->count > 0) {
    kg_fsm_event_t ev = self->ring[self->head];
    self->head = (self->head + 1) % self->cap;
    self->count--;
    int from = self->state;
    int to = self->def->next(self->arg, from, &ev);
    if (to < KG_FSM_NONE || to >= self->def->nstates)
      to = KG_FSM_NONE;   /* a next function that answers nonsense ignores it */
    if (self->def->trace)
      self->def->trace(self->arg, from, &ev, to);
    if (to != KG_FSM_NONE)
      s_enter(self, from, &ev, to);
  }
  self->applying = false;
}

int
kg_fsm_start(kg_fsm_t *self, int initial, int64_t now_ms)
{
  assert(self);
  if (self->state != KG_FSM_NONE || initial < 0 || initial >= self->def->nstates)
    return KG_EUSAGE;
  self->now = now_ms;
  kg_fsm_event_t none = {KG_FSM_NONE, 0};
  self->applying = true;
  s_enter(self, KG_FSM_NONE, &none, initial);
  s_drain(self);
  return 0;
}

int
kg_fsm_queue(kg_fsm_t *self, int event, int64_t arg)
{
  assert(self);
  if (event < 0 || event >= self->def->nevents || self->state == KG_FSM_NONE)
    return KG_EUSAGE;
  if (self->count == self->cap)
    return KG_ETOOBIG;
  self->ring[(self->head + self->count++) % self->cap] = (kg_fsm_event_t){event, arg};
  return 0;
}

void
kg_fsm_run(kg_fsm_t *self, int64_t now_ms)
{
  assert(self);
  if (self->applying || self->count == 0)
    return;
  self->now = now_ms;
  s_drain(self);
}

int
kg_fsm_post(kg_fsm_t *self, int event, int64_t arg, int64_t now_ms)
{
  assert(self);
  int rc = kg_fsm_queue(self, event, arg);
  if (rc == 0)
    kg_fsm_run(self, now_ms);
  return rc;
}

bool
kg_fsm_tick(kg_fsm_t *self, int64_t now_ms)
{
  assert(self);
  if (!self->deadline || now_ms < self->deadline)
    return false;
  self->deadline = 0;
  int ev = self->def->rows[self->state].on_deadline;
  if (ev != KG_FSM_NONE)
    (void) kg_fsm_post(self, ev, 0, now_ms);
  return true;
}

int
kg_fsm_state(const kg_fsm_t *self)
{
  assert(self);
  return self->state;
}

int64_t
kg_fsm_deadline(const kg_fsm_t *self)
{
  assert(self);
  return self->deadline;
}

void
kg_fsm_set_deadline(kg_fsm_t *self, int64_t at_ms)
{
  assert(self);
  self->deadline = at_ms > 0 ? at_ms : 0;
}

int64_t
kg_fsm_now(const kg_fsm_t *self)
{
  assert(self);
  return self->now;
}

bool
kg_fsm_pending(const kg_fsm_t *self)
{
  assert(self);
  return self->count > 0;
}

const char *
kg_fsm_state_name(const kg_fsm_t *self, int state)
{
  assert(self);
  if (state < 0 || state >= self->def->nstates || !self->def->state_names)
    return "NONE";
  return self->def->state_names[state];
}

const char *
kg_fsm_event_name(const kg_fsm_t *self, int event)
{
  assert(self);
  if (event < 0 || event >= self->def->nevents || !self->def->event_names)
    return "NONE";
  return self->def->event_names[event];
}
