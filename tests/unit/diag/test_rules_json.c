/*  kg_rules_json: the rules file's readers kg_classifier is loaded with. */
#include <cjson/cJSON.h>
#include <string.h>

#include "kg_diag_report.h"
#include "kg_diagnosis.h"
#include "kg_errrecord.h"
#include "kg_error.h"
#include "kg_rules_json.h"
#include "kg_signs.h"
#include "kg_streamset.h"
#include "kg_test.h"
#include "kg_trail.h"

KG_TEST(rules_json_family_fields_and_messages)
{
  static const struct {
    const char *json;
    int rc;
    const char *err;   /* a substring of the message; NULL: success */
  } t[] = {
    {"{\"id\":\"a\",\"title\":\"T\",\"first_check\":\"F\",\"avoid\":\"A\",\"sticky\":true,"
     "\"hints\":{\"cuda\":\"CUDA_LAUNCH_BLOCKING=1\",\"any\":\"h\"}}", 0, NULL},
    {"[]", KG_ERULES, "families[3]: must be an object"},
    {"{\"title\":\"T\"}", KG_ERULES, "families[3]: missing field \"id\""},
    {"{\"id\":\"\",\"title\":\"T\"}", KG_ERULES, "field \"id\" must be a non-empty string"},
    {"{\"id\":\"a\",\"title\":\"T\",\"first_check\":\"F\",\"avoid\":\"A\"}", KG_ERULES,
     "families[3] (\"a\"): field \"sticky\" must be true or false"},
    {"{\"id\":\"a\",\"title\":\"T\",\"first_check\":\"F\",\"avoid\":\"A\",\"sticky\":false,"
     "\"hints\":[]}", KG_ERULES, "field \"hints\" must be an object"},
    {"{\"id\":\"a\",\"title\":\"T\",\"first_check\":\"F\",\"avoid\":\"A\",\"sticky\":false,"
     "\"hints\":{\"rocm\":\"set CUDA_LAUNCH_BLOCKING=1\"}}", KG_ERULES,
     "families[3].hints: field \"rocm\" names CUDA_LAUNCH_BLOCKING"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *obj = cJSON_Parse(t[i].json);
    KG_CHECK(obj != NULL);
    kg_family_t f;
    memset(&f, 0, sizeof f);
    char err[256] = "";
    int rc = kg_rules_json_family(obj, 3, &f, err, sizeof err);
    if (rc != t[i].rc || (t[i].err && !strstr(err, t[i].err)))
      fprintf(stderr, "row %zu: rc %d, err '%s'\n", i, rc, err);
    KG_CHECK_INT(rc, t[i].rc);
    if (t[i].err)
      KG_CHECK(strstr(err, t[i].err) != NULL);
    kg_rules_json_family_clear(&f);
    cJSON_Delete(obj);
  }
  /* The first row, read in full. */
  cJSON *obj = cJSON_Parse(t[0].json);
  kg_family_t f;
  memset(&f, 0, sizeof f);
  char err[256] = "";
  KG_CHECK_INT(kg_rules_json_family(obj, 0, &f, err, sizeof err), 0);
  KG_CHECK_STR(f.id, "a");
  KG_CHECK_STR(f.avoid, "A");
  KG_CHECK(f.sticky);
  KG_CHECK_STR(f.hint_cuda, "CUDA_LAUNCH_BLOCKING=1");
  KG_CHECK(f.hint_rocm == NULL);
  KG_CHECK_STR(f.hint_any, "h");
  kg_rules_json_family_clear(&f);
  cJSON_Delete(obj);
}

KG_TEST(rules_json_string_lists)
{
  static const struct {
    const char *json;
    int rc;
    size_t n;          /* strings read, on success */
  } t[] = {
    {"[\"a\", \"b\"]", 0, 2},
    {"[]", KG_ERULES, 0},
    {"[\"a\", \"\"]", KG_ERULES, 0},
    {"[\"a\", 3]", KG_ERULES, 0},
    {"\"a\"", KG_ERULES, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *arr = cJSON_Parse(t[i].json);
    char **v = NULL, err[256] = "";
    int rc = kg_rules_json_strv(arr, "rules[1]", "any", &v, err, sizeof err);
    KG_CHECK_INT(rc, t[i].rc);
    if (rc == 0) {
      size_t n = 0;
      while (v[n])
        n++;
      KG_CHECK_INT(n, t[i].n);
    } else {
      KG_CHECK(v == NULL);
      KG_CHECK(strstr(err, "rules[1]: field \"match.any\"") != NULL);
    }
    kg_rules_json_strv_free(v);
    cJSON_Delete(arr);
  }
}

KG_TEST_MAIN(KG_CASE(rules_json_family_fields_and_messages), KG_CASE(rules_json_string_lists))
