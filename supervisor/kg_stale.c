/*  kg_stale: request dates against the moment a failure became visible. */
#include "kg_stale.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "kg_error.h"

/*  n digits at *p into *out; advances *p. */
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

static bool
s_expect(const char **p, const char *chars)
{
  if (!**p || !strchr(chars, **p))
    return false;
  (*p)++;
  return true;
}

int
kg_stale_parse_date(const char *text, int64_t *ms)
{
  const char *p = text;
  int y, mo, d, h, mi, s, frac_ms = 0;
  if (!p || !s_digits(&p, 4, &y) || !s_expect(&p, "-") || !s_digits(&p, 2, &mo)
      || !s_expect(&p, "-") || !s_digits(&p, 2, &d) || !s_expect(&p, "T ")
      || !s_digits(&p, 2, &h) || !s_expect(&p, ":") || !s_digits(&p, 2, &mi)
      || !s_expect(&p, ":") || !s_digits(&p, 2, &s))
    return KG_EUSAGE;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
    return KG_EUSAGE;
  if (*p == '.') {
    p++;
    int n = 0;
    for (; *p >= '0' && *p <= '9'; p++, n++)
      if (n < 3)
        frac_ms = frac_ms * 10 + (*p - '0');
    if (n == 0 || n > 9)
      return KG_EUSAGE;
    for (; n < 3; n++)
      frac_ms *= 10;
  }
  int offset_min = 0;
  if (*p == 'Z' || *p == 'z')
    p++;
  else if (*p == '+' || *p == '-') {
    int sign = *p++ == '-' ? -1 : 1, oh, om;
    if (!s_digits(&p, 2, &oh) || (*p == ':' && !s_expect(&p, ":")) || !s_digits(&p, 2, &om)
        || oh > 23 || om > 59)
      return KG_EUSAGE;
    offset_min = sign * (oh * 60 + om);
  }
  if (*p)
    return KG_EUSAGE;
  struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                  .tm_hour = h, .tm_min = mi, .tm_sec = s};
  time_t t = timegm(&tm);
  if (t == (time_t) -1 || tm.tm_mday != d)   /* 2026-02-31 normalises to March */
    return KG_EUSAGE;
  *ms = ((int64_t) t - (int64_t) offset_min * 60) * 1000 + frac_ms;
  return 0;
}

kg_stale_t
kg_stale_judge(const char *date, int64_t visible_ms, int64_t slack_ms)
{
  int64_t sent;
  if (!date || kg_stale_parse_date(date, &sent) != 0)
    return KG_STALE_UNKNOWN;
  return sent < visible_ms + (slack_ms > 0 ? slack_ms : 0) ? KG_STALE_YES : KG_STALE_NO;
}
