/*  kg_outputs: iopub messages to nbformat outputs. See kg_outputs.h. */
#include "kg_outputs.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

/*  One output shown with a display_id, so update_display_data finds it. */
typedef struct {
  char *id;                     /*  display_id, owned                      */
  size_t cell;                  /*  the cell whose outputs hold it         */
  cJSON *output;                /*  borrowed: an element of that array     */
} s_display_t;

struct kg_outputs_t {
  cJSON *outputs;               /*  current cell's array, or NULL          */
  size_t cell;                  /*  current cell index                     */
  bool clear_pending;           /*  clear_output(wait=true) was received   */
  s_display_t *displays;        /*  every output with a display_id         */
  size_t ndisplays, capdisplays;
};

kg_outputs_t *
kg_outputs_new(void)
{
  return calloc(1, sizeof(kg_outputs_t));
}

void
kg_outputs_destroy(kg_outputs_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_outputs_t *self = *self_p;
  for (size_t i = 0; i < self->ndisplays; i++)
    free(self->displays[i].id);
  free(self->displays);
  free(self);
  *self_p = NULL;
}

static void
s_forget_cell(kg_outputs_t *self, size_t cell)
{
  size_t keep = 0;
  for (size_t i = 0; i < self->ndisplays; i++) {
    if (self->displays[i].cell == cell)
      free(self->displays[i].id);
    else
      self->displays[keep++] = self->displays[i];
  }
  self->ndisplays = keep;
}

void
kg_outputs_begin(kg_outputs_t *self, size_t cell, cJSON *outputs)
{
  s_forget_cell(self, cell);
  self->cell = cell;
  self->outputs = outputs;
  self->clear_pending = false;
}

void
kg_outputs_end(kg_outputs_t *self)
{
  self->outputs = NULL;
  self->clear_pending = false;
}

static void
s_clear(kg_outputs_t *self)
{
  s_forget_cell(self, self->cell);
  while (cJSON_GetArraySize(self->outputs) > 0)
    cJSON_DeleteItemFromArray(self->outputs, 0);
  self->clear_pending = false;
}

static const char *
s_string(const cJSON *object, const char *key)
{
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
  return cJSON_IsString(item) ? item->valuestring : NULL;
}

static const char *
s_display_id(const cJSON *content)
{
  const cJSON *transient = cJSON_GetObjectItemCaseSensitive(content, "transient");
  const char *id = s_string(transient, "display_id");
  return id && id[0] ? id : NULL;
}

/*  Copy key of from into to (an empty object if absent). */
static bool
s_copy(cJSON *to, const cJSON *from, const char *key)
{
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(from, key);
  cJSON *copy = item ? cJSON_Duplicate(item, true) : cJSON_CreateObject();
  return copy && cJSON_AddItemToObject(to, key, copy);
}

static int
s_remember(kg_outputs_t *self, const char *id, cJSON *output)
{
  if (self->ndisplays == self->capdisplays) {
    size_t cap = self->capdisplays ? self->capdisplays * 2 : 8;
    s_display_t *bigger = realloc(self->displays, cap * sizeof *bigger);
    if (!bigger)
      return KG_ENOMEM;
    self->displays = bigger;
    self->capdisplays = cap;
  }
  char *copy = strdup(id);
  if (!copy)
    return KG_ENOMEM;
  self->displays[self->ndisplays++] = (s_display_t) {copy, self->cell, output};
  return 0;
}

static int
s_stream(kg_outputs_t *self, const cJSON *content)
{
  const char *name = s_string(content, "name");
  const char *text = s_string(content, "text");
  if (!name || !text)
    return 0;
  int n = cJSON_GetArraySize(self->outputs);
  cJSON *last = n > 0 ? cJSON_GetArrayItem(self->outputs, n - 1) : NULL;
  const char *last_type = s_string(last, "output_type");
  const char *last_name = s_string(last, "name");
  cJSON *last_text = cJSON_GetObjectItemCaseSensitive(last, "text");
  if (last_type && strcmp(last_type, "stream") == 0 && last_name
      && strcmp(last_name, name) == 0 && cJSON_IsString(last_text)) {
    size_t a = strlen(last_text->valuestring), b = strlen(text);
    char *joined = malloc(a + b + 1);
    if (!joined)
      return KG_ENOMEM;
    memcpy(joined, last_text->valuestring, a);
    memcpy(joined + a, text, b + 1);
    cJSON *item = cJSON_CreateString(joined);
    free(joined);
    if (!item || !cJSON_ReplaceItemInObjectCaseSensitive(last, "text", item))
      return KG_ENOMEM;
    return 1;
  }
  cJSON *out = cJSON_CreateObject();
  if (!out || !cJSON_AddStringToObject(out, "output_type", "stream")
      || !cJSON_AddStringToObject(out, "name", name)
      || !cJSON_AddStringToObject(out, "text", text)) {
    cJSON_Delete(out);
    return KG_ENOMEM;
  }
  cJSON_AddItemToArray(self->outputs, out);
  return 1;
}

static int
s_rich(kg_outputs_t *self, const char *type, const cJSON *content)
{
  cJSON *out = cJSON_CreateObject();
  bool ok = out && cJSON_AddStringToObject(out, "output_type", type);
  if (ok && strcmp(type, "execute_result") == 0) {
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(content, "execution_count");
    ok = cJSON_AddItemToObject(out, "execution_count", cJSON_IsNumber(count)
                               ? cJSON_CreateNumber(count->valuedouble)
                               : cJSON_CreateNull());
  }
  ok = ok && s_copy(out, content, "data") && s_copy(out, content, "metadata");
  if (!ok) {
    cJSON_Delete(out);
    return KG_ENOMEM;
  }
  cJSON_AddItemToArray(self->outputs, out);
  const char *id = s_display_id(content);
  if (id && s_remember(self, id, out) != 0)
    return KG_ENOMEM;
  return 1;
}

static int
s_error(kg_outputs_t *self, const cJSON *content)
{
  const char *ename = s_string(content, "ename");
  const char *evalue = s_string(content, "evalue");
  const cJSON *tb = cJSON_GetObjectItemCaseSensitive(content, "traceback");
  cJSON *out = cJSON_CreateObject();
  bool ok = out && cJSON_AddStringToObject(out, "output_type", "error")
            && cJSON_AddStringToObject(out, "ename", ename ? ename : "")
            && cJSON_AddStringToObject(out, "evalue", evalue ? evalue : "");
  cJSON *lines = ok ? cJSON_AddArrayToObject(out, "traceback") : NULL;
  const cJSON *line;
  cJSON_ArrayForEach(line, tb) {
    if (lines && cJSON_IsString(line))
      ok = ok && cJSON_AddItemToArray(lines, cJSON_CreateString(line->valuestring));
  }
  if (!ok || !lines) {
    cJSON_Delete(out);
    return KG_ENOMEM;
  }
  cJSON_AddItemToArray(self->outputs, out);
  return 1;
}

/*  update_display_data changes outputs already shown, in whatever cell. */
static int
s_update(kg_outputs_t *self, const cJSON *content)
{
  const char *id = s_display_id(content);
  if (!id)
    return 0;
  int changed = 0;
  for (size_t i = 0; i < self->ndisplays; i++) {
    if (strcmp(self->displays[i].id, id) != 0)
      continue;
    cJSON *out = self->displays[i].output;
    cJSON_DeleteItemFromObjectCaseSensitive(out, "data");
    cJSON_DeleteItemFromObjectCaseSensitive(out, "metadata");
    if (!s_copy(out, content, "data") || !s_copy(out, content, "metadata"))
      return KG_ENOMEM;
    changed = 1;
  }
  return changed;
}

int
kg_outputs_add(kg_outputs_t *self, const char *msg_type, const cJSON *content)
{
  if (!self->outputs || !msg_type)
    return 0;
  if (strcmp(msg_type, "clear_output") == 0) {
    const cJSON *wait = cJSON_GetObjectItemCaseSensitive(content, "wait");
    if (cJSON_IsTrue(wait))
      self->clear_pending = true;
    else
      s_clear(self);
    return 1;
  }
  if (strcmp(msg_type, "update_display_data") == 0)
    return s_update(self, content);

  bool is_output = strcmp(msg_type, "stream") == 0
                   || strcmp(msg_type, "display_data") == 0
                   || strcmp(msg_type, "execute_result") == 0
                   || strcmp(msg_type, "error") == 0;
  if (!is_output)
    return 0;
  if (self->clear_pending)
    s_clear(self);
  if (strcmp(msg_type, "stream") == 0)
    return s_stream(self, content);
  if (strcmp(msg_type, "error") == 0)
    return s_error(self, content);
  return s_rich(self, msg_type, content);
}
