/*  kg_loop: kg_supervisor_run, the one event loop of a kguard kernel: a
    poll(2) over the ZeroMQ sockets' ZMQ_FD, the signalfd, the kernel's
    stdout/stderr pipes and the helper children's pipes, with the earliest
    deadline as its timeout. Part of the kg_supervisor class (its private
    interface is kg_sup_priv.h). */
#include "kg_sup_priv.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_exit.h"
#include "kg_clock.h"
#include "kg_log.h"
#include "kg_clock.h"
#include "kg_sup_parent.h"

/* ------------------------------------------------------------------------
   The loop.

   poll(2) over the sockets' ZMQ_FD instead of zmq_poll: zmq_poll asks every
   socket for ZMQ_EVENTS twice per wait (a first non-blocking pass, then
   again after the wake-up), and each of those costs a getpid and a poll
   system call inside libzmq: ~34 system calls per wake-up with eight
   sockets, most of kguard's cost per relayed message. Here only the sockets
   that can have something are asked: those whose fd woke up, those whose
   handler stopped before a receive said EAGAIN (a batch cut short) and
   those a message was sent on (a send may process the socket's commands and
   so consume the fd's edge-triggered readiness). kg_msg's observer reports
   both.

   No send blocks (kg_front_send, kg_kernel_send): what a peer that is not
   reading cannot take waits in the socket's queue, and the loop flushes
   that queue when the socket may take more, that is when its fd woke or
   it was read from (either may have processed the peer's "read some"
   command). A flush that leaves messages waiting marks the socket blocked:
   it is not tried again (its own failed send does not count as a wake-up)
   until the socket wakes, so a peer that never reads costs no busy loop. */

enum { S_FRONT, S_KERN, S_SIG, S_PIPE, S_HELPER, S_STANDBY, S_PARENT };
#define S_FRONT_SOCKS 3   /* the frontend's shell, control, stdin (the heartbeat
                             echoes on its own thread: kg_heartbeat) */
#define S_ZSOCKS 7        /* those and the kernel's shell, control, stdin, iopub */

typedef struct {
  kg_sup_t *S;
  void *sock[S_ZSOCKS];   /* socket seen in each slot (to notice new ones) */
  bool check[S_ZSOCKS];   /* ask ZMQ_EVENTS before waiting                 */
  bool drained[S_ZSOCKS]; /* the last receive said EAGAIN                  */
  bool woke[S_ZSOCKS];    /* its fd woke, or it was read, this iteration   */
  bool blocked[S_ZSOCKS]; /* its send queue could not be flushed: wait for
                             a wake-up before trying again                */
} s_zset_t;

static const kg_channel_t s_front_ch[S_FRONT_SOCKS] = {KG_CH_SHELL, KG_CH_CONTROL, KG_CH_STDIN};
static const kg_channel_t s_kern_ch[4] = {KG_CH_SHELL, KG_CH_CONTROL, KG_CH_STDIN, KG_CH_IOPUB};

static void *
s_slot_socket(kg_sup_t *S, int slot)
{
  return slot < S_FRONT_SOCKS ? kg_front_socket(S->front, s_front_ch[slot])
                              : kg_kernel_socket(S->kernel, s_kern_ch[slot - S_FRONT_SOCKS]);
}

static void
s_on_socket_op(void *socket, kg_msg_op_t op, int rc, void *arg)
{
  s_zset_t *z = arg;
  for (int i = 0; i < S_ZSOCKS; i++) {
    if (z->sock[i] != socket)
      continue;
    if (op == KG_MSG_OP_SEND)
      z->check[i] = true;
    else {
      z->drained[i] = rc == -EAGAIN;
      z->woke[i] = true;
    }
  }
}

/*  True if the socket has a message to read now. ZMQ_EVENTS processes the
    socket's pending commands, so afterwards its fd is a fresh edge. */
/*  Messages waiting in the send queue of slot's socket. */
static size_t
s_slot_queued(kg_sup_t *S, int slot)
{
  return slot < S_FRONT_SOCKS ? kg_front_queued(S->front, s_front_ch[slot])
                              : kg_kernel_queued(S->kernel, s_kern_ch[slot - S_FRONT_SOCKS]);
}

/*  Send what waits on the sockets that may take more now. */
static void
s_flush_queues(s_zset_t *z)
{
  kg_sup_t *S = z->S;
  for (int slot = 0; slot < S_ZSOCKS; slot++) {
    if (z->woke[slot])
      z->blocked[slot] = false;
    z->woke[slot] = false;
    if (!z->sock[slot] || z->blocked[slot] || !s_slot_queued(S, slot))
      continue;
    if (slot < S_FRONT_SOCKS)
      kg_front_flush(S->front, s_front_ch[slot]);
    else
      kg_kernel_flush(S->kernel, s_kern_ch[slot - S_FRONT_SOCKS]);
    z->blocked[slot] = s_slot_queued(S, slot) > 0;
  }
}

static bool
s_readable(void *socket)
{
  int events = 0;
  size_t len = sizeof events;
  return zmq_getsockopt(socket, ZMQ_EVENTS, &events, &len) == 0 && (events & ZMQ_POLLIN);
}

int
kg_supervisor_run(kg_supervisor_t *S)
{
  s_zset_t z = {.S = S};
  kg_msg_set_observer(s_on_socket_op, &z);

  /* M2: `starting` once, at process start. */
  kg__publish_status(S, NULL, "starting");
  kg__enter(S, S->state);

  struct pollfd items[32];   /* kguard's own fds: 7 sockets, signals, launcher,
                                pipes of the kernel, standby and 4 helpers */
  int kinds[32], args[32];
  bool ready[S_ZSOCKS];
  while (kg_shutdown_running(S->shutdown)) {
    if (S->state == KG_ST_EXITED)
      break;
    int n = 0;
    bool pending = false;
    for (int slot = 0; slot < S_ZSOCKS; slot++) {
      void *sock = s_slot_socket(S, slot);
      if (sock != z.sock[slot]) {
        z.sock[slot] = sock;   /* a new kernel's socket: may already have input */
        z.check[slot] = sock != NULL;
        z.blocked[slot] = false;
      }
      if (!sock)
        continue;
      int fd = -1;
      size_t len = sizeof fd;
      if (zmq_getsockopt(sock, ZMQ_FD, &fd, &len) != 0)
        continue;
      pending = pending || z.check[slot];
      items[n] = (struct pollfd){.fd = fd, .events = POLLIN};
      kinds[n] = slot < S_FRONT_SOCKS ? S_FRONT : S_KERN;
      args[n++] = slot;
    }
    items[n] = (struct pollfd){.fd = kg_sigsrc_fd(S->sig), .events = POLLIN};
    kinds[n++] = S_SIG;
    if (S->parent && kg_parentwatch_fd(S->parent) >= 0) {
      items[n] = (struct pollfd){.fd = kg_parentwatch_fd(S->parent), .events = POLLIN};
      kinds[n++] = S_PARENT;
    }
    for (int which = 1; which <= 2; which++) {
      int fd = kg_kernel_output_fd(S->kernel, which);
      if (fd < 0)
        continue;
      items[n] = (struct pollfd){.fd = fd, .events = POLLIN};
      kinds[n] = S_PIPE;
      args[n++] = which;
    }
    kg_kernel_t *standby = S->standby ? kg_standby_slot_kernel(S->standby) : NULL;
    for (int which = 1; standby && which <= 2; which++) {
      int fd = kg_kernel_output_fd(standby, which);
      if (fd >= 0) {
        items[n] = (struct pollfd){.fd = fd, .events = POLLIN};
        kinds[n++] = S_STANDBY;
      }
    }
    kg_helper_t *helpers[2] = {S->ckpt, S->probe};
    for (int i = 0; i < 2; i++)
      for (int which = 1; which <= 2; which++) {
        int fd = kg_helper_fd(helpers[i], which);
        if (fd < 0)
          continue;
        items[n] = (struct pollfd){.fd = fd, .events = POLLIN};
        kinds[n] = S_HELPER;
        args[n++] = fd;
      }

    int gfds[4];
    int ng = kg__gpu_fds(S, gfds, 4);
    for (int i = 0; i < ng; i++) {
      items[n] = (struct pollfd){.fd = gfds[i], .events = POLLIN};
      kinds[n] = S_HELPER;
      args[n++] = gfds[i];
    }

    int rc = poll(items, (nfds_t) n, pending ? 0 : (int) kg__timeout_ms(S));
    if (rc < 0) {
      if (errno == EINTR)
        continue;
      kg_error("poll failed: %s", strerror(errno));
      kg_shutdown_fail(S->shutdown, KG_EXIT_SYSTEM);
      break;
    }
    for (int i = 0; i < n; i++)
      if ((kinds[i] == S_FRONT || kinds[i] == S_KERN) && items[i].revents)
        z.check[args[i]] = z.woke[args[i]] = true;
    for (int slot = 0; slot < S_ZSOCKS; slot++) {
      ready[slot] = false;
      if (!z.check[slot] || !z.sock[slot])
        continue;
      z.check[slot] = false;
      ready[slot] = s_readable(z.sock[slot]);
    }
    /* Signals first: a dead child must be known before its last messages
       are judged. Then the kernel side, then the frontend. */
    bool parent_ready = false;
    for (int i = 0; i < n; i++) {
      if (kinds[i] == S_SIG && items[i].revents)
        kg__on_signal(S);
      parent_ready = parent_ready || (kinds[i] == S_PARENT && items[i].revents);
    }
    kg__parent_poll(S, parent_ready, kg_clock_mono_ms());
    /* The kernel's messages before its raw pipes: a reply that is already
       here was sent before what the pipes say now. A handler takes a
       bounded batch: unless its last receive found the socket empty, the
       socket is looked at again before the next wait. */
    for (int slot = S_FRONT_SOCKS; slot < S_ZSOCKS; slot++)
      if (ready[slot]
          && kg_kernel_socket(S->kernel, s_kern_ch[slot - S_FRONT_SOCKS]) == z.sock[slot]) {
        z.drained[slot] = false;
        kg__on_kernel(S, s_kern_ch[slot - S_FRONT_SOCKS]);
        if (!z.drained[slot])
          z.check[slot] = true;
      }
    for (int i = 0; i < n; i++) {
      if (!items[i].revents)
        continue;
      if (kinds[i] == S_PIPE) {
        kg__guard_drain_pipes(S);
        kg__flush_held(S);   /* a suspicion while idle: the probe goes in */
      }
      else if (kinds[i] == S_HELPER) {
        kg__guard_helpers_poll(S);
        kg__flush_held(S);   /* a helper that answered a cell (%kguard doctor) */
      }
      else if (kinds[i] == S_STANDBY)
        kg__standby_drain(S);   /* kept in its log, never evidence */
    }
    for (int slot = 0; slot < S_FRONT_SOCKS; slot++) {
      if (!ready[slot] || kg_front_socket(S->front, s_front_ch[slot]) != z.sock[slot])
        continue;
      z.drained[slot] = false;
      kg__on_front(S, s_front_ch[slot]);
      if (!z.drained[slot])
        z.check[slot] = true;
    }
    kg__timers(S);
    s_flush_queues(&z);
  }
  kg_msg_set_observer(NULL, NULL);
  kg__droplog_flush(S, kg_clock_mono_ms(), true);
  char *totals = kg_relay_stats_totals(S->stats);
  kg_notice("kguard exiting: %s", totals ? totals : "(out of memory)");
  free(totals);
  return kg_shutdown_exit_code(S->shutdown);
}
