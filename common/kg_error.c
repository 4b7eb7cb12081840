/*  kg_error: names and messages for the codes in kg_error.h. */
#include "kg_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *
kg_strerror(int code)
{
  switch (code) {
  case 0:
    return "success";
#define XX(name, msg) case KG_E##name: return msg;
  KG_ERROR_MAP(XX)
#undef XX
  default:
    break;
  }
  if (code < 0 && code > KG_ERROR_BASE)
    return strerror(-code);
  return "unknown error";
}

const char *
kg_errname(int code)
{
  static char buf[32];
  switch (code) {
  case 0:
    return "OK";
#define XX(name, msg) case KG_E##name: return "KG_E" #name;
  KG_ERROR_MAP(XX)
#undef XX
  default:
    break;
  }
#ifdef __GLIBC__
  if (code < 0 && code > KG_ERROR_BASE) {
    const char *n = strerrorname_np(-code);
    if (n)
      return n;
  }
#endif
  snprintf(buf, sizeof buf, "error %d", code);
  return buf;
}

void
kg_errf(char *err, size_t errlen, const char *fmt, ...)
{
  if (!err || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}
