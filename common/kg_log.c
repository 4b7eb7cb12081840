/*  kg_log: levelled, timestamped log lines to stderr and an optional file. */
#include "kg_log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "kg_opt.h"

static kg_log_level_t s_level = KG_LOG_NOTICE;
static int s_plain;
static const char *s_ident = "kguard";
static FILE *s_file;

void
kg_log_set_level(kg_log_level_t level)
{
  s_level = level;
}

kg_log_level_t
kg_log_get_level(void)
{
  return s_level;
}

void
kg_log_init(const char *ident)
{
  static const char *names[] = {"error", "warning", "notice", "info", "debug"};
  const char *env = getenv("KGUARD_LOG_LEVEL");
  if (ident)
    s_ident = ident;
  if (!env)
    return;
  for (int i = 0; i < 5; i++)
    if (strcasecmp(env, names[i]) == 0)
      s_level = (kg_log_level_t) i;
}

void
kg_log_set_plain(int plain)
{
  s_plain = plain;
}

void
kg_log_set_file(FILE *file)
{
  s_file = file;
}

static void
s_emit(FILE *out, const char *stamp, char letter, const char *text)
{
  fprintf(out, "%s %s[%ld] %c: %s\n", stamp, s_ident, (long) getpid(), letter, text);
  fflush(out);
}

void
kg_log(kg_log_level_t level, const char *fmt, ...)
{
  if (level > s_level)
    return;
  char text[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);

  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char stamp[40];
  size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", ts.tv_nsec / 1000000);

  char letter = "EWNID"[level];
  if (s_plain) {
    fprintf(stderr, "%s: %s%s\n", kg_opt_prog(), level == KG_LOG_WARNING ? "warning: " : "",
            text);
    fflush(stderr);
  } else
    s_emit(stderr, stamp, letter, text);
  if (s_file)
    s_emit(s_file, stamp, letter, text);
}
