/*  kg_pyrepr: JSON values as Python literals. See kg_pyrepr.h. */
#include "kg_pyrepr.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *buf;
  size_t len, alloc;
  bool failed;
} s_text_t;

static void
s_put(s_text_t *t, const char *s)
{
  size_t n = strlen(s);
  if (t->failed)
    return;
  if (t->len + n + 1 > t->alloc) {
    size_t a = t->alloc ? t->alloc : 256;
    while (a < t->len + n + 1)
      a *= 2;
    char *b = realloc(t->buf, a);
    if (!b) {
      t->failed = true;
      return;
    }
    t->buf = b;
    t->alloc = a;
  }
  memcpy(t->buf + t->len, s, n + 1);
  t->len += n;
}

/*  The shortest %g that reads back as v, with a '.' or an exponent so that
    Python sees a float. */
static void
s_put_float(s_text_t *t, double v)
{
  char num[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(num, sizeof num, "%.*g", prec, v);
    if (strtod(num, NULL) == v)
      break;
  }
  if (!strpbrk(num, ".eEn"))
    strcat(num, ".0");
  s_put(t, num);
}

static void
s_put_value(s_text_t *t, const cJSON *v)
{
  if (cJSON_IsNull(v))
    s_put(t, "None");
  else if (cJSON_IsTrue(v))
    s_put(t, "True");
  else if (cJSON_IsFalse(v))
    s_put(t, "False");
  else if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (d >= -9007199254740992.0 && d <= 9007199254740992.0 && d == (double) (long long) d) {
      char num[32];
      snprintf(num, sizeof num, "%lld", (long long) d);
      s_put(t, num);
    }
    else
      s_put_float(t, d);
  }
  else if (cJSON_IsString(v)) {
    /*  JSON's string escapes (\" \\ \b \f \n \r \t \u00XX) mean the same in
        a Python string literal, and cJSON never writes "\/". */
    char *s = cJSON_PrintUnformatted(v);
    if (!s)
      t->failed = true;
    else
      s_put(t, s);
    cJSON_free(s);
  }
  else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
    bool obj = cJSON_IsObject(v);
    s_put(t, obj ? "{" : "[");
    for (const cJSON *item = v->child; item; item = item->next) {
      if (item != v->child)
        s_put(t, ", ");
      if (obj) {
        cJSON *key = cJSON_CreateString(item->string);
        if (!key)
          t->failed = true;
        else
          s_put_value(t, key);
        cJSON_Delete(key);
        s_put(t, ": ");
      }
      s_put_value(t, item);
    }
    s_put(t, obj ? "}" : "]");
  }
  else
    t->failed = true;
}

char *
kg_pyrepr(const cJSON *value)
{
  s_text_t t = {0};
  s_put_value(&t, value);
  if (t.failed) {
    free(t.buf);
    return NULL;
  }
  return t.buf;
}
