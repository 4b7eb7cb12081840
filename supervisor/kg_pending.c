/*  kg_pending: outstanding requests and held messages. */
#include "kg_pending.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

typedef struct {
  kg_msg_t *msg;
  kg_channel_t channel;
} s_held_t;

struct kg_pending_t {
  kg_pending_entry_t **entries; /*  arrival order                      */
  size_t count, alloc;
  s_held_t *held;               /*  ring of held messages              */
  size_t held_max, held_start, held_count;
};

static void
s_entry_free(kg_pending_entry_t *e)
{
  if (!e)
    return;
  free(e->msg_id);
  free(e->msg_type);
  cJSON_Delete(e->header);
  for (size_t i = 0; i < e->ident_count; i++)
    free((void *) e->idents[i].data);
  free(e->idents);
  free(e->code);
  free(e);
}

kg_pending_t *
kg_pending_new(size_t held_max)
{
  assert(held_max > 0);
  kg_pending_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->held = calloc(held_max, sizeof *self->held);
  if (!self->held) {
    free(self);
    return NULL;
  }
  self->held_max = held_max;
  return self;
}

void
kg_pending_destroy(kg_pending_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_pending_t *self = *self_p;
  for (size_t i = 0; i < self->count; i++)
    s_entry_free(self->entries[i]);
  free(self->entries);
  kg_channel_t ch;
  kg_msg_t *m;
  while ((m = kg_pending_unhold(self, &ch)))
    kg_msg_destroy(&m);
  free(self->held);
  free(self);
  *self_p = NULL;
}

static char *
s_strdup_or_null(const char *s)
{
  return s ? strdup(s) : NULL;
}

kg_pending_entry_t *
kg_pending_add(kg_pending_t *self, kg_msg_t *msg, kg_channel_t channel, int64_t now_ms)
{
  const char *id = kg_msg_id(msg);
  const char *type = kg_msg_type(msg);
  cJSON *header = kg_msg_json(msg, KG_PART_HEADER);
  if (!id || !type || !header)
    return NULL;
  kg_pending_remove(self, id);
  kg_pending_entry_t *e = calloc(1, sizeof *e);
  if (!e)
    return NULL;
  e->msg_id = strdup(id);
  e->msg_type = strdup(type);
  e->channel = channel;
  e->header = cJSON_Duplicate(header, 1);
  e->arrival_ms = now_ms;
  size_t n = kg_msg_ident_count(msg);
  e->idents = calloc(n ? n : 1, sizeof *e->idents);
  if (!e->msg_id || !e->msg_type || !e->header || !e->idents)
    goto fail;
  for (size_t i = 0; i < n; i++) {
    kg_frame_t f = kg_msg_ident(msg, i);
    void *copy = malloc(f.size ? f.size : 1);
    if (!copy)
      goto fail;
    memcpy(copy, f.data, f.size);
    e->idents[i].data = copy;
    e->idents[i].size = f.size;
    e->ident_count++;
  }
  if (strcmp(type, "execute_request") == 0) {
    cJSON *content = kg_msg_json(msg, KG_PART_CONTENT);
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(content, "code");
    e->code = s_strdup_or_null(cJSON_IsString(code) ? code->valuestring : "");
    if (!e->code)
      goto fail;
  }
  if (self->count == self->alloc) {
    size_t alloc = self->alloc ? self->alloc * 2 : 16;
    kg_pending_entry_t **grown = realloc(self->entries, alloc * sizeof *grown);
    if (!grown)
      goto fail;
    self->entries = grown;
    self->alloc = alloc;
  }
  self->entries[self->count++] = e;
  return e;
fail:
  s_entry_free(e);
  return NULL;
}

kg_pending_entry_t *
kg_pending_find(kg_pending_t *self, const char *msg_id)
{
  if (!msg_id)
    return NULL;
  for (size_t i = 0; i < self->count; i++)
    if (strcmp(self->entries[i]->msg_id, msg_id) == 0)
      return self->entries[i];
  return NULL;
}

bool
kg_pending_remove(kg_pending_t *self, const char *msg_id)
{
  if (!msg_id)
    return false;
  for (size_t i = 0; i < self->count; i++) {
    if (strcmp(self->entries[i]->msg_id, msg_id) != 0)
      continue;
    s_entry_free(self->entries[i]);
    memmove(self->entries + i, self->entries + i + 1,
            (self->count - i - 1) * sizeof *self->entries);
    self->count--;
    return true;
  }
  return false;
}

size_t
kg_pending_count(const kg_pending_t *self)
{
  return self->count;
}

kg_pending_entry_t *
kg_pending_at(kg_pending_t *self, size_t index)
{
  return index < self->count ? self->entries[index] : NULL;
}

kg_pending_entry_t *
kg_pending_running(kg_pending_t *self)
{
  for (size_t i = 0; i < self->count; i++) {
    kg_pending_entry_t *e = self->entries[i];
    if (e->forwarded && strcmp(e->msg_type, "execute_request") == 0)
      return e;
  }
  return NULL;
}

int
kg_pending_hold(kg_pending_t *self, kg_msg_t **msg_p, kg_channel_t channel)
{
  assert(msg_p && *msg_p);
  if (self->held_count == self->held_max)
    return KG_ETOOBIG;
  size_t at = (self->held_start + self->held_count) % self->held_max;
  self->held[at].msg = *msg_p;
  self->held[at].channel = channel;
  self->held_count++;
  *msg_p = NULL;
  return 0;
}

kg_msg_t *
kg_pending_unhold(kg_pending_t *self, kg_channel_t *channel)
{
  if (self->held_count == 0)
    return NULL;
  s_held_t h = self->held[self->held_start];
  self->held_start = (self->held_start + 1) % self->held_max;
  self->held_count--;
  if (channel)
    *channel = h.channel;
  return h.msg;
}

size_t
kg_pending_held(const kg_pending_t *self)
{
  return self->held_count;
}
