/*  kg_trail: the bounded record of what followed a failure. */
#include "kg_trail.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct kg_trail_t {
  cJSON *following;            /* array, at most KG_TRAIL_MAX_FOLLOWING      */
  size_t following_dropped;
  char *tail[KG_TRAIL_STDERR_TAIL];
  size_t tail_start, tail_n;   /* ring of raw stderr lines                   */
};

kg_trail_t *
kg_trail_new(void)
{
  kg_trail_t *self = calloc(1, sizeof *self);
  if (self && !(self->following = cJSON_CreateArray())) {
    free(self);
    return NULL;
  }
  return self;
}

void
kg_trail_clear(kg_trail_t *self)
{
  assert(self);
  for (size_t i = 0; i < KG_TRAIL_STDERR_TAIL; i++) {
    free(self->tail[i]);
    self->tail[i] = NULL;
  }
  self->tail_start = self->tail_n = 0;
  /*  Emptied in place: the array itself stays, so a clear cannot fail. */
  while (cJSON_GetArraySize(self->following) > 0)
    cJSON_DeleteItemFromArray(self->following, 0);
  self->following_dropped = 0;
}

void
kg_trail_destroy(kg_trail_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_trail_t *self = *self_p;
  kg_trail_clear(self);
  cJSON_Delete(self->following);
  free(self);
  *self_p = NULL;
}

void
kg_trail_follow(kg_trail_t *self, cJSON *item)
{
  assert(self);
  if (!item)
    return;
  if (cJSON_GetArraySize(self->following) >= KG_TRAIL_MAX_FOLLOWING) {
    self->following_dropped++;
    cJSON_Delete(item);
    return;
  }
  cJSON_AddItemToArray(self->following, item);
}

void
kg_trail_follow_line(kg_trail_t *self, kg_source_t source, const char *text, int64_t t)
{
  assert(self);
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return;
  cJSON_AddStringToObject(o, "source", kg_source_name(source));
  cJSON_AddNumberToObject(o, "time_ms", (double) t);
  cJSON_AddStringToObject(o, "text", text);
  kg_trail_follow(self, o);
}

void
kg_trail_tail_add(kg_trail_t *self, const char *line)
{
  assert(self);
  char *copy = strdup(line);
  if (!copy)
    return;
  if (self->tail_n < KG_TRAIL_STDERR_TAIL) {
    self->tail[(self->tail_start + self->tail_n++) % KG_TRAIL_STDERR_TAIL] = copy;
  } else {
    free(self->tail[self->tail_start]);
    self->tail[self->tail_start] = copy;
    self->tail_start = (self->tail_start + 1) % KG_TRAIL_STDERR_TAIL;
  }
}

void
kg_trail_add_to_json(const kg_trail_t *self, cJSON *o)
{
  assert(self);
  cJSON_AddItemToObject(o, "following", cJSON_Duplicate(self->following, true));
  cJSON_AddNumberToObject(o, "following_dropped", (double) self->following_dropped);
  cJSON *tail = cJSON_AddArrayToObject(o, "raw_stderr_tail");
  for (size_t i = 0; tail && i < self->tail_n; i++)
    cJSON_AddItemToArray(tail, cJSON_CreateString(
                                 self->tail[(self->tail_start + i) % KG_TRAIL_STDERR_TAIL]));
}
