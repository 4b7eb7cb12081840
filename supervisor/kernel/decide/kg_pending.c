/*  kg_pending: outstanding requests, held messages, the busy/idle ledger. */
#include "kg_pending.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "kg_error.h"
#include "kg_log.h"

#define S_EXPIRED_MAX 64          /*  expired entries kept for late replies  */
#define S_LEDGER_MAX 4096         /*  open busy records (a kernel that never
                                      says idle must not grow it forever)   */
#define S_SWEEP_EVERY_MS 1000    /*  expiry looked at on an add at most this often */
#define S_IDLE_GRACE_MS 2000      /*  an execute idle without its reply expires then */
#define S_MAX_AGE_MS (10 * 60 * 1000) /*  a forwarded non-execute unanswered this long */
#define S_MAX_FORWARDED 1024      /*  unanswered non-execute requests kept     */

typedef struct {
  kg_msg_t *msg;
  kg_channel_t channel;
} s_held_t;

typedef struct {                  /*  a ring of held messages               */
  s_held_t *slots;
  size_t start, count;
} s_queue_t;

typedef struct {
  char *msg_id;
  cJSON *header;
  char *session;
} s_busy_t;

struct kg_pending_t {
  kg_pending_entry_t **entries; /*  arrival order                      */
  size_t count, alloc;
  kg_pending_entry_t *expired[S_EXPIRED_MAX];   /*  ring, oldest at ex_start */
  size_t ex_start, ex_count;
  s_queue_t queue[2];           /*  0: shell, 1: the other channels    */
  size_t held_max;
  s_busy_t *busy;               /*  open ledger records, oldest first  */
  size_t busy_count, busy_alloc;
  int64_t idle_grace_ms, max_age_ms, last_sweep_ms;
  size_t max_forwarded;
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
  for (int q = 0; q < 2; q++) {
    self->queue[q].slots = calloc(held_max, sizeof(s_held_t));
    if (!self->queue[q].slots) {
      free(self->queue[0].slots);
      free(self);
      return NULL;
    }
  }
  self->held_max = held_max;
  self->idle_grace_ms = S_IDLE_GRACE_MS;
  self->max_age_ms = S_MAX_AGE_MS;
  self->max_forwarded = S_MAX_FORWARDED;
  return self;
}

static void
s_busy_free(s_busy_t *b)
{
  free(b->msg_id);
  free(b->session);
  cJSON_Delete(b->header);
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
  for (size_t i = 0; i < self->ex_count; i++)
    s_entry_free(self->expired[(self->ex_start + i) % S_EXPIRED_MAX]);
  for (int q = 0; q < 2; q++) {
    kg_pending_drop_held(self, q == 0);
    free(self->queue[q].slots);
  }
  for (size_t i = 0; i < self->busy_count; i++)
    s_busy_free(&self->busy[i]);
  free(self->busy);
  free(self);
  *self_p = NULL;
}

/*  Python's truthiness of a JSON value; def when absent. */
static bool
s_truthy(const cJSON *v, bool def)
{
  if (!v)
    return def;
  if (cJSON_IsBool(v))
    return cJSON_IsTrue(v);
  if (cJSON_IsNull(v))
    return false;
  if (cJSON_IsNumber(v))
    return v->valuedouble != 0;
  if (cJSON_IsString(v))
    return v->valuestring[0] != '\0';
  if (cJSON_IsArray(v) || cJSON_IsObject(v))
    return v->child != NULL;
  return true;
}

kg_pending_entry_t *
kg_pending_add(kg_pending_t *self, kg_msg_t *msg, kg_channel_t channel, int64_t now_ms)
{
  assert(self);
  const char *id = kg_msg_id(msg);
  const char *type = kg_msg_type(msg);
  cJSON *header = kg_msg_json(msg, KG_PART_HEADER);
  if (!id || !type || !header)
    return NULL;
  if (now_ms - self->last_sweep_ms >= S_SWEEP_EVERY_MS)
    kg_pending_expire(self, now_ms);
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
    const cJSON *silent = cJSON_GetObjectItemCaseSensitive(content, "silent");
    e->code = strdup(cJSON_IsString(code) ? code->valuestring : "");
    if (!e->code)
      goto fail;
    e->silent = s_truthy(silent, false);
    e->stop_on_error = s_truthy(cJSON_GetObjectItemCaseSensitive(content, "stop_on_error"),
                                true);
    /* ipykernel drops an execute_request without code or silent unanswered */
    e->well_formed = code && silent;
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
  assert(self);
  if (!msg_id)
    return NULL;
  for (size_t i = 0; i < self->count; i++)
    if (strcmp(self->entries[i]->msg_id, msg_id) == 0)
      return self->entries[i];
  return NULL;
}

kg_pending_entry_t *
kg_pending_find_expired(kg_pending_t *self, const char *msg_id)
{
  assert(self);
  if (!msg_id)
    return NULL;
  for (size_t i = 0; i < self->ex_count; i++) {
    kg_pending_entry_t *e = self->expired[(self->ex_start + i) % S_EXPIRED_MAX];
    if (e && strcmp(e->msg_id, msg_id) == 0)
      return e;
  }
  return NULL;
}

/*  Take entry i out of the live table (not freed). */
static kg_pending_entry_t *
s_take(kg_pending_t *self, size_t i)
{
  assert(self);
  kg_pending_entry_t *e = self->entries[i];
  memmove(self->entries + i, self->entries + i + 1,
          (self->count - i - 1) * sizeof *self->entries);
  self->count--;
  return e;
}

bool
kg_pending_remove(kg_pending_t *self, const char *msg_id)
{
  assert(self);
  if (!msg_id)
    return false;
  for (size_t i = 0; i < self->count; i++) {
    if (strcmp(self->entries[i]->msg_id, msg_id) == 0) {
      s_entry_free(s_take(self, i));
      return true;
    }
  }
  /* An expired slot is emptied in place (NULL); the ring skips holes. */
  for (size_t i = 0; i < self->ex_count; i++) {
    size_t at = (self->ex_start + i) % S_EXPIRED_MAX;
    if (self->expired[at] && strcmp(self->expired[at]->msg_id, msg_id) == 0) {
      s_entry_free(self->expired[at]);
      self->expired[at] = NULL;
      return true;
    }
  }
  return false;
}

size_t
kg_pending_count(const kg_pending_t *self)
{
  assert(self);
  return self->count;
}

kg_pending_entry_t *
kg_pending_at(kg_pending_t *self, size_t index)
{
  assert(self);
  return index < self->count ? self->entries[index] : NULL;
}

kg_pending_entry_t *
kg_pending_running(kg_pending_t *self)
{
  assert(self);
  for (size_t i = 0; i < self->count; i++) {
    kg_pending_entry_t *e = self->entries[i];
    if (e->forwarded && strcmp(e->msg_type, "execute_request") == 0)
      return e;
  }
  return NULL;
}

void
kg_pending_set_limits(kg_pending_t *self, int64_t idle_grace_ms, int64_t max_age_ms,
                      size_t max_forwarded)
{
  assert(self);
  self->idle_grace_ms = idle_grace_ms;
  self->max_age_ms = max_age_ms;
  self->max_forwarded = max_forwarded;
}

static void
s_expire(kg_pending_t *self, size_t i, const char *why)
{
  assert(self);
  kg_pending_entry_t *e = s_take(self, i);
  kg_warning("%s %s %s: no longer awaited (a late reply is still routed)", e->msg_type,
             e->msg_id, why);
  if (self->ex_count == S_EXPIRED_MAX) {
    s_entry_free(self->expired[self->ex_start]);
    self->expired[self->ex_start] = NULL;
    self->ex_start = (self->ex_start + 1) % S_EXPIRED_MAX;
    self->ex_count--;
  }
  self->expired[(self->ex_start + self->ex_count) % S_EXPIRED_MAX] = e;
  self->ex_count++;
}

static bool
s_idle_unanswered(const kg_pending_entry_t *e)
{
  return e->forwarded && e->idle_ms > 0;
}

int64_t
kg_pending_idle_expiry(const kg_pending_t *self, const kg_pending_entry_t *e)
{
  assert(self);
  return s_idle_unanswered(e) ? e->idle_ms + self->idle_grace_ms : 0;
}

size_t
kg_pending_expire(kg_pending_t *self, int64_t now_ms)
{
  assert(self);
  self->last_sweep_ms = now_ms;
  size_t expired = 0, forwarded = 0;
  size_t i = 0;
  while (i < self->count) {
    kg_pending_entry_t *e = self->entries[i];
    bool exec = strcmp(e->msg_type, "execute_request") == 0;
    if (s_idle_unanswered(e) && now_ms >= kg_pending_idle_expiry(self, e)) {
      s_expire(self, i, "was left unanswered by the kernel, which went idle");
      expired++;
      continue;
    }
    if (e->forwarded && !exec && now_ms - e->arrival_ms >= self->max_age_ms) {
      s_expire(self, i, "was not answered in time");
      expired++;
      continue;
    }
    if (e->forwarded && !exec)
      forwarded++;
    i++;
  }
  /* Beyond the cap: the oldest unanswered non-execute requests go. */
  for (i = 0; forwarded > self->max_forwarded && i < self->count;) {
    kg_pending_entry_t *e = self->entries[i];
    if (e->forwarded && strcmp(e->msg_type, "execute_request") != 0) {
      s_expire(self, i, "is one unanswered request too many");
      expired++;
      forwarded--;
    } else
      i++;
  }
  return expired;
}

int
kg_pending_hold(kg_pending_t *self, kg_msg_t **msg_p, kg_channel_t channel)
{
  assert(self);
  assert(msg_p && *msg_p);
  if (kg_pending_held(self) == self->held_max)
    return KG_ETOOBIG;
  s_queue_t *q = &self->queue[channel == KG_CH_SHELL ? 0 : 1];
  size_t at = (q->start + q->count) % self->held_max;
  q->slots[at].msg = *msg_p;
  q->slots[at].channel = channel;
  q->count++;
  *msg_p = NULL;
  return 0;
}

kg_msg_t *
kg_pending_unhold(kg_pending_t *self, bool shell, kg_channel_t *channel)
{
  assert(self);
  s_queue_t *q = &self->queue[shell ? 0 : 1];
  if (q->count == 0)
    return NULL;
  s_held_t h = q->slots[q->start];
  q->slots[q->start].msg = NULL;
  q->start = (q->start + 1) % self->held_max;
  q->count--;
  if (channel)
    *channel = h.channel;
  return h.msg;
}

size_t
kg_pending_held(const kg_pending_t *self)
{
  assert(self);
  return self->queue[0].count + self->queue[1].count;
}

size_t
kg_pending_held_shell(const kg_pending_t *self)
{
  assert(self);
  return self->queue[0].count;
}

size_t
kg_pending_drop_held(kg_pending_t *self, bool shell)
{
  assert(self);
  size_t n = 0;
  kg_msg_t *m;
  while ((m = kg_pending_unhold(self, shell, NULL))) {
    kg_msg_destroy(&m);
    n++;
  }
  return n;
}

/* ------------------------------------------------------------------------
   The busy/idle ledger. */

static ssize_t
s_busy_index(const kg_pending_t *self, const char *msg_id)
{
  assert(self);
  if (!msg_id)
    return -1;
  for (size_t i = self->busy_count; i-- > 0;)   /* recent ones first */
    if (strcmp(self->busy[i].msg_id, msg_id) == 0)
      return (ssize_t) i;
  return -1;
}

static void
s_busy_drop(kg_pending_t *self, size_t i)
{
  assert(self);
  s_busy_free(&self->busy[i]);
  memmove(self->busy + i, self->busy + i + 1, (self->busy_count - i - 1) * sizeof *self->busy);
  self->busy_count--;
}

int
kg_pending_busy_open(kg_pending_t *self, const cJSON *header, const char *session)
{
  assert(self);
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(header, "msg_id");
  if (!cJSON_IsString(id) || !*id->valuestring)
    return KG_EUSAGE;
  if (s_busy_index(self, id->valuestring) >= 0)
    return 1;
  if (self->busy_count == S_LEDGER_MAX) {
    kg_warning("busy status of %s never followed by idle: forgotten", self->busy[0].msg_id);
    s_busy_drop(self, 0);
  }
  if (self->busy_count == self->busy_alloc) {
    size_t alloc = self->busy_alloc ? self->busy_alloc * 2 : 16;
    s_busy_t *grown = realloc(self->busy, alloc * sizeof *grown);
    if (!grown)
      return KG_ENOMEM;
    self->busy = grown;
    self->busy_alloc = alloc;
  }
  s_busy_t b = {strdup(id->valuestring), cJSON_Duplicate(header, 1),
                strdup(session ? session : "")};
  if (!b.msg_id || !b.header || !b.session) {
    s_busy_free(&b);
    return KG_ENOMEM;
  }
  self->busy[self->busy_count++] = b;
  return 0;
}

bool
kg_pending_busy_is_open(const kg_pending_t *self, const char *msg_id)
{
  assert(self);
  return s_busy_index(self, msg_id) >= 0;
}

const char *
kg_pending_busy_session(const kg_pending_t *self, const char *msg_id)
{
  assert(self);
  ssize_t i = s_busy_index(self, msg_id);
  return i < 0 ? NULL : self->busy[i].session;
}

bool
kg_pending_busy_close(kg_pending_t *self, const char *msg_id)
{
  assert(self);
  ssize_t i = s_busy_index(self, msg_id);
  if (i < 0)
    return false;
  s_busy_drop(self, (size_t) i);
  return true;
}

size_t
kg_pending_busy_count(const kg_pending_t *self)
{
  assert(self);
  return self->busy_count;
}

bool
kg_pending_busy_at(const kg_pending_t *self, size_t index, const cJSON **header,
                   const char **session)
{
  assert(self);
  if (index >= self->busy_count)
    return false;
  if (header)
    *header = self->busy[index].header;
  if (session)
    *session = self->busy[index].session;
  return true;
}
