/*  kg_heartbeat: an echo thread on the heartbeat socket. See the header. */
#include "kg_heartbeat.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_log.h"
#include "kg_socket.h"

#define S_MAXMSG (1024 * 1024)

struct kg_heartbeat_t {
  void *socket;        /*  the heartbeat socket, used by the thread only  */
  void *ctl_recv;      /*  the thread's end of the control pair            */
  void *ctl_send;      /*  ours                                            */
  pthread_t thread;
  void *own_ctx;       /*  kg_heartbeat_bind's context, or NULL           */
};

static atomic_int s_running;   /*  created and not yet joined */

/*  The thread: libzmq forwards from the socket to itself until TERMINATE
    arrives on the control socket. zmq_proxy_steerable returns -1 only if a
    socket fails (the context terminated under it): nothing to do then but
    end. */
static void *
s_echo(void *arg)
{
  kg_heartbeat_t *self = arg;
  if (zmq_proxy_steerable(self->socket, self->socket, NULL, self->ctl_recv) != 0)
    kg_warning("the heartbeat echo stopped: %s", zmq_strerror(errno));
  return NULL;
}

static void
s_close(void **socket_p)
{
  if (*socket_p) {
    zmq_close(*socket_p);
    *socket_p = NULL;
  }
}

static void *
s_pair_socket(void *ctx)
{
  void *s = zmq_socket(ctx, ZMQ_PAIR);
  int zero = 0;
  if (s)
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  return s;
}

kg_heartbeat_t *
kg_heartbeat_new(void *ctx, void **socket_p, int *err)
{
  *err = 0;
  if (!ctx || !socket_p || !*socket_p) {
    *err = KG_EUSAGE;
    return NULL;
  }
  kg_heartbeat_t *self = calloc(1, sizeof *self);
  if (!self) {
    *err = KG_ENOMEM;
    return NULL;
  }
  /*  A name never used before in the process: a closed socket's inproc
      endpoint stays taken until libzmq's reaper has closed it. */
  static atomic_ulong serial;
  char endpoint[64];
  snprintf(endpoint, sizeof endpoint, "inproc://kg-heartbeat-%lu",
           (unsigned long) atomic_fetch_add(&serial, 1));
  self->ctl_recv = s_pair_socket(ctx);
  self->ctl_send = s_pair_socket(ctx);
  if (!self->ctl_recv || !self->ctl_send || zmq_bind(self->ctl_recv, endpoint) != 0
      || zmq_connect(self->ctl_send, endpoint) != 0) {
    *err = -errno;
    goto fail;
  }
  int64_t maxmsg = S_MAXMSG;
  zmq_setsockopt(*socket_p, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
  self->socket = *socket_p;
  /*  Signals stay with the caller's signalfd: the thread blocks them all.
      pthread_create is a full memory barrier, which is what handing a zmq
      socket to another thread requires. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&self->thread, NULL, s_echo, self);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    self->socket = NULL;
    *err = -rc;
    goto fail;
  }
  *socket_p = NULL;
  atomic_fetch_add(&s_running, 1);
  return self;

fail:
  s_close(&self->ctl_recv);
  s_close(&self->ctl_send);
  free(self);
  return NULL;
}

kg_heartbeat_t *
kg_heartbeat_bind(const kg_conninfo_t *info, int *err)
{
  /*  libzmq starts the context's threads with its first socket: they
      inherit a mask that blocks every signal, like the echo thread. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  void *ctx = zmq_ctx_new();
  void *socket = ctx ? kg_socket_bind(ctx, info, KG_CH_HB, err) : NULL;
  if (!ctx)
    *err = -errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!ctx)
    return NULL;
  kg_heartbeat_t *self = socket ? kg_heartbeat_new(ctx, &socket, err) : NULL;
  if (!self) {
    kg_socket_close(&socket);
    zmq_ctx_term(ctx);
    return NULL;
  }
  self->own_ctx = ctx;
  return self;
}

void
kg_heartbeat_destroy(kg_heartbeat_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_heartbeat_t *self = *self_p;
  /*  A PAIR over inproc is connected and has room: the send does not
      block, and the proxy reads it on its next wake-up. */
  if (zmq_send(self->ctl_send, "TERMINATE", 9, 0) != 9)
    kg_warning("unable to stop the heartbeat echo: %s", zmq_strerror(errno));
  pthread_join(self->thread, NULL);
  atomic_fetch_sub(&s_running, 1);
  s_close(&self->socket);
  s_close(&self->ctl_recv);
  s_close(&self->ctl_send);
  if (self->own_ctx)
    zmq_ctx_term(self->own_ctx);
  free(self);
  *self_p = NULL;
}

int
kg_heartbeat_running(void)
{
  return atomic_load(&s_running);
}
