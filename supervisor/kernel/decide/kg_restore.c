/*  kg_restore: what the checkpoint restore said, and what the next kernel
    gets (see kg_restore.h). Calls no supervisor file. */
#include "kg_restore.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_STEP_MAX 9007199254740992.0   /*  2^53: a double's exact integers */

struct kg_restore_t {
  cJSON *result;                /*  resume-prepare's JSON object, or NULL    */
  char *error;                  /*  why no checkpoint was restored, or NULL  */
  bool restored;                /*  the last kg_restore_decide's answer      */
  bool pending;                 /*  give KGUARD_RESUME_* to the next kernel  */
  char *dir, *archive;          /*  what it gets (owned, never NULL once set) */
  long long step;               /*  -1 when unknown                          */
  bool noticed;                 /*  the long-restore progress notice is out  */
};

kg_restore_t *
kg_restore_new(void)
{
  kg_restore_t *self = calloc(1, sizeof *self);
  if (self)
    self->step = -1;
  return self;
}

void
kg_restore_destroy(kg_restore_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_restore_t *self = *self_p;
  cJSON_Delete(self->result);
  free(self->error);
  free(self->dir);
  free(self->archive);
  free(self);
  *self_p = NULL;
}

void
kg_restore_begin(kg_restore_t *self)
{
  assert(self);
  cJSON_Delete(self->result);
  self->result = NULL;
  free(self->error);
  self->error = NULL;
  self->restored = false;
  self->noticed = false;
}

void
kg_restore_set_error(kg_restore_t *self, const char *text)
{
  assert(self);
  char *copy = NULL;
  if (text && !(copy = strdup(text)))
    return;
  free(self->error);
  self->error = copy;
}

bool
kg_restore_take_output(kg_restore_t *self, const char *out)
{
  assert(self);
  cJSON *j = out && *out ? cJSON_Parse(out) : NULL;
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return false;
  }
  cJSON_Delete(self->result);
  self->result = j;
  return true;
}

static const char *
s_str(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

/*  Replace *field with a copy of value; false (field kept) when out of
    memory. */
static bool
s_set(char **field, const char *value)
{
  char *copy = strdup(value);
  if (!copy)
    return false;
  free(*field);
  *field = copy;
  return true;
}

/*  error = prefix + detail (any length: detail comes from the helper). */
static void
s_error2(kg_restore_t *self, const char *prefix, const char *detail)
{
  assert(self);
  size_t len = strlen(prefix) + strlen(detail) + 1;
  char *text = malloc(len);
  if (!text)
    return;
  snprintf(text, len, "%s%s", prefix, detail);
  free(self->error);
  self->error = text;
}

bool
kg_restore_decide(kg_restore_t *self)
{
  assert(self);
  self->pending = false;
  self->restored = false;
  const cJSON *r = self->result;
  const char *status = s_str(r, "status");
  const char *archive = s_str(r, "archive");
  if (r && strcmp(status, "restored") == 0 && *archive) {
    if (!s_set(&self->dir, s_str(r, "dir")) || !s_set(&self->archive, archive)) {
      if (!self->error)
        self->error = strdup("out of memory while keeping the restored checkpoint's paths");
      return false;
    }
    self->step = kg_restore_step_of(r);
    self->restored = self->pending = true;
    return true;
  }
  if (!r || self->error)
    return false;
  if (strcmp(status, "failed") == 0) {
    const char *err = s_str(r, "error");
    s_error2(self, "the checkpoint restore failed: ", *err ? err : "no reason given");
  } else if (strcmp(status, "restored") == 0)
    kg_restore_set_error(self, "the checkpoint restore's result is malformed: \"restored\" "
                         "without an archive");
  else if (strcmp(status, "none") != 0)
    kg_restore_set_error(self, "the checkpoint restore's result is malformed: its status is "
                         "not restored, none or failed");
  return false;
}

const cJSON *
kg_restore_result(const kg_restore_t *self)
{
  assert(self);
  return self->result;
}

const char *
kg_restore_error(const kg_restore_t *self)
{
  assert(self);
  return self->error;
}

bool
kg_restore_pending(const kg_restore_t *self)
{
  assert(self);
  return self->pending;
}

void
kg_restore_handed_over(kg_restore_t *self)
{
  assert(self);
  self->pending = false;
}

const char *
kg_restore_dir(const kg_restore_t *self)
{
  assert(self);
  return self->dir ? self->dir : "";
}

const char *
kg_restore_archive(const kg_restore_t *self)
{
  assert(self);
  return self->archive ? self->archive : "";
}

long long
kg_restore_step(const kg_restore_t *self)
{
  assert(self);
  return self->step;
}

long long
kg_restore_step_of(const cJSON *result)
{
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(result, "step");
  double d = cJSON_IsNumber(step) ? step->valuedouble : -1;
  return isfinite(d) && d >= 0 && d <= S_STEP_MAX ? (long long) d : -1;
}

const char *
kg_restore_digest(const kg_restore_t *self)
{
  assert(self);
  const cJSON *dg = cJSON_GetObjectItemCaseSensitive(self->result, "digest");
  return cJSON_IsString(dg) ? dg->valuestring : NULL;
}

const char *
kg_restore_tier(const kg_restore_t *self)
{
  assert(self);
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(self->result, "tier");
  return cJSON_IsString(t) ? t->valuestring : NULL;
}

bool
kg_restore_noticed(const kg_restore_t *self)
{
  assert(self);
  return self->noticed;
}

void
kg_restore_set_noticed(kg_restore_t *self)
{
  assert(self);
  self->noticed = true;
}

cJSON *
kg_restore_incident_json(const kg_restore_t *self)
{
  assert(self);
  cJSON *c = self->result ? cJSON_Duplicate(self->result, 1) : NULL;
  if (!c && self->error) {
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "status", "failed");
    cJSON_AddStringToObject(c, "error", self->error);
  } else if (c && self->error && !self->restored
             && !cJSON_GetObjectItemCaseSensitive(c, "kguard_error"))
    cJSON_AddStringToObject(c, "kguard_error", self->error);
  return c;
}

cJSON *
kg_restore_meta_json(const kg_restore_t *self)
{
  const cJSON *r = self->result;
  if (!r && !self->error)
    return NULL;
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(r, "status");
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(r, "step");
  const cJSON *archive = cJSON_GetObjectItemCaseSensitive(r, "archive");
  const cJSON *error = cJSON_GetObjectItemCaseSensitive(r, "error");
  cJSON *c = cJSON_CreateObject();
  const char *st = cJSON_IsString(status) ? status->valuestring : "failed";
  if (!r && strncmp(self->error, "no checkpoint directory", 23) == 0)
    st = "none";
  cJSON_AddStringToObject(c, "status", st);
  if (cJSON_IsNumber(step))
    cJSON_AddNumberToObject(c, "step", step->valuedouble);
  else
    cJSON_AddNullToObject(c, "step");
  cJSON_AddStringToObject(c, "archive", cJSON_IsString(archive) ? archive->valuestring : "");
  if (self->error)
    cJSON_AddStringToObject(c, "error", self->error);
  else if (cJSON_IsString(error))
    cJSON_AddStringToObject(c, "error", error->valuestring);
  else
    cJSON_AddNullToObject(c, "error");
  return c;
}
