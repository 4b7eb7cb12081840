/*  kg_outputs: iopub messages collected into a cell's outputs. */
#include <stdlib.h>
#include <string.h>

#include "kg_outputs.h"
#include "kg_test.h"

static cJSON *
s_json(const char *text)
{
  cJSON *j = cJSON_Parse(text);
  KG_CHECK(j != NULL);
  return j;
}

static void
s_add(kg_outputs_t *o, const char *type, const char *content)
{
  cJSON *c = s_json(content);
  kg_outputs_add(o, type, c);
  cJSON_Delete(c);
}

KG_TEST(outputs_stream)
{
  kg_outputs_t *o = kg_outputs_new();
  cJSON *outs = cJSON_CreateArray();
  kg_outputs_begin(o, 0, outs);
  s_add(o, "stream", "{\"name\": \"stdout\", \"text\": \"a\\n\"}");
  s_add(o, "stream", "{\"name\": \"stdout\", \"text\": \"b\\n\"}");
  s_add(o, "status", "{\"execution_state\": \"idle\"}");
  s_add(o, "stream", "{\"name\": \"stderr\", \"text\": \"e\\n\"}");
  s_add(o, "stream", "{\"name\": \"stdout\", \"text\": \"c\"}");
  s_add(o, "execute_result", "{\"execution_count\": 4, \"data\": {\"text/plain\": \"4\"},"
        " \"metadata\": {}}");
  s_add(o, "error", "{\"ename\": \"ValueError\", \"evalue\": \"v\", \"traceback\": [\"t1\"]}");
  KG_CHECK_INT(cJSON_GetArraySize(outs), 5);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(outs, 0), "text")->valuestring, "a\nb\n");
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(outs, 1), "name")->valuestring, "stderr");
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(outs, 2), "text")->valuestring, "c");
  cJSON *res = cJSON_GetArrayItem(outs, 3);
  KG_CHECK_INT(cJSON_GetObjectItem(res, "execution_count")->valueint, 4);
  cJSON *err = cJSON_GetArrayItem(outs, 4);
  KG_CHECK_STR(cJSON_GetObjectItem(err, "output_type")->valuestring, "error");
  KG_CHECK_STR(cJSON_GetObjectItem(err, "ename")->valuestring, "ValueError");
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(err, "traceback")), 1);
  kg_outputs_end(o);
  KG_CHECK_INT(kg_outputs_add(o, "stream", NULL), 0);  /* no current cell */
  cJSON_Delete(outs);
  kg_outputs_destroy(&o);
  KG_CHECK(o == NULL);
}

KG_TEST(outputs_display)
{
  kg_outputs_t *o = kg_outputs_new();
  cJSON *c1 = cJSON_CreateArray(), *c2 = cJSON_CreateArray();
  kg_outputs_begin(o, 1, c1);
  s_add(o, "display_data", "{\"data\": {\"text/plain\": \"one\"}, \"metadata\": {},"
        " \"transient\": {\"display_id\": \"d1\"}}");
  kg_outputs_end(o);
  kg_outputs_begin(o, 2, c2);
  s_add(o, "update_display_data", "{\"data\": {\"text/plain\": \"two\"}, \"metadata\": {},"
        " \"transient\": {\"display_id\": \"d1\"}}");
  KG_CHECK_INT(cJSON_GetArraySize(c2), 0);
  cJSON *shown = cJSON_GetArrayItem(c1, 0);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(shown, "data"), "text/plain")->valuestring,
               "two");
  KG_CHECK(cJSON_GetObjectItem(shown, "transient") == NULL);
  /*  Cell 1 re-runs (after a restart): its old display is forgotten. */
  cJSON *c1b = cJSON_CreateArray();
  kg_outputs_begin(o, 1, c1b);
  cJSON_Delete(c1);
  s_add(o, "update_display_data", "{\"data\": {\"text/plain\": \"3\"}, \"metadata\": {},"
        " \"transient\": {\"display_id\": \"d1\"}}");
  KG_CHECK_INT(cJSON_GetArraySize(c1b), 0);
  cJSON_Delete(c1b);
  cJSON_Delete(c2);
  kg_outputs_destroy(&o);
}

KG_TEST(outputs_clear)
{
  kg_outputs_t *o = kg_outputs_new();
  cJSON *outs = cJSON_CreateArray();
  kg_outputs_begin(o, 0, outs);
  s_add(o, "stream", "{\"name\": \"stdout\", \"text\": \"a\"}");
  s_add(o, "clear_output", "{\"wait\": false}");
  KG_CHECK_INT(cJSON_GetArraySize(outs), 0);
  s_add(o, "stream", "{\"name\": \"stdout\", \"text\": \"b\"}");
  s_add(o, "clear_output", "{\"wait\": true}");
  KG_CHECK_INT(cJSON_GetArraySize(outs), 1);
  s_add(o, "stream", "{\"name\": \"stdout\", \"text\": \"c\"}");
  KG_CHECK_INT(cJSON_GetArraySize(outs), 1);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(outs, 0), "text")->valuestring, "c");
  cJSON_Delete(outs);
  kg_outputs_destroy(&o);
}

KG_TEST_MAIN(KG_CASE(outputs_stream), KG_CASE(outputs_display), KG_CASE(outputs_clear))
