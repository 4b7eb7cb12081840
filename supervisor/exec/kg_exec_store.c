/*  kg_exec_store: the ranks' rendezvous store (contracts in the header). */
#include "kg_exec_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kg_child.h"
#include "kg_error.h"
#include "kg_log.h"

#define S_READY "kguard-store-ready\n"

/*  torch's own server; it waits for no worker and lives until killed. */
static const char s_code[] =
  "import signal, sys\n"
  "import torch.distributed as dist\n"
  "store = dist.TCPStore('0.0.0.0', int(sys.argv[1]), 1, True, wait_for_workers=False)\n"
  "print('kguard-store-ready', flush=True)\n"
  "while True:\n"
  "    signal.pause()\n";

struct kg_exec_store_t {
  kg_child_t *child;
  int port;
  size_t seen;              /* bytes of the ready line read so far          */
  bool ready, gone;
};

int
kg_exec_store_free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 0;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, (struct sockaddr *) &a, sizeof a) == 0
      && getsockname(fd, (struct sockaddr *) &a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

int
kg_exec_store_start(const char *python, kg_exec_store_t **self_p)
{
  *self_p = NULL;
  kg_exec_store_t *self = calloc(1, sizeof *self);
  if (!self)
    return KG_ENOMEM;
  self->port = kg_exec_store_free_port();
  char port[16];
  snprintf(port, sizeof port, "%d", self->port);
  char *argv[] = {(char *) python, "-c", (char *) s_code, port, NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true};
  int rc = self->port > 0 ? kg_child_spawn(&o, &self->child) : KG_ENOTFOUND;
  if (rc != 0) {
    free(self);
    return rc;
  }
  kg_info("exec: rendezvous store starting on port %d (pid %ld)", self->port,
          (long) kg_child_pid(self->child));
  *self_p = self;
  return 0;
}

void
kg_exec_store_destroy(kg_exec_store_t **self_p)
{
  kg_exec_store_t *self = *self_p;
  if (!self)
    return;
  kg_child_destroy(&self->child);
  free(self);
  *self_p = NULL;
}

int
kg_exec_store_fd(const kg_exec_store_t *self)
{
  return self && self->child && !self->gone ? kg_child_stdout_fd(self->child) : -1;
}

void
kg_exec_store_read(kg_exec_store_t *self)
{
  char buf[512];
  ssize_t n;
  while (self && self->child && (n = kg_child_read(self->child, 1, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n && !self->ready; i++) {
      self->seen = buf[i] == S_READY[self->seen] ? self->seen + 1 : 0;
      if (self->seen == sizeof S_READY - 1) {
        self->ready = true;
        kg_notice("exec: the ranks' rendezvous store serves on port %d: it outlives every "
                  "restart", self->port);
      }
    }
  /* What it says on stderr (an import warning) is dropped with it. */
  while (self && self->child && kg_child_read(self->child, 2, buf, sizeof buf) > 0) {
  }
}

bool
kg_exec_store_ready(const kg_exec_store_t *self)
{
  return self && self->ready && !self->gone;
}

int
kg_exec_store_port(const kg_exec_store_t *self)
{
  return self ? self->port : 0;
}

pid_t
kg_exec_store_pid(const kg_exec_store_t *self)
{
  return self && self->child ? kg_child_pid(self->child) : -1;
}

bool
kg_exec_store_is(const kg_exec_store_t *self, pid_t pid)
{
  return self && self->child && pid == kg_child_pid(self->child);
}

bool
kg_exec_store_reaped(kg_exec_store_t *self, pid_t pid)
{
  if (!kg_exec_store_is(self, pid) || kg_child_exited(self->child))
    return false;
  if (kg_child_reap(self->child) != 1)
    return true;
  char how[64];
  kg_child_describe(kg_child_status(self->child), how, sizeof how);
  kg_warning("exec: the ranks' rendezvous store ended (%s): each generation's rank 0 serves "
             "one again", how);
  self->gone = true;
  return true;
}
