/*  kg_loop: the reactor (see kg_loop.h). */
#include "kg_loop.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"

typedef enum { S_FD, S_SOCKET, S_TIMER, S_SIGNALS } s_kind_t;

typedef struct {
  int id;                       /*  > 0; 0 once removed                       */
  s_kind_t kind;
  int events;                   /*  KG_LOOP_IN | KG_LOOP_OUT asked for        */
  void *arg;
  /* readers and writers */
  kg_loop_io_fn *io;
  kg_loop_fd_of_fn *fd_of;      /*  or NULL: fd is fixed                      */
  kg_loop_socket_of_fn *socket_of; /* or NULL: socket is fixed                */
  int fd;                       /*  polled: the fd, or the socket's ZMQ_FD    */
  void *socket;                 /*  S_SOCKET: the socket polled               */
  bool check;                   /*  S_SOCKET: ask ZMQ_EVENTS before waiting   */
  /* timers */
  kg_loop_timer_fn *timer;
  kg_loop_when_fn *when;        /*  or NULL: deadline is set                  */
  int64_t deadline;             /*  0: not armed                              */
  /* signals */
  kg_sigsrc_t *sig;
  kg_loop_signal_fn *signal;
  /* this iteration */
  int slot;                     /*  its index in the poll array, or -1        */
  int ready;                    /*  events to dispatch                        */
} s_source_t;

struct kg_loop_t {
  s_source_t *src;              /*  in registration order                     */
  size_t count, cap;
  struct pollfd *pfd;           /*  the poll array, rebuilt per iteration     */
  size_t pfd_cap;
  int next_id;
  bool stopped;                 /*  a handler asked to stop                   */
  bool removed;                 /*  a removed entry waits to be compacted     */
  kg_loop_clock_fn *clock;      /*  NULL: CLOCK_MONOTONIC                     */
  void *clock_arg;
};

kg_loop_t *
kg_loop_new(void)
{
  kg_loop_t *self = calloc(1, sizeof *self);
  if (self)
    self->next_id = 1;
  return self;
}

void
kg_loop_destroy(kg_loop_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free((*self_p)->src);
  free((*self_p)->pfd);
  free(*self_p);
  *self_p = NULL;
}

void
kg_loop_set_clock(kg_loop_t *self, kg_loop_clock_fn *clock, void *arg)
{
  assert(self);
  self->clock = clock;
  self->clock_arg = arg;
}

int64_t
kg_loop_now(kg_loop_t *self)
{
  assert(self);
  return self->clock ? self->clock(self->clock_arg) : kg_clock_mono_ms();
}

/* ------------------------------------------------------------------------
   Registrations. */

static s_source_t *
s_add(kg_loop_t *self, s_kind_t kind, void *arg)
{
  if (self->count == self->cap) {
    size_t cap = self->cap ? self->cap * 2 : 16;
    s_source_t *src = realloc(self->src, cap * sizeof *src);
    if (!src)
      return NULL;
    self->src = src;
    self->cap = cap;
  }
  s_source_t *s = &self->src[self->count++];
  *s = (s_source_t){.id = self->next_id++, .kind = kind, .arg = arg, .fd = -1, .slot = -1};
  return s;
}

static s_source_t *
s_find(kg_loop_t *self, int id)
{
  for (size_t i = 0; id > 0 && i < self->count; i++)
    if (self->src[i].id == id)
      return &self->src[i];
  return NULL;
}

/*  The ZMQ_FD of socket, or -1. */
static int
s_zmq_fd(void *socket)
{
  int fd = -1;
  size_t len = sizeof fd;
  if (!socket || zmq_getsockopt(socket, ZMQ_FD, &fd, &len) != 0)
    return -1;
  return fd;
}

int
kg_loop_fd(kg_loop_t *self, int fd, int events, kg_loop_io_fn *fn, void *arg)
{
  assert(self);
  assert(fn);
  s_source_t *s = s_add(self, S_FD, arg);
  if (!s)
    return KG_ENOMEM;
  s->fd = fd;
  s->events = events;
  s->io = fn;
  return s->id;
}

int
kg_loop_fd_of(kg_loop_t *self, kg_loop_fd_of_fn *fd_of, int events, kg_loop_io_fn *fn,
              void *arg)
{
  assert(self);
  assert(fd_of && fn);
  s_source_t *s = s_add(self, S_FD, arg);
  if (!s)
    return KG_ENOMEM;
  s->fd_of = fd_of;
  s->events = events;
  s->io = fn;
  return s->id;
}

int
kg_loop_socket(kg_loop_t *self, void *socket, int events, kg_loop_io_fn *fn, void *arg)
{
  assert(self);
  assert(socket && fn);
  s_source_t *s = s_add(self, S_SOCKET, arg);
  if (!s)
    return KG_ENOMEM;
  s->socket = socket;
  s->fd = s_zmq_fd(socket);
  s->check = true;   /* it may hold messages already */
  s->events = events;
  s->io = fn;
  return s->id;
}

int
kg_loop_socket_of(kg_loop_t *self, kg_loop_socket_of_fn *socket_of, int events,
                  kg_loop_io_fn *fn, void *arg)
{
  assert(self);
  assert(socket_of && fn);
  s_source_t *s = s_add(self, S_SOCKET, arg);
  if (!s)
    return KG_ENOMEM;
  s->socket_of = socket_of;
  s->events = events;
  s->io = fn;
  return s->id;
}

int
kg_loop_set_events(kg_loop_t *self, int id, int events)
{
  assert(self);
  s_source_t *s = s_find(self, id);
  if (!s || (s->kind != S_FD && s->kind != S_SOCKET))
    return KG_ENOTFOUND;
  if (s->kind == S_SOCKET && (events & ~s->events))
    s->check = true;   /* newly asked for: no edge will announce it */
  s->events = events;
  return 0;
}

void
kg_loop_sent(kg_loop_t *self, void *socket)
{
  assert(self);
  for (size_t i = 0; socket && i < self->count; i++)
    if (self->src[i].kind == S_SOCKET && self->src[i].socket == socket)
      self->src[i].check = true;
}

int
kg_loop_timer(kg_loop_t *self, int64_t deadline_ms, kg_loop_timer_fn *fn, void *arg)
{
  assert(self);
  assert(fn);
  s_source_t *s = s_add(self, S_TIMER, arg);
  if (!s)
    return KG_ENOMEM;
  s->deadline = deadline_ms > 0 ? deadline_ms : 0;
  s->timer = fn;
  return s->id;
}

int
kg_loop_timer_of(kg_loop_t *self, kg_loop_when_fn *when, kg_loop_timer_fn *fn, void *arg)
{
  assert(self);
  assert(when && fn);
  s_source_t *s = s_add(self, S_TIMER, arg);
  if (!s)
    return KG_ENOMEM;
  s->when = when;
  s->timer = fn;
  return s->id;
}

int
kg_loop_timer_set(kg_loop_t *self, int id, int64_t deadline_ms)
{
  assert(self);
  s_source_t *s = s_find(self, id);
  if (!s || s->kind != S_TIMER || s->when)
    return KG_ENOTFOUND;
  s->deadline = deadline_ms > 0 ? deadline_ms : 0;
  return 0;
}

int
kg_loop_signals(kg_loop_t *self, kg_sigsrc_t *sig, kg_loop_signal_fn *fn, void *arg)
{
  assert(self);
  assert(sig && fn);
  s_source_t *s = s_add(self, S_SIGNALS, arg);
  if (!s)
    return KG_ENOMEM;
  s->sig = sig;
  s->fd = kg_sigsrc_fd(sig);
  s->events = KG_LOOP_IN;
  s->signal = fn;
  return s->id;
}

void
kg_loop_remove(kg_loop_t *self, int id)
{
  assert(self);
  s_source_t *s = s_find(self, id);
  if (!s)
    return;
  s->id = 0;   /* compacted before the next iteration: the array may be walked now */
  self->removed = true;
}

void
kg_loop_stop(kg_loop_t *self)
{
  assert(self);
  self->stopped = true;
}

/* ------------------------------------------------------------------------
   One iteration. */

static void
s_compact(kg_loop_t *self)
{
  if (!self->removed)
    return;
  size_t n = 0;
  for (size_t i = 0; i < self->count; i++)
    if (self->src[i].id)
      self->src[n++] = self->src[i];
  self->count = n;
  self->removed = false;
}

/*  A source's current socket (S_SOCKET) or fd (S_FD), as its function says. */
static void *
s_socket_now(const s_source_t *s)
{
  return s->socket_of ? s->socket_of(s->arg) : s->socket;
}

static int
s_fd_now(const s_source_t *s)
{
  return s->fd_of ? s->fd_of(s->arg) : s->fd;
}

/*  Step 1: what every reader and writer polls now. A socket that replaced
    another may hold messages already: it is looked at. */
static void
s_refresh(kg_loop_t *self)
{
  for (size_t i = 0; i < self->count; i++) {
    s_source_t *s = &self->src[i];
    if (!s->id)
      continue;
    if (s->kind == S_FD && s->fd_of)
      s->fd = s->fd_of(s->arg);
    else if (s->kind == S_SOCKET && s->socket_of) {
      void *socket = s->socket_of(s->arg);
      int fd = s_zmq_fd(socket);
      if (socket != s->socket || fd != s->fd) {
        s->socket = socket;
        s->fd = fd;
        s->check = socket != NULL;
      }
    }
  }
}

/*  A timer's deadline now (0: none). */
static int64_t
s_deadline(const s_source_t *s)
{
  return s->when ? s->when(s->arg) : s->deadline;
}

/*  Step 2's timeout from now: 0, ms, or -1 (none). */
static int64_t
s_timeout(kg_loop_t *self, int64_t now)
{
  int64_t next = 0;
  for (size_t i = 0; i < self->count; i++) {
    const s_source_t *s = &self->src[i];
    if (!s->id)
      continue;
    if (s->kind == S_SOCKET && s->check && s->socket && s->events)
      return 0;
    if (s->kind != S_TIMER)
      continue;
    int64_t d = s_deadline(s);
    if (d > 0 && (!next || d < next))
      next = d;
  }
  if (!next)
    return -1;
  return next <= now ? 0 : next - now;
}

int64_t
kg_loop_timeout(kg_loop_t *self)
{
  assert(self);
  s_compact(self);
  s_refresh(self);
  return s_timeout(self, kg_loop_now(self));
}

/*  Step 3: the events a socket has for what its source asked. ZMQ_EVENTS
    processes the socket's pending commands: afterwards its fd is a fresh
    edge. */
static int
s_socket_ready(s_source_t *s)
{
  int zev = 0;
  size_t len = sizeof zev;
  if (zmq_getsockopt(s->socket, ZMQ_EVENTS, &zev, &len) != 0)
    return 0;
  int ev = ((zev & ZMQ_POLLIN) ? KG_LOOP_IN : 0) | ((zev & ZMQ_POLLOUT) ? KG_LOOP_OUT : 0);
  return ev & s->events;
}

static int
s_poll(kg_loop_t *self, int timeout)
{
  size_t n = 0;
  for (size_t i = 0; i < self->count; i++) {
    s_source_t *s = &self->src[i];
    s->slot = -1;
    s->ready = 0;
    if (!s->id || s->kind == S_TIMER || s->fd < 0 || !s->events)
      continue;
    if (n == self->pfd_cap) {
      size_t cap = self->pfd_cap ? self->pfd_cap * 2 : 16;
      struct pollfd *pfd = realloc(self->pfd, cap * sizeof *pfd);
      if (!pfd)
        return KG_ENOMEM;
      self->pfd = pfd;
      self->pfd_cap = cap;
    }
    short want = POLLIN;   /* a socket's fd says "look at me" for both ways */
    if (s->kind == S_FD)
      want = (short) (((s->events & KG_LOOP_IN) ? POLLIN : 0)
                      | ((s->events & KG_LOOP_OUT) ? POLLOUT : 0));
    self->pfd[n] = (struct pollfd){.fd = s->fd, .events = want};
    s->slot = (int) n++;
  }
  int rc = poll(self->pfd, (nfds_t) n, timeout);
  if (rc < 0)
    return errno == EINTR ? 0 : -errno;
  for (size_t i = 0; i < self->count; i++) {
    s_source_t *s = &self->src[i];
    short rev = s->slot >= 0 ? self->pfd[s->slot].revents : 0;
    if (s->kind == S_SOCKET) {
      if (rev)
        s->check = true;
      if (s->check && s->socket && s->events) {
        s->check = false;
        s->ready = s_socket_ready(s);
      }
    } else if (rev & POLLNVAL) {
      kg_error("a closed descriptor (%d) is still registered with the loop: ignored from now "
               "on", s->fd);
      s->events = 0;
    } else if (rev) {
      s->ready = ((rev & (POLLIN | POLLHUP | POLLERR)) ? KG_LOOP_IN : 0)
                 | ((rev & (POLLOUT | POLLERR)) ? KG_LOOP_OUT : 0);
      s->ready &= s->events;
    }
  }
  return 0;
}

/*  Step 4: one ready source's handler (or its signals'). */
static int
s_dispatch(kg_loop_t *self, s_source_t *s)
{
  int id = s->id;
  if (s->kind == S_SIGNALS) {
    int signo;
    while ((signo = kg_sigsrc_read(s->sig)) > 0) {
      if (s->signal(self, signo, s->arg) == KG_LOOP_STOP)
        return KG_LOOP_STOP;
      s = s_find(self, id);   /* the array may have grown */
      if (!s)
        break;
    }
    return KG_LOOP_OK;
  }
  /* a source whose fd or socket changed since the wait (an earlier handler
     restarted what it polls) waits for the next iteration */
  if (s->kind == S_SOCKET && s_socket_now(s) != s->socket) {
    s->check = true;
    return KG_LOOP_OK;
  }
  if (s->kind == S_FD && s_fd_now(s) != s->fd)
    return KG_LOOP_OK;
  int rc = s->io(self, id, s->ready, s->arg);
  s = s_find(self, id);
  if (s && s->kind == S_SOCKET && rc == KG_LOOP_MORE)
    s->check = true;
  return rc;
}

int
kg_loop_once(kg_loop_t *self)
{
  assert(self);
  if (self->stopped) {   /* asked before this iteration */
    self->stopped = false;
    return 1;
  }
  s_compact(self);
  s_refresh(self);
  int64_t wait = s_timeout(self, kg_loop_now(self));
  int rc = s_poll(self, wait < 0 ? -1 : wait > INT_MAX ? INT_MAX : (int) wait);
  if (rc < 0)
    return rc;
  /* by index: handlers may register sources (the array may move) */
  size_t count = self->count;
  for (size_t i = 0; i < count && !self->stopped; i++) {
    s_source_t *s = &self->src[i];
    if (!s->id || !s->ready || s->kind == S_TIMER)
      continue;
    if (s_dispatch(self, s) == KG_LOOP_STOP)
      self->stopped = true;
  }
  int64_t now = kg_loop_now(self);
  for (size_t i = 0; i < self->count && !self->stopped; i++) {
    s_source_t *s = &self->src[i];
    if (!s->id || s->kind != S_TIMER)
      continue;
    int64_t d = s_deadline(s);
    if (d <= 0 || d > now)
      continue;
    if (!s->when)
      s->deadline = 0;   /* one shot: the handler may arm it again */
    if (s->timer(self, s->id, s->arg) == KG_LOOP_STOP)
      self->stopped = true;
  }
  bool stopped = self->stopped;
  self->stopped = false;
  return stopped ? 1 : 0;
}

int
kg_loop_run(kg_loop_t *self)
{
  assert(self);
  for (;;) {
    int rc = kg_loop_once(self);
    if (rc != 0)
      return rc > 0 ? 0 : rc;
  }
}
