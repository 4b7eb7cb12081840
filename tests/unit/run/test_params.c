/*  kg_params: papermill's -p and -f parameters and the injected cell. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_params.h"
#include "notebook_fixture.h"

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

KG_TEST_MAIN(KG_CASE(params_cli), KG_CASE(params_files), KG_CASE(params_inject))
