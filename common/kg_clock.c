/*  kg_clock: monotonic and wall-clock milliseconds, ISO 8601 formatting. */
#include "kg_clock.h"

#include <stdio.h>
#include <time.h>

static int64_t
s_ms(clockid_t clock)
{
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
kg_clock_mono_ms(void)
{
  return s_ms(CLOCK_MONOTONIC);
}

int64_t
kg_clock_wall_ms(void)
{
  return s_ms(CLOCK_REALTIME);
}

char *
kg_clock_iso_ms(int64_t ms, char *buf, size_t size)
{
  /* Floor division, so -1 ms is 1969-12-31T23:59:59.999Z. */
  time_t sec = (time_t) (ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  int milli = (int) (ms - (int64_t) sec * 1000);
  struct tm tm;
  gmtime_r(&sec, &tm);
  size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
  if (n > 0)
    snprintf(buf + n, size - n, ".%03dZ", milli);
  return buf;
}

char *
kg_clock_local_ms(int64_t ms, char *buf, size_t size)
{
  if (size == 0)
    return buf;
  time_t sec = (time_t) (ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  int milli = (int) (ms - (int64_t) sec * 1000);
  struct tm tm;
  buf[0] = '\0';
  if (!localtime_r(&sec, &tm))
    return kg_clock_iso_ms(ms, buf, size);
  char zone[16] = "";
  strftime(zone, sizeof zone, "%Z", &tm);
  size_t n = strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
  if (n > 0)
    snprintf(buf + n, size - n, ".%03d%s%s", milli, zone[0] ? " " : "", zone);
  return buf;
}
