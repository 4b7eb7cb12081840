/*  kg_msg: one Jupyter wire message, held as zmq frames.

    Layout of frames[] once split (kg_msg_parse or kg_msg_new):
      [0, nident)          identities (for iopub: the topic)
      nident               "<IDS|MSG>"
      nident + 1           signature (as received; forwarded as it is when
                           the sending signer has the key that checked it
                           and no dict frame changed, else written anew)
      nident + 2 .. + 5    header, parent_header, metadata, content
      nident + 6 ..        buffers
    Before the split, frames[] is just what arrived (a heartbeat ping, or a
    message not yet checked).

    Most messages have 7 or 8 frames, so the first KG_MSG_INLINE frames live
    inside the struct: receiving one costs one malloc plus zmq's own.
    Sending uses zmq_msg_copy, which shares (reference counts) any frame
    over zmq's small-message size instead of copying it.
*/
#include "kg_msg.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "kg_error.h"

#define KG_MSG_INLINE 8
#define KG_DELIM "<IDS|MSG>"
#define KG_DELIM_LEN 9
/*  Serialisations at least this big are handed to zmq without a copy. */
#define KG_ZEROCOPY_MIN 4096

struct kg_msg_t {
  zmq_msg_t *frames;            /*  inline or heap                          */
  size_t nframes, cap;
  bool split;                   /*  layout above is valid                   */
  size_t nident;
  cJSON *json[4];               /*  parsed dict frames, lazily              */
  bool json_tried[4];           /*  parse attempted (and maybe failed)      */
  bool verified;                /*  the received signature is the one this   */
  unsigned char verified_key[KG_SIGNER_KEY_ID_BYTES]; /* key writes (checked,
                                    or trusted: kg_msg_parse_trusted), and
                                    the dict frames are unchanged since      */
  zmq_msg_t inline_frames[KG_MSG_INLINE];
};

static kg_msg_observer_fn *s_observer;
static void *s_observer_arg;

void
kg_msg_set_observer(kg_msg_observer_fn *fn, void *arg)
{
  s_observer = fn;
  s_observer_arg = arg;
}

static kg_msg_t *
s_alloc(void)
{
  kg_msg_t *self = malloc(sizeof *self);
  if (!self)
    return NULL;
  self->frames = self->inline_frames;
  self->nframes = 0;
  self->cap = KG_MSG_INLINE;
  self->split = false;
  self->nident = 0;
  self->verified = false;
  for (int i = 0; i < 4; i++) {
    self->json[i] = NULL;
    self->json_tried[i] = false;
  }
  return self;
}

/*  Make room for at least want frames. zmq_msg_t may be moved bitwise
    (libzmq's own zmq_msg_move does exactly that), so realloc is safe once
    the frames are out of the inline array. */
static int
s_reserve(kg_msg_t *self, size_t want)
{
  if (want <= self->cap)
    return 0;
  size_t cap = self->cap * 2;
  while (cap < want)
    cap *= 2;
  zmq_msg_t *frames;
  if (self->frames == self->inline_frames) {
    frames = malloc(cap * sizeof *frames);
    if (frames)
      memcpy(frames, self->inline_frames, self->nframes * sizeof *frames);
  }
  else
    frames = realloc(self->frames, cap * sizeof *frames);
  if (!frames)
    return KG_ENOMEM;
  self->frames = frames;
  self->cap = cap;
  return 0;
}

void
kg_msg_destroy(kg_msg_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_msg_t *self = *self_p;
  for (size_t i = 0; i < self->nframes; i++)
    zmq_msg_close(&self->frames[i]);
  for (int i = 0; i < 4; i++)
    cJSON_Delete(self->json[i]);
  if (self->frames != self->inline_frames)
    free(self->frames);
  free(self);
  *self_p = NULL;
}

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
  if (s_observer)
    s_observer(socket, KG_MSG_OP_RECV, rc, s_observer_arg);
  return rc;
}

static int
s_recv(void *socket, int flags, kg_msg_t **msg_p)
{
  *msg_p = NULL;
  kg_msg_t *self = s_alloc();
  if (!self)
    return KG_ENOMEM;
  size_t total = 0;
  bool more = true;
  int rc = 0;
  while (more) {
    if (self->nframes == self->cap && (rc = s_reserve(self, self->nframes + 1)) != 0)
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

static kg_frame_t
s_frame(const kg_msg_t *self, size_t index)
{
  kg_frame_t f = {NULL, 0};
  if (index < self->nframes) {
    zmq_msg_t *m = (zmq_msg_t *) &self->frames[index];
    f.data = zmq_msg_data(m);
    f.size = zmq_msg_size(m);
  }
  return f;
}

static void
s_dict_frames(const kg_msg_t *self, kg_frame_t parts[4])
{
  for (int i = 0; i < 4; i++)
    parts[i] = s_frame(self, self->nident + 2 + (size_t) i);
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
    kg_frame_t f = s_frame(self, d);
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
  if (key_id && s_lower_hex(s_frame(self, self->nident + 1))) {
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
  s_dict_frames(self, parts);
  kg_frame_t sig = s_frame(self, d + 1);
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

/*  Replace frame with a copy of data (small) or with the cJSON-allocated
    string itself (large; zmq frees it with cJSON_free when done). */
static void
s_free_cjson(void *data, void *hint)
{
  (void) hint;
  cJSON_free(data);
}

static int
s_frame_from_string(zmq_msg_t *frame, char *text)
{
  size_t len = strlen(text);
  if (len >= KG_ZEROCOPY_MIN) {
    if (zmq_msg_init_data(frame, text, len, s_free_cjson, NULL) != 0) {
      cJSON_free(text);
      return KG_ENOMEM;
    }
    return 0;
  }
  int rc = zmq_msg_init_size(frame, len) == 0 ? 0 : KG_ENOMEM;
  if (rc == 0)
    memcpy(zmq_msg_data(frame), text, len);
  cJSON_free(text);
  return rc;
}

static int
s_frame_from_bytes(zmq_msg_t *frame, const void *data, size_t len)
{
  if (zmq_msg_init_size(frame, len) != 0)
    return KG_ENOMEM;
  if (len)
    memcpy(zmq_msg_data(frame), data, len);
  return 0;
}

const char *const kg_msg_drop_names[KG_DROP_COUNT] = {
  "unsigned", "forged", "replayed", "malformed", "oversized"};

kg_drop_kind_t
kg_msg_drop_kind(int rc)
{
  switch (rc) {
  case KG_ENOSIG:
    return KG_DROP_UNSIGNED;
  case KG_EBADSIG:
    return KG_DROP_FORGED;
  case KG_EREPLAY:
    return KG_DROP_REPLAYED;
  case KG_ETOOBIG:
    return KG_DROP_OVERSIZED;
  default:
    return KG_DROP_MALFORMED;
  }
}

kg_msg_t *
kg_msg_new(const char *msg_type, const char *session,
           const cJSON *parent_header, cJSON **content_p)
{
  kg_msg_t *self = s_alloc();
  cJSON *content = content_p ? *content_p : NULL;
  if (content_p)
    *content_p = NULL;
  if (!self) {
    cJSON_Delete(content);
    return NULL;
  }
  self->split = true;

  char id[37], date[32];
  kg_uuid4(id);
  kg_iso_now(date);
  cJSON *header = cJSON_CreateObject();
  self->json[KG_PART_HEADER] = header;
  self->json[KG_PART_PARENT] = parent_header ? cJSON_Duplicate(parent_header, 1)
                                             : cJSON_CreateObject();
  self->json[KG_PART_METADATA] = cJSON_CreateObject();
  self->json[KG_PART_CONTENT] = content ? content : cJSON_CreateObject();
  bool ok = header
    && cJSON_AddStringToObject(header, "msg_id", id)
    && cJSON_AddStringToObject(header, "msg_type", msg_type ? msg_type : "")
    && cJSON_AddStringToObject(header, "session", session ? session : "")
    && cJSON_AddStringToObject(header, "username", "kguard")
    && cJSON_AddStringToObject(header, "date", date)
    && cJSON_AddStringToObject(header, "version", "5.3");
  for (int i = 0; i < 4; i++) {
    self->json_tried[i] = true;
    ok = ok && self->json[i];
  }
  /*  The frames: delimiter, empty signature (made on send), four dicts. */
  ok = ok && s_frame_from_bytes(&self->frames[0], KG_DELIM, KG_DELIM_LEN) == 0;
  if (ok)
    self->nframes = 1;
  ok = ok && s_frame_from_bytes(&self->frames[1], "", 0) == 0;
  if (ok)
    self->nframes = 2;
  for (int i = 0; ok && i < 4; i++) {
    char *text = cJSON_PrintUnformatted(self->json[i]);
    ok = text && s_frame_from_string(&self->frames[2 + i], text) == 0;
    if (ok)
      self->nframes++;
  }
  if (!ok)
    kg_msg_destroy(&self);
  return self;
}

size_t
kg_msg_ident_count(const kg_msg_t *self)
{
  return self->split ? self->nident : 0;
}

kg_frame_t
kg_msg_ident(const kg_msg_t *self, size_t index)
{
  kg_frame_t none = {NULL, 0};
  if (!self->split || index >= self->nident)
    return none;
  return s_frame(self, index);
}

int
kg_msg_set_idents(kg_msg_t *self, const kg_frame_t *idents, size_t count)
{
  if (!self->split)
    return KG_EUSAGE;
  /*  Build the new identity frames first so a failure changes nothing. */
  zmq_msg_t fresh_inline[4];  /*  most messages have one identity */
  zmq_msg_t *fresh = count <= 4 ? fresh_inline : malloc(count * sizeof *fresh);
  if (!fresh)
    return KG_ENOMEM;
  size_t made = 0;
  for (; made < count; made++)
    if (s_frame_from_bytes(&fresh[made], idents[made].data, idents[made].size) != 0)
      break;
  int rc = made == count ? 0 : KG_ENOMEM;
  size_t rest = self->nframes - self->nident;
  if (rc == 0)
    rc = s_reserve(self, rest + count);
  if (rc != 0) {
    for (size_t i = 0; i < made; i++)
      zmq_msg_close(&fresh[i]);
    if (fresh != fresh_inline)
      free(fresh);
    return rc;
  }
  for (size_t i = 0; i < self->nident; i++)
    zmq_msg_close(&self->frames[i]);
  memmove(&self->frames[count], &self->frames[self->nident], rest * sizeof(zmq_msg_t));
  memcpy(self->frames, fresh, count * sizeof(zmq_msg_t));
  self->nident = count;
  self->nframes = rest + count;
  if (fresh != fresh_inline)
    free(fresh);
  return 0;
}

int
kg_msg_copy_idents(kg_msg_t *self, const kg_msg_t *other)
{
  size_t n = kg_msg_ident_count(other);
  kg_frame_t views[16] = {{NULL, 0}};
  kg_frame_t *v = n <= 16 ? views : malloc(n * sizeof *v);
  if (!v)
    return KG_ENOMEM;
  for (size_t i = 0; i < n; i++)
    v[i] = kg_msg_ident(other, i);
  int rc = kg_msg_set_idents(self, v, n);
  if (v != views)
    free(v);
  return rc;
}

kg_frame_t
kg_msg_part(const kg_msg_t *self, kg_part_t part)
{
  kg_frame_t none = {NULL, 0};
  if (!self->split || (int) part < 0 || part > KG_PART_CONTENT)
    return none;
  return s_frame(self, self->nident + 2 + (size_t) part);
}

size_t
kg_msg_buffer_count(const kg_msg_t *self)
{
  return self->split ? self->nframes - self->nident - 6 : 0;
}

kg_frame_t
kg_msg_buffer(const kg_msg_t *self, size_t index)
{
  kg_frame_t none = {NULL, 0};
  if (index >= kg_msg_buffer_count(self))
    return none;
  return s_frame(self, self->nident + 6 + index);
}

cJSON *
kg_msg_json(kg_msg_t *self, kg_part_t part)
{
  if (!self->split || (int) part < 0 || part > KG_PART_CONTENT)
    return NULL;
  if (!self->json_tried[part]) {
    self->json_tried[part] = true;
    kg_frame_t f = kg_msg_part(self, part);
    cJSON *json = f.size ? cJSON_ParseWithLength(f.data, f.size) : NULL;
    if (json && !cJSON_IsObject(json)) {
      cJSON_Delete(json);
      json = NULL;
    }
    self->json[part] = json;
  }
  return self->json[part];
}

int
kg_msg_set_json(kg_msg_t *self, kg_part_t part, const cJSON *json)
{
  if (!self->split || (int) part < 0 || part > KG_PART_CONTENT || !json)
    return KG_EUSAGE;
  char *text = cJSON_PrintUnformatted(json);
  if (!text)
    return KG_ENOMEM;
  zmq_msg_t frame;
  if (s_frame_from_string(&frame, text) != 0)
    return KG_ENOMEM;
  zmq_msg_t *slot = &self->frames[self->nident + 2 + (size_t) part];
  zmq_msg_close(slot);
  *slot = frame;
  self->verified = false;
  /*  If the caller edited our own parsed copy, it now matches the frame:
      keep it. Anything else invalidates it. */
  if (self->json[part] != json) {
    cJSON_Delete(self->json[part]);
    self->json[part] = NULL;
    self->json_tried[part] = false;
  }
  return 0;
}

static const char *
s_string(const cJSON *obj, const char *name)
{
  const cJSON *item = obj ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
  return cJSON_IsString(item) ? item->valuestring : NULL;
}

const char *
kg_msg_type(kg_msg_t *self)
{
  return s_string(kg_msg_json(self, KG_PART_HEADER), "msg_type");
}

const char *
kg_msg_id(kg_msg_t *self)
{
  return s_string(kg_msg_json(self, KG_PART_HEADER), "msg_id");
}

const char *
kg_msg_session(kg_msg_t *self)
{
  return s_string(kg_msg_json(self, KG_PART_HEADER), "session");
}

const char *
kg_msg_parent_id(kg_msg_t *self)
{
  return s_string(kg_msg_json(self, KG_PART_PARENT), "msg_id");
}

int
kg_msg_check_header(kg_msg_t *self)
{
  cJSON *header = kg_msg_json(self, KG_PART_HEADER);
  if (!header)
    return KG_EBADJSON;
  if (!s_string(header, "msg_id") || !s_string(header, "msg_type")
      || !s_string(header, "session"))
    return KG_EBADHEADER;
  return 0;
}

size_t
kg_msg_frame_count(const kg_msg_t *self)
{
  return self->nframes;
}

size_t
kg_msg_size(const kg_msg_t *self)
{
  size_t total = 0;
  for (size_t i = 0; i < self->nframes; i++)
    total += zmq_msg_size(&self->frames[i]);
  return total;
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
    s_dict_frames(self, parts);
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
  if (s_observer)
    s_observer(socket, KG_MSG_OP_SEND, rc, s_observer_arg);
  return rc;
}

int
kg_msg_send_raw(kg_msg_t *self, void *socket, int flags)
{
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < self->nframes; i++)
    rc = s_send_shared(self, i, socket,
                       flags | (i + 1 < self->nframes ? ZMQ_SNDMORE : 0));
  if (s_observer)
    s_observer(socket, KG_MSG_OP_SEND, rc, s_observer_arg);
  return rc;
}
