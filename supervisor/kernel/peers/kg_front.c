/*  kg_front: see kg_front.h. */
#include "kg_front.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_date.h"
#include "kg_heartbeat.h"
#include "kg_log.h"
#include "kg_outq.h"
#include "kg_replay.h"
#include "kg_socket.h"

struct kg_front_t {
  void *sock[KG_CH_COUNT];      /*  owned; sock[KG_CH_HB] stays NULL          */
  kg_heartbeat_t *heartbeat;    /*  owned, or NULL (adopted sockets)          */
  kg_signer_t *signer;          /*  owned: the frontend's key                 */
  kg_replay_t *replay;          /*  owned: what was accepted, the senders'
                                    clocks; NULL without a key               */
  kg_outq_t *outq[KG_CH_COUNT]; /*  owned, for the ROUTERs; NULL otherwise    */
  kg_loop_t *loop;              /*  told of each send, or NULL (borrowed)     */
};

/*  The signer and, with a key, the replay history. 0 or KG_ENOMEM. */
static int
s_keys(kg_front_t *self, const void *key, size_t key_len)
{
  self->signer = kg_signer_new(key, key_len);   /* replays: kg_replay */
  if (self->signer && key_len > 0)
    self->replay = kg_replay_new(KG_REPLAY_WINDOW_MS, KG_REPLAY_MAX_MACS,
                                 KG_REPLAY_MAX_SESSIONS);
  return self->signer && (key_len == 0 || self->replay) ? 0 : KG_ENOMEM;
}

/*  The ROUTER channels: they get a send queue and report full pipes. */
static bool
s_routed(int ch)
{
  return ch == KG_CH_SHELL || ch == KG_CH_CONTROL || ch == KG_CH_STDIN;
}

/*  Every ROUTER says EAGAIN for a peer whose pipe is full, and
    EHOSTUNREACH for one that is gone, instead of dropping the message
    silently; every channel that can be held up gets its queue. */
static int
s_queues(kg_front_t *self)
{
  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    if (!s_routed(ch) || !self->sock[ch])
      continue;
    int one = 1;
    if (zmq_setsockopt(self->sock[ch], ZMQ_ROUTER_MANDATORY, &one, sizeof one) != 0)
      return -errno;
    if (!(self->outq[ch] = kg_outq_new(KG_OUTQ_MAX_MSGS, KG_OUTQ_MAX_BYTES)))
      return KG_ENOMEM;
  }
  return 0;
}

kg_front_t *
kg_front_bind(void *ctx, const kg_conninfo_t *info, int *err)
{
  kg_front_t *self = calloc(1, sizeof *self);
  *err = KG_ENOMEM;
  if (!self)
    return NULL;
  if (s_keys(self, info->key, info->key_len) != 0)
    goto fail;
  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    if (ch == KG_CH_HB)
      continue;   /* the heartbeat thread's, below */
    self->sock[ch] = kg_socket_bind(ctx, info, (kg_channel_t) ch, err);
    if (!self->sock[ch]) {
      kg_error("unable to bind the %s channel: %s", kg_channel_name((kg_channel_t) ch),
               kg_strerror(*err));
      goto fail;
    }
  }
  if ((*err = s_queues(self)) != 0) {
    kg_error("unable to set up the frontend's send queues: %s", kg_strerror(*err));
    goto fail;
  }
  /* Heartbeats are echoed in a thread (and a zmq context, so an I/O thread)
     of their own, as ipykernel does, so a busy loop (a cell printing
     hundreds of MB) never looks dead to the frontend. */
  self->heartbeat = kg_heartbeat_bind(info, err);
  if (!self->heartbeat) {
    kg_error("unable to start the heartbeat thread: %s", kg_strerror(*err));
    goto fail;
  }
  *err = 0;
  return self;
fail:
  kg_front_destroy(&self);
  return NULL;
}

kg_front_t *
kg_front_adopt(void *sockets[KG_CH_COUNT], const void *key, size_t key_len)
{
  kg_front_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  if (s_keys(self, key, key_len) != 0) {
    kg_signer_destroy(&self->signer);
    kg_replay_destroy(&self->replay);
    free(self);
    return NULL;
  }
  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    if (ch == KG_CH_HB)
      continue;
    self->sock[ch] = sockets[ch];
    sockets[ch] = NULL;
  }
  if (s_queues(self) != 0)
    kg_front_destroy(&self);
  return self;
}

void
kg_front_destroy(kg_front_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_front_t *self = *self_p;
  kg_heartbeat_destroy(&self->heartbeat);
  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    kg_outq_destroy(&self->outq[ch]);
    kg_socket_close(&self->sock[ch]);
  }
  kg_signer_destroy(&self->signer);
  kg_replay_destroy(&self->replay);
  free(self);
  *self_p = NULL;
}

void
kg_front_set_loop(kg_front_t *self, kg_loop_t *loop)
{
  assert(self);
  self->loop = loop;
}

void *
kg_front_socket(const kg_front_t *self, kg_channel_t ch)
{
  assert(self);
  return ch >= 0 && ch < KG_CH_COUNT ? self->sock[ch] : NULL;
}

kg_signer_t *
kg_front_signer(const kg_front_t *self)
{
  assert(self);
  return self->signer;
}

int
kg_front_check(kg_front_t *self, kg_msg_t *msg, int64_t now_wall_ms)
{
  int rc = kg_msg_parse(msg, self->signer);
  if (rc == 0)
    rc = kg_msg_check_header(msg);
  if (rc != 0 || !self->replay)
    return rc;
  unsigned char mac[KG_REPLAY_MAC_BYTES];
  if ((rc = kg_msg_mac(msg, mac)) != 0)
    return rc;
  return kg_replay_check(self->replay, mac, kg_msg_session(msg),
                         kg_date_header_ms(kg_msg_json(msg, KG_PART_HEADER)), now_wall_ms);
}

void
kg_front_kernel_session(kg_front_t *self, const char *session)
{
  if (self->replay)
    kg_replay_kernel_session(self->replay, session);
}

bool
kg_front_clock(const kg_front_t *self, const char *session, int64_t *offset_ms,
               unsigned long *count)
{
  return self->replay && kg_replay_clock(self->replay, session, offset_ms, count);
}

int
kg_front_send(kg_front_t *self, kg_channel_t ch, kg_msg_t *msg)
{
  assert(self);
  void *sock = kg_front_socket(self, ch);
  if (!sock)
    return KG_EUSAGE;
  int rc;
  if (!self->outq[ch])   /* iopub: a PUB never blocks */
    rc = kg_msg_send(msg, sock, self->signer, ZMQ_DONTWAIT);
  else {
    rc = kg_outq_send(self->outq[ch], sock, self->signer, msg, KG_OUTQ_REQUEST);
    rc = rc > 0 ? 0 : rc;   /* queued counts as sent */
  }
  if (self->loop)
    kg_loop_sent(self->loop, sock);   /* the send may have taken its input's edge */
  return rc;
}

size_t
kg_front_flush(kg_front_t *self, kg_channel_t ch)
{
  assert(self);
  void *sock = kg_front_socket(self, ch);
  size_t n = sock && self->outq[ch] ? kg_outq_flush(self->outq[ch], sock, self->signer) : 0;
  if (n && self->loop)
    kg_loop_sent(self->loop, sock);   /* a send that failed is no wake-up */
  return n;
}

size_t
kg_front_queued(const kg_front_t *self, kg_channel_t ch)
{
  assert(self);
  return ch >= 0 && ch < KG_CH_COUNT && self->outq[ch] ? kg_outq_length(self->outq[ch]) : 0;
}

unsigned long
kg_front_unsent(const kg_front_t *self)
{
  assert(self);
  unsigned long n = 0;
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    if (self->outq[ch])
      n += kg_outq_dropped(self->outq[ch]) + kg_outq_failed(self->outq[ch]);
  return n;
}

int
kg_front_publish(kg_front_t *self, const char *session, const char *type,
                 const cJSON *parent, cJSON **content_p, cJSON **metadata_p)
{
  assert(self);
  kg_msg_t *m = kg_msg_new(type, session, parent, content_p);
  int rc = KG_ENOMEM;
  if (m && metadata_p && *metadata_p)
    kg_msg_set_json(m, KG_PART_METADATA, *metadata_p);
  if (metadata_p) {
    cJSON_Delete(*metadata_p);
    *metadata_p = NULL;
  }
  if (m) {
    kg_frame_t topic = {type, strlen(type)};
    rc = kg_msg_set_idents(m, &topic, 1);
    if (rc == 0)
      rc = kg_front_send(self, KG_CH_IOPUB, m);
  }
  kg_msg_destroy(&m);
  return rc;
}

int
kg_front_reply(kg_front_t *self, kg_channel_t ch, const kg_frame_t *idents, size_t count,
               const char *session, const char *type, const cJSON *parent,
               cJSON **content_p, const cJSON *metadata)
{
  assert(self);
  kg_msg_t *m = kg_msg_new(type, session, parent, content_p);
  if (!m)
    return KG_ENOMEM;
  if (metadata)
    kg_msg_set_json(m, KG_PART_METADATA, metadata);
  int rc = kg_msg_set_idents(m, idents, count);
  if (rc == 0)
    rc = kg_front_send(self, ch, m);
  kg_msg_destroy(&m);
  return rc;
}
