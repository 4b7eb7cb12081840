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

struct kg_eg_comm_t {
  int listen_fd;
  kg_eg_trust_t trust;
  kg_eg_conns_t *conns;
  kg_ratelog_t *log;
  kg_eg_comm_fn *fn;
  void *arg;
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

kg_eg_comm_t *
kg_eg_comm_new(int listen_fd, const kg_eg_trust_t *trust, kg_eg_comm_fn *fn, void *arg)
{
  kg_eg_comm_t *self = calloc(1, sizeof *self);
  if (self) {
    self->conns = kg_eg_conns_new(KG_EG_COMM_MAX, KG_EG_COMM_TIMEOUT_MS);
    self->log = kg_ratelog_new(R_KINDS, s_kinds, 5, KG_EG_LOG_INTERVAL_MS);
  }
  if (!self || !self->conns || !self->log) {
    if (self) {
      kg_eg_conns_destroy(&self->conns);
      kg_ratelog_destroy(&self->log);
      free(self);
    }
    close(listen_fd);
    return NULL;
  }
  self->listen_fd = listen_fd;
  self->trust = *trust;
  self->fn = fn;
  self->arg = arg;
  return self;
}

void
kg_eg_comm_destroy(kg_eg_comm_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_eg_comm_t *self = *self_p;
  int fds[KG_EG_COMM_MAX];
  size_t n = kg_eg_conns_fds(self->conns, fds, KG_EG_COMM_MAX);
  for (size_t i = 0; i < n; i++)
    close(fds[i]);
  close(self->listen_fd);
  kg_eg_conns_destroy(&self->conns);
  kg_ratelog_destroy(&self->log);
  free(self);
  *self_p = NULL;
}

size_t
kg_eg_comm_fds(const kg_eg_comm_t *self, int *out, size_t n)
{
  if (n == 0)
    return 0;
  out[0] = self->listen_fd;
  return 1 + kg_eg_conns_fds(self->conns, out + 1, n - 1);
}

/*  A refusal, logged in full while the rate limit allows. */
static void
s_refused(kg_eg_comm_t *self, int kind, int64_t now, const char *what)
{
  if (kg_ratelog_note(self->log, (size_t) kind, now) == KG_RATELOG_FULL)
    kg_warning("communication port: %s", what);
}

void
kg_eg_comm_accept(kg_eg_comm_t *self, int64_t now)
{
  for (int k = 0; k < KG_EG_ACCEPT_BATCH; k++) {
    int fd = accept4(self->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        kg_warning("communication port: accept: %s", strerror(errno));
      return;
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
}

void
kg_eg_comm_read(kg_eg_comm_t *self, int fd, int64_t now)
{
  char buf[KG_EG_REQUEST_MAX + 1], err[200] = "";
  kg_eg_request_t req;
  kg_eg_conn_verdict_t v;
  ssize_t n = recv(fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n > 0)
    v = kg_eg_conns_feed(self->conns, fd, buf, (size_t) n, &req, err, sizeof err);
  else if (n == 0)
    v = kg_eg_conns_eof(self->conns, fd, &req, err, sizeof err);
  else {
    kg_eg_conns_remove(self->conns, fd);
    v = KG_EG_CONN_EMPTY;
  }
  if (v == KG_EG_CONN_MORE)
    return;
  close(fd);
  if (v == KG_EG_CONN_BAD) {
    char line[260];
    snprintf(line, sizeof line, "request refused: %s", err);
    s_refused(self, R_REQUEST, now, line);
  }
  else if (v == KG_EG_CONN_REQUEST)
    self->fn(self->arg, &req);
}

void
kg_eg_comm_tick(kg_eg_comm_t *self, int64_t now, bool force)
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

int64_t
kg_eg_comm_deadline(const kg_eg_comm_t *self)
{
  int64_t a = kg_eg_conns_deadline(self->conns), b = kg_ratelog_deadline(self->log);
  return a && b ? (a < b ? a : b) : a ? a : b;
}
