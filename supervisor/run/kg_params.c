/*  kg_params: parameters as papermill gives them. See kg_params.h. */
#include "kg_params.h"

#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_params_value.h"
#include "kg_file.h"
#include "kg_pyrepr.h"

/*  A parameters file is a handful of values, not a data set. */
#define KG_PARAMS_FILE_MAX (16u * 1024u * 1024u)

typedef struct {
  char *name;
  cJSON *value;                 /*  owned                                  */
  char *literal;                /*  Python text when known exactly (-p
                                    numbers), else NULL: rendered from value */
} s_param_t;

struct kg_params_t {
  s_param_t *items;
  size_t count, alloc;
};

kg_params_t *
kg_params_new(void)
{
  return calloc(1, sizeof(kg_params_t));
}

void
kg_params_destroy(kg_params_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_params_t *self = *self_p;
  for (size_t i = 0; i < self->count; i++) {
    free(self->items[i].name);
    cJSON_Delete(self->items[i].value);
    free(self->items[i].literal);
  }
  free(self->items);
  free(self);
  *self_p = NULL;
}

size_t
kg_params_count(const kg_params_t *self)
{
  return self->count;
}

/*  ------------------------------------------------------------------------
    Names. */

static int
s_check_name(const char *name, char *err, size_t errlen)
{
  static const char *keywords[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
    "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
    "return", "try", "while", "with", "yield"};
  bool ok = name && (isalpha((unsigned char) name[0]) || name[0] == '_');
  for (const char *p = name; ok && *p; p++)
    ok = (unsigned char) *p < 128 && (isalnum((unsigned char) *p) || *p == '_');
  if (!ok) {
    kg_errf(err, errlen, "parameter name '%s' is not a Python identifier (ASCII letters, "
            "digits and _, not starting with a digit)", name ? name : "");
    return KG_EUSAGE;
  }
  for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
    if (strcmp(name, keywords[i]) == 0) {
      kg_errf(err, errlen, "parameter name '%s' is a Python keyword", name);
      return KG_EUSAGE;
    }
  }
  return 0;
}

/*  Take value and literal; on failure they are freed. */
static int
s_set(kg_params_t *self, const char *name, cJSON *value, char *literal)
{
  if (!value) {
    free(literal);
    return KG_ENOMEM;
  }
  for (size_t i = 0; i < self->count; i++) {
    if (strcmp(self->items[i].name, name) == 0) {
      cJSON_Delete(self->items[i].value);
      free(self->items[i].literal);
      self->items[i].value = value;
      self->items[i].literal = literal;
      return 0;
    }
  }
  if (self->count == self->alloc) {
    size_t n = self->alloc ? self->alloc * 2 : 8;
    s_param_t *items = realloc(self->items, n * sizeof *items);
    if (!items) {
      cJSON_Delete(value);
      free(literal);
      return KG_ENOMEM;
    }
    self->items = items;
    self->alloc = n;
  }
  char *copy = strdup(name);
  if (!copy) {
    cJSON_Delete(value);
    free(literal);
    return KG_ENOMEM;
  }
  self->items[self->count++] = (s_param_t) {copy, value, literal};
  return 0;
}

/*  A plain scalar (kg_params_value.h) under name; for a number out of
    range, KG_EUSAGE with a message in err. */
static int
s_add_scalar(kg_params_t *self, const char *name, const char *text, bool yaml, char *err,
             size_t errlen)
{
  cJSON *value = NULL;
  char *literal = NULL;
  int rc = kg_params_scalar(text, yaml, &value, &literal);
  if (rc == KG_EUSAGE)
    kg_errf(err, errlen, "%s is beyond the range of a float (about 1.8e308; Python would "
            "read it as inf, which the notebook's metadata cannot record)", text);
  return rc < 0 ? rc : s_set(self, name, value, literal);
}

static int
s_add_cli(kg_params_t *self, const char *name, const char *value, char *err, size_t errlen)
{
  int rc = s_check_name(name, err, errlen);
  if (rc != 0)
    return rc;
  if (value[0] == '[' || value[0] == '{') {
    cJSON *v = cJSON_Parse(value);
    if (!v) {
      kg_errf(err, errlen, "a value starting with %c is read as JSON, and this is not JSON "
              "(quote a plain string differently, or fix the JSON)", value[0]);
      return KG_EUSAGE;
    }
    return s_set(self, name, v, NULL);
  }
  if (value[0] == '-') {
    /*  -p lr -q: a forgotten value, and the next option taken for it. A
        negative number is a value. */
    cJSON *v = NULL;
    char *lit = NULL;
    int src = kg_params_scalar(value, false, &v, &lit);
    bool option_like = src == 0 && !cJSON_IsNumber(v);  /* -1e999: a number */
    cJSON_Delete(v);
    free(lit);
    if (src == KG_ENOMEM)
      return src;
    if (option_like) {
      kg_errf(err, errlen, "the value looks like an option (is the value missing?); a "
              "string that starts with '-' goes in a parameters file (-f)");
      return KG_EUSAGE;
    }
  }
  return s_add_scalar(self, name, value, false, err, errlen);
}

int
kg_params_add_cli(kg_params_t *self, const char *name, const char *value, char *err,
                  size_t errlen)
{
  int rc = s_add_cli(self, name, value, err, errlen);
  if (rc == KG_EUSAGE) {
    char inner[1024];
    snprintf(inner, sizeof inner, "%s", err);
    kg_errf(err, errlen, "-p %s %s: %s", name, value, inner);
  }
  return rc;
}

/*  ------------------------------------------------------------------------
    Files. */

static int
s_add_json(kg_params_t *self, const char *text, size_t len, const char *source, char *err,
           size_t errlen)
{
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (!cJSON_IsObject(root)) {
    kg_errf(err, errlen, "%s: %s", source, root ? "expected a JSON object of name: value"
                                                : "not valid JSON");
    cJSON_Delete(root);
    return KG_EUSAGE;
  }
  int rc = 0;
  for (cJSON *item = root->child; item && rc == 0; item = item->next) {
    rc = s_check_name(item->string, err, errlen);
    if (rc == 0)
      rc = s_set(self, item->string, cJSON_Duplicate(item, true), NULL);
    else {
      char inner[512];
      snprintf(inner, sizeof inner, "%s", err);
      kg_errf(err, errlen, "%s: %s", source, inner);
    }
  }
  cJSON_Delete(root);
  return rc;
}

/*  One `name: value` line of a YAML file (line, its colon at colon; both
    written to): the parameter added. 0, or a negative code with err saying
    where (source, lineno) and what, or *what naming what kguard does not
    read there (the caller words it). */
static int
s_yaml_pair(kg_params_t *self, char *line, char *colon, const char *source, int lineno,
            const char **what, char *err, size_t errlen)
{
  *colon = '\0';
  char *name = line;
  size_t k = strlen(name);
  while (k && (name[k - 1] == ' ' || name[k - 1] == '\t'))
    name[--k] = '\0';
  char inner[512];
  int rc = s_check_name(name, err, errlen);
  if (rc != 0) {
    snprintf(inner, sizeof inner, "%s", err);
    kg_errf(err, errlen, "%s, line %d: %s", source, lineno, inner);
    return rc;
  }
  cJSON *value = NULL;
  bool plain = false;
  char *v = colon + 1;
  rc = kg_params_yaml_value(v, &value, &plain, what);
  if (rc == 0 && plain) {
    rc = s_add_scalar(self, name, v + strspn(v, " \t"), true, err, errlen);
    if (rc == KG_EUSAGE) {
      snprintf(inner, sizeof inner, "%s", err);
      kg_errf(err, errlen, "%s, line %d: %s: %s", source, lineno, name, inner);
      return rc;
    }
  } else if (rc == 0) {
    rc = s_set(self, name, value, NULL);
  }
  if (rc == KG_EUSAGE && !*what)
    *what = "an unreadable value";
  return rc;
}

static int
s_add_yaml(kg_params_t *self, const char *text, size_t len, const char *source, char *err,
           size_t errlen)
{
  char *copy = strndup(text, len);
  if (!copy)
    return KG_ENOMEM;
  if (strlen(copy) != len) {
    kg_errf(err, errlen, "%s: a NUL byte in a YAML file", source);
    free(copy);
    return KG_EUSAGE;
  }
  int rc = 0;
  int lineno = 0;
  bool content = false;
  /*  Split by hand: strtok_r would merge blank lines and lose the count. */
  for (char *line = copy; line && rc == 0;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    lineno++;
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r')
      line[--n] = '\0';
    const char *what = NULL;
    char *p = line + strspn(line, " \t");
    if (*p == '\0' || *p == '#')
      ;                         /*  blank or comment                       */
    else if (!content && strcmp(line, "---") == 0)
      ;                         /*  the document start                     */
    else if (p != line)
      what = "an indented line (nesting)";
    else if (line[0] == '-' && (line[1] == ' ' || !line[1]))
      what = "a list item (the file must map names to values)";
    else {
      content = true;
      char *colon = line;
      while (*colon && *colon != ':')
        colon++;
      if (*colon != ':' || (colon[1] && colon[1] != ' ' && colon[1] != '\t'))
        what = "a line that is not `name: value`";
      else
        rc = s_yaml_pair(self, line, colon, source, lineno, &what, err, errlen);
    }
    if (what) {
      kg_errf(err, errlen, "%s, line %d: %s; kguard reads only flat `name: value` lines "
              "of YAML (use a .json file for anything else)", source, lineno, what);
      rc = KG_EUSAGE;
    }
    line = nl ? nl + 1 : NULL;
  }
  free(copy);
  return rc;
}

int
kg_params_add_text(kg_params_t *self, const char *kind, const char *text, size_t len,
                   const char *source, char *err, size_t errlen)
{
  if (strcmp(kind, "json") == 0)
    return s_add_json(self, text, len, source, err, errlen);
  if (strcmp(kind, "yaml") == 0)
    return s_add_yaml(self, text, len, source, err, errlen);
  kg_errf(err, errlen, "%s: unknown parameters format '%s'", source, kind);
  return KG_EUSAGE;
}

int
kg_params_add_file(kg_params_t *self, const char *path, char *err, size_t errlen)
{
  const char *dot = strrchr(path, '.');
  const char *kind = NULL;
  if (dot && strcmp(dot, ".json") == 0)
    kind = "json";
  else if (dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0))
    kind = "yaml";
  if (!kind) {
    kg_errf(err, errlen, "%s: a parameters file must end in .json, .yaml or .yml", path);
    return KG_EUSAGE;
  }
  char *text = NULL;
  size_t len = 0;
  int rc = kg_file_read(path, KG_PARAMS_FILE_MAX, &text, &len);
  if (rc != 0) {
    kg_errf(err, errlen, "cannot read %s: %s", path, kg_strerror(rc));
    return rc == KG_ETOOBIG ? KG_EUSAGE : rc;
  }
  rc = kg_params_add_text(self, kind, text, len, path, err, errlen);
  free(text);
  return rc;
}

/*  ------------------------------------------------------------------------
    Python. */

char *
kg_params_render_python(const kg_params_t *self)
{
  size_t len = strlen("# Parameters\n") + 1;
  char **lits = calloc(self->count + 1, sizeof *lits);
  bool ok = lits != NULL;
  for (size_t i = 0; ok && i < self->count; i++) {
    lits[i] = self->items[i].literal ? strdup(self->items[i].literal)
                                     : kg_pyrepr(self->items[i].value);
    ok = lits[i] != NULL;
    if (ok)
      len += strlen(self->items[i].name) + 3 + strlen(lits[i]) + 1;
  }
  char *out = ok ? malloc(len) : NULL;
  if (out) {
    size_t at = (size_t) snprintf(out, len, "# Parameters\n");
    for (size_t i = 0; i < self->count; i++)
      at += (size_t) snprintf(out + at, len - at, "%s = %s\n", self->items[i].name, lits[i]);
  }
  for (size_t i = 0; lits && i < self->count; i++)
    free(lits[i]);
  free(lits);
  return out;
}

cJSON *
kg_params_json(const kg_params_t *self)
{
  cJSON *out = cJSON_CreateObject();
  for (size_t i = 0; out && i < self->count; i++) {
    cJSON *v = cJSON_Duplicate(self->items[i].value, true);
    if (!v || !cJSON_AddItemToObject(out, self->items[i].name, v)) {
      cJSON_Delete(v);
      cJSON_Delete(out);
      return NULL;
    }
  }
  return out;
}

/*  ------------------------------------------------------------------------
    Injection. */

static bool
s_has_tag(const cJSON *cell, const char *tag)
{
  const cJSON *tags = cJSON_GetObjectItemCaseSensitive(
    cJSON_GetObjectItemCaseSensitive(cell, "metadata"), "tags");
  const cJSON *t;
  cJSON_ArrayForEach(t, tags) {
    if (cJSON_IsString(t) && strcmp(t->valuestring, tag) == 0)
      return true;
  }
  return false;
}

static cJSON *
s_new_cell(const char *source, bool with_id)
{
  cJSON *cell = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(cell, "metadata");
  cJSON *tags = cJSON_AddArrayToObject(meta, "tags");
  bool ok = cell && meta && tags
            && cJSON_AddItemToArray(tags, cJSON_CreateString("injected-parameters"))
            && cJSON_AddStringToObject(cell, "cell_type", "code")
            && cJSON_AddNullToObject(cell, "execution_count")
            && cJSON_AddArrayToObject(cell, "outputs")
            && cJSON_AddStringToObject(cell, "source", source);
  if (ok && with_id) {
    /*  nbformat 4.5 cells carry an id: unique, [a-zA-Z0-9-_]{1,64}. */
    unsigned char raw[8];
    char hex[2 * sizeof raw + 1];
    if (sodium_init() < 0) {
      cJSON_Delete(cell);
      return NULL;
    }
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(hex, sizeof hex, raw, sizeof raw);
    ok = cJSON_AddStringToObject(cell, "id", hex) != NULL;
  }
  if (!ok) {
    cJSON_Delete(cell);
    return NULL;
  }
  return cell;
}

int
kg_params_inject(const kg_params_t *self, kg_notebook_t *nb)
{
  cJSON *root = kg_notebook_json(nb);
  cJSON *cells = cJSON_GetObjectItemCaseSensitive(root, "cells");
  /*  A notebook written by an earlier run: its injected cell goes. */
  for (int i = cJSON_GetArraySize(cells) - 1; i >= 0; i--) {
    if (s_has_tag(cJSON_GetArrayItem(cells, i), "injected-parameters"))
      cJSON_DeleteItemFromArray(cells, i);
  }
  int at = 0;
  int n = cJSON_GetArraySize(cells);
  for (int i = 0; i < n; i++) {
    if (s_has_tag(cJSON_GetArrayItem(cells, i), "parameters")) {
      at = i + 1;
      break;
    }
  }
  const cJSON *minor = cJSON_GetObjectItemCaseSensitive(root, "nbformat_minor");
  bool with_id = cJSON_IsNumber(minor) && minor->valuedouble >= 5;
  char *source = kg_params_render_python(self);
  cJSON *cell = source ? s_new_cell(source, with_id) : NULL;
  free(source);
  if (!cell)
    return KG_ENOMEM;
  /*  Debian's cJSON 1.7.15 InsertItemInArray leaves a parsed array
      unchanged: the cells from `at` on are moved behind the new one instead
      (detaching and adding allocate nothing). */
  cJSON *tail = cJSON_CreateArray();
  if (!tail) {
    cJSON_Delete(cell);
    return KG_ENOMEM;
  }
  while (cJSON_GetArraySize(cells) > at)
    cJSON_AddItemToArray(tail, cJSON_DetachItemFromArray(cells, at));
  cJSON_AddItemToArray(cells, cell);
  while (tail->child)
    cJSON_AddItemToArray(cells, cJSON_DetachItemFromArray(tail, 0));
  cJSON_Delete(tail);
  cJSON *kguard = kg_notebook_kguard_metadata(nb);
  cJSON *json = kg_params_json(self);
  if (!kguard || !json) {
    cJSON_Delete(json);
    return KG_ENOMEM;
  }
  cJSON_DeleteItemFromObjectCaseSensitive(kguard, "parameters");
  cJSON_AddItemToObject(kguard, "parameters", json);
  return at;
}
