/*  kg_notice_due: the notice due at the next READY and why kguard is DOWN
    (kg_notice_due.h). */
#include "kg_notice_due.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

#define S_BY_HAND " Run `%kguard restart` in a cell (or `kguard restart -f " \
                  "CONNECTION_FILE`) to start a fresh kernel."

struct kg_notice_due_t {
  kg_due_kind_t kind;
  cJSON *parent;                /*  owned copy, or NULL                      */
  char *down_reason;            /*  owned, or NULL                           */
};

kg_notice_due_t *
kg_notice_due_new(void)
{
  return calloc(1, sizeof(kg_notice_due_t));
}

void
kg_notice_due_destroy(kg_notice_due_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  cJSON_Delete((*self_p)->parent);
  free((*self_p)->down_reason);
  free(*self_p);
  *self_p = NULL;
}

void
kg_notice_due_clear(kg_notice_due_t *self)
{
  cJSON_Delete(self->parent);
  self->parent = NULL;
  self->kind = KG_DUE_NONE;
}

int
kg_notice_due_set(kg_notice_due_t *self, kg_due_kind_t kind, const cJSON *parent)
{
  kg_notice_due_clear(self);
  if (kind == KG_DUE_NONE)
    return 0;
  if (parent && !(self->parent = cJSON_Duplicate(parent, 1)))
    return KG_ENOMEM;
  self->kind = kind;
  return 0;
}

kg_due_kind_t
kg_notice_due_kind(const kg_notice_due_t *self)
{
  return self->kind;
}

const cJSON *
kg_notice_due_parent(const kg_notice_due_t *self)
{
  return self->parent;
}

int
kg_notice_due_set_down(kg_notice_due_t *self, const char *reason)
{
  free(self->down_reason);
  self->down_reason = reason ? strdup(reason) : NULL;
  return reason && !self->down_reason ? KG_ENOMEM : 0;
}

int
kg_notice_due_set_gave_up(kg_notice_due_t *self, const char *reason)
{
  free(self->down_reason);
  const char *r = reason ? reason : "";
  size_t len = strlen(r) + sizeof S_BY_HAND;
  self->down_reason = malloc(len);
  if (!self->down_reason)
    return KG_ENOMEM;
  snprintf(self->down_reason, len, "%s%s", r, S_BY_HAND);
  return 0;
}

const char *
kg_notice_due_down_reason(const kg_notice_due_t *self)
{
  return self->down_reason;
}
