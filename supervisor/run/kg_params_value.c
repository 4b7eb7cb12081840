/*  kg_params_value: the text of one parameter value read as papermill and
    PyYAML would (contracts in kg_params_value.h). Pure: no state. */
#include "kg_params_value.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

/*  [+-]?digits: the length of the sign, or -1 if text is not that. */
static int
s_int_sign(const char *text)
{
  int sign = text[0] == '+' || text[0] == '-';
  if (!text[sign])
    return -1;
  for (const char *p = text + sign; *p; p++) {
    if (!isdigit((unsigned char) *p))
      return -1;
  }
  return sign;
}

/*  [+-]? (digits . digits? | . digits | digits) ([eE] [+-]? digits)?, with
    a '.' or an exponent (else it is an integer); need_dot: only with a '.'
    (YAML 1.1's float, as PyYAML reads it). */
static bool
s_is_float(const char *text, bool need_dot)
{
  const char *p = text;
  if (*p == '+' || *p == '-')
    p++;
  size_t whole = strspn(p, "0123456789");
  p += whole;
  bool dot = *p == '.';
  size_t frac = 0;
  if (dot) {
    p++;
    frac = strspn(p, "0123456789");
    p += frac;
  }
  if (whole + frac == 0)
    return false;
  bool exp = *p == 'e' || *p == 'E';
  if (exp) {
    p++;
    if (*p == '+' || *p == '-')
      p++;
    size_t e = strspn(p, "0123456789");
    if (e == 0)
      return false;
    p += e;
  }
  return *p == '\0' && (dot || (exp && !need_dot));
}

/*  An integer's Python literal: sign and digits without leading zeros
    ("007" is a syntax error in Python 3). */
static char *
s_int_literal(const char *text, int sign)
{
  const char *d = text + sign;
  while (d[0] == '0' && d[1])
    d++;
  size_t n = strlen(d);
  char *out = malloc(n + 2);
  if (out)
    snprintf(out, n + 2, "%s%s", text[0] == '-' && strcmp(d, "0") != 0 ? "-" : "", d);
  return out;
}

/*  Hand x and lit to the caller, or free lit when x could not be made. */
static int
s_out(cJSON **value, char **literal, cJSON *x, char *lit)
{
  *value = x;
  *literal = x ? lit : NULL;
  if (!x) {
    free(lit);
    return KG_ENOMEM;
  }
  return 0;
}

int
kg_params_scalar(const char *text, bool yaml, cJSON **value, char **literal)
{
  static const char *yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char *no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  static const char *nul[] = {"null", "Null", "NULL", "~", ""};
  *value = NULL;
  *literal = NULL;
  size_t nwords = yaml ? sizeof yes / sizeof yes[0] : 0;
  for (size_t i = 0; i < nwords; i++) {
    if (strcmp(text, yes[i]) == 0)
      return s_out(value, literal, cJSON_CreateTrue(), NULL);
    if (strcmp(text, no[i]) == 0)
      return s_out(value, literal, cJSON_CreateFalse(), NULL);
  }
  for (size_t i = 0; yaml && i < sizeof nul / sizeof nul[0]; i++) {
    if (strcmp(text, nul[i]) == 0)
      return s_out(value, literal, cJSON_CreateNull(), NULL);
  }
  if (!yaml && strcmp(text, "True") == 0)
    return s_out(value, literal, cJSON_CreateTrue(), NULL);
  if (!yaml && strcmp(text, "False") == 0)
    return s_out(value, literal, cJSON_CreateFalse(), NULL);
  if (!yaml && strcmp(text, "None") == 0)
    return s_out(value, literal, cJSON_CreateNull(), NULL);
  int sign = s_int_sign(text);
  if (sign >= 0) {
    char *lit = s_int_literal(text, sign);
    if (!lit)
      return KG_ENOMEM;
    return s_out(value, literal, cJSON_CreateNumber(strtod(text, NULL)), lit);
  }
  if (s_is_float(text, yaml)) {
    double v = strtod(text, NULL);
    /*  1e999 is inf in Python, and JSON has no inf: the notebook could not
        record what the kernel got. Almost surely a typo; refused. */
    if (v - v != 0)
      return KG_EUSAGE;
    char *lit = strdup(text);
    if (!lit)
      return KG_ENOMEM;
    return s_out(value, literal, cJSON_CreateNumber(v), lit);
  }
  return s_out(value, literal, cJSON_CreateString(text), NULL);
}

/*  v starts with a quote: the quoted string, then only blanks or a comment.
    v is edited in place. */
static int
s_yaml_quoted(char *v, cJSON **value, const char **what)
{
  char q = *v;
  char *end = v + 1;
  while (*end) {
    if (*end == q && q == '\'' && end[1] == '\'')
      end += 2;                 /*  '' inside '...' is one quote           */
    else if (*end == q)
      break;
    else if (q == '"' && *end == '\\' && end[1])
      end += 2;
    else
      end++;
  }
  if (*end != q) {
    *what = "an unterminated quoted string";
    return KG_EUSAGE;
  }
  char *rest = end + 1;
  rest += strspn(rest, " \t");
  if (*rest && *rest != '#') {
    *what = "text after a quoted string";
    return KG_EUSAGE;
  }
  end[1] = '\0';
  if (q == '"') {
    *value = cJSON_Parse(v);
    if (!*value) {
      *what = "a double-quoted string with escapes JSON does not have";
      return KG_EUSAGE;
    }
    return 0;
  }
  /*  'it''s' is it's. */
  char *out = v;
  for (char *p = v + 1; p < end; p++) {
    *out++ = *p;
    if (*p == '\'')
      p++;
  }
  *out = '\0';
  *value = cJSON_CreateString(v);
  return *value ? 0 : KG_ENOMEM;
}

/*  An unquoted value: its " #" comment and trailing blanks cut, then a JSON
    flow list or map, a construct kguard does not read, or a plain scalar. */
static int
s_yaml_unquoted(char *v, cJSON **value, bool *plain, const char **what)
{
  for (char *p = v; *p; p++) {
    if (*p == '#' && (p == v || p[-1] == ' ' || p[-1] == '\t')) {
      *p = '\0';
      break;
    }
  }
  size_t n = strlen(v);
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
    v[--n] = '\0';
  if (*v == '[' || *v == '{') {
    *value = cJSON_Parse(v);
    if (!*value) {
      *what = "a flow list or map that is not JSON (write it as JSON, or use a .json "
              "file)";
      return KG_EUSAGE;
    }
    return 0;
  }
  if (*v == '|' || *v == '>') {
    *what = "a block scalar (| or >)";
    return KG_EUSAGE;
  }
  if (*v == '&' || *v == '*' || *v == '!' || *v == '@' || *v == '`' || *v == '%') {
    *what = *v == '&' ? "an anchor" : *v == '*' ? "an alias" : *v == '!' ? "a tag"
            : "a reserved character";
    return KG_EUSAGE;
  }
  if ((v[0] == '-' && (v[1] == ' ' || !v[1])) || strstr(v, ": ")) {
    *what = "a nested list or map";
    return KG_EUSAGE;
  }
  *plain = true;
  return 0;
}

int
kg_params_yaml_value(char *v, cJSON **value, bool *plain, const char **what)
{
  *value = NULL;
  *plain = false;
  while (*v == ' ' || *v == '\t')
    v++;
  if (*v == '"' || *v == '\'')
    return s_yaml_quoted(v, value, what);
  return s_yaml_unquoted(v, value, plain, what);
}
