/*  kg_helper: one bounded helper child (see kg_helper.h). */
#include "kg_helper.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_child.h"
#include "kg_error.h"
#include "kg_log.h"
#include "kg_throughput.h"

#define S_REAP_AGAIN_MS 5000   /* a killed helper not reaped by then is looked at again */
/*  A child that closed both pipes is ending but may not be reapable yet;
    with nothing left to poll, the deadline looks again this soon, so a
    caller without SIGCHLD (kguard run's checkpoint choice) never waits for
    the stall deadline to learn that it ended. */
#define S_REAP_POLL_MS 10

#define S_LINE_MAX 4096   /* a longer stderr line is logged in pieces */

struct kg_helper_t {
  char *name;
  size_t out_cap;
  int64_t stall_ms;
  kg_child_t *child;
  bool ended;                   /*  reaped and drained, reported by the pump  */
  int status;
  bool stalled;
  int64_t deadline_ms;
  int64_t reap_at_ms;           /*  pipes closed, not reaped: look then (0 no) */
  int64_t started_ms;
  char *out;                    /*  stdout, at most out_cap bytes            */
  size_t out_len;
  size_t out_dropped;
  char line[S_LINE_MAX + 1];    /*  kguard's own helper's stderr, not a peer */
  size_t line_len;
  bool has_progress;
  int64_t done, total, progress_ms;
};

kg_helper_t *
kg_helper_new(const char *name, size_t out_cap, int64_t stall_ms)
{
  kg_helper_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->name = strdup(name ? name : "helper");
  if (!self->name) {
    free(self);
    return NULL;
  }
  self->out_cap = out_cap;
  self->stall_ms = stall_ms > 0 ? stall_ms : KG_HELPER_STALL_MS_DEFAULT;
  return self;
}

static void
s_forget(kg_helper_t *self)
{
  assert(self);
  kg_child_destroy(&self->child);
  free(self->out);
  self->out = NULL;
  self->out_len = self->out_dropped = self->line_len = 0;
  self->ended = self->stalled = self->has_progress = false;
  self->status = 0;
  self->deadline_ms = self->reap_at_ms = 0;
}

void
kg_helper_destroy(kg_helper_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  s_forget(*self_p);
  free((*self_p)->name);
  free(*self_p);
  *self_p = NULL;
}

int
kg_helper_start(kg_helper_t *self, char *const *argv, char *const *envp, int64_t now_ms)
{
  assert(self);
  s_forget(self);
  kg_child_opts_t opts = {.argv = argv, .envp = envp, .capture = true};
  int rc = kg_child_spawn(&opts, &self->child);
  if (rc) {
    kg_warning("unable to start the %s (%s): %s", self->name, argv[0], kg_strerror(rc));
    return rc;
  }
  self->started_ms = now_ms;
  self->deadline_ms = now_ms + self->stall_ms;
  return 0;
}

bool
kg_helper_running(const kg_helper_t *self)
{
  return self->child && !self->ended;
}

int
kg_helper_fd(const kg_helper_t *self, int which)
{
  assert(self);
  if (!kg_helper_running(self))
    return -1;
  return which == 1 ? kg_child_stdout_fd(self->child) : kg_child_stderr_fd(self->child);
}

bool
kg_helper_parse_progress(const char *line, int64_t *done, int64_t *total)
{
  static const char tag[] = "kguard-progress ";
  if (strncmp(line, tag, sizeof tag - 1) != 0)
    return false;
  const char *p = line + sizeof tag - 1;
  char *end = NULL;
  errno = 0;
  long long d = strtoll(p, &end, 10);
  if (errno || end == p || *end != ' ')
    return false;
  p = end + 1;
  long long t = strtoll(p, &end, 10);
  if (errno || end == p || (*end && *end != '\r'))
    return false;
  if (d < 0 || t < 0 || (t > 0 && d > t))
    return false;
  *done = d;
  *total = t;
  return true;
}

static void
s_line(kg_helper_t *self, int64_t now_ms)
{
  assert(self);
  self->line[self->line_len] = '\0';
  int64_t d, t;
  if (kg_helper_parse_progress(self->line, &d, &t)) {
    self->has_progress = true;
    self->done = d;
    self->total = t;
    self->progress_ms = now_ms;
  } else if (self->line_len)
    kg_info("%s: %s", self->name, self->line);
  self->line_len = 0;
}

static void
s_stderr(kg_helper_t *self, const char *buf, size_t n, int64_t now_ms)
{
  assert(self);
  for (size_t i = 0; i < n; i++) {
    if (buf[i] == '\n') {
      s_line(self, now_ms);
      continue;
    }
    if (self->line_len == S_LINE_MAX)
      s_line(self, now_ms);
    self->line[self->line_len++] = buf[i];
  }
}

static void
s_stdout(kg_helper_t *self, const char *buf, size_t n)
{
  assert(self);
  if (self->out_len + n > self->out_cap) {
    self->out_dropped += n;
    return;
  }
  char *g = realloc(self->out, self->out_len + n + 1);
  if (!g) {
    self->out_dropped += n;
    return;
  }
  self->out = g;
  memcpy(self->out + self->out_len, buf, n);
  self->out_len += n;
  self->out[self->out_len] = '\0';
}

/*  Read both pipes until nothing is there; true if any byte came. */
static bool
s_read(kg_helper_t *self, int64_t now_ms)
{
  assert(self);
  char buf[8192];
  bool got = false;
  for (int which = 1; which <= 2; which++)
    for (;;) {
      ssize_t n = kg_child_read(self->child, which, buf, sizeof buf);
      if (n <= 0)
        break;
      got = true;
      if (which == 1)
        s_stdout(self, buf, (size_t) n);
      else
        s_stderr(self, buf, (size_t) n, now_ms);
    }
  return got;
}

bool
kg_helper_pump(kg_helper_t *self, int64_t now_ms)
{
  assert(self);
  if (!kg_helper_running(self))
    return false;
  if (s_read(self, now_ms) && !self->stalled)
    self->deadline_ms = now_ms + self->stall_ms;
  if (kg_child_reap(self->child) != 1) {
    if (kg_child_stdout_fd(self->child) < 0 && kg_child_stderr_fd(self->child) < 0)
      self->reap_at_ms = now_ms + S_REAP_POLL_MS;
    return false;
  }
  self->reap_at_ms = 0;
  s_read(self, now_ms);   /* what it wrote just before it ended */
  if (self->line_len)
    s_line(self, now_ms);
  if (self->out_dropped)
    kg_warning("%s: %zu byte(s) of output beyond %zu dropped", self->name, self->out_dropped,
               self->out_cap);
  self->status = kg_child_status(self->child);
  self->ended = true;
  self->deadline_ms = 0;
  return true;
}

int64_t
kg_helper_deadline(const kg_helper_t *self)
{
  assert(self);
  if (!kg_helper_running(self))
    return 0;
  return self->reap_at_ms && self->reap_at_ms < self->deadline_ms ? self->reap_at_ms
                                                                  : self->deadline_ms;
}

bool
kg_helper_timers(kg_helper_t *self, int64_t now_ms)
{
  assert(self);
  if (!kg_helper_running(self))
    return false;
  if (now_ms < self->deadline_ms) {
    /* Only the look for an ending child: the caller's pump reaps it; until
       then look again, never at a deadline already past. */
    if (self->reap_at_ms && now_ms >= self->reap_at_ms)
      self->reap_at_ms = now_ms + S_REAP_POLL_MS;
    return false;
  }
  if (!self->stalled)
    kg_warning("%s wrote nothing for %" PRId64 " s: killed", self->name,
               self->stall_ms / 1000);
  self->stalled = true;
  kg_child_kill_group(self->child, SIGKILL);
  self->deadline_ms = now_ms + S_REAP_AGAIN_MS;   /* look again if it is not reaped */
  return true;
}

const char *
kg_helper_out(const kg_helper_t *self)
{
  assert(self);
  return self->out ? self->out : "";
}

int
kg_helper_status(const kg_helper_t *self)
{
  assert(self);
  return self->status;
}

bool
kg_helper_stalled(const kg_helper_t *self)
{
  assert(self);
  return self->stalled;
}

bool
kg_helper_progress(const kg_helper_t *self, int64_t *done, int64_t *total, int64_t *started_ms,
                   int64_t *at_ms)
{
  if (!self->has_progress)
    return false;
  if (done)
    *done = self->done;
  if (total)
    *total = self->total;
  if (started_ms)
    *started_ms = self->started_ms;
  if (at_ms)
    *at_ms = self->progress_ms;
  return true;
}

bool
kg_helper_progress_text(const kg_helper_t *self, int64_t now_ms, char *buf, size_t len)
{
  assert(self);
  if (len)
    buf[0] = '\0';
  if (!self->has_progress || !len)
    return false;
  double secs = (double) (self->progress_ms - self->started_ms) / 1000.0;
  kg_throughput_text(self->done, self->total, secs, (double) (now_ms - self->progress_ms) / 1000.0,
                   buf, len);
  return true;
}
