/*  Fuzz the wire decoder and its signature check (ipc/kg_msg, kg_signer).

    Input: one flags byte, then frames separated by the bytes FF FE (which
    neither JSON text nor a hex signature can contain). Flag bit 0: sign the
    four dict frames after the delimiter correctly before sending, so the
    fuzzer gets past the HMAC into header and JSON handling (a forged
    signature alone stops at kg_signer_verify, which is fuzzed too). The
    frames travel over a real inproc ZeroMQ pair, as from a peer, and are
    decoded by kg_msg_recv + kg_msg_parse exactly as the relay does a
    frontend's message. Flag bit 1: split with kg_msg_parse_trusted instead,
    as the relay does a kernel's message, then read the content as a stream
    (kg_jsonscan_stream, pieces of 16 + flags/4 raw bytes); whenever that
    succeeds, the pieces must add up to cJSON's decoding of "text"
    (a differential check: abort otherwise). Read again with a skip that
    takes every offer: the text before the first newline, the offered
    lines as cJSON decodes them and the text after them must add up to
    the same. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <zmq.h>

#include <stdlib.h>

#include "kg_jsonscan.h"
#include "kg_msg.h"
#include "kg_signer.h"

#define KEY "fuzz-key-0123456789abcdef"

static void *s_ctx, *s_tx, *s_rx;
static kg_signer_t *s_signer;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  s_ctx = zmq_ctx_new();
  s_tx = zmq_socket(s_ctx, ZMQ_PAIR);
  s_rx = zmq_socket(s_ctx, ZMQ_PAIR);
  zmq_bind(s_rx, "inproc://kg-fuzz");
  zmq_connect(s_tx, "inproc://kg-fuzz");
  s_signer = kg_signer_new(KEY, strlen(KEY));
  return 0;
}

#define S_MAX_FRAMES 64

/*  The stream's pieces, concatenated. */
typedef struct {
  char *buf;
  size_t len;
} s_text_t;

static int
s_append(const char *text, size_t len, void *arg)
{
  s_text_t *t = arg;
  char *b = realloc(t->buf, t->len + len + 1);
  if (!b)
    return -1;
  memcpy(b + t->len, text, len);
  t->len += len;
  b[t->len] = '\0';
  t->buf = b;
  return 0;
}

/*  A skip that takes the offer and keeps it. */
static bool
s_take(const char *raw, size_t len, void *arg)
{
  s_text_t *t = arg;
  t[1].buf = malloc(len + 3);
  if (!t[1].buf)
    return false;
  t[1].buf[0] = '"';
  memcpy(t[1].buf + 1, raw, len);
  memcpy(t[1].buf + 1 + len, "\"", 2);
  t[1].len = len + 2;
  return true;
}

/*  With every offer taken: around + decoded offer == whole. */
static void
s_check_skip(kg_frame_t raw, size_t piece, const char *whole)
{
  s_text_t t[2] = {{NULL, 0}, {NULL, 0}};
  bool is_stderr;
  if (kg_jsonscan_stream(raw, piece, &is_stderr, s_append, s_take, t) == 0 && t[1].buf) {
    cJSON *mid = cJSON_ParseWithLength(t[1].buf, t[1].len);
    if (!cJSON_IsString(mid) || !t[0].buf)
      abort();
    /* the lines were cut out after a newline: after which one, the decoded
       text does not say (cJSON also takes raw control characters in a
       string, so a raw newline may come before the first \n escape) */
    size_t m = strlen(mid->valuestring);
    bool found = false;
    for (const char *nl = strchr(t[0].buf, '\n'); nl && !found; nl = strchr(nl + 1, '\n')) {
      size_t a = (size_t) (nl + 1 - t[0].buf);
      found = strncmp(whole, t[0].buf, a) == 0 && strncmp(whole + a, mid->valuestring, m) == 0
              && strcmp(whole + a + m, t[0].buf + a) == 0;
    }
    if (!found)
      abort();
    cJSON_Delete(mid);
  }
  free(t[0].buf);
  free(t[1].buf);
}

static void
s_check_stream(kg_msg_t *msg, size_t piece)
{
  kg_frame_t raw = kg_msg_part(msg, KG_PART_CONTENT);
  s_text_t t = {NULL, 0};
  bool is_stderr = false;
  int rc = kg_jsonscan_stream(raw, piece, &is_stderr, s_append, NULL, &t);
  const cJSON *whole = kg_msg_json(msg, KG_PART_CONTENT);
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(whole, "text");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(whole, "name");
  /* a NUL (raw, or \u0000) ends cJSON's whole string, but only the piece
     it is in: what follows it is read here and was lost there */
  bool nul = memmem(raw.data, raw.size, "u0000", 5) || memchr(raw.data, 0, raw.size);
  if (rc == 0 && whole && !nul) {
    if (!cJSON_IsString(text) || strcmp(text->valuestring, t.buf ? t.buf : "") != 0)
      abort();
    if (is_stderr != (cJSON_IsString(name) && strcmp(name->valuestring, "stderr") == 0))
      abort();
    s_check_skip(raw, piece, text->valuestring);
  }
  free(t.buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  bool sign = data[0] & 1;
  const uint8_t *p = data + 1, *end = data + size;
  kg_frame_t frames[S_MAX_FRAMES];
  size_t n = 0;
  while (n < S_MAX_FRAMES) {
    const uint8_t *sep = memmem(p, (size_t) (end - p), "\xff\xfe", 2);
    const uint8_t *stop = sep ? sep : end;
    frames[n++] = (kg_frame_t){p, (size_t) (stop - p)};
    if (!sep)
      break;
    p = sep + 2;
  }
  char sig[65] = "";
  size_t delim = n;
  for (size_t i = 0; i < n; i++)
    if (frames[i].size == 9 && memcmp(frames[i].data, "<IDS|MSG>", 9) == 0) {
      delim = i;
      break;
    }
  if (sign && delim + 5 < n) {   /* signature + four dict frames exist */
    kg_signer_sign(s_signer, &frames[delim + 2], sig);
    frames[delim + 1] = (kg_frame_t){sig, 64};
  }
  for (size_t i = 0; i < n; i++)
    zmq_send(s_tx, frames[i].data, frames[i].size, i + 1 < n ? ZMQ_SNDMORE : 0);

  kg_msg_t *msg = NULL;
  if (kg_msg_recv(s_rx, 0, &msg) != 0)
    return 0;
  bool trusted = data[0] & 2;
  int rc = trusted ? kg_msg_parse_trusted(msg, s_signer) : kg_msg_parse(msg, s_signer);
  if (rc == 0 && trusted)
    s_check_stream(msg, 16 + data[0] / 4);
  if (rc == 0) {
    (void) kg_msg_check_header(msg);
    (void) kg_msg_type(msg);
    (void) kg_msg_id(msg);
    (void) kg_msg_session(msg);
    (void) kg_msg_parent_id(msg);
    for (int part = KG_PART_HEADER; part <= KG_PART_CONTENT; part++)
      (void) kg_msg_json(msg, (kg_part_t) part);
    for (size_t i = 0; i < kg_msg_buffer_count(msg); i++)
      (void) kg_msg_buffer(msg, i);
    for (size_t i = 0; i < kg_msg_ident_count(msg); i++)
      (void) kg_msg_ident(msg, i);
    (void) kg_msg_size(msg);
  }
  kg_msg_destroy(&msg);
  return 0;
}
