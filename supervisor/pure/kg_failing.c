/*  kg_failing: the failing request (see kg_failing.h). Calls no supervisor
    file. */
#include "kg_failing.h"

#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

struct kg_failing_t {
  char *msg_id;                 /*  the failing request, or NULL             */
  char *code;                   /*  its code, or NULL                        */
  cJSON *header;                /*  its header, or NULL                      */
  bool replied;                 /*  its real execute_reply was relayed       */
  bool guessed;                 /*  chosen without a parent (raw evidence)   */
};

kg_failing_t *
kg_failing_new(void)
{
  return calloc(1, sizeof(kg_failing_t));
}

void
kg_failing_destroy(kg_failing_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_failing_t *self = *self_p;
  free(self->msg_id);
  free(self->code);
  cJSON_Delete(self->header);
  free(self);
  *self_p = NULL;
}

int
kg_failing_set(kg_failing_t *self, const char *msg_id, const char *code,
               const cJSON *header, bool guessed)
{
  free(self->msg_id);
  free(self->code);
  cJSON_Delete(self->header);
  self->msg_id = msg_id ? strdup(msg_id) : NULL;
  self->code = code ? strdup(code) : NULL;
  self->header = header ? cJSON_Duplicate(header, 1) : NULL;
  self->replied = false;
  self->guessed = guessed;
  if ((msg_id && !self->msg_id) || (code && !self->code) || (header && !self->header))
    return KG_ENOMEM;
  return 0;
}

void
kg_failing_kernel_gone(kg_failing_t *self)
{
  free(self->msg_id);
  self->msg_id = NULL;
  self->replied = false;
}

const char *
kg_failing_id(const kg_failing_t *self)
{
  return self->msg_id;
}

bool
kg_failing_is(const kg_failing_t *self, const char *msg_id)
{
  return self->msg_id && msg_id && strcmp(msg_id, self->msg_id) == 0;
}

const char *
kg_failing_code(const kg_failing_t *self)
{
  return self->code;
}

const cJSON *
kg_failing_header(const kg_failing_t *self)
{
  return self->header;
}

void
kg_failing_replied(kg_failing_t *self)
{
  self->replied = true;
}

bool
kg_failing_was_replied(const kg_failing_t *self)
{
  return self->replied;
}

bool
kg_failing_guessed(const kg_failing_t *self)
{
  return self->guessed;
}
