/*  Unit tests of `kguard run`'s classes that need no kernel: the notebook
    reader/writer, and the iopub-to-outputs collector. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_notebook.h"
#include "kg_outputs.h"
#include "kg_test.h"

static const char *s_nb =
  "{\"cells\": [{\"cell_type\": \"markdown\", \"metadata\": {}, \"source\": \"# t\"},"
  " {\"cell_type\": \"code\", \"metadata\": {\"tags\": [\"raises-exception\"]},"
  "  \"source\": [\"a = 1\\n\", \"print(a)\"], \"outputs\": [], \"execution_count\": null},"
  " {\"cell_type\": \"code\", \"metadata\": {}, \"source\": \"x\", \"outputs\": [],"
  "  \"execution_count\": 7}],"
  " \"metadata\": {\"kernelspec\": {\"name\": \"python3\", \"display_name\": \"P\"}},"
  " \"nbformat\": 4, \"nbformat_minor\": 4}";

static kg_notebook_t *
s_load(const char *text)
{
  kg_notebook_t *nb = NULL;
  char err[256];
  int rc = kg_notebook_parse(text, strlen(text), &nb, err, sizeof err);
  KG_CHECK_INT(rc, 0);
  return nb;
}

KG_TEST(notebook_parse)
{
  kg_notebook_t *nb = s_load(s_nb);
  if (!nb)
    return;
  KG_CHECK_INT(kg_notebook_cell_count(nb), 3);
  KG_CHECK(!kg_notebook_is_code(nb, 0));
  KG_CHECK(kg_notebook_is_code(nb, 1));
  char *src = kg_notebook_source(nb, 1);
  KG_CHECK_STR(src, "a = 1\nprint(a)");
  free(src);
  KG_CHECK(kg_notebook_has_tag(nb, 1, "raises-exception"));
  KG_CHECK(!kg_notebook_has_tag(nb, 2, "raises-exception"));
  KG_CHECK_STR(kg_notebook_kernel_name(nb), "python3");
  kg_notebook_reset_all(nb);
  const cJSON *cell = cJSON_GetArrayItem(cJSON_GetObjectItem(kg_notebook_json(nb), "cells"), 2);
  KG_CHECK(cJSON_IsNull(cJSON_GetObjectItem(cell, "execution_count")));
  kg_notebook_set_count(nb, 2, 3);
  KG_CHECK_INT(cJSON_GetObjectItem(cell, "execution_count")->valueint, 3);
  kg_notebook_destroy(&nb);
  KG_CHECK(nb == NULL);
}

/*  Each bad input is rejected with KG_ENOTEBOOK and a message naming it. */
static void
s_reject(const char *text, const char *needle)
{
  kg_notebook_t *nb = NULL;
  char err[512] = "";
  int rc = kg_notebook_parse(text, strlen(text), &nb, err, sizeof err);
  KG_CHECK_INT(rc, KG_ENOTEBOOK);
  KG_CHECK(nb == NULL);
  if (!strstr(err, needle))
    fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, needle);
  KG_CHECK(strstr(err, needle) != NULL);
}

KG_TEST(notebook_reject)
{
  s_reject("{\"cells\": [", "not JSON");
  s_reject("[1, 2]", "not a JSON object");
  s_reject("{\"nbformat\": 3, \"worksheets\": []}", "nbformat 3 is not supported");
  s_reject("{\"cells\": []}", "nbformat");
  s_reject("{\"nbformat\": 4, \"metadata\": {}}", "no \"cells\"");
  s_reject("{\"nbformat\": 4, \"cells\": {}}", "\"cells\" is not a list");
  s_reject("{\"nbformat\": 4, \"cells\": [{\"source\": \"x\"}]}", "cell 1 has no \"cell_type\"");
  s_reject("{\"nbformat\": 4, \"cells\": [{\"cell_type\": \"code\", \"source\": 3}]}",
           "cell 1: \"source\"");
  kg_notebook_t *nb = NULL;
  char err[512];
  KG_CHECK_INT(kg_notebook_load("/nonexistent/x.ipynb", &nb, err, sizeof err), -ENOENT);
  KG_CHECK(strstr(err, "/nonexistent/x.ipynb") != NULL);
}

/*  nbformat's layout: 1-space indent, multi-line strings as lists of lines
    (but not JSON mime data), {} for empty objects, a final newline; and the
    text parses back to the same document. */
KG_TEST(notebook_format)
{
  kg_notebook_t *nb = s_load(s_nb);
  if (!nb)
    return;
  cJSON *outs = kg_notebook_reset_cell(nb, 1);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "output_type", "display_data");
  cJSON *data = cJSON_AddObjectToObject(o, "data");
  cJSON_AddStringToObject(data, "text/plain", "l1\nl2\n");
  cJSON_AddStringToObject(data, "application/vnd.x+json", "keep\nme");
  cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddItemToArray(outs, o);
  char *text = kg_notebook_format(nb);
  KG_CHECK(text != NULL);
  if (!text)
    return;
  KG_CHECK(strstr(text, "\n \"cells\": [") != NULL);
  KG_CHECK(strchr(text, '\t') == NULL);
  KG_CHECK(strstr(text, "\"source\": [\"a = 1\\n\", \"print(a)\"]") != NULL);
  KG_CHECK(strstr(text, "\"text/plain\": [\"l1\\n\", \"l2\\n\"]") != NULL);
  KG_CHECK(strstr(text, "\"application/vnd.x+json\": \"keep\\nme\"") != NULL);
  KG_CHECK(strstr(text, "\"metadata\": {}") != NULL);
  KG_CHECK(text[strlen(text) - 1] == '\n');
  kg_notebook_t *back = s_load(text);
  if (back) {
    char *src = kg_notebook_source(back, 1);
    KG_CHECK_STR(src, "a = 1\nprint(a)");
    free(src);
  }
  kg_notebook_destroy(&back);
  free(text);
  kg_notebook_destroy(&nb);
}

KG_TEST(notebook_save)
{
  kg_notebook_t *nb = s_load(s_nb);
  if (!nb)
    return;
  char dir[] = "/tmp/kg-run-test-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/out.ipynb", dir);
  KG_CHECK_INT(kg_notebook_save(nb, path), 0);
  kg_notebook_t *back = NULL;
  char err[256];
  KG_CHECK_INT(kg_notebook_load(path, &back, err, sizeof err), 0);
  kg_notebook_destroy(&back);
  /*  A save into a missing directory fails and leaves nothing behind. */
  char bad[300];
  snprintf(bad, sizeof bad, "%s/missing/out.ipynb", dir);
  KG_CHECK(kg_notebook_save(nb, bad) < 0);
  KG_CHECK(access(bad, F_OK) != 0);
  unlink(path);
  KG_CHECK_INT(rmdir(dir), 0);  /* no temporary file left either */
  kg_notebook_destroy(&nb);
}

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

KG_TEST_MAIN(KG_CASE(notebook_parse), KG_CASE(notebook_reject), KG_CASE(notebook_format),
             KG_CASE(notebook_save), KG_CASE(outputs_stream), KG_CASE(outputs_display),
             KG_CASE(outputs_clear))
