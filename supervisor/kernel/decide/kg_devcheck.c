/*  kg_devcheck: the device probe's bookkeeping (see kg_devcheck.h). Calls
    no supervisor file: only the classifier and the message class. */
#include "kg_devcheck.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

struct kg_devcheck_t {
  char *probe_id;               /*  kguard's probe execute_request, or NULL  */
  int64_t started_ms, deadline_ms;
  int64_t suspect_ms;           /*  when the suspicion came (monotonic)      */
  kg_msg_t *reply;              /*  the suspected cell's reply (owned)       */
  cJSON *idle;                  /*  that cell's header when its idle came    */
};

kg_devcheck_t *
kg_devcheck_new(void)
{
  return calloc(1, sizeof(kg_devcheck_t));
}

void
kg_devcheck_destroy(kg_devcheck_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_devcheck_reset(*self_p);
  free(*self_p);
  *self_p = NULL;
}

void
kg_devcheck_reset(kg_devcheck_t *self)
{
  assert(self);
  free(self->probe_id);
  self->probe_id = NULL;
  self->started_ms = self->deadline_ms = 0;
  kg_msg_destroy(&self->reply);
  cJSON_Delete(self->idle);
  self->idle = NULL;
}

void
kg_devcheck_suspected(kg_devcheck_t *self, int64_t now)
{
  assert(self);
  self->suspect_ms = now;
}

int64_t
kg_devcheck_suspect_ms(const kg_devcheck_t *self)
{
  assert(self);
  return self->suspect_ms;
}

int
kg_devcheck_sent(kg_devcheck_t *self, const char *msg_id, int64_t now)
{
  assert(self);
  free(self->probe_id);
  self->probe_id = NULL;
  if (!msg_id || !*msg_id)
    return KG_EUSAGE;
  self->probe_id = strdup(msg_id);
  if (!self->probe_id)
    return KG_ENOMEM;
  self->started_ms = now;
  self->deadline_ms = now + KG_DEVCHECK_MS;
  return 0;
}

bool
kg_devcheck_probing(const kg_devcheck_t *self)
{
  assert(self);
  return self->probe_id != NULL;
}

bool
kg_devcheck_is_probe(const kg_devcheck_t *self, const char *parent)
{
  assert(self);
  return self->probe_id && parent && strcmp(parent, self->probe_id) == 0;
}

int64_t
kg_devcheck_deadline(const kg_devcheck_t *self)
{
  assert(self);
  return self->probe_id ? self->deadline_ms : 0;
}

bool
kg_devcheck_expired(kg_devcheck_t *self, int64_t now)
{
  if (!self->probe_id || now < self->deadline_ms)
    return false;
  free(self->probe_id);
  self->probe_id = NULL;
  return true;
}

int64_t
kg_devcheck_answered(kg_devcheck_t *self, int64_t now)
{
  assert(self);
  free(self->probe_id);
  self->probe_id = NULL;
  return now - self->started_ms;
}

static const char *
s_str(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

kg_devcheck_verdict_t
kg_devcheck_verdict(const cJSON *content, const kg_classifier_t *rules, kg_match_t *match)
{
  if (strcmp(s_str(content, "status"), "error") != 0)
    return KG_DEVCHECK_PASSED;
  const char *en = s_str(content, "ename"), *ev = s_str(content, "evalue");
  size_t len = strlen(en) + strlen(ev) + 3;
  char *text = malloc(len);
  kg_match_t m;
  bool sticky = false;
  if (text) {
    snprintf(text, len, "%s: %s", en, ev);
    sticky = rules && kg_classifier_match(rules, KG_SRC_EXECUTE_REPLY, text, strlen(text), &m)
             && m.family && m.family->sticky;
    free(text);
  }
  if (!sticky)
    return KG_DEVCHECK_NOT_GPU;
  if (match)
    *match = m;
  return KG_DEVCHECK_CONFIRMED;
}

bool
kg_devcheck_hold_reply(kg_devcheck_t *self, kg_msg_t **msg_p)
{
  assert(self);
  if (self->reply || !msg_p || !*msg_p)
    return false;
  self->reply = *msg_p;
  *msg_p = NULL;
  return true;
}

bool
kg_devcheck_holding(const kg_devcheck_t *self)
{
  assert(self);
  return self->reply != NULL;
}

bool
kg_devcheck_hold_idle(kg_devcheck_t *self, const char *parent_id, const cJSON *parent_header)
{
  assert(self);
  const char *held = self->reply ? kg_msg_parent_id(self->reply) : NULL;
  if (!held || !parent_id || strcmp(parent_id, held) != 0)
    return false;
  cJSON_Delete(self->idle);
  self->idle = cJSON_Duplicate(parent_header, 1);
  return true;
}

void
kg_devcheck_release(kg_devcheck_t *self, kg_msg_t **reply_p, cJSON **idle_p)
{
  assert(self);
  *reply_p = self->reply;
  *idle_p = self->idle;
  self->reply = NULL;
  self->idle = NULL;
}
