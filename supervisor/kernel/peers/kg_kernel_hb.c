/*  kg_kernel_hb: the inner kernel's heartbeat, pinged while a request is
    outstanding (see kg_kernel_hb.h). */
#include "kg_kernel_hb.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_error.h"

#define S_PREFIX "kguard-hb "

struct kg_kernel_hb_t {
  void *sock;                   /*  DEALER, owned                             */
  kg_kernel_hb_config_t cfg;
  bool armed;
  bool hung;
  bool answered;                /*  an echo came since the last deadline      */
  int missed;                   /*  deadlines in a row without an echo        */
  uint64_t beats;               /*  echoes counted since arming               */
  uint64_t first_seq;           /*  the first ping of this arming             */
  uint64_t seq;                 /*  the last ping sent (pings ever sent)      */
  int64_t deadline;             /*  next tick, 0 when not armed               */
};

/*  A number in [lo, hi] from text; false for anything else. */
static bool
s_number(const char *text, double lo, double hi, double *out)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !(v >= lo && v <= hi))
    return false;
  *out = v;
  return true;
}

int
kg_kernel_hb_config_env(kg_kernel_hb_config_t *cfg, char *err, size_t errlen)
{
  cfg->period_ms = KG_KHB_PERIOD_MS_DEFAULT;
  cfg->max_missed = KG_KHB_MISSES_DEFAULT;
  const char *p = getenv("KGUARD_KERNEL_HB_PERIOD");
  const char *m = getenv("KGUARD_KERNEL_HB_MISSES");
  double v;
  if (p && *p) {
    if (!s_number(p, KG_KHB_PERIOD_MS_MIN / 1000.0, KG_KHB_PERIOD_MS_MAX / 1000.0, &v)) {
      snprintf(err, errlen, "KGUARD_KERNEL_HB_PERIOD takes seconds from 0.1 to 60, not '%.40s'",
               p);
      return KG_EUSAGE;
    }
    cfg->period_ms = (int64_t) (v * 1000.0 + 0.5);
  }
  if (m && *m) {
    if (!s_number(m, 1, KG_KHB_MISSES_MAX, &v) || v != (double) (int) v) {
      snprintf(err, errlen, "KGUARD_KERNEL_HB_MISSES takes a whole number from 1 to 1000, "
               "not '%.40s'", m);
      return KG_EUSAGE;
    }
    cfg->max_missed = (int) v;
  }
  return 0;
}

kg_kernel_hb_t *
kg_kernel_hb_new(void *zmq_ctx, const char *endpoint, const kg_kernel_hb_config_t *cfg)
{
  kg_kernel_hb_config_t defaults = {KG_KHB_PERIOD_MS_DEFAULT, KG_KHB_MISSES_DEFAULT};
  if (!cfg)
    cfg = &defaults;
  if (!zmq_ctx || !endpoint || cfg->period_ms < KG_KHB_PERIOD_MS_MIN
      || cfg->period_ms > KG_KHB_PERIOD_MS_MAX || cfg->max_missed < 1
      || cfg->max_missed > KG_KHB_MISSES_MAX)
    return NULL;
  kg_kernel_hb_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->cfg = *cfg;
  self->sock = zmq_socket(zmq_ctx, ZMQ_DEALER);
  int zero = 0, hwm = 4;
  if (!self->sock || zmq_setsockopt(self->sock, ZMQ_LINGER, &zero, sizeof zero) != 0
      || zmq_setsockopt(self->sock, ZMQ_SNDHWM, &hwm, sizeof hwm) != 0
      || zmq_connect(self->sock, endpoint) != 0) {
    kg_kernel_hb_destroy(&self);
    return NULL;
  }
  return self;
}

void
kg_kernel_hb_destroy(kg_kernel_hb_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  if ((*self_p)->sock)
    zmq_close((*self_p)->sock);
  free(*self_p);
  *self_p = NULL;
}

void *
kg_kernel_hb_socket(kg_kernel_hb_t *self)
{
  assert(self);
  return self->sock;
}

/*  Send ping number ++seq; a send that would block (a peer that does not
    read) is simply a ping that will not be answered. */
static void
s_ping(kg_kernel_hb_t *self)
{
  assert(self);
  char buf[40];
  int n = snprintf(buf, sizeof buf, S_PREFIX "%llu", (unsigned long long) ++self->seq);
  (void) zmq_send(self->sock, buf, (size_t) n, ZMQ_DONTWAIT);
}

/*  Read every waiting message; an echo of a ping of this arming is a beat.
    Anything else (an echo from before, a stray frame) is ignored. */
static void
s_drain(kg_kernel_hb_t *self)
{
  assert(self);
  char buf[64];
  int n;
  while ((n = zmq_recv(self->sock, buf, sizeof buf - 1, ZMQ_DONTWAIT)) >= 0) {
    int more = 0;
    size_t len = sizeof more;
    while (zmq_getsockopt(self->sock, ZMQ_RCVMORE, &more, &len) == 0 && more) {
      char skip[64];
      if (zmq_recv(self->sock, skip, sizeof skip, ZMQ_DONTWAIT) < 0)
        break;
    }
    if ((size_t) n >= sizeof buf)
      continue;   /* truncated: not one of ours */
    buf[n] = '\0';
    if (strncmp(buf, S_PREFIX, sizeof S_PREFIX - 1) != 0)
      continue;
    char *end = NULL;
    unsigned long long k = strtoull(buf + sizeof S_PREFIX - 1, &end, 10);
    if (*end || k < self->first_seq || k > self->seq)
      continue;
    if (self->armed) {
      self->beats++;
      self->answered = true;
      self->missed = 0;
    }
  }
}

void
kg_kernel_hb_arm(kg_kernel_hb_t *self, bool on, int64_t now_ms)
{
  assert(self);
  if (on == self->armed)
    return;
  /* nothing read here: echoes of an earlier arming are told apart by their
     number (first_seq), so arming costs no system call */
  self->armed = on;
  self->hung = false;
  self->missed = 0;
  self->beats = 0;
  self->answered = false;
  if (!on) {
    self->deadline = 0;
    return;
  }
  /* No ping at arming: a cell that ends within one period (most of them)
     costs the kernel nothing, where a ping per execute woke ipykernel's
     heartbeat thread and kguard's poll on every round trip. The first
     deadline sends the first ping and counts no miss (nothing was asked). */
  self->first_seq = self->seq + 1;
  self->answered = true;
  self->deadline = now_ms + self->cfg.period_ms;
}

void
kg_kernel_hb_read(kg_kernel_hb_t *self)
{
  assert(self);
  s_drain(self);
}

kg_khb_status_t
kg_kernel_hb_tick(kg_kernel_hb_t *self, int64_t now_ms)
{
  if (!self->armed)
    return KG_KHB_IDLE;
  bool crossed = false;
  if (now_ms >= self->deadline) {
    /* the echoes are read where they are judged: between deadlines a tick
       (the loop calls it on every wake-up) makes no system call */
    s_drain(self);
    /* one miss per deadline the loop reaches, not per period elapsed: a
       kguard that was itself delayed does not declare the kernel hung */
    if (!self->answered && ++self->missed >= self->cfg.max_missed && !self->hung)
      self->hung = crossed = true;
    self->answered = false;
    s_ping(self);
    self->deadline = now_ms + self->cfg.period_ms;
  }
  if (crossed)
    return KG_KHB_HUNG;
  return kg_kernel_hb_status(self);
}

kg_khb_status_t
kg_kernel_hb_status(const kg_kernel_hb_t *self)
{
  if (!self->armed)
    return KG_KHB_IDLE;
  return self->hung ? KG_KHB_HUNG : KG_KHB_ALIVE;
}

int
kg_kernel_hb_missed(const kg_kernel_hb_t *self)
{
  assert(self);
  return self->missed;
}

uint64_t
kg_kernel_hb_pings(const kg_kernel_hb_t *self)
{
  assert(self);
  return self->seq;
}

uint64_t
kg_kernel_hb_beats(const kg_kernel_hb_t *self)
{
  assert(self);
  return self->beats;
}

int64_t
kg_kernel_hb_deadline(const kg_kernel_hb_t *self)
{
  assert(self);
  return self->armed ? self->deadline : 0;
}

char *
kg_kernel_hb_describe(const kg_kernel_hb_config_t *cfg, char proc_state)
{
  double seconds = (double) (cfg->period_ms * cfg->max_missed) / 1000.0;
  const char *stopped = proc_state == 'T' ? " (the process is stopped: SIGSTOP)" : "";
  char *text = NULL;
  if (asprintf(&text, "it stopped answering its heartbeat for %.3g s%s", seconds, stopped) < 0)
    return NULL;
  return text;
}
