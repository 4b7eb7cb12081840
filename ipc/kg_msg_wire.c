/*  kg_msg_wire: a kg_msg to and from a zmq socket: receiving it whole
    (bounded in frames and bytes), finding its delimiter and checking its
    signature (or trusting it, for the kernel's messages), and sending it,
    forwarding the received signature when signing would write the same.
    Part of the kg_msg class (kg_msg_priv.h); calls into kg_msg.c only.
*/
#include "kg_msg_priv.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_error.h"

static int
s_recv_part(zmq_msg_t *frame, void *socket, int flags)
{
  for (;;) {
    if (zmq_msg_recv(frame, socket, flags) >= 0)
      return 0;
    if (errno != EINTR)
      return -errno;
  }
}

static int s_recv(void *socket, int flags, kg_msg_t **msg_p);

int
kg_msg_recv(void *socket, int flags, kg_msg_t **msg_p)
{
  int rc = s_recv(socket, flags, msg_p);
  kg__msg_observe(socket, KG_MSG_OP_RECV, rc);
  return rc;
}

static int
s_recv(void *socket, int flags, kg_msg_t **msg_p)
{
  *msg_p = NULL;
  kg_msg_t *self = kg__msg_alloc();
  if (!self)
    return KG_ENOMEM;
  size_t total = 0;
  bool more = true;
  int rc = 0;
  while (more) {
    if (self->nframes == self->cap && (rc = kg__msg_reserve(self, self->nframes + 1)) != 0)
      break;
    zmq_msg_t *frame = &self->frames[self->nframes];
    zmq_msg_init(frame);
    /*  Later parts of a multipart message are already here: only the first
        receive may honour ZMQ_DONTWAIT. */
    rc = s_recv_part(frame, socket, self->nframes == 0 ? flags : 0);
    if (rc != 0) {
      zmq_msg_close(frame);
      break;
    }
    self->nframes++;
    total += zmq_msg_size(frame);
    more = zmq_msg_more(frame) != 0;   /*  cheaper than ZMQ_RCVMORE */
    if (total > KG_MSG_MAX_BYTES || self->nframes > KG_MSG_MAX_FRAMES) {
      rc = KG_ETOOBIG;
      break;
    }
  }
  if (rc == KG_ETOOBIG) {
    /*  Drop what we hold first, then drain the rest frame by frame. */
    for (size_t i = 0; i < self->nframes; i++)
      zmq_msg_close(&self->frames[i]);
    self->nframes = 0;
    while (more) {
      zmq_msg_t scratch;
      zmq_msg_init(&scratch);
      int r = s_recv_part(&scratch, socket, 0);
      more = r == 0 && zmq_msg_more(&scratch);
      zmq_msg_close(&scratch);
    }
  }
  if (rc != 0) {
    kg_msg_destroy(&self);
    return rc;
  }
  *msg_p = self;
  return 0;
}

static bool
s_lower_hex(kg_frame_t sig)
{
  const char *p = sig.data;
  for (size_t i = 0; i < sig.size; i++)
    if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
      return false;
  return sig.size > 0;
}


/*  Find the delimiter and check the five frames after it; sets nident. */
static int
s_find_delim(kg_msg_t *self)
{
  if (self->split)
    return KG_EUSAGE;
  size_t d = 0;
  for (; d < self->nframes; d++) {
    kg_frame_t f = kg__msg_frame(self, d);
    if (f.size == KG_DELIM_LEN && memcmp(f.data, KG_DELIM, KG_DELIM_LEN) == 0)
      break;
  }
  if (d == self->nframes)
    return KG_ENODELIM;
  if (self->nframes - d - 1 < 5)
    return KG_ESHORTMSG;
  self->nident = d;
  return 0;
}

int
kg_msg_parse_trusted(kg_msg_t *self, const kg_signer_t *signer)
{
  int rc = s_find_delim(self);
  if (rc != 0)
    return rc;
  /*  Not checked here: the receiver of the forwarded message checks it.
      Forwardable as received only in signing's spelling (see below). */
  const unsigned char *key_id = kg_signer_key_id(signer);
  if (key_id && s_lower_hex(kg__msg_frame(self, self->nident + 1))) {
    memcpy(self->verified_key, key_id, sizeof self->verified_key);
    self->verified = true;
  }
  self->split = true;
  return 0;
}

int
kg_msg_parse(kg_msg_t *self, kg_signer_t *signer)
{
  int rc0 = s_find_delim(self);
  if (rc0 != 0)
    return rc0;
  size_t d = self->nident;
  kg_frame_t parts[4];
  kg__msg_dict_frames(self, parts);
  kg_frame_t sig = kg__msg_frame(self, d + 1);
  int rc = kg_signer_verify(signer, sig.data, sig.size, parts);
  if (rc != 0)
    return rc;
  /*  Forwardable as received only in the spelling signing writes
      (lowercase hex): jupyter_client compares the text, not the bytes. */
  const unsigned char *key_id = kg_signer_key_id(signer);
  if (key_id && s_lower_hex(sig)) {
    memcpy(self->verified_key, key_id, sizeof self->verified_key);
    self->verified = true;
  }
  self->split = true;
  return 0;
}

int
kg_msg_mac(const kg_msg_t *self, unsigned char mac[32])
{
  if (!self->split)
    return KG_EUSAGE;
  kg_frame_t sig = kg__msg_frame(self, self->nident + 1);
  size_t got = 0;
  if (sig.size != 64
      || sodium_hex2bin(mac, 32, sig.data, sig.size, NULL, &got, NULL) != 0 || got != 32)
    return KG_EBADSIG;
  return 0;
}

/*  Send one part; frame is consumed on success and left to the caller on
    failure. EINTR is retried: the part was not queued. */
static int
s_send_part(zmq_msg_t *frame, void *socket, int flags)
{
  for (;;) {
    if (zmq_msg_send(frame, socket, flags) >= 0)
      return 0;
    if (errno != EINTR)
      return -errno;
  }
}

/*  Send a shared copy of frames[index]: zmq_msg_copy reference-counts
    large frames, so the bytes are not duplicated and self keeps its frame. */
static int
s_send_shared(kg_msg_t *self, size_t index, void *socket, int flags)
{
  zmq_msg_t out;
  zmq_msg_init(&out);
  if (zmq_msg_copy(&out, &self->frames[index]) != 0) {
    int rc = -errno;
    zmq_msg_close(&out);
    return rc;
  }
  int rc = s_send_part(&out, socket, flags);
  if (rc != 0)
    zmq_msg_close(&out);
  return rc;
}

static int
s_send_bytes(const void *data, size_t len, void *socket, int flags)
{
  zmq_msg_t out;
  if (zmq_msg_init_size(&out, len) != 0)
    return -ENOMEM;
  if (len)
    memcpy(zmq_msg_data(&out), data, len);
  int rc = s_send_part(&out, socket, flags);
  if (rc != 0)
    zmq_msg_close(&out);
  return rc;
}

int
kg_msg_send(kg_msg_t *self, void *socket, kg_signer_t *signer, int flags)
{
  if (!self->split)
    return -EINVAL;
  /*  Checked with this very key and unchanged since: the received signature
      frame is the one signing would write; forward it as it is. */
  const unsigned char *key_id = kg_signer_key_id(signer);
  bool forward_sig = self->verified && key_id
                     && sodium_memcmp(key_id, self->verified_key, sizeof self->verified_key) == 0;
  char sig[65] = "";
  if (forward_sig) {
    /*  sent below from the received frame */
  } else {
    kg_frame_t parts[4];
    kg__msg_dict_frames(self, parts);
    kg_signer_sign(signer, parts, sig);
  }

  /*  Only the first part may fail with EAGAIN under ZMQ_DONTWAIT; once it is
      queued zmq accepts the rest of the message atomically. */
  int rc = 0;
  size_t i = 0;
  for (; rc == 0 && i < self->nident; i++)
    rc = s_send_shared(self, i, socket, flags | ZMQ_SNDMORE);
  if (rc == 0)
    rc = s_send_bytes(KG_DELIM, KG_DELIM_LEN, socket, flags | ZMQ_SNDMORE);
  if (rc == 0)
    rc = forward_sig ? s_send_shared(self, self->nident + 1, socket, flags | ZMQ_SNDMORE)
                     : s_send_bytes(sig, strlen(sig), socket, flags | ZMQ_SNDMORE);
  for (i = self->nident + 2; rc == 0 && i < self->nframes; i++)
    rc = s_send_shared(self, i, socket,
                       flags | (i + 1 < self->nframes ? ZMQ_SNDMORE : 0));
  kg__msg_observe(socket, KG_MSG_OP_SEND, rc);
  return rc;
}

int
kg_msg_send_raw(kg_msg_t *self, void *socket, int flags)
{
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < self->nframes; i++)
    rc = s_send_shared(self, i, socket,
                       flags | (i + 1 < self->nframes ? ZMQ_SNDMORE : 0));
  kg__msg_observe(socket, KG_MSG_OP_SEND, rc);
  return rc;
}
