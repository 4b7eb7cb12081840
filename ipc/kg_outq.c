/*  kg_outq: a bounded FIFO of shared message copies in front of one socket
    (kg_outq.h). A ring of max_msgs pointers, allocated on first use. */
#include "kg_outq.h"

#include <errno.h>
#include <stdlib.h>
#include <zmq.h>

#include "kg_error.h"

struct kg_outq_t {
  kg_msg_t **ring;              /*  max_msgs slots, or NULL until first use  */
  size_t max_msgs, max_bytes;
  size_t head, len, bytes, peak;
  unsigned long dropped, failed, discarded;
};

kg_outq_t *
kg_outq_new(size_t max_msgs, size_t max_bytes)
{
  if (max_msgs == 0)
    return NULL;
  kg_outq_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->max_msgs = max_msgs;
  self->max_bytes = max_bytes;
  return self;
}

static kg_msg_t *
s_pop(kg_outq_t *self)
{
  kg_msg_t *m = self->ring[self->head];
  self->ring[self->head] = NULL;
  self->head = (self->head + 1) % self->max_msgs;
  self->len--;
  self->bytes -= kg_msg_size(m);
  return m;
}

size_t
kg_outq_clear(kg_outq_t *self)
{
  size_t n = 0;
  while (self->len) {
    kg_msg_t *m = s_pop(self);
    kg_msg_destroy(&m);
    n++;
  }
  self->discarded += n;
  return n;
}

void
kg_outq_destroy(kg_outq_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_outq_clear(*self_p);
  free((*self_p)->ring);
  free(*self_p);
  *self_p = NULL;
}

int
kg_outq_send(kg_outq_t *self, void *socket, kg_signer_t *signer, kg_msg_t *msg,
             kg_outq_class_t cls)
{
  if (self->len == 0) {
    int rc = kg_msg_send(msg, socket, signer, ZMQ_DONTWAIT);
    if (rc == 0)
      return KG_OUTQ_SENT;
    if (rc != -EAGAIN)
      return rc;
  }
  if (cls == KG_OUTQ_NOWAIT)
    return -EAGAIN;
  size_t size = kg_msg_size(msg);
  size_t max_msgs = self->max_msgs, max_bytes = self->max_bytes;
  if (cls == KG_OUTQ_BULK) {   /* room kept for the requests behind a burst */
    max_msgs -= max_msgs / 4;
    max_bytes -= max_bytes / 4;
  }
  if (self->len >= max_msgs || (self->len > 0 && self->bytes + size > max_bytes)) {
    self->dropped++;
    return KG_EQFULL;
  }
  if (!self->ring && !(self->ring = calloc(self->max_msgs, sizeof *self->ring)))
    return KG_ENOMEM;
  kg_msg_t *copy = kg_msg_share(msg);
  if (!copy)
    return KG_ENOMEM;
  self->ring[(self->head + self->len) % self->max_msgs] = copy;
  self->len++;
  self->bytes += size;
  if (self->len > self->peak)
    self->peak = self->len;
  return KG_OUTQ_QUEUED;
}

size_t
kg_outq_flush(kg_outq_t *self, void *socket, kg_signer_t *signer)
{
  size_t sent = 0;
  if (!self->len)
    return 0;
  /* Let the socket act on its pending commands first (a peer that read,
     one that left): a send only does so now and then (libzmq throttles it),
     ZMQ_EVENTS always. */
  int events = 0;
  size_t elen = sizeof events;
  (void) zmq_getsockopt(socket, ZMQ_EVENTS, &events, &elen);
  while (self->len) {
    int rc = kg_msg_send(self->ring[self->head], socket, signer, ZMQ_DONTWAIT);
    if (rc == -EAGAIN)
      break;
    kg_msg_t *m = s_pop(self);
    kg_msg_destroy(&m);
    if (rc == 0)
      sent++;
    else
      self->failed++;
  }
  return sent;
}

size_t
kg_outq_length(const kg_outq_t *self)
{
  return self->len;
}

size_t
kg_outq_bytes(const kg_outq_t *self)
{
  return self->bytes;
}

size_t
kg_outq_peak(const kg_outq_t *self)
{
  return self->peak;
}

unsigned long
kg_outq_dropped(const kg_outq_t *self)
{
  return self->dropped;
}

unsigned long
kg_outq_failed(const kg_outq_t *self)
{
  return self->failed;
}

unsigned long
kg_outq_discarded(const kg_outq_t *self)
{
  return self->discarded;
}
