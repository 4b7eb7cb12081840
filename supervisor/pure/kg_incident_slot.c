/*  kg_incident_slot: the current incident, its path, and one set aside
    (kg_incident_slot.h). */
#include "kg_incident_slot.h"

#include <stdlib.h>

#include "kg_error.h"

typedef struct {
  kg_incident_t *incident;      /*  owned, or NULL                           */
  char *path;                   /*  owned, or NULL: not written              */
} s_record_t;

struct kg_incident_slot_t {
  s_record_t current;
  s_record_t aside;
};

static void
s_clear(s_record_t *r)
{
  kg_incident_destroy(&r->incident);
  free(r->path);
  r->path = NULL;
}

kg_incident_slot_t *
kg_incident_slot_new(void)
{
  return calloc(1, sizeof(kg_incident_slot_t));
}

void
kg_incident_slot_destroy(kg_incident_slot_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  s_clear(&(*self_p)->current);
  s_clear(&(*self_p)->aside);
  free(*self_p);
  *self_p = NULL;
}

kg_incident_t *
kg_incident_slot_open(kg_incident_slot_t *self, int64_t wall_ms)
{
  s_clear(&self->current);
  self->current.incident = kg_incident_new(wall_ms);
  return self->current.incident;
}

kg_incident_t *
kg_incident_slot_current(const kg_incident_slot_t *self)
{
  return self->current.incident;
}

const char *
kg_incident_slot_id(const kg_incident_slot_t *self)
{
  return self->current.incident ? kg_incident_id(self->current.incident) : NULL;
}

const char *
kg_incident_slot_path(const kg_incident_slot_t *self)
{
  return self->current.path;
}

int
kg_incident_slot_write(kg_incident_slot_t *self, const char *incidents_dir)
{
  if (!self->current.incident)
    return KG_ENOTFOUND;
  char *path = NULL;
  int rc = kg_incident_write(self->current.incident, incidents_dir, &path);
  if (rc)
    return rc;
  free(self->current.path);
  self->current.path = path;
  return 0;
}

void
kg_incident_slot_set_aside(kg_incident_slot_t *self)
{
  s_clear(&self->aside);
  self->aside = self->current;
  self->current = (s_record_t){0};
}

void
kg_incident_slot_put_back(kg_incident_slot_t *self)
{
  s_clear(&self->current);
  self->current = self->aside;
  self->aside = (s_record_t){0};
}
