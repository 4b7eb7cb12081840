/*  kg_classifier: rule table loading, validation and matching. */
#include "kg_classifier.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_file.h"
#include "kg_prefilter_builder.h"
#include "kg_rules_json.h"

#define MAX_RULES_FILE (4u * 1024u * 1024u)

typedef struct {
  char *id;
  size_t family;     /* index into families                       */
  kg_backend_t backend;
  unsigned sources;  /* KG_SRC_* bits                             */
  char **any;        /* NULL-terminated, or NULL                  */
  char **all;        /* NULL-terminated, or NULL                  */
  bool has_regex;
  regex_t regex;
  bool ignore_case;
  int error_code;
  char *note;
} s_rule_t;

struct kg_classifier_t {
  kg_family_t *families;
  size_t nfamilies;
  s_rule_t *rules;
  size_t nrules;
  kg_prefilter_t *prefilter;   /* literals some rule needs; NULL: none known */
};

static const struct {
  const char *name;
  unsigned bit;
} s_source_names[] = {
  {"iopub_error", KG_SRC_IOPUB_ERROR}, {"execute_reply", KG_SRC_EXECUTE_REPLY},
  {"stream", KG_SRC_STREAM},           {"raw_stdout", KG_SRC_RAW_STDOUT},
  {"raw_stderr", KG_SRC_RAW_STDERR},   {"exit", KG_SRC_EXIT},
};

const char *
kg_source_name(kg_source_t source)
{
  for (size_t i = 0; i < sizeof s_source_names / sizeof s_source_names[0]; i++)
    if (s_source_names[i].bit == (unsigned) source)
      return s_source_names[i].name;
  return "unknown";
}

void
kg_classifier_destroy(kg_classifier_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_classifier_t *self = *self_p;
  for (size_t i = 0; i < self->nfamilies; i++)
    kg_rules_json_family_clear(&self->families[i]);
  free(self->families);
  for (size_t i = 0; i < self->nrules; i++) {
    s_rule_t *r = &self->rules[i];
    free(r->id);
    free(r->note);
    kg_rules_json_strv_free(r->any);
    kg_rules_json_strv_free(r->all);
    if (r->has_regex)
      regfree(&r->regex);
  }
  free(self->rules);
  kg_prefilter_destroy(&self->prefilter);
  free(self);
  *self_p = NULL;
}

/*  One field of a rule: parses it from obj into r, or names what is wrong
    in err (where says which rule) and returns KG_ERULES. */
typedef int (s_field_fn)(const kg_classifier_t *self, const cJSON *obj, const char *where,
                         s_rule_t *r, char *err, size_t errlen);

static int
s_rule_family(const kg_classifier_t *self, const cJSON *obj, const char *where, s_rule_t *r,
              char *err, size_t errlen)
{
  char *family = NULL;
  int rc = kg_rules_json_string(obj, "family", true, where, &family, err, errlen);
  if (rc)
    return rc;
  size_t fi = 0;
  while (fi < self->nfamilies && strcmp(self->families[fi].id, family) != 0)
    fi++;
  if (fi == self->nfamilies) {
    kg_errf(err, errlen, "%s: field \"family\": no family with id \"%.100s\"", where, family);
    free(family);
    return KG_ERULES;
  }
  free(family);
  r->family = fi;
  return 0;
}

static int
s_rule_backend(const kg_classifier_t *self, const cJSON *obj, const char *where, s_rule_t *r,
               char *err, size_t errlen)
{
  const cJSON *backend = cJSON_GetObjectItemCaseSensitive(obj, "backend");
  const char *b = cJSON_IsString(backend) ? backend->valuestring : NULL;
  if (!backend || (b && strcmp(b, "any") == 0))
    r->backend = KG_BACKEND_UNKNOWN;
  else if (b && strcmp(b, "cuda") == 0)
    r->backend = KG_BACKEND_CUDA;
  else if (b && strcmp(b, "rocm") == 0)
    r->backend = KG_BACKEND_ROCM;
  else {
    kg_errf(err, errlen, "%s: field \"backend\" must be \"cuda\", \"rocm\" or \"any\"", where);
    return KG_ERULES;
  }
  return 0;
}

static int
s_rule_sources(const kg_classifier_t *self, const cJSON *obj, const char *where, s_rule_t *r,
               char *err, size_t errlen)
{
  const cJSON *sources = cJSON_GetObjectItemCaseSensitive(obj, "sources");
  if (!sources || (cJSON_IsString(sources) && strcmp(sources->valuestring, "any") == 0)) {
    r->sources = KG_SRC_ALL;
    return 0;
  }
  if (!cJSON_IsArray(sources) || cJSON_GetArraySize(sources) == 0) {
    kg_errf(err, errlen, "%s: field \"sources\" must be \"any\" or a non-empty array", where);
    return KG_ERULES;
  }
  const cJSON *s;
  size_t i = 0;
  cJSON_ArrayForEach(s, sources) {
    size_t k = 0, n = sizeof s_source_names / sizeof s_source_names[0];
    while (k < n && !(cJSON_IsString(s) && strcmp(s->valuestring, s_source_names[k].name) == 0))
      k++;
    if (k == n) {
      kg_errf(err, errlen,
            "%s: field \"sources\"[%zu] must be one of iopub_error, execute_reply, stream, "
            "raw_stdout, raw_stderr, exit",
            where, i);
      return KG_ERULES;
    }
    r->sources |= s_source_names[k].bit;
    i++;
  }
  return 0;
}

/*  match.regex, compiled (POSIX extended, case as match.ignore_case says). */
static int
s_rule_regex(const cJSON *regex, const char *where, s_rule_t *r, char *err, size_t errlen)
{
  if (!cJSON_IsString(regex) || !regex->valuestring[0]) {
    kg_errf(err, errlen, "%s: field \"match.regex\" must be a non-empty string", where);
    return KG_ERULES;
  }
  int flags = REG_EXTENDED | REG_NOSUB | REG_NEWLINE | (r->ignore_case ? REG_ICASE : 0);
  int rrc = regcomp(&r->regex, regex->valuestring, flags);
  if (rrc != 0) {
    char msg[128];
    regerror(rrc, &r->regex, msg, sizeof msg);
    kg_errf(err, errlen, "%s: field \"match.regex\" is not a valid POSIX extended regex: %s",
          where, msg);
    return KG_ERULES;
  }
  r->has_regex = true;
  return 0;
}

static int
s_rule_match(const kg_classifier_t *self, const cJSON *obj, const char *where, s_rule_t *r,
             char *err, size_t errlen)
{
  const cJSON *match = cJSON_GetObjectItemCaseSensitive(obj, "match");
  if (!cJSON_IsObject(match)) {
    kg_errf(err, errlen, "%s: field \"match\" must be an object", where);
    return KG_ERULES;
  }
  const cJSON *ic = cJSON_GetObjectItemCaseSensitive(match, "ignore_case");
  if (ic && !cJSON_IsBool(ic)) {
    kg_errf(err, errlen, "%s: field \"match.ignore_case\" must be true or false", where);
    return KG_ERULES;
  }
  r->ignore_case = cJSON_IsTrue(ic);
  const cJSON *any = cJSON_GetObjectItemCaseSensitive(match, "any");
  const cJSON *all = cJSON_GetObjectItemCaseSensitive(match, "all");
  const cJSON *regex = cJSON_GetObjectItemCaseSensitive(match, "regex");
  if (!any && !all && !regex) {
    kg_errf(err, errlen, "%s: field \"match\" needs \"any\", \"all\" or \"regex\"", where);
    return KG_ERULES;
  }
  int rc;
  if (any && (rc = kg_rules_json_strv(any, where, "any", &r->any, err, errlen)))
    return rc;
  if (all && (rc = kg_rules_json_strv(all, where, "all", &r->all, err, errlen)))
    return rc;
  return regex ? s_rule_regex(regex, where, r, err, errlen) : 0;
}

static int
s_rule_error_code(const kg_classifier_t *self, const cJSON *obj, const char *where, s_rule_t *r,
                  char *err, size_t errlen)
{
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "error_code");
  if (!code)
    return 0;
  if (!cJSON_IsNumber(code) || code->valuedouble < 0 || code->valuedouble > 100000 ||
      code->valuedouble != (double) (int) code->valuedouble) {
    kg_errf(err, errlen, "%s: field \"error_code\" must be a non-negative integer", where);
    return KG_ERULES;
  }
  r->error_code = code->valueint;
  return 0;
}

static int
s_rule_note(const kg_classifier_t *self, const cJSON *obj, const char *where, s_rule_t *r,
            char *err, size_t errlen)
{
  return kg_rules_json_string(obj, "note", false, where, &r->note, err, errlen);
}

/*  rules[index] into r: its id (unique), then each field in the order the
    messages name them. 0, or KG_ERULES with err saying what to fix. */
static int
s_load_rule(kg_classifier_t *self, const cJSON *obj, size_t index, s_rule_t *r, char *err,
            size_t errlen)
{
  static s_field_fn *const fields[] = {s_rule_family, s_rule_backend,    s_rule_sources,
                                       s_rule_match,  s_rule_error_code, s_rule_note};
  assert(self);
  char where[160];
  snprintf(where, sizeof where, "rules[%zu]", index);
  if (!cJSON_IsObject(obj)) {
    kg_errf(err, errlen, "%s: must be an object", where);
    return KG_ERULES;
  }
  int rc = kg_rules_json_string(obj, "id", true, where, &r->id, err, errlen);
  if (rc)
    return rc;
  snprintf(where, sizeof where, "rules[%zu] (\"%.100s\")", index, r->id);
  for (size_t i = 0; i < index; i++)
    if (strcmp(self->rules[i].id, r->id) == 0) {
      kg_errf(err, errlen, "%s: field \"id\" repeats rules[%zu]", where, i);
      return KG_ERULES;
    }
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    if ((rc = fields[i](self, obj, where, r, err, errlen)) != 0)
      return rc;
  return 0;
}

/*  The prefilter (kg_prefilter_builder.h): literals one of which every line
    some rule matches must contain. */
static int
s_build_prefilter(kg_classifier_t *self, const cJSON *rules)
{
  assert(self);
  kg_prefilter_builder_t *b = kg_prefilter_builder_new();
  if (!b)
    return KG_ENOMEM;
  int rc = 0;
  size_t ri = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, rules) {
    const s_rule_t *r = &self->rules[ri++];
    if (r->any)
      rc = kg_prefilter_builder_any(b, r->any);
    else if (r->all)
      rc = kg_prefilter_builder_all(b, r->all);
    else if (r->has_regex) {
      const cJSON *re = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(item, "match"), "regex");
      rc = kg_prefilter_builder_regex(b, re->valuestring);
    } else
      kg_prefilter_builder_unusable(b);
    if (rc)
      break;
  }
  if (!rc)
    rc = kg_prefilter_builder_finish(b, &self->prefilter);
  kg_prefilter_builder_destroy(&b);
  return rc;
}

int
kg_classifier_load_string(const char *json, size_t len, kg_classifier_t **self_p, char *err,
                          size_t errlen)
{
  kg_errf(err, errlen, "%s", "");
  *self_p = NULL;
  cJSON *root = cJSON_ParseWithLength(json, len);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    kg_errf(err, errlen, "not valid JSON (near byte %ld)", at ? (long) (at - json) : -1L);
    return KG_ERULES;
  }
  int rc = KG_ERULES;
  kg_classifier_t *self = calloc(1, sizeof *self);
  if (!self) {
    cJSON_Delete(root);
    return KG_ENOMEM;
  }
  const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
  const cJSON *families = cJSON_GetObjectItemCaseSensitive(root, "families");
  const cJSON *rules = cJSON_GetObjectItemCaseSensitive(root, "rules");
  if (!cJSON_IsObject(root)) {
    kg_errf(err, errlen, "top level must be an object");
    goto done;
  }
  if (!cJSON_IsNumber(version) || version->valueint != 1) {
    kg_errf(err, errlen, "field \"version\" must be 1");
    goto done;
  }
  if (!cJSON_IsArray(families) || cJSON_GetArraySize(families) == 0) {
    kg_errf(err, errlen, "field \"families\" must be a non-empty array");
    goto done;
  }
  if (!cJSON_IsArray(rules) || cJSON_GetArraySize(rules) == 0) {
    kg_errf(err, errlen, "field \"rules\" must be a non-empty array");
    goto done;
  }
  size_t nf = (size_t) cJSON_GetArraySize(families), nr = (size_t) cJSON_GetArraySize(rules);
  self->families = calloc(nf, sizeof *self->families);
  self->rules = calloc(nr, sizeof *self->rules);
  if (!self->families || !self->rules) {
    rc = KG_ENOMEM;
    goto done;
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, families) {
    size_t i = self->nfamilies++;
    if ((rc = kg_rules_json_family(item, i, &self->families[i], err, errlen)))
      goto done;
    for (size_t j = 0; j < i; j++)
      if (strcmp(self->families[j].id, self->families[i].id) == 0) {
        kg_errf(err, errlen, "families[%zu]: field \"id\" repeats families[%zu] (\"%.100s\")", i,
              j, self->families[i].id);
        rc = KG_ERULES;
        goto done;
      }
  }
  cJSON_ArrayForEach(item, rules) {
    size_t i = self->nrules++;
    if ((rc = s_load_rule(self, item, i, &self->rules[i], err, errlen)))
      goto done;
  }
  rc = s_build_prefilter(self, rules);
done:
  cJSON_Delete(root);
  if (rc)
    kg_classifier_destroy(&self);
  *self_p = self;
  return rc;
}

int
kg_classifier_load_file(const char *path, kg_classifier_t **self_p, char *err, size_t errlen)
{
  *self_p = NULL;
  char *buf = NULL;
  size_t n = 0;
  int rc = kg_file_read(path, MAX_RULES_FILE, &buf, &n);
  if (rc == KG_ETOOBIG) {
    kg_errf(err, errlen, "%s: larger than %u bytes", path, MAX_RULES_FILE);
    return rc;
  }
  if (rc != 0) {
    kg_errf(err, errlen, "%s: %s", path, kg_strerror(rc));
    return rc;
  }
  char inner[512];
  rc = kg_classifier_load_string(buf, n, self_p, inner, sizeof inner);
  free(buf);
  if (rc)
    kg_errf(err, errlen, "%s: %s", path, inner);
  return rc;
}

static bool
s_exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int
kg_classifier_default_path(char *buf, size_t size)
{
  const char *datadir = getenv("KGUARD_DATADIR");
  if (datadir && datadir[0]) {
    snprintf(buf, size, "%s/rules/gpu-errors.json", datadir);
    if (s_exists(buf))
      return 0;
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      snprintf(buf, size, "%s/../share/kguard/rules/gpu-errors.json", exe);
      if (s_exists(buf))
        return 0;
    }
  }
#ifdef KGUARD_DATADIR
  snprintf(buf, size, "%s/rules/gpu-errors.json", KGUARD_DATADIR);
  if (s_exists(buf))
    return 0;
#endif
#ifdef KGUARD_SOURCE_DIR
  snprintf(buf, size, "%s/supervisor/rules/gpu-errors.json", KGUARD_SOURCE_DIR);
  if (s_exists(buf))
    return 0;
#endif
  return KG_ENOTFOUND;
}

static bool
s_contains(const char *line, const char *needle, bool icase)
{
  return icase ? strcasestr(line, needle) != NULL : strstr(line, needle) != NULL;
}

static bool
s_rule_matches(const s_rule_t *r, const char *line)
{
  if (r->any) {
    bool hit = false;
    for (char **p = r->any; *p && !hit; p++)
      hit = s_contains(line, *p, r->ignore_case);
    if (!hit)
      return false;
  }
  if (r->all)
    for (char **p = r->all; *p; p++)
      if (!s_contains(line, *p, r->ignore_case))
        return false;
  if (r->has_regex && regexec(&r->regex, line, 0, NULL, 0) != 0)
    return false;
  return true;
}

bool
kg_classifier_match(const kg_classifier_t *self, kg_source_t source, const char *text,
                    size_t len, kg_match_t *match)
{
  memset(match, 0, sizeof *match);
  if (!self || !text || len == 0)
    return false;
  if (!kg_classifier_may_match(self, text, len))
    return false;
  /* One NUL-terminated copy split into lines in place: regexec and strstr
     need terminated strings, and a NUL inside output must not hide the rest. */
  char *copy = malloc(len + 1);
  if (!copy)
    return false;
  memcpy(copy, text, len);
  copy[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (copy[i] == '\n' || copy[i] == '\0')
      copy[i] = '\0';
  bool found = false;
  for (size_t ri = 0; ri < self->nrules && !found; ri++) {
    const s_rule_t *r = &self->rules[ri];
    if (!(r->sources & (unsigned) source))
      continue;
    for (size_t off = 0; off < len && !found; off += strlen(copy + off) + 1) {
      char *line = copy + off;
      size_t ll = strlen(line);
      if (ll && line[ll - 1] == '\r')
        line[--ll] = '\0';
      if (ll == 0 || !s_rule_matches(r, line))
        continue;
      found = true;
      match->family = &self->families[r->family];
      match->rule_id = r->id;
      match->note = r->note;
      match->error_code = r->error_code;
      match->source = source;
      match->backend = r->backend != KG_BACKEND_UNKNOWN ? r->backend : kg_backend_detect(text, len);
      snprintf(match->line, sizeof match->line, "%s", line);
    }
  }
  free(copy);
  return found;
}

bool
kg_classifier_may_match(const kg_classifier_t *self, const char *text, size_t len)
{
  return !self || !self->prefilter || kg_prefilter_search(self->prefilter, text, len);
}

bool
kg_classifier_may_match_json(const kg_classifier_t *self, const char *raw, size_t len)
{
  return !self || !self->prefilter || !kg_prefilter_plain(self->prefilter)
         || kg_prefilter_search(self->prefilter, raw, len);
}

const kg_family_t *
kg_classifier_family(const kg_classifier_t *self, const char *id)
{
  for (size_t i = 0; self && id && i < self->nfamilies; i++)
    if (strcmp(self->families[i].id, id) == 0)
      return &self->families[i];
  return NULL;
}

size_t
kg_classifier_family_count(const kg_classifier_t *self)
{
  return self ? self->nfamilies : 0;
}

size_t
kg_classifier_rule_count(const kg_classifier_t *self)
{
  return self ? self->nrules : 0;
}

const char *
kg_family_hint(const kg_family_t *family, kg_backend_t backend)
{
  if (!family)
    return NULL;
  if (backend == KG_BACKEND_CUDA && family->hint_cuda)
    return family->hint_cuda;
  if (backend == KG_BACKEND_ROCM && family->hint_rocm)
    return family->hint_rocm;
  if (backend == KG_BACKEND_ROCM)
    /* A generic hint may name both stacks' variables; on ROCm say nothing
       rather than risk an NVIDIA variable. */
    return family->hint_any && !strstr(family->hint_any, "CUDA_LAUNCH_BLOCKING")
             ? family->hint_any : NULL;
  return family->hint_any;
}
