/*  kg_ready: see kg_ready.h. */
#include "kg_ready.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kg_ready_t {
  bool got_reply;               /*  a kernel_info_reply to a nudge           */
  bool got_iopub;               /*  any iopub message                        */
  int64_t next_ms;              /*  the next nudge                           */
  int interval_ms;              /*  grows while the kernel imports           */
  char ids[KG_READY_IDS][37];   /*  kguard's own uuids                       */
  int next_id;
  int last_id;                  /*  -1: none yet                             */
};

kg_ready_t *
kg_ready_new(void)
{
  kg_ready_t *self = calloc(1, sizeof *self);
  if (self) {
    self->interval_ms = KG_READY_FIRST_MS;
    self->last_id = -1;
  }
  return self;
}

void
kg_ready_destroy(kg_ready_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free(*self_p);
  *self_p = NULL;
}

void
kg_ready_reset(kg_ready_t *self, int64_t now)
{
  assert(self);
  self->got_reply = false;
  self->got_iopub = false;
  self->interval_ms = KG_READY_FIRST_MS;
  self->next_ms = now;
}

bool
kg_ready_nudge_due(kg_ready_t *self, int64_t now)
{
  assert(self);
  /* The kernel answered, so it is up: only the iopub subscription has to
     reach it, which takes milliseconds. Do not wait out a back-off grown
     while it was still importing. */
  if (self->got_reply && !self->got_iopub && self->next_ms > now + KG_READY_ALIVE_MS)
    self->next_ms = now + KG_READY_ALIVE_MS;
  return now >= self->next_ms && !kg_ready_done(self);
}

void
kg_ready_nudge_scheduled(kg_ready_t *self, int64_t now)
{
  assert(self);
  self->next_ms = now + self->interval_ms;
  if (self->interval_ms < KG_READY_MAX_MS)
    self->interval_ms *= 2;
}

bool
kg_ready_remember(kg_ready_t *self, const char *msg_id)
{
  assert(self);
  if (!msg_id || strlen(msg_id) >= sizeof self->ids[0])
    return false;
  snprintf(self->ids[self->next_id], sizeof self->ids[0], "%s", msg_id);
  self->last_id = self->next_id;
  self->next_id = (self->next_id + 1) % KG_READY_IDS;
  return true;
}

bool
kg_ready_is_nudge(const kg_ready_t *self, const char *parent)
{
  assert(self);
  if (!parent || !*parent)
    return false;
  for (int i = 0; i < KG_READY_IDS; i++)
    if (strcmp(self->ids[i], parent) == 0)
      return true;
  return false;
}

const char *
kg_ready_last(const kg_ready_t *self)
{
  assert(self);
  return self->last_id < 0 ? "" : self->ids[self->last_id];
}

void
kg_ready_saw_reply(kg_ready_t *self)
{
  assert(self);
  self->got_reply = true;
}

void
kg_ready_saw_iopub(kg_ready_t *self)
{
  assert(self);
  self->got_iopub = true;
}

bool
kg_ready_done(const kg_ready_t *self)
{
  assert(self);
  return self->got_reply && self->got_iopub;
}

int64_t
kg_ready_deadline(const kg_ready_t *self)
{
  assert(self);
  return kg_ready_done(self) ? 0 : self->next_ms;
}
