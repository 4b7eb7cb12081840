/*  Unit tests of `kguard run`'s classes that need no kernel: the notebook
    reader/writer, the iopub-to-outputs collector, parameters (papermill's
    -p and -f), and the kernelspec name and argv rules shared with
    `kguard install`. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_kernelspec.h"
#include "kg_notebook.h"
#include "kg_outpath.h"
#include "kg_outputs.h"
#include "kg_params.h"
#include "kg_params_value.h"
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

/*  Where the executed notebook goes is checked before anything runs: a
    directory, a missing directory, a parent that is a file, and a writable
    place (which is left as it was). */
KG_TEST(outpath_check)
{
  char dir[] = "/tmp/kg-nbw-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char path[128], file[128];
  char err[512];
  KG_CHECK_INT(kg_outpath_check(dir, err, sizeof err), -EISDIR);
  KG_CHECK(strstr(err, "is a directory") != NULL && strstr(err, "out.ipynb") != NULL);
  snprintf(path, sizeof path, "%s/missing/deeper/out.ipynb", dir);
  KG_CHECK_INT(kg_outpath_check(path, err, sizeof err), -ENOENT);
  KG_CHECK(strstr(err, "missing/deeper does not exist") != NULL);
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE *f = fopen(file, "w");
  KG_CHECK(f != NULL);
  fclose(f);
  snprintf(path, sizeof path, "%s/plain/out.ipynb", dir);
  KG_CHECK(kg_outpath_check(path, err, sizeof err) < 0);
  snprintf(path, sizeof path, "%s/out.ipynb", dir);
  KG_CHECK_INT(kg_outpath_check(path, err, sizeof err), 0);
  /*  Nothing was left behind: the directory holds only "plain". */
  DIR *d = opendir(dir);
  int entries = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    entries += e->d_name[0] != '.';
  closedir(d);
  KG_CHECK_INT(entries, 1);
  unlink(file);
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

/*  -p values as papermill reads them, rendered as Python literals. */
KG_TEST(params_cli)
{
  static const struct { const char *value, *python; } table[] = {
    {"True", "True"}, {"False", "False"}, {"None", "None"},
    {"42", "42"}, {"-7", "-7"}, {"007", "7"}, {"+0", "0"},
    {"12345678901234567890", "12345678901234567890"},
    {"0.5", "0.5"}, {"-1e-3", "-1e-3"}, {"2.", "2."},
    {"true", "\"true\""}, {"hello world", "\"hello world\""}, {"", "\"\""},
    {"it's \"q\"\\", "\"it's \\\"q\\\"\\\\\""}, {"a\nb\tc", "\"a\\nb\\tc\""},
    {"[1, 2.5, null, true, \"s\"]", "[1, 2.5, None, True, \"s\"]"},
    {"{\"k\": {\"n\": false}}", "{\"k\": {\"n\": False}}"},
    {"inf", "\"inf\""}, {"-0.5", "-0.5"}, {"-.5e2", "-.5e2"},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    kg_params_t *p = kg_params_new();
    char err[256] = "";
    KG_CHECK_INT(kg_params_add_cli(p, "x", table[i].value, err, sizeof err), 0);
    char *py = kg_params_render_python(p);
    char want[256];
    snprintf(want, sizeof want, "# Parameters\nx = %s\n", table[i].python);
    KG_CHECK_STR(py, want);
    free(py);
    kg_params_destroy(&p);
  }
  /*  Bad names and bad JSON are usage errors that say why. */
  static const struct { const char *name, *value, *needle; } bad[] = {
    {"1x", "1", "not a Python identifier"}, {"a-b", "1", "not a Python identifier"},
    {"", "1", "not a Python identifier"}, {"class", "1", "Python keyword"},
    {"x", "[1, 2", "is not JSON"}, {"x", "{a: 1}", "is not JSON"},
    {"x", "1e999", "-p x 1e999: 1e999 is beyond the range of a float"},
    {"x", "-q", "-p x -q: the value looks like an option"},
    {"x", "--cwd", "looks like an option"}, {"x", "-", "looks like an option"},
    {"x", "-inf", "looks like an option"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kg_params_t *p = kg_params_new();
    char err[256] = "";
    KG_CHECK_INT(kg_params_add_cli(p, bad[i].name, bad[i].value, err, sizeof err),
                 KG_EUSAGE);
    KG_CHECK(strstr(err, bad[i].needle) != NULL);
    KG_CHECK_INT(kg_params_count(p), 0);
    kg_params_destroy(&p);
  }
  /*  A later value replaces an earlier one in its place. */
  kg_params_t *p = kg_params_new();
  char err[256];
  kg_params_add_cli(p, "a", "1", err, sizeof err);
  kg_params_add_cli(p, "b", "2", err, sizeof err);
  kg_params_add_cli(p, "a", "3", err, sizeof err);
  char *py = kg_params_render_python(p);
  KG_CHECK_STR(py, "# Parameters\na = 3\nb = 2\n");
  free(py);
  kg_params_destroy(&p);
}

static char *
s_params_text(const char *kind, const char *text, int want_rc, const char *needle)
{
  kg_params_t *p = kg_params_new();
  char err[512] = "";
  int rc = kg_params_add_text(p, kind, text, strlen(text), "f", err, sizeof err);
  KG_CHECK_INT(rc, want_rc);
  if (needle && !strstr(err, needle))
    fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, needle);
  KG_CHECK(!needle || strstr(err, needle) != NULL);
  char *py = rc == 0 ? kg_params_render_python(p) : NULL;
  kg_params_destroy(&p);
  return py;
}

/*  JSON files fully; YAML's flat subset read as PyYAML reads it, anything
    else refused with its line. */
KG_TEST(params_files)
{
  char *py = s_params_text("json", "{\"lr\": 0.001, \"name\": \"r\\u00e9\", \"n\": [1, {}],"
                           " \"big\": 1e300, \"f\": 2.0}", 0, NULL);
  KG_CHECK_STR(py, "# Parameters\nlr = 0.001\nname = \"r\xc3\xa9\"\nn = [1, {}]\n"
                   "big = 1e+300\nf = 2\n");
  free(py);
  s_params_text("json", "[1]", KG_EUSAGE, "expected a JSON object");
  s_params_text("json", "{\"a\": ", KG_EUSAGE, "not valid JSON");
  s_params_text("json", "{\"not-ok\": 1}", KG_EUSAGE, "not a Python identifier");

  py = s_params_text("yaml",
                     "---\n# a comment\n\nepochs: 3\nlr: 0.5   # trailing comment\n"
                     "name: run one\nquoted: \"a # b\\n\"\nsingle: 'it''s'\n"
                     "flag: yes\noff_flag: False\nnothing:\ntilde: ~\nexp: 1e5\n"
                     "ids: [1, 2, 3]\nmap: {\"k\": \"v\"}\nurl: http://x/y\r\n", 0, NULL);
  KG_CHECK_STR(py, "# Parameters\nepochs = 3\nlr = 0.5\nname = \"run one\"\n"
                   "quoted = \"a # b\\n\"\nsingle = \"it's\"\nflag = True\n"
                   "off_flag = False\nnothing = None\ntilde = None\nexp = \"1e5\"\n"
                   "ids = [1, 2, 3]\nmap = {\"k\": \"v\"}\nurl = \"http://x/y\"\n");
  free(py);
  static const struct { const char *text, *needle; } bad[] = {
    {"a: 1\nb:\n  c: 2\n", "line 3: an indented line"},
    {"- 1\n- 2\n", "line 1: a list item"},
    {"a: |\n  text\n", "line 1: a block scalar"},
    {"a: &x 1\n", "line 1: an anchor"},
    {"a: *x\n", "line 1: an alias"},
    {"a: !!str 1\n", "line 1: a tag"},
    {"a: [1, 2\n", "line 1: a flow list or map that is not JSON"},
    {"a: 'open\n", "line 1: an unterminated quoted string"},
    {"just text\n", "line 1: a line that is not `name: value`"},
    {"x: 1\nbad-name: 2\n", "line 2: parameter name 'bad-name'"},
    {"a: b: c\n", "line 1: a nested list or map"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    s_params_text("yaml", bad[i].text, KG_EUSAGE, bad[i].needle);
}

static size_t
s_tagged(cJSON *cells, const char *tag)
{
  size_t n = 0;
  cJSON *cell;
  cJSON_ArrayForEach(cell, cells) {
    cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(cJSON_GetObjectItem(cell, "metadata"), "tags"))
      n += strcmp(t->valuestring, tag) == 0;
  }
  return n;
}

/*  After the `parameters` cell, or at the top; an earlier injected cell is
    replaced; the values are in the metadata; nbformat 4.5 gets a cell id. */
KG_TEST(params_inject)
{
  kg_params_t *p = kg_params_new();
  char err[256];
  kg_params_add_cli(p, "n", "5", err, sizeof err);
  kg_notebook_t *nb = s_load(s_nb);      /* no parameters cell */
  if (!nb)
    return;
  KG_CHECK_INT(kg_params_inject(p, nb), 0);
  cJSON *cells = cJSON_GetObjectItem(kg_notebook_json(nb), "cells");
  KG_CHECK_INT(cJSON_GetArraySize(cells), 4);
  char *src = kg_notebook_source(nb, 0);
  KG_CHECK_STR(src, "# Parameters\nn = 5\n");
  free(src);
  KG_CHECK(kg_notebook_has_tag(nb, 0, "injected-parameters"));
  KG_CHECK(kg_notebook_is_code(nb, 0));
  KG_CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(cells, 0), "id") == NULL);
  cJSON *meta = kg_notebook_kguard_metadata(nb);
  KG_CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "parameters"), "n")->valueint, 5);
  kg_notebook_destroy(&nb);

  const char *tagged =
    "{\"cells\": [{\"cell_type\": \"markdown\", \"metadata\": {}, \"source\": \"t\", \"id\": \"m\"},"
    " {\"cell_type\": \"code\", \"metadata\": {\"tags\": [\"parameters\"]}, \"source\": \"n = 1\","
    "  \"id\": \"p\"},"
    " {\"cell_type\": \"code\", \"metadata\": {\"tags\": [\"injected-parameters\"]},"
    "  \"source\": \"n = 99\", \"id\": \"old\"},"
    " {\"cell_type\": \"code\", \"metadata\": {}, \"source\": \"print(n)\", \"id\": \"c\"}],"
    " \"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 5}";
  nb = s_load(tagged);
  if (!nb)
    return;
  KG_CHECK_INT(kg_params_inject(p, nb), 2);
  cells = cJSON_GetObjectItem(kg_notebook_json(nb), "cells");
  KG_CHECK_INT(cJSON_GetArraySize(cells), 4);
  KG_CHECK_INT(s_tagged(cells, "injected-parameters"), 1);
  src = kg_notebook_source(nb, 2);
  KG_CHECK_STR(src, "# Parameters\nn = 5\n");
  free(src);
  src = kg_notebook_source(nb, 3);
  KG_CHECK_STR(src, "print(n)");
  free(src);
  cJSON *id = cJSON_GetObjectItem(cJSON_GetArrayItem(cells, 2), "id");
  KG_CHECK(cJSON_IsString(id) && strlen(id->valuestring) == 16);
  kg_notebook_destroy(&nb);
  kg_params_destroy(&p);
}

/*  Kernelspec names as jupyter_client's _kernel_name_pat accepts them, and
    no directory references or over-long names. */
KG_TEST(kernelspec_names)
{
  static const struct { const char *name; const char *needle; } table[] = {
    {"python3", NULL}, {"My-Kernel_2.0", NULL}, {"a", NULL},
    {"", "at least one character"}, {".", "directory reference"},
    {"..", "directory reference"}, {"a b", "character 2 (a space)"},
    {"a/b", "character 2 ('/')"}, {"q\"x", "character 2 ('\"')"},
    {"caf\xc3\xa9", "character 4 (byte 0xc3)"}, {"t\tab", "character 2 (byte 0x09)"},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    char err[256] = "";
    int rc = kg_kernelspec_check_name(table[i].name, err, sizeof err);
    KG_CHECK_INT(rc, table[i].needle ? KG_EUSAGE : 0);
    if (table[i].needle && !strstr(err, table[i].needle))
      fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, table[i].needle);
    KG_CHECK(!table[i].needle || strstr(err, table[i].needle) != NULL);
  }
  char longest[KG_KERNELSPEC_NAME_MAX + 2];
  memset(longest, 'k', sizeof longest);
  longest[KG_KERNELSPEC_NAME_MAX] = '\0';
  char err[256];
  KG_CHECK_INT(kg_kernelspec_check_name(longest, err, sizeof err), 0);
  longest[KG_KERNELSPEC_NAME_MAX] = 'k';
  longest[KG_KERNELSPEC_NAME_MAX + 1] = '\0';
  KG_CHECK_INT(kg_kernelspec_check_name(longest, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "256 characters, at most 255") != NULL);
}

/*  Placeholders filled as jupyter_client's format_kernel_cmd fills them:
    anywhere in an argument, unknown names and unset values left alone. */
KG_TEST(kernelspec_format_arg)
{
  kg_kernelspec_ns_t ns = {.connection_file = "/r/c.json", .resource_dir = "/k/spec",
                           .prefix = "/usr"};
  static const struct { const char *arg, *want; } table[] = {
    {"{connection_file}", "/r/c.json"},
    {"--file={connection_file}", "--file=/r/c.json"},
    {"{resource_dir}/kernel.sh", "/k/spec/kernel.sh"},
    {"{prefix}/bin/x {prefix}", "/usr/bin/x /usr"},
    {"{unknown}", "{unknown}"}, {"{}", "{}"}, {"{resource-dir}", "{resource-dir}"},
    {"{{resource_dir}}", "{/k/spec}"}, {"{resource_dir", "{resource_dir"},
    {"plain", "plain"}, {"", ""},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    char *out = kg_kernelspec_format_arg(table[i].arg, &ns);
    KG_CHECK_STR(out, table[i].want);
    free(out);
  }
  kg_kernelspec_ns_t inner = {.resource_dir = "/k"};
  char *out = kg_kernelspec_format_arg("-f {connection_file} {resource_dir}", &inner);
  KG_CHECK_STR(out, "-f {connection_file} /k");
  free(out);
}

/*  kg_params_value: what one value's text means, for -p and for YAML. */
KG_TEST(params_value_table)
{
  static const struct {
    const char *text;
    bool yaml;
    const char *json;      /* the value, printed unformatted */
    const char *literal;   /* NULL: none */
  } t[] = {
    {"True", false, "true", NULL},   {"yes", false, "\"yes\"", NULL},
    {"yes", true, "true", NULL},     {"Off", true, "false", NULL},
    {"None", false, "null", NULL},   {"~", true, "null", NULL},
    {"", true, "null", NULL},        {"None", true, "\"None\"", NULL},
    {"007", false, "7", "7"},
    {"-0", true, "-0", "0"},         /* the JSON keeps strtod's -0; Python gets 0 */
    {"+12", true, "12", "12"},       {"1e3", false, "1000", "1e3"},
    {"1e3", true, "\"1e3\"", NULL},  /* YAML 1.1: a float needs a dot */
    {"1.5e3", true, "1500", "1.5e3"}, {".5", false, "0.5", ".5"},
    {"abc", false, "\"abc\"", NULL},  {"1.2.3", true, "\"1.2.3\"", NULL},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *v = NULL;
    char *lit = NULL;
    KG_CHECK_INT(kg_params_scalar(t[i].text, t[i].yaml, &v, &lit), 0);
    char *printed = cJSON_PrintUnformatted(v);
    if (strcmp(printed, t[i].json) != 0 || (lit == NULL) != (t[i].literal == NULL))
      fprintf(stderr, "row %zu: %s, literal %s\n", i, printed, lit ? lit : "(none)");
    KG_CHECK_STR(printed, t[i].json);
    if (t[i].literal)
      KG_CHECK_STR(lit ? lit : "(none)", t[i].literal);
    else
      KG_CHECK(lit == NULL);
    free(printed);
    free(lit);
    cJSON_Delete(v);
  }
  /* Beyond a double's range: inf in Python, which JSON metadata cannot
     record: refused, whatever the sign or the grammar. */
  static const struct { const char *text; bool yaml; } range[] = {
    {"1e999", false}, {"-1e400", false}, {"1.0e400", true}, {"1e309", false},
  };
  for (size_t i = 0; i < sizeof range / sizeof range[0]; i++) {
    cJSON *v = NULL;
    char *lit = NULL;
    KG_CHECK_INT(kg_params_scalar(range[i].text, range[i].yaml, &v, &lit), KG_EUSAGE);
    KG_CHECK(v == NULL && lit == NULL);
  }
  /* The largest double is a value; so is a number that only underflows. */
  static const char *finite[] = {"1.7976931348623157e308", "1e-400", "-0.5"};
  for (size_t i = 0; i < sizeof finite / sizeof finite[0]; i++) {
    cJSON *v = NULL;
    char *lit = NULL;
    KG_CHECK_INT(kg_params_scalar(finite[i], false, &v, &lit), 0);
    KG_CHECK(cJSON_IsNumber(v));
    cJSON_Delete(v);
    free(lit);
  }
  static const struct {
    const char *line;      /* after "name:" */
    int rc;
    bool plain;
    const char *json;      /* the value, or the plain text left in place */
    const char *what;      /* a substring of the complaint */
  } y[] = {
    {" 3  # three", 0, true, "3", NULL},
    {" a#b", 0, true, "a#b", NULL},
    {" 'it''s' # c", 0, false, "\"it's\"", NULL},
    {" \"a\\nb\"", 0, false, "\"a\\nb\"", NULL},
    {" [1, 2]", 0, false, "[1,2]", NULL},
    {" 'open", KG_EUSAGE, false, NULL, "unterminated"},
    {" \"a\" b", KG_EUSAGE, false, NULL, "text after a quoted string"},
    {" |", KG_EUSAGE, false, NULL, "block scalar"},
    {" &x 1", KG_EUSAGE, false, NULL, "anchor"},
    {" *x", KG_EUSAGE, false, NULL, "alias"},
    {" !!str 1", KG_EUSAGE, false, NULL, "tag"},
    {" a: b", KG_EUSAGE, false, NULL, "nested"},
    {" [1, 2", KG_EUSAGE, false, NULL, "not JSON"},
  };
  for (size_t i = 0; i < sizeof y / sizeof y[0]; i++) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", y[i].line);
    cJSON *v = NULL;
    bool plain = false;
    const char *what = NULL;
    int rc = kg_params_yaml_value(buf, &v, &plain, &what);
    if (rc != y[i].rc)
      fprintf(stderr, "yaml row %zu: rc %d (%s)\n", i, rc, what ? what : "");
    KG_CHECK_INT(rc, y[i].rc);
    KG_CHECK_INT(plain, y[i].plain);
    if (rc == 0 && plain) {
      KG_CHECK(v == NULL);
      KG_CHECK_STR(buf + strspn(buf, " "), y[i].json);
    } else if (rc == 0) {
      char *printed = cJSON_PrintUnformatted(v);
      KG_CHECK_STR(printed, y[i].json);
      free(printed);
    } else {
      KG_CHECK(what && strstr(what, y[i].what));
    }
    cJSON_Delete(v);
  }
}

KG_TEST_MAIN(KG_CASE(notebook_parse), KG_CASE(notebook_reject),
             KG_CASE(outpath_check), KG_CASE(notebook_format),
             KG_CASE(notebook_save), KG_CASE(outputs_stream), KG_CASE(outputs_display),
             KG_CASE(outputs_clear), KG_CASE(notebook_utf8), KG_CASE(params_cli),
             KG_CASE(params_files), KG_CASE(params_inject), KG_CASE(params_value_table), KG_CASE(kernelspec_names),
             KG_CASE(kernelspec_format_arg))
