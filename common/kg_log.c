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
static kg_log_sink_fn *s_sink;
static void *s_sink_arg;

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

void
kg_log_set_sink(kg_log_sink_fn *sink, void *arg)
{
  s_sink = sink;
  s_sink_arg = arg;
}

/*  One line (snprintf's len into a buffer of cap) to stderr, or to the sink
    that stands for it; a cut line still ends with its newline. */
static void
s_to_stderr(char *line, int len, size_t cap)
{
  if (len < 0)
    return;
  if ((size_t) len >= cap) {
    len = (int) cap - 1;
    line[len - 1] = '\n';
  }
  if (s_sink)
    s_sink(s_sink_arg, line, (size_t) len);
  else {
    fwrite(line, 1, (size_t) len, stderr);
    fflush(stderr);
  }
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
  char line[2300];
  if (s_plain)
    s_to_stderr(line, snprintf(line, sizeof line, "%s: %s%s\n", kg_opt_prog(),
                               level == KG_LOG_WARNING ? "warning: " : "", text),
                sizeof line);
  else
    s_to_stderr(line, snprintf(line, sizeof line, "%s %s[%ld] %c: %s\n", stamp, s_ident,
                               (long) getpid(), letter, text),
                sizeof line);
  if (s_file)
    s_emit(s_file, stamp, letter, text);
}
