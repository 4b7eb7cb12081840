/*  kg_notebook: the notebook reader and writer (parse, reject, format, save,
    strict UTF-8). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_error.h"
#include "notebook_fixture.h"

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

KG_TEST(notebook_reject)
{
  s_reject("{\"cells\": [", "not JSON");
  {
    /*  Deeper than cJSON reads: said as such, not as a syntax error. */
    size_t depth = 1200, n = 0;
    char *deep = malloc(2 * depth + 64);
    n += (size_t) sprintf(deep, "{\"cells\": [], \"metadata\": {\"a\": ");
    memset(deep + n, '[', depth);
    memset(deep + n + depth, ']', depth);
    strcpy(deep + n + 2 * depth, "}}");
    s_reject(deep, "nested more than 1000 levels deep");
    free(deep);
  }
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
  /*  The caller names the path once; the message says what is wrong. */
  KG_CHECK_INT(kg_notebook_load("/nonexistent/x.ipynb", &nb, err, sizeof err), -ENOENT);
  KG_CHECK_STR(err, "no such file");
  KG_CHECK_INT(kg_notebook_load("/", &nb, err, sizeof err), -EISDIR);
  KG_CHECK(strstr(err, "a directory") != NULL && strstr(err, "/") == NULL);
  char dir[] = "/tmp/kg-nb-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char path[64];
  snprintf(path, sizeof path, "%s/empty.ipynb", dir);
  static const char *blank[] = {"", " \n\t\r\n"};
  for (size_t i = 0; i < 2; i++) {
    FILE *f = fopen(path, "w");
    KG_CHECK(f != NULL);
    fputs(blank[i], f);
    fclose(f);
    KG_CHECK_INT(kg_notebook_load(path, &nb, err, sizeof err), KG_ENOTEBOOK);
    KG_CHECK(strstr(err, i == 0 ? "an empty file: not a notebook"
                                : "only blank space: not a notebook") != NULL);
    KG_CHECK(strstr(err, "syntax error") == NULL);
  }
  unlink(path);
  rmdir(dir);
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

/*  Strict UTF-8, as Python's decoder: each bad sequence is found at its
    offset, and a notebook holding one is refused with that offset. */
KG_TEST(notebook_utf8)
{
  const size_t valid = (size_t) -1;
  const struct { const char *text; size_t bad; } table[] = {
    {"plain ascii", valid},
    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", valid},
    {"a\xff", 1},                  /* never valid */
    {"a\x80z", 1},                 /* lone continuation */
    {"\xc0\xaf", 0},               /* overlong '/' */
    {"\xe0\x80\xaf", 0},           /* overlong, 3 bytes */
    {"ab\xed\xa0\x80", 2},         /* UTF-16 surrogate */
    {"\xf4\x90\x80\x80", 0},       /* past U+10FFFF */
    {"x\xe2\x82", 1},              /* truncated at the end */
    {"\xc3(", 0},                  /* bad continuation */
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    size_t len = strlen(table[i].text);
    size_t want = table[i].bad == valid ? len : table[i].bad;
    KG_CHECK_INT(kg_notebook_utf8_invalid(table[i].text, len), want);
  }
  s_reject("{\"nbformat\": 4, \"cells\": [{\"cell_type\": \"code\", \"source\": \"\xff\"}]}",
           "not UTF-8: invalid byte 0xff at offset 59 (line 1, column 60)");
  /*  Valid multi-byte text is kept. */
  kg_notebook_t *nb = s_load("{\"nbformat\": 4, \"cells\": [{\"cell_type\": \"code\", "
                             "\"source\": \"print('\xc3\xa9')\"}]}");
  if (nb) {
    char *src = kg_notebook_source(nb, 0);
    KG_CHECK_STR(src, "print('\xc3\xa9')");
    free(src);
  }
  kg_notebook_destroy(&nb);
}

KG_TEST_MAIN(KG_CASE(notebook_parse), KG_CASE(notebook_reject), KG_CASE(notebook_format), KG_CASE(notebook_save), KG_CASE(notebook_utf8))
