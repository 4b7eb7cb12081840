/*  kg_notebook: reading, editing and writing an nbformat 4 notebook with
    cJSON. See kg_notebook.h for the contract.
*/
#include "kg_notebook.h"

#include "kg_jsonscan.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_file.h"

/*  A notebook holding trained-model plots can be large, but not this. */
#define KG_NOTEBOOK_MAX (256u * 1024u * 1024u)

struct kg_notebook_t {
  cJSON *root;                  /*  the whole document                     */
  cJSON *cells;                 /*  borrowed: root.cells                   */
};

/*  A source (or stream text) is a string or a list of strings. */
static bool
s_is_text(const cJSON *item)
{
  if (cJSON_IsString(item))
    return true;
  if (!cJSON_IsArray(item))
    return false;
  const cJSON *line;
  cJSON_ArrayForEach(line, item) {
    if (!cJSON_IsString(line))
      return false;
  }
  return true;
}

static int
s_validate(cJSON *root, char *err, size_t errlen)
{
  if (!cJSON_IsObject(root)) {
    kg_errf(err, errlen, "not a notebook: the top level is not a JSON object");
    return KG_ENOTEBOOK;
  }
  const cJSON *major = cJSON_GetObjectItemCaseSensitive(root, "nbformat");
  if (!major) {
    kg_errf(err, errlen, "not a notebook: no \"nbformat\" field");
    return KG_ENOTEBOOK;
  }
  if (!cJSON_IsNumber(major) || major->valuedouble != 4) {
    if (cJSON_IsNumber(major))
      kg_errf(err, errlen, "nbformat %g is not supported: kguard run needs nbformat 4 "
            "(convert with: jupyter nbconvert --to notebook --nbformat 4 FILE)",
            major->valuedouble);
    else
      kg_errf(err, errlen, "\"nbformat\" is not a number");
    return KG_ENOTEBOOK;
  }
  const cJSON *cells = cJSON_GetObjectItemCaseSensitive(root, "cells");
  if (!cells) {
    kg_errf(err, errlen, "not a notebook: no \"cells\" list");
    return KG_ENOTEBOOK;
  }
  if (!cJSON_IsArray(cells)) {
    kg_errf(err, errlen, "\"cells\" is not a list");
    return KG_ENOTEBOOK;
  }
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
  if (meta && !cJSON_IsObject(meta)) {
    kg_errf(err, errlen, "\"metadata\" is not an object");
    return KG_ENOTEBOOK;
  }
  int index = 0;
  const cJSON *cell;
  cJSON_ArrayForEach(cell, cells) {
    index++;
    if (!cJSON_IsObject(cell)) {
      kg_errf(err, errlen, "cell %d is not an object", index);
      return KG_ENOTEBOOK;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(cell, "cell_type");
    if (!cJSON_IsString(type)) {
      kg_errf(err, errlen, "cell %d has no \"cell_type\" string", index);
      return KG_ENOTEBOOK;
    }
    if (!s_is_text(cJSON_GetObjectItemCaseSensitive(cell, "source"))) {
      kg_errf(err, errlen, "cell %d: \"source\" is missing or not a string or list of "
            "strings", index);
      return KG_ENOTEBOOK;
    }
    const cJSON *cmeta = cJSON_GetObjectItemCaseSensitive(cell, "metadata");
    if (cmeta && !cJSON_IsObject(cmeta)) {
      kg_errf(err, errlen, "cell %d: \"metadata\" is not an object", index);
      return KG_ENOTEBOOK;
    }
  }
  return 0;
}

size_t
kg_notebook_utf8_invalid(const char *text, size_t len)
{
  const unsigned char *s = (const unsigned char *) text;
  size_t i = 0;
  while (i < len) {
    unsigned char c = s[i];
    size_t n;
    unsigned int cp;
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
      cp = c & 0x1f;
    }
    else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      cp = c & 0x0f;
    }
    else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      cp = c & 0x07;
    }
    else
      return i;                 /*  a continuation byte, 0xc0/0xc1, > 0xf4 */
    if (len - i <= n)
      return i;
    for (size_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xc0) != 0x80)
        return i;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    /*  Overlong forms, UTF-16 surrogates and code points past U+10FFFF are
        what Python's strict decoder refuses too. */
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff
        || (cp >= 0xd800 && cp <= 0xdfff))
      return i;
    i += n + 1;
  }
  return len;
}

int
kg_notebook_parse(const char *text, size_t len, kg_notebook_t **self_p, char *err,
                  size_t errlen)
{
  if (err && errlen)
    err[0] = '\0';
  *self_p = NULL;
  /*  JSON text is UTF-8 (RFC 8259), and nbformat reads it strictly: a
      notebook kguard writes back must open there, so bad bytes are refused
      here, not copied through. */
  size_t bad = kg_notebook_utf8_invalid(text, len);
  if (bad < len) {
    int line = 1;
    size_t col = 1;
    for (size_t i = 0; i < bad; i++) {
      if (text[i] == '\n') {
        line++;
        col = 1;
      }
      else if (((unsigned char) text[i] & 0xc0) != 0x80)
        col++;
    }
    kg_errf(err, errlen, "not UTF-8: invalid byte 0x%02x at offset %zu (line %d, column "
            "%zu); a notebook must be UTF-8 text", (unsigned char) text[bad], bad, line, col);
    return KG_ENOTEBOOK;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
  if (!root) {
    /*  Name where the parser stopped: line and column, as editors count. */
    size_t off = end && end >= text ? (size_t) (end - text) : 0;
    if (off > len)
      off = len;
    int line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
      if (text[i] == '\n') {
        line++;
        col = 1;
      }
      else
        col++;
    }
    if (kg_jsonscan_depth_at(text, len, off) >= CJSON_NESTING_LIMIT)
      kg_errf(err, errlen, "nested more than %d levels deep near line %d, column %d (the "
              "JSON reader's limit); a notebook this deep is refused", CJSON_NESTING_LIMIT, line,
              col);
    else
      kg_errf(err, errlen, "not JSON: syntax error near line %d, column %d", line, col);
    return KG_ENOTEBOOK;
  }
  int rc = s_validate(root, err, errlen);
  if (rc != 0) {
    cJSON_Delete(root);
    return rc;
  }
  kg_notebook_t *self = calloc(1, sizeof *self);
  if (!self) {
    cJSON_Delete(root);
    kg_errf(err, errlen, "out of memory");
    return KG_ENOMEM;
  }
  self->root = root;
  self->cells = cJSON_GetObjectItemCaseSensitive(root, "cells");
  *self_p = self;
  return 0;
}

int
kg_notebook_load(const char *path, kg_notebook_t **self_p, char *err, size_t errlen)
{
  *self_p = NULL;
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    kg_errf(err, errlen, "a directory, not a notebook");
    return -EISDIR;
  }
  char *text = NULL;
  size_t len = 0;
  int rc = kg_file_read(path, KG_NOTEBOOK_MAX, &text, &len);
  if (rc == KG_ETOOBIG) {
    kg_errf(err, errlen, "larger than %u MiB: not a notebook kguard reads",
            KG_NOTEBOOK_MAX >> 20);
    return KG_ENOTEBOOK;
  }
  if (rc == -ENOENT)
    kg_errf(err, errlen, "no such file");
  else if (rc == -ENOTDIR)
    kg_errf(err, errlen, "no such file (a part of the path is not a directory)");
  else if (rc != 0)
    kg_errf(err, errlen, "cannot read it: %s", kg_strerror(rc));
  else {
    size_t blank = 0;
    while (blank < len && strchr(" \t\r\n", text[blank]))
      blank++;
    if (blank == len) {
      kg_errf(err, errlen, "%s: not a notebook (a notebook is a JSON document; "
              "create one in Jupyter, or with jupytext or nbformat)",
              len ? "only blank space" : "an empty file");
      rc = KG_ENOTEBOOK;
    }
    else
      rc = kg_notebook_parse(text, len, self_p, err, errlen);
  }
  free(text);
  return rc;
}

void
kg_notebook_destroy(kg_notebook_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  cJSON_Delete((*self_p)->root);
  free(*self_p);
  *self_p = NULL;
}

size_t
kg_notebook_cell_count(const kg_notebook_t *self)
{
  return (size_t) cJSON_GetArraySize(self->cells);
}

static cJSON *
s_cell(const kg_notebook_t *self, size_t index)
{
  return cJSON_GetArrayItem(self->cells, (int) index);
}

bool
kg_notebook_is_code(const kg_notebook_t *self, size_t index)
{
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(s_cell(self, index), "cell_type");
  return cJSON_IsString(type) && strcmp(type->valuestring, "code") == 0;
}

/*  Join a string or list of strings into one new string. */
static char *
s_join(const cJSON *text)
{
  if (cJSON_IsString(text))
    return strdup(text->valuestring);
  size_t len = 0;
  const cJSON *line;
  cJSON_ArrayForEach(line, text)
    len += strlen(line->valuestring);
  char *out = malloc(len + 1);
  if (!out)
    return NULL;
  size_t at = 0;
  cJSON_ArrayForEach(line, text) {
    size_t n = strlen(line->valuestring);
    memcpy(out + at, line->valuestring, n);
    at += n;
  }
  out[at] = '\0';
  return out;
}

char *
kg_notebook_source(const kg_notebook_t *self, size_t index)
{
  return s_join(cJSON_GetObjectItemCaseSensitive(s_cell(self, index), "source"));
}

bool
kg_notebook_has_tag(const kg_notebook_t *self, size_t index, const char *tag)
{
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(s_cell(self, index), "metadata");
  const cJSON *tags = cJSON_GetObjectItemCaseSensitive(meta, "tags");
  const cJSON *item;
  cJSON_ArrayForEach(item, tags) {
    if (cJSON_IsString(item) && strcmp(item->valuestring, tag) == 0)
      return true;
  }
  return false;
}

const char *
kg_notebook_kernel_name(const kg_notebook_t *self)
{
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(self->root, "metadata");
  const cJSON *spec = cJSON_GetObjectItemCaseSensitive(meta, "kernelspec");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(spec, "name");
  return cJSON_IsString(name) && name->valuestring[0] ? name->valuestring : NULL;
}

/*  Set (or replace) key of object to item, taking item. */
static bool
s_set(cJSON *object, const char *key, cJSON *item)
{
  if (!item)
    return false;
  if (cJSON_GetObjectItemCaseSensitive(object, key))
    return cJSON_ReplaceItemInObjectCaseSensitive(object, key, item);
  return cJSON_AddItemToObject(object, key, item);
}

cJSON *
kg_notebook_reset_cell(kg_notebook_t *self, size_t index)
{
  cJSON *cell = s_cell(self, index);
  if (!kg_notebook_is_code(self, index))
    return NULL;
  cJSON *outputs = cJSON_CreateArray();
  if (!s_set(cell, "outputs", outputs))
    return NULL;
  s_set(cell, "execution_count", cJSON_CreateNull());
  return outputs;
}

cJSON *
kg_notebook_outputs(kg_notebook_t *self, size_t index)
{
  if (!kg_notebook_is_code(self, index))
    return NULL;
  cJSON *cell = s_cell(self, index);
  cJSON *outputs = cJSON_GetObjectItemCaseSensitive(cell, "outputs");
  if (!cJSON_IsArray(outputs))
    outputs = kg_notebook_reset_cell(self, index);
  return outputs;
}

void
kg_notebook_set_count(kg_notebook_t *self, size_t index, int count)
{
  if (!kg_notebook_is_code(self, index))
    return;
  s_set(s_cell(self, index), "execution_count",
        count > 0 ? cJSON_CreateNumber(count) : cJSON_CreateNull());
}

void
kg_notebook_reset_all(kg_notebook_t *self)
{
  size_t n = kg_notebook_cell_count(self);
  for (size_t i = 0; i < n; i++) {
    if (kg_notebook_is_code(self, i))
      kg_notebook_reset_cell(self, i);
  }
}

cJSON *
kg_notebook_kguard_metadata(kg_notebook_t *self)
{
  cJSON *meta = cJSON_GetObjectItemCaseSensitive(self->root, "metadata");
  if (!meta) {
    meta = cJSON_AddObjectToObject(self->root, "metadata");
    if (!meta)
      return NULL;
  }
  cJSON *kguard = cJSON_GetObjectItemCaseSensitive(meta, "kguard");
  if (!cJSON_IsObject(kguard)) {
    kguard = cJSON_CreateObject();
    if (!s_set(meta, "kguard", kguard))
      return NULL;
  }
  return kguard;
}

cJSON *
kg_notebook_json(kg_notebook_t *self)
{
  return self->root;
}

/*  ------------------------------------------------------------------------
    Writing. nbformat stores multi-line strings as lists of lines (each line
    keeping its '\n'), which keeps diffs of notebooks readable. */

/*  Replace the string under key of object by its list of lines. */
static void
s_split_key(cJSON *object, const char *key)
{
  cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
  if (!cJSON_IsString(item))
    return;
  cJSON *lines = cJSON_CreateArray();
  if (!lines)
    return;
  const char *s = item->valuestring;
  while (*s) {
    const char *nl = strchr(s, '\n');
    size_t n = nl ? (size_t) (nl - s) + 1 : strlen(s);
    char *line = strndup(s, n);
    if (!line || !cJSON_AddItemToArray(lines, cJSON_CreateString(line))) {
      free(line);
      cJSON_Delete(lines);
      return;
    }
    free(line);
    s += n;
  }
  cJSON_ReplaceItemInObjectCaseSensitive(object, key, lines);
}

static bool
s_is_json_mime(const char *mime)
{
  size_t n = strlen(mime);
  return strcmp(mime, "application/json") == 0
         || (n >= 5 && strcmp(mime + n - 5, "+json") == 0);
}

static void
s_split_mimebundle(cJSON *bundle)
{
  /*  s_split_key replaces the item: take its successor first. */
  cJSON *next;
  for (cJSON *item = bundle ? bundle->child : NULL; item; item = next) {
    next = item->next;
    if (item->string && !s_is_json_mime(item->string))
      s_split_key(bundle, item->string);
  }
}

static void
s_split_lines(cJSON *root)
{
  cJSON *cells = cJSON_GetObjectItemCaseSensitive(root, "cells");
  cJSON *cell;
  cJSON_ArrayForEach(cell, cells) {
    s_split_key(cell, "source");
    cJSON *attachments = cJSON_GetObjectItemCaseSensitive(cell, "attachments");
    cJSON *att;
    cJSON_ArrayForEach(att, attachments)
      s_split_mimebundle(att);
    cJSON *outputs = cJSON_GetObjectItemCaseSensitive(cell, "outputs");
    cJSON *out;
    cJSON_ArrayForEach(out, outputs) {
      const cJSON *type = cJSON_GetObjectItemCaseSensitive(out, "output_type");
      if (!cJSON_IsString(type))
        continue;
      if (strcmp(type->valuestring, "stream") == 0)
        s_split_key(out, "text");
      else if (strcmp(type->valuestring, "display_data") == 0
               || strcmp(type->valuestring, "execute_result") == 0)
        s_split_mimebundle(cJSON_GetObjectItemCaseSensitive(out, "data"));
    }
  }
}

/*  cJSON_Print indents with tabs and puts a tab after each key's colon.
    Strings never contain a raw tab (cJSON escapes control characters), so
    every tab in its output is layout: leading ones become one space each (the
    1-space indent nbformat uses), the one after a colon a single space. An
    empty object prints as "{\n<indent>}", collapsed here to "{}". */
static char *
s_relayout(const char *in)
{
  size_t n = strlen(in);
  char *out = malloc(n + 2);
  if (!out)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = in[i];
    if (c == '{' && in[i + 1] == '\n') {
      size_t j = i + 2;
      while (in[j] == '\t')
        j++;
      if (in[j] == '}') {
        out[o++] = '{';
        out[o++] = '}';
        i = j;
        continue;
      }
    }
    out[o++] = c == '\t' ? ' ' : c;
  }
  out[o++] = '\n';
  out[o] = '\0';
  return out;
}

char *
kg_notebook_format(const kg_notebook_t *self)
{
  cJSON *copy = cJSON_Duplicate(self->root, true);
  if (!copy)
    return NULL;
  s_split_lines(copy);
  char *printed = cJSON_Print(copy);
  cJSON_Delete(copy);
  if (!printed)
    return NULL;
  char *out = s_relayout(printed);
  cJSON_free(printed);
  return out;
}

int
kg_notebook_save(const kg_notebook_t *self, const char *path)
{
  char *text = kg_notebook_format(self);
  if (!text)
    return -ENOMEM;
  /*  A notebook is an ordinary document: the usual permissions. */
  mode_t mask = umask(0);
  umask(mask);
  int rc = kg_file_write_atomic(path, text, strlen(text), 0666 & ~mask);
  free(text);
  return rc;
}
