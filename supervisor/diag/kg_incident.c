/*  kg_incident: incident records, written atomically with mode 0600. */
#include "kg_incident.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_json.h"
#include "kg_scrub.h"
#include "kg_tokens.h"

struct kg_incident_t {
  char id[KG_INCIDENT_ID_MAX];
  cJSON *root;
  kg_scrub_t *secrets;          /*  the kernel's secret values, to mask     */
  bool secrets_lost;            /*  registering one failed: write nothing   */
};

void
kg_incident_make_id(int64_t now_ms, char *buf, size_t size)
{
  time_t secs = (time_t) (now_ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char base[24];
  strftime(base, sizeof base, "%Y%m%dT%H%M%SZ", &tm);
  unsigned char rnd[3];
  if (sodium_init() < 0)
    memset(rnd, 0, sizeof rnd); /* ids stay unique enough per second; never fatal */
  else
    randombytes_buf(rnd, sizeof rnd);
  snprintf(buf, size, "%s-%02x%02x%02x", base, rnd[0], rnd[1], rnd[2]);
}

/*  Replace key in the record with item (taken). */
static void
s_put(kg_incident_t *self, const char *key, cJSON *item)
{
  if (!item)
    return;
  if (cJSON_HasObjectItem(self->root, key))
    cJSON_ReplaceItemInObjectCaseSensitive(self->root, key, item);
  else
    cJSON_AddItemToObject(self->root, key, item);
}

kg_incident_t *
kg_incident_new(int64_t now_ms)
{
  kg_incident_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->root = cJSON_CreateObject();
  self->secrets = kg_scrub_new();
  if (!self->root || !self->secrets) {
    cJSON_Delete(self->root);
    kg_scrub_destroy(&self->secrets);
    free(self);
    return NULL;
  }
  kg_incident_make_id(now_ms, self->id, sizeof self->id);
  char iso[40];
  kg_clock_iso_ms(now_ms, iso, sizeof iso);
  s_put(self, "kguard_incident", cJSON_CreateNumber(1));
  s_put(self, "id", cJSON_CreateString(self->id));
  s_put(self, "created", cJSON_CreateString(iso));
  s_put(self, "checkpoint", cJSON_CreateNull());
  return self;
}

void
kg_incident_destroy(kg_incident_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  cJSON_Delete((*self_p)->root);
  kg_scrub_destroy(&(*self_p)->secrets);
  free(*self_p);
  *self_p = NULL;
}

const char *
kg_incident_id(const kg_incident_t *self)
{
  return self->id;
}

cJSON *
kg_incident_json(kg_incident_t *self)
{
  return self->root;
}

void
kg_incident_set_fault_time(kg_incident_t *self, int64_t fault_ms)
{
  if (fault_ms < 0) {
    s_put(self, "T", cJSON_CreateNull());
    return;
  }
  cJSON *t = cJSON_CreateObject();
  if (!t)
    return;
  char iso[40];
  kg_clock_iso_ms(fault_ms, iso, sizeof iso);
  cJSON_AddStringToObject(t, "iso", iso);
  cJSON_AddNumberToObject(t, "ms", (double) fault_ms);
  s_put(self, "T", t);
}

int
kg_incident_set_diagnosis(kg_incident_t *self, const kg_diagnosis_t *diag)
{
  cJSON *d = kg_diagnosis_to_json(diag);
  if (!d)
    return KG_ENOMEM;
  while (d->child) {
    cJSON *item = cJSON_DetachItemViaPointer(d, d->child);
    char *key = item->string;
    item->string = NULL;
    s_put(self, key, item);
    free(key);
  }
  cJSON_Delete(d);
  kg_incident_set_fault_time(self, kg_diagnosis_fault_time(diag));
  return 0;
}

void
kg_incident_set_cell(kg_incident_t *self, const char *code, const char *msg_id,
                     int execution_count)
{
  cJSON *c = cJSON_CreateObject();
  if (!c)
    return;
  kg_json_add_string_or_null(c, "code", code);
  kg_json_add_string_or_null(c, "msg_id", msg_id);
  if (execution_count >= 0)
    cJSON_AddNumberToObject(c, "execution_count", execution_count);
  else
    cJSON_AddNullToObject(c, "execution_count");
  s_put(self, "cell", c);
}

void
kg_incident_set_last_step(kg_incident_t *self, int64_t step)
{
  s_put(self, "last_step", step >= 0 ? cJSON_CreateNumber((double) step) : cJSON_CreateNull());
}

void
kg_incident_set_exit(kg_incident_t *self, int exit_code, int signo)
{
  if (exit_code < 0 && signo <= 0) {
    s_put(self, "exit", cJSON_CreateNull());
    return;
  }
  cJSON *e = cJSON_CreateObject();
  if (!e)
    return;
  if (exit_code >= 0) {
    cJSON_AddNumberToObject(e, "code", exit_code);
    cJSON_AddNullToObject(e, "signal");
    cJSON_AddNullToObject(e, "signal_name");
  } else {
    cJSON_AddNullToObject(e, "code");
    cJSON_AddNumberToObject(e, "signal", signo);
    char name[16];
    const char *abbrev = sigabbrev_np(signo);
    snprintf(name, sizeof name, "SIG%s", abbrev ? abbrev : "?");
    cJSON_AddStringToObject(e, "signal_name", name);
  }
  s_put(self, "exit", e);
}

void
kg_incident_take_versions(kg_incident_t *self, cJSON **versions_p)
{
  cJSON *v = versions_p ? *versions_p : NULL;
  if (versions_p)
    *versions_p = NULL;
  if (!cJSON_IsObject(v)) {
    cJSON_Delete(v);
    v = cJSON_CreateObject();
    if (v)
      cJSON_AddStringToObject(v, "error", "probe unavailable");
  }
  s_put(self, "versions", v);
}

static bool
s_diag_var(const char *name, size_t len)
{
  static const char *names[] = {"CUDA_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL",
                                "HIP_LAUNCH_BLOCKING", "KGUARD_DIAGNOSTIC", "KGUARD_EMULATE",
                                "TORCH_USE_CUDA_DSA", "CUDA_VISIBLE_DEVICES",
                                "HIP_VISIBLE_DEVICES"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strlen(names[i]) == len && strncmp(name, names[i], len) == 0)
      return true;
  return len > 8 && strncmp(name, "PYTORCH_", 8) == 0;
}

int
kg_incident_set_env(kg_incident_t *self, char *const *envp)
{
  cJSON *env = cJSON_CreateObject(), *names = cJSON_CreateArray();
  if (!env || !names) {
    cJSON_Delete(env);
    cJSON_Delete(names);
    self->secrets_lost = true;
    return KG_ENOMEM;
  }
  int rc = 0;
  for (char *const *p = envp; p && *p; p++) {
    const char *eq = strchr(*p, '=');
    if (!eq || eq == *p || eq - *p >= 128)
      continue;
    size_t len = (size_t) (eq - *p);
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int) len, *p);
    if (s_diag_var(*p, len) && !cJSON_HasObjectItem(env, name))
      cJSON_AddStringToObject(env, name, eq + 1);
    if (strcmp(name, "JPY_SESSION_NAME") == 0 && eq[1])   /* Jupyter Server's notebook */
      s_put(self, "notebook", cJSON_CreateString(eq + 1));
    if (kg_tokens_secret_name(*p, len) && kg_tokens_secret_value(eq + 1)) {
      if (kg_scrub_add_secret(self->secrets, name, eq + 1) != 0)
        rc = KG_ENOMEM;
      cJSON_AddItemToArray(names, cJSON_CreateString(name));
    }
  }
  if (rc)
    self->secrets_lost = true;
  s_put(self, "diagnostic_env", env);
  s_put(self, "secret_env", names);
  return rc;
}

/*  Mask every string value under item (keys are kguard's own names).
    Returns 0 or KG_ENOMEM. */
static int
s_mask(kg_scrub_t *scrub, cJSON *item)
{
  for (cJSON *c = item; c; c = c->next) {
    if (cJSON_IsString(c) && c->valuestring) {
      char *m = kg_scrub_secrets(scrub, c->valuestring);
      if (!m)
        return KG_ENOMEM;
      if (strcmp(m, c->valuestring) != 0 && !cJSON_SetValuestring(c, m)) {
        free(m);
        return KG_ENOMEM;
      }
      free(m);
    }
    if (c->child && s_mask(scrub, c->child) != 0)
      return KG_ENOMEM;
  }
  return 0;
}

void
kg_incident_set_restarts(kg_incident_t *self, int restart_count)
{
  s_put(self, "restart_count", cJSON_CreateNumber(restart_count));
}

void
kg_incident_set_policy(kg_incident_t *self, const char *decision, const char *reason,
                       int64_t delay_ms)
{
  cJSON *p = cJSON_CreateObject();
  if (!p)
    return;
  kg_json_add_string_or_null(p, "decision", decision);
  kg_json_add_string_or_null(p, "reason", reason);
  cJSON_AddNumberToObject(p, "delay_ms", (double) delay_ms);
  s_put(self, "policy", p);
}

void
kg_incident_take_checkpoint(kg_incident_t *self, cJSON **checkpoint_p)
{
  cJSON *c = checkpoint_p ? *checkpoint_p : NULL;
  if (checkpoint_p)
    *checkpoint_p = NULL;
  s_put(self, "checkpoint", c ? c : cJSON_CreateNull());
}

int
kg_incident_write(kg_incident_t *self, const char *incidents_dir, char **path_out)
{
  if (path_out)
    *path_out = NULL;
  if (self->secrets_lost)
    return KG_ENOMEM;
  cJSON *masked = cJSON_Duplicate(self->root, true);
  int mrc = masked ? s_mask(self->secrets, masked->child) : KG_ENOMEM;
  char *text = mrc == 0 ? cJSON_Print(masked) : NULL;
  cJSON_Delete(masked);
  if (!text)
    return KG_ENOMEM;
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/%s.json", incidents_dir, self->id);
  if (n < 0 || (size_t) n >= sizeof path) {
    free(text);
    return -ENAMETOOLONG;
  }
  int rc = kg_file_write_atomic(path, text, strlen(text), 0600);
  free(text);
  if (rc == 0 && path_out) {
    *path_out = strdup(path);
    if (!*path_out)
      rc = KG_ENOMEM;
  }
  return rc;
}
