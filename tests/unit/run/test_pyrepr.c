/*  kg_pyrepr: JSON values written as the Python literals that mean the
    same, by table (what papermill's Python translator writes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kg_pyrepr.h"
#include "kg_test.h"

KG_TEST(literal_table)
{
  static const struct {
    const char *json, *python;
  } t[] = {
    {"null", "None"},
    {"true", "True"},
    {"false", "False"},
    {"0", "0"},
    {"-42", "-42"},
    {"2.0", "2"},                              /* cJSON keeps no 2.0 */
    {"9007199254740992", "9007199254740992"},  /* 2^53: still exact */
    {"1e300", "1e+300"},
    {"0.1", "0.1"},
    {"0.30000000000000004", "0.30000000000000004"},
    {"-2.5", "-2.5"},
    {"1e16", "1e+16"},                         /* past 2^53: a float */
    {"9007199254740994", "9007199254740994.0"},
    {"\"\"", "\"\""},
    {"\"a \\\"b\\\" \\\\ \\n\\t\"", "\"a \\\"b\\\" \\\\ \\n\\t\""},
    {"\"caf\\u00e9\"", "\"caf\xc3\xa9\""},
    {"\"\\u0001\"", "\"\\u0001\""},
    {"[]", "[]"},
    {"{}", "{}"},
    {"[1, [true, null], \"x\"]", "[1, [True, None], \"x\"]"},
    {"{\"k\": {\"n\": 1.5}, \"q\\\"\": [false]}", "{\"k\": {\"n\": 1.5}, \"q\\\"\": [False]}"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *v = cJSON_Parse(t[i].json);
    KG_CHECK(v != NULL);
    char *got = kg_pyrepr(v);
    if (!got || strcmp(got, t[i].python) != 0)
      fprintf(stderr, "%s: got %s\n", t[i].json, got ? got : "(null)");
    KG_CHECK_STR(got, t[i].python);
    free(got);
    cJSON_Delete(v);
  }
}

/*  Output longer than the first buffer grows, and stays exact. */
KG_TEST(long_values_grow)
{
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < 500; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber(i));
  char *got = kg_pyrepr(a);
  KG_CHECK(got != NULL);
  KG_CHECK(strncmp(got, "[0, 1, 2, ", 10) == 0);
  KG_CHECK(strstr(got, ", 498, 499]") != NULL);
  int n = 0;
  for (const char *p = got; p && *p; p++)
    n += *p == ',';
  KG_CHECK_INT(n, 499);
  free(got);
  cJSON_Delete(a);
}

KG_TEST_MAIN(KG_CASE(literal_table), KG_CASE(long_values_grow))
