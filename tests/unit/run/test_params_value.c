/*  Unit tests of kg_params_value, by table. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_params_value.h"
#include "kg_test.h"

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

KG_TEST_MAIN(KG_CASE(params_value_table))
