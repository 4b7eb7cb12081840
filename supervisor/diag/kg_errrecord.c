/*  kg_errrecord: error contents as recorded and as classified. */
#include "kg_errrecord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_errtext.h"

cJSON *
kg_errrecord_new(kg_source_t source, const char *ename, const char *evalue, const cJSON *tb,
                 const char *parent, int64_t t)
{
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return NULL;
  cJSON_AddStringToObject(o, "source", kg_source_name(source));
  cJSON_AddStringToObject(o, "ename", ename);
  cJSON_AddStringToObject(o, "evalue", evalue);
  cJSON *arr = cJSON_AddArrayToObject(o, "traceback");
  const cJSON *line;
  if (arr && cJSON_IsArray(tb))
    cJSON_ArrayForEach(line, tb) {
      if (!cJSON_IsString(line))
        continue;
      char *copy = strdup(line->valuestring);
      if (!copy)
        break;
      kg_errtext_strip_ansi(copy);
      cJSON_AddItemToArray(arr, cJSON_CreateString(copy));
      free(copy);
    }
  cJSON_AddNumberToObject(o, "time_ms", (double) t);
  if (parent)
    cJSON_AddStringToObject(o, "parent_msg_id", parent);
  else
    cJSON_AddNullToObject(o, "parent_msg_id");
  return o;
}

char *
kg_errrecord_text(const char *ename, const char *evalue, const cJSON *tb, size_t cap)
{
  size_t need = strlen(ename) + strlen(evalue) + 4;
  const cJSON *line;
  if (cJSON_IsArray(tb))
    cJSON_ArrayForEach(line, tb) if (cJSON_IsString(line)) need += strlen(line->valuestring) + 1;
  if (need < cap)
    cap = need;
  char *text = malloc(cap + 1);
  if (!text)
    return NULL;
  int n = snprintf(text, cap + 1, "%s: %s\n", ename, evalue);
  size_t used = n < 0 ? 0 : ((size_t) n > cap ? cap : (size_t) n);
  if (cJSON_IsArray(tb))
    cJSON_ArrayForEach(line, tb) {
      if (!cJSON_IsString(line) || used >= cap)
        continue;
      n = snprintf(text + used, cap + 1 - used, "%s\n", line->valuestring);
      used += n < 0 ? 0 : ((size_t) n > cap - used ? cap - used : (size_t) n);
    }
  text[used] = '\0';
  kg_errtext_strip_ansi(text);
  return text;
}
