/*  kg_front: see kg_front.h. */
#include "kg_front.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_heartbeat.h"
#include "kg_log.h"
#include "kg_socket.h"

struct kg_front_t {
  void *sock[KG_CH_COUNT];      /*  owned; sock[KG_CH_HB] stays NULL          */
  kg_heartbeat_t *heartbeat;    /*  owned, or NULL (adopted sockets)          */
  kg_signer_t *signer;          /*  owned: the frontend's key                 */
  kg_loop_t *loop;              /*  told of each send, or NULL (borrowed)     */
};

kg_front_t *
kg_front_bind(void *ctx, const kg_conninfo_t *info, int *err)
{
  kg_front_t *self = calloc(1, sizeof *self);
  *err = KG_ENOMEM;
  if (!self)
    return NULL;
  self->signer = kg_signer_new(info->key, info->key_len, 65536);
  if (!self->signer)
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
  self->signer = kg_signer_new(key, key_len, 65536);
  if (!self->signer) {
    free(self);
    return NULL;
  }
  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    if (ch == KG_CH_HB)
      continue;
    self->sock[ch] = sockets[ch];
    sockets[ch] = NULL;
  }
  return self;
}

void
kg_front_destroy(kg_front_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_front_t *self = *self_p;
  kg_heartbeat_destroy(&self->heartbeat);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    kg_socket_close(&self->sock[ch]);
  kg_signer_destroy(&self->signer);
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
kg_front_send(kg_front_t *self, kg_channel_t ch, kg_msg_t *msg)
{
  assert(self);
  void *sock = kg_front_socket(self, ch);
  if (!sock)
    return KG_EUSAGE;
  int rc = kg_msg_send(msg, sock, self->signer, 0);
  if (self->loop)
    kg_loop_sent(self->loop, sock);   /* the send may have taken its input's edge */
  return rc;
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
