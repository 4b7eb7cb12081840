/*  kg_json: the string-or-null member and the typed string lookup. */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "kg_json.h"
#include "kg_test.h"

KG_TEST(string_or_null_round_trip)
{
  cJSON *o = cJSON_CreateObject();
  kg_json_add_string_or_null(o, "a", "x\"y");
  kg_json_add_string_or_null(o, "b", NULL);
  kg_json_add_string_or_null(o, "c", "");
  char *text = cJSON_PrintUnformatted(o);
  KG_CHECK_STR(text, "{\"a\":\"x\\\"y\",\"b\":null,\"c\":\"\"}");
  free(text);
  cJSON_Delete(o);
}

/*  Only a string member is returned; missing, null, numbers, objects and a
    non-object give NULL. */
KG_TEST(string_lookup_table)
{
  cJSON *o = cJSON_Parse("{\"s\":\"v\",\"e\":\"\",\"n\":null,\"i\":3,\"o\":{\"s\":\"deep\"},"
                         "\"l\":[\"x\"],\"t\":true}");
  KG_CHECK(o != NULL);
  static const struct {
    const char *key, *want;
  } t[] = {
    {"s", "v"}, {"e", ""}, {"n", NULL}, {"i", NULL}, {"o", NULL},
    {"l", NULL}, {"t", NULL}, {"missing", NULL},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    const char *got = kg_json_string(o, t[i].key);
    if (t[i].want)
      KG_CHECK_STR(got, t[i].want);
    else
      KG_CHECK(got == NULL);
  }
  cJSON *arr = cJSON_GetObjectItem(o, "l");
  KG_CHECK(kg_json_string(arr, "s") == NULL);
  KG_CHECK(kg_json_string(NULL, "s") == NULL);
  cJSON_Delete(o);
}

KG_TEST_MAIN(KG_CASE(string_or_null_round_trip), KG_CASE(string_lookup_table))
