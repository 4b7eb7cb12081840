/*  kg_rules_json: pure readers of the rules file's JSON (contracts in
    kg_rules_json.h); kg_classifier builds its table with them. */
#include "kg_rules_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

#define MAX_FIELD 8192u

void
kg_rules_json_strv_free(char **v)
{
  if (!v)
    return;
  for (char **p = v; *p; p++)
    free(*p);
  free(v);
}

/*  A required or optional non-empty string field. Returns 0, KG_ERULES (with a
    message naming where/field) or KG_ENOMEM. */
int
kg_rules_json_string(const cJSON *obj, const char *field, bool required, const char *where,
                     char **out, char *err, size_t errlen)
{
  *out = NULL;
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, field);
  if (!item) {
    if (!required)
      return 0;
    kg_errf(err, errlen, "%s: missing field \"%s\"", where, field);
    return KG_ERULES;
  }
  if (!cJSON_IsString(item) || !item->valuestring || !item->valuestring[0]) {
    kg_errf(err, errlen, "%s: field \"%s\" must be a non-empty string", where, field);
    return KG_ERULES;
  }
  if (strlen(item->valuestring) > MAX_FIELD) {
    kg_errf(err, errlen, "%s: field \"%s\" is longer than %u bytes", where, field, MAX_FIELD);
    return KG_ERULES;
  }
  *out = strdup(item->valuestring);
  return *out ? 0 : KG_ENOMEM;
}

int
kg_rules_json_family(const cJSON *obj, size_t index, kg_family_t *f, char *err, size_t errlen)
{
  char where[64];
  snprintf(where, sizeof where, "families[%zu]", index);
  if (!cJSON_IsObject(obj)) {
    kg_errf(err, errlen, "%s: must be an object", where);
    return KG_ERULES;
  }
  int rc;
  static const char *required[] = {"id", "title", "first_check", "avoid"};
  char **to[] = {(char **) &f->id, (char **) &f->title, (char **) &f->first_check,
                 (char **) &f->avoid};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
    if ((rc = kg_rules_json_string(obj, required[i], true, where, to[i], err, errlen)))
      return rc;
  const cJSON *sticky = cJSON_GetObjectItemCaseSensitive(obj, "sticky");
  if (!cJSON_IsBool(sticky)) {
    kg_errf(err, errlen, "%s (\"%s\"): field \"sticky\" must be true or false", where, f->id);
    return KG_ERULES;
  }
  f->sticky = cJSON_IsTrue(sticky);
  const cJSON *hints = cJSON_GetObjectItemCaseSensitive(obj, "hints");
  if (hints) {
    if (!cJSON_IsObject(hints)) {
      kg_errf(err, errlen, "%s (\"%s\"): field \"hints\" must be an object", where, f->id);
      return KG_ERULES;
    }
    snprintf(where, sizeof where, "families[%zu].hints", index);
    static const char *optional[] = {"cuda", "rocm", "any"};
    char **hint[] = {(char **) &f->hint_cuda, (char **) &f->hint_rocm, (char **) &f->hint_any};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
      if ((rc = kg_rules_json_string(hints, optional[i], false, where, hint[i], err, errlen)))
        return rc;
    /* The seed is explicit: do not carry NVIDIA's variable over to ROCm. */
    if (f->hint_rocm && strstr(f->hint_rocm, "CUDA_LAUNCH_BLOCKING")) {
      kg_errf(err, errlen,
            "%s: field \"rocm\" names CUDA_LAUNCH_BLOCKING, an NVIDIA variable; use "
            "AMD_SERIALIZE_KERNEL / HIP_LAUNCH_BLOCKING on ROCm",
            where);
      return KG_ERULES;
    }
  }
  return 0;
}

/*  An array of non-empty strings → NULL-terminated vector. */
int
kg_rules_json_strv(const cJSON *arr, const char *where, const char *field, char ***out, char *err,
                   size_t errlen)
{
  *out = NULL;
  if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
    kg_errf(err, errlen, "%s: field \"match.%s\" must be a non-empty array of strings", where,
          field);
    return KG_ERULES;
  }
  size_t n = (size_t) cJSON_GetArraySize(arr);
  char **v = calloc(n + 1, sizeof *v);
  if (!v)
    return KG_ENOMEM;
  size_t i = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, arr) {
    if (!cJSON_IsString(s) || !s->valuestring[0] || strlen(s->valuestring) > MAX_FIELD) {
      kg_errf(err, errlen, "%s: field \"match.%s\"[%zu] must be a non-empty string", where,
            field, i);
      kg_rules_json_strv_free(v);
      return KG_ERULES;
    }
    if (!(v[i++] = strdup(s->valuestring))) {
      kg_rules_json_strv_free(v);
      return KG_ENOMEM;
    }
  }
  *out = v;
  return 0;
}

void
kg_rules_json_family_clear(kg_family_t *f)
{
  free((char *) f->id);
  free((char *) f->title);
  free((char *) f->first_check);
  free((char *) f->avoid);
  free((char *) f->hint_cuda);
  free((char *) f->hint_rocm);
  free((char *) f->hint_any);
}
