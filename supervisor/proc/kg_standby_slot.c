/*  kg_standby_slot: the warm standby's kernel object, start time, warmth
    and failures (kg_standby_slot.h). */
#include "kg_standby_slot.h"

#include <stdlib.h>

struct kg_standby_slot_t {
  kg_kernel_t *kernel;          /*  owned                                    */
  int64_t started_ms;           /*  when its process started (monotonic)     */
  bool warm;                    /*  it has answered kernel_info (kg_ready)   */
  int failures;                 /*  standbys that died before promotion      */
  int max_failures;
};

kg_standby_slot_t *
kg_standby_slot_new(kg_kernel_t **kernel_p, int max_failures)
{
  if (!kernel_p)
    return NULL;
  kg_standby_slot_t *self = *kernel_p && max_failures >= 1 ? calloc(1, sizeof *self) : NULL;
  if (!self) {
    kg_kernel_destroy(kernel_p);
    return NULL;
  }
  self->kernel = *kernel_p;
  *kernel_p = NULL;
  self->max_failures = max_failures;
  return self;
}

void
kg_standby_slot_destroy(kg_standby_slot_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_kernel_destroy(&(*self_p)->kernel);
  free(*self_p);
  *self_p = NULL;
}

kg_kernel_t *
kg_standby_slot_kernel(const kg_standby_slot_t *self)
{
  return self->kernel;
}

void
kg_standby_slot_started(kg_standby_slot_t *self, int64_t now)
{
  self->started_ms = now;
  self->warm = false;
}

int64_t
kg_standby_slot_age_ms(const kg_standby_slot_t *self, int64_t now)
{
  return now - self->started_ms;
}

void
kg_standby_slot_warmed(kg_standby_slot_t *self)
{
  self->warm = true;
}

bool
kg_standby_slot_is_warm(const kg_standby_slot_t *self)
{
  return self->warm;
}

bool
kg_standby_slot_failed(kg_standby_slot_t *self)
{
  self->failures++;
  return self->failures >= self->max_failures;
}

bool
kg_standby_slot_may_start(const kg_standby_slot_t *self)
{
  return self->failures < self->max_failures;
}

bool
kg_standby_slot_swap(kg_standby_slot_t *self, kg_kernel_t **kernel_p)
{
  kg_kernel_t *cold = *kernel_p;
  *kernel_p = self->kernel;
  self->kernel = cold;
  bool warm = self->warm;
  self->warm = false;
  return warm;
}
