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

/*  snprintf's len for a line written into a buffer of cap: the length
    to write, a cut line still ending with its newline (0: nothing). */
static size_t
s_fit(char *line, int len, size_t cap)
{
  if (len < 0)
    return 0;
  if ((size_t) len >= cap) {
    len = (int) cap - 1;
    line[len - 1] = '\n';
  }
  return (size_t) len;
}

/*  One line to stderr, or to the sink that stands for it. */
static void
s_to_stderr(const char *line, size_t len)
{
  if (s_sink)
    s_sink(s_sink_arg, line, len);
  else {
    fwrite(line, 1, len, stderr);
    fflush(stderr);
  }
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
  /* The timestamped line: stderr's unless plain, and always the file's. */
  char line[2300];
  size_t len = s_fit(line, snprintf(line, sizeof line, "%s %s[%ld] %c: %s\n", stamp, s_ident,
                                    (long) getpid(), letter, text),
                     sizeof line);
  if (s_plain) {
    char plain[2300];
    s_to_stderr(plain, s_fit(plain, snprintf(plain, sizeof plain, "%s: %s%s\n", kg_opt_prog(),
                                             level == KG_LOG_WARNING ? "warning: " : "", text),
                             sizeof plain));
  } else
    s_to_stderr(line, len);
  if (s_file) {
    fwrite(line, 1, len, s_file);
    fflush(s_file);
  }
}
