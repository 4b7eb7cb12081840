/*  kg_eg_comm: the communication port (see kg_eg_comm.h). */
#include "kg_eg_comm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kg_eg_conns.h"
#include "kg_eg_peer.h"
#include "kg_error.h"
#include "kg_log.h"
#include "kg_ratelog.h"

#define KG_EG_ACCEPT_BATCH 64          /* per wake-up: a flood never starves signals */
#define KG_EG_LOG_INTERVAL_MS 10000

enum { R_PEER, R_REQUEST, R_EVICTED, R_TIMEOUT, R_KINDS };
static const char *const s_kinds[R_KINDS] = {"refused connections", "refused requests",
                                             "connections closed for a newer one",
                                             "connections that sent nothing in time"};

typedef struct {
  kg_eg_comm_t *comm;
  size_t index;
} s_slot_ref_t;

struct kg_eg_comm_t {
  kg_loop_t *loop;
  int listen_fd;
  kg_eg_trust_t trust;
  kg_eg_conns_t *conns;
  kg_ratelog_t *log;
  kg_eg_comm_fn *fn;
  void *arg;
  s_slot_ref_t slots[KG_EG_COMM_MAX];   /*  each a reader of the loop        */
  int ids[KG_EG_COMM_MAX + 2];          /*  listener, slots, timer (0: none) */
};

int
kg_eg_comm_bind(const char *iface, int port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -errno;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                           .sin_addr = {htonl(INADDR_ANY)}};
  int rc = 0;
  if (iface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, iface, (socklen_t) strlen(iface)) != 0)
    rc = -errno;
  if (rc == 0 && (bind(fd, (struct sockaddr *) &sa, sizeof sa) != 0 || listen(fd, 64) != 0))
    rc = -errno;
  if (rc) {
    close(fd);
    return rc;
  }
  return fd;
}

/*  A refusal, logged in full while the rate limit allows. */
static void
s_refused(kg_eg_comm_t *self, int kind, int64_t now, const char *what)
{
  if (kg_ratelog_note(self->log, (size_t) kind, now) == KG_RATELOG_FULL)
    kg_warning("communication port: %s", what);
}

/*  The listening socket is readable: take what waits (at most a batch). */
static int
s_on_accept(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) id;
  (void) events;
  kg_eg_comm_t *self = arg;
  int64_t now = kg_loop_now(loop);
  for (int k = 0; k < KG_EG_ACCEPT_BATCH; k++) {
    int fd = accept4(self->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        kg_warning("communication port: accept: %s", strerror(errno));
      break;
    }
    kg_eg_peer_t peer;
    char why[160] = "its addresses cannot be read";
    if (kg_eg_peer_of(fd, &peer) != 0 || !kg_eg_peer_allowed(&peer, &self->trust, why,
                                                             sizeof why)) {
      close(fd);
      char line[200];
      snprintf(line, sizeof line, "refused %s", why);
      s_refused(self, R_PEER, now, line);
      continue;
    }
    int old = kg_eg_conns_admit(self->conns, fd, now);
    if (old >= 0) {
      close(old);
      s_refused(self, R_EVICTED, now, "every slot was taken: the oldest connection was "
                                      "closed for a new one");
    }
  }
  return KG_LOOP_OK;
}

/*  A slot's current connection, for its reader (-1: the slot is free). */
static int
s_slot_fd(void *arg)
{
  const s_slot_ref_t *ref = arg;
  return kg_eg_conns_fd_at(ref->comm->conns, ref->index);
}

/*  A connection is readable (or closed, or failed). */
static int
s_on_read(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) id;
  (void) events;
  s_slot_ref_t *ref = arg;
  kg_eg_comm_t *self = ref->comm;
  int fd = kg_eg_conns_fd_at(self->conns, ref->index);
  if (fd < 0)
    return KG_LOOP_OK;
  char buf[KG_EG_REQUEST_MAX + 1], err[200] = "";
  kg_eg_request_t req;
  kg_eg_conn_verdict_t v;
  ssize_t n = recv(fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return KG_LOOP_OK;
  if (n > 0)
    v = kg_eg_conns_feed(self->conns, fd, buf, (size_t) n, &req, err, sizeof err);
  else if (n == 0)
    v = kg_eg_conns_eof(self->conns, fd, &req, err, sizeof err);
  else {
    kg_eg_conns_remove(self->conns, fd);
    v = KG_EG_CONN_EMPTY;
  }
  if (v == KG_EG_CONN_MORE)
    return KG_LOOP_OK;
  close(fd);
  if (v == KG_EG_CONN_BAD) {
    char line[260];
    snprintf(line, sizeof line, "request refused: %s", err);
    s_refused(self, R_REQUEST, kg_loop_now(loop), line);
  } else if (v == KG_EG_CONN_REQUEST)
    self->fn(self->arg, &req);
  return KG_LOOP_OK;
}

/*  Close connections past their deadline (all of them when force), and log
    what the rate limit held back when its window ends. */
static void
s_tick(kg_eg_comm_t *self, int64_t now, bool force)
{
  int fd;
  while ((fd = kg_eg_conns_expired(self->conns, force ? INT64_MAX : now)) >= 0) {
    close(fd);
    if (!force)
      s_refused(self, R_TIMEOUT, now, "a connection sent no whole request in time: closed");
  }
  char *summary = kg_ratelog_summary(self->log, now, force);
  if (summary)
    kg_warning("communication port: %s", summary);
  free(summary);
}

static int64_t
s_when(void *arg)
{
  const kg_eg_comm_t *self = arg;
  int64_t a = kg_eg_conns_deadline(self->conns), b = kg_ratelog_deadline(self->log);
  return a && b ? (a < b ? a : b) : a ? a : b;
}

static int
s_on_tick(kg_loop_t *loop, int id, void *arg)
{
  (void) id;
  s_tick(arg, kg_loop_now(loop), false);
  return KG_LOOP_OK;
}

kg_eg_comm_t *
kg_eg_comm_new(kg_loop_t *loop, int listen_fd, const kg_eg_trust_t *trust, kg_eg_comm_fn *fn,
               void *arg)
{
  kg_eg_comm_t *self = calloc(1, sizeof *self);
  if (!self) {
    close(listen_fd);
    return NULL;
  }
  self->loop = loop;
  self->listen_fd = listen_fd;
  self->trust = *trust;
  self->fn = fn;
  self->arg = arg;
  self->conns = kg_eg_conns_new(KG_EG_COMM_MAX, KG_EG_COMM_TIMEOUT_MS);
  self->log = kg_ratelog_new(R_KINDS, s_kinds, 5, KG_EG_LOG_INTERVAL_MS);
  bool ok = self->conns && self->log;
  size_t k = 0;
  if (ok)
    ok = (self->ids[k++] = kg_loop_fd(loop, listen_fd, KG_LOOP_IN, s_on_accept, self)) > 0;
  for (size_t i = 0; ok && i < KG_EG_COMM_MAX; i++) {
    self->slots[i] = (s_slot_ref_t){self, i};
    ok = (self->ids[k++] = kg_loop_fd_of(loop, s_slot_fd, KG_LOOP_IN, s_on_read,
                                         &self->slots[i])) > 0;
  }
  if (ok)
    ok = (self->ids[k++] = kg_loop_timer_of(loop, s_when, s_on_tick, self)) > 0;
  if (!ok)
    kg_eg_comm_destroy(&self);
  return self;
}

void
kg_eg_comm_destroy(kg_eg_comm_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_eg_comm_t *self = *self_p;
  for (size_t i = 0; i < sizeof self->ids / sizeof self->ids[0]; i++)
    if (self->ids[i] > 0)
      kg_loop_remove(self->loop, self->ids[i]);
  if (self->conns && self->log)
    s_tick(self, kg_loop_now(self->loop), true);   /* closes what is open */
  close(self->listen_fd);
  kg_eg_conns_destroy(&self->conns);
  kg_ratelog_destroy(&self->log);
  free(self);
  *self_p = NULL;
}
