/*  kg_shutdown: running, the exit code and the frontend's shutdown_request
    (kg_shutdown.h). */
#include "kg_shutdown.h"

#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

struct kg_shutdown_t {
  bool running;
  int exit_code;
  char *msg_id;                 /*  owned, or NULL                           */
  bool restart;
};

kg_shutdown_t *
kg_shutdown_new(void)
{
  return calloc(1, sizeof(kg_shutdown_t));
}

void
kg_shutdown_destroy(kg_shutdown_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free((*self_p)->msg_id);
  free(*self_p);
  *self_p = NULL;
}

void
kg_shutdown_begin(kg_shutdown_t *self)
{
  self->running = true;
}

bool
kg_shutdown_running(const kg_shutdown_t *self)
{
  return self->running;
}

void
kg_shutdown_fail(kg_shutdown_t *self, int exit_code)
{
  self->running = false;
  self->exit_code = exit_code;
}

int
kg_shutdown_exit_code(const kg_shutdown_t *self)
{
  return self->exit_code;
}

int
kg_shutdown_requested(kg_shutdown_t *self, const char *msg_id, bool restart)
{
  free(self->msg_id);
  self->msg_id = msg_id ? strdup(msg_id) : NULL;
  self->restart = restart;
  return msg_id && !self->msg_id ? KG_ENOMEM : 0;
}

const char *
kg_shutdown_id(const kg_shutdown_t *self)
{
  return self->msg_id;
}

bool
kg_shutdown_is_request(const kg_shutdown_t *self, const char *msg_id)
{
  return self->msg_id && msg_id && strcmp(self->msg_id, msg_id) == 0;
}

bool
kg_shutdown_restart(const kg_shutdown_t *self)
{
  return self->restart;
}
