/*  kg_msg: one Jupyter wire message, held as zmq frames (this file: the
    message itself; receiving, checking and sending are in kg_msg_wire.c).

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
#include "kg_msg_priv.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_error.h"

static kg_msg_observer_fn *s_observer;
static void *s_observer_arg;

void
kg_msg_set_observer(kg_msg_observer_fn *fn, void *arg)
{
  s_observer = fn;
  s_observer_arg = arg;
}

void
kg__msg_observe(void *socket, kg_msg_op_t op, int rc)
{
  if (s_observer)
    s_observer(socket, op, rc, s_observer_arg);
}

kg_msg_t *
kg__msg_alloc(void)
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
int
kg__msg_reserve(kg_msg_t *self, size_t want)
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

kg_msg_t *
kg_msg_share(const kg_msg_t *self)
{
  kg_msg_t *copy = kg__msg_alloc();
  if (!copy || kg__msg_reserve(copy, self->nframes) != 0) {
    kg_msg_destroy(&copy);
    return NULL;
  }
  for (size_t i = 0; i < self->nframes; i++) {
    zmq_msg_init(&copy->frames[i]);
    if (zmq_msg_copy(&copy->frames[i], (zmq_msg_t *) &self->frames[i]) != 0) {
      zmq_msg_close(&copy->frames[i]);
      kg_msg_destroy(&copy);
      return NULL;
    }
    copy->nframes = i + 1;
  }
  copy->split = self->split;
  copy->nident = self->nident;
  copy->verified = self->verified;
  memcpy(copy->verified_key, self->verified_key, sizeof copy->verified_key);
  return copy;
}

kg_frame_t
kg__msg_frame(const kg_msg_t *self, size_t index)
{
  kg_frame_t f = {NULL, 0};
  if (index < self->nframes) {
    zmq_msg_t *m = (zmq_msg_t *) &self->frames[index];
    f.data = zmq_msg_data(m);
    f.size = zmq_msg_size(m);
  }
  return f;
}

void
kg__msg_dict_frames(const kg_msg_t *self, kg_frame_t parts[4])
{
  for (int i = 0; i < 4; i++)
    parts[i] = kg__msg_frame(self, self->nident + 2 + (size_t) i);
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
  "unsigned", "forged", "replayed", "expired", "reflected", "malformed", "oversized"};

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
  case KG_EEXPIRED:
    return KG_DROP_EXPIRED;
  case KG_EREFLECTED:
    return KG_DROP_REFLECTED;
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
  kg_msg_t *self = kg__msg_alloc();
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
  return kg__msg_frame(self, index);
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
    rc = kg__msg_reserve(self, rest + count);
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
  return kg__msg_frame(self, self->nident + 2 + (size_t) part);
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
  return kg__msg_frame(self, self->nident + 6 + index);
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
