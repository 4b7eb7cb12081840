/*  kg_ckpt_progress: the terminal line and the machine lines. */
#include "kg_ckpt_progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kg_ckpt_ratecap.h"
#include "kg_error.h"
#include "kg_throughput.h"

enum { S_NOTHING = 0, S_LINE = 1, S_MACHINE = 2 };

#define S_LINE_AFTER_NS 1000000000LL     /* only operations over a second */
#define S_REDRAW_NS 250000000LL
#define S_MACHINE_EVERY_NS 1000000000LL

int
kg_ckpt_progress_value(const char *value, kg_ckpt_progress_when_t *when)
{
  if (!value)
    *when = KG_CKPT_PROGRESS_ON;
  else if (strcmp(value, "auto") == 0)
    *when = KG_CKPT_PROGRESS_AUTO;
  else if (strcmp(value, "machine") == 0)
    *when = KG_CKPT_PROGRESS_MACHINE;
  else if (strcmp(value, "none") == 0)
    *when = KG_CKPT_PROGRESS_NONE;
  else
    return KG_EUSAGE;
  return 0;
}

void
kg_ckpt_progress_init(kg_ckpt_progress_t *p, kg_ckpt_progress_when_t when, int fd)
{
  memset(p, 0, sizeof *p);
  p->fd = fd;
  p->after_ns = S_LINE_AFTER_NS;
  const char *after = getenv(KG_CKPT_TEST_PROGRESS_AFTER_ENV);
  if (after && *after) {
    char *end;
    long long ms = strtoll(after, &end, 10);
    if (*end == '\0' && ms >= 0)
      p->after_ns = ms * 1000000LL;
  }
  bool tty = isatty(fd);
  switch (when) {
  case KG_CKPT_PROGRESS_AUTO: p->how = tty ? S_LINE : S_NOTHING; break;
  case KG_CKPT_PROGRESS_ON: p->how = tty ? S_LINE : S_MACHINE; break;
  case KG_CKPT_PROGRESS_MACHINE: p->how = S_MACHINE; break;
  default: p->how = S_NOTHING; break;
  }
}

bool
kg_ckpt_progress_machine(const kg_ckpt_progress_t *p)
{
  return p->how == S_MACHINE;
}

void
kg_ckpt_progress_begin(kg_ckpt_progress_t *p, const char *fmt, ...)
{
  kg_ckpt_progress_end(p);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->what, sizeof p->what, fmt, ap);
  va_end(ap);
  p->start_ns = kg_ckpt_now_ns();
  p->last_ns = 0;
  p->last_done = 0;
  p->seen = false;
}

static void s_write(int fd, const char *s, size_t n);

static void
s_machine_line(kg_ckpt_progress_t *p, uint64_t done, uint64_t total, int64_t now)
{
  char line[64];
  int n = snprintf(line, sizeof line, "kguard-progress %llu %llu\n", (unsigned long long) done,
                   (unsigned long long) total);
  s_write(p->fd, line, (size_t) n);
  p->last_ns = now;
  p->last_done = done;
  p->seen = false;
}

static void
s_write(int fd, const char *s, size_t n)
{
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0)
      return;   /* progress is best effort: never fail the operation */
    s += w;
    n -= (size_t) w;
  }
}

/*  The line, cut to the terminal's width (the label gives way first), so
    that it never wraps and '\r' keeps rewriting the same line. */
static void
s_draw(kg_ckpt_progress_t *p, uint64_t done, uint64_t total, int64_t now)
{
  char nums[160];
  double secs = (double) (now - p->start_ns) / 1e9;
  if (total)
    kg_throughput_text(done, total, secs, 0, nums, sizeof nums);
  else {
    char d[32];
    kg_throughput_bytes((double) done, d, sizeof d);
    snprintf(nums, sizeof nums, "%s so far", d);
  }
  struct winsize ws;
  int cols = ioctl(p->fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  int room = cols - 1 - (int) strlen(nums) - 2;   /* ": " */
  char line[512];
  int n;
  int wl = (int) strlen(p->what);
  if (room >= wl)
    n = snprintf(line, sizeof line, "\r%s: %s\033[K", p->what, nums);
  else if (room >= 8)
    n = snprintf(line, sizeof line, "\r%.*s...: %s\033[K", room - 3, p->what, nums);
  else
    n = snprintf(line, sizeof line, "\r%.*s\033[K", cols > 1 ? cols - 1 : 1, nums);
  if (n > 0)
    s_write(p->fd, line, (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
  p->shown = true;
}

void
kg_ckpt_progress_update(void *arg, uint64_t done, uint64_t total)
{
  kg_ckpt_progress_t *p = arg;
  if (p->how == S_NOTHING)
    return;
  int64_t now = kg_ckpt_now_ns();
  if (p->how == S_MACHINE) {
    bool edge = done == 0 || (total && done >= total);
    if (edge || (now - p->last_ns >= S_MACHINE_EVERY_NS && done != p->last_done)) {
      s_machine_line(p, done, total, now);
    } else {
      p->seen = true;
      p->seen_done = done;
      p->seen_total = total;
    }
    return;
  }
  if (total && done >= total) {   /* read to the end: nothing more to show */
    kg_ckpt_progress_end(p);
    return;
  }
  if (now - p->start_ns < p->after_ns || now - p->last_ns < S_REDRAW_NS)
    return;
  s_draw(p, done, total, now);
  p->last_ns = now;
}

void
kg_ckpt_progress_end(kg_ckpt_progress_t *p)
{
  if (p->how == S_MACHINE && p->seen)
    s_machine_line(p, p->seen_done, p->seen_total, kg_ckpt_now_ns());
  if (p->shown)
    s_write(p->fd, "\r\033[K", 4);
  p->shown = false;
}
