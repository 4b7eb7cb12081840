/*  kg_date: header dates (see kg_date.h). */
#include "kg_date.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>

/*  n digits at *p into *out; advances *p. Strict: no sign, no blanks (which
    sscanf's %d and %lf would take, with "nan" and "35." too). */
static bool
s_digits(const char **p, int n, int *out)
{
  int v = 0;
  for (int i = 0; i < n; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + (c - '0');
  }
  *p += n;
  *out = v;
  return true;
}

/*  One of chars at *p; advances *p. */
static bool
s_expect(const char **p, const char *chars)
{
  if (!**p || !strchr(chars, **p))
    return false;
  (*p)++;
  return true;
}

int64_t
kg_date_ms(const char *iso)
{
  const char *p = iso;
  int Y, M, D, h, m, s, frac_ms = 0;
  if (!p || !s_digits(&p, 4, &Y) || !s_expect(&p, "-") || !s_digits(&p, 2, &M)
      || !s_expect(&p, "-") || !s_digits(&p, 2, &D) || !s_expect(&p, "T ")
      || !s_digits(&p, 2, &h) || !s_expect(&p, ":") || !s_digits(&p, 2, &m)
      || !s_expect(&p, ":") || !s_digits(&p, 2, &s))
    return 0;
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || s > 60)
    return 0;
  if (*p == '.') {
    /* Integer digits, not a double: "35.12" must be 120 ms, not 119. */
    p++;
    int n = 0;
    for (; *p >= '0' && *p <= '9'; p++, n++)
      if (n < 3)
        frac_ms = frac_ms * 10 + (*p - '0');
    if (n == 0 || n > 9)
      return 0;
    for (; n < 3; n++)
      frac_ms *= 10;
  }
  long offset = 0;
  if (*p == 'Z' || *p == 'z')
    p++;
  else if (*p == '+' || *p == '-') {
    int sign = *p++ == '-' ? -1 : 1, oh, om;
    if (!s_digits(&p, 2, &oh) || (*p == ':' && !s_expect(&p, ":")) || !s_digits(&p, 2, &om)
        || oh > 23 || om > 59)
      return 0;
    offset = sign * (oh * 60L + om) * 60L;
  }
  if (*p)
    return 0;
  struct tm tm = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h,
                  .tm_min = m, .tm_sec = s};
  time_t t = timegm(&tm);
  if (t == (time_t) -1 || tm.tm_mday != D)   /* 2026-02-31 would normalise to March */
    return 0;
  return ((int64_t) t - offset) * 1000 + frac_ms;
}

int64_t
kg_date_header_ms(const cJSON *header)
{
  const cJSON *date = cJSON_GetObjectItemCaseSensitive(header, "date");
  return cJSON_IsString(date) ? kg_date_ms(date->valuestring) : 0;
}
