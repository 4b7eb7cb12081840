/*  kg_msg and kg_socket over real zmq sockets (inproc and ipc): framing,
    signatures, identities, buffers, lazy JSON, limits. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include <cjson/cJSON.h>

#include "kg_error.h"
#include "kg_msg.h"
#include "kg_socket.h"
#include "kg_test.h"

static void *s_ctx;
static void *s_a, *s_b;          /*  a connected PAIR: a sends, b receives */

static void
s_pair(void)
{
  static int n;
  char ep[64];
  snprintf(ep, sizeof ep, "inproc://pair-%d", n++);
  s_ctx = zmq_ctx_new();
  s_a = zmq_socket(s_ctx, ZMQ_PAIR);
  s_b = zmq_socket(s_ctx, ZMQ_PAIR);
  int zero = 0;
  zmq_setsockopt(s_a, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(s_b, ZMQ_LINGER, &zero, sizeof zero);
  if (zmq_bind(s_b, ep) != 0 || zmq_connect(s_a, ep) != 0)
    abort();
}

static void
s_unpair(void)
{
  zmq_close(s_a);
  zmq_close(s_b);
  zmq_ctx_term(s_ctx);
}

/*  Send n raw frames (NUL-terminated strings) on sock. */
static void
s_send_strs(void *sock, size_t n, const char *const *frames)
{
  for (size_t i = 0; i < n; i++)
    zmq_send(sock, frames[i], strlen(frames[i]), i + 1 < n ? ZMQ_SNDMORE : 0);
}

/*  Send a signed message: idents..., delim, sig(dicts), dicts[4], then
    buffers (as strings). */
static void
s_send_signed(void *sock, kg_signer_t *signer, size_t nid, const char *const *ids,
              const char *const dicts[4], size_t nbuf, const char *const *bufs)
{
  kg_frame_t parts[4];
  for (int i = 0; i < 4; i++)
    parts[i] = (kg_frame_t) {dicts[i], strlen(dicts[i])};
  char sig[65];
  kg_signer_sign(signer, parts, sig);
  const char *frames[32];
  size_t n = 0;
  for (size_t i = 0; i < nid; i++)
    frames[n++] = ids[i];
  frames[n++] = "<IDS|MSG>";
  frames[n++] = sig;
  for (int i = 0; i < 4; i++)
    frames[n++] = dicts[i];
  for (size_t i = 0; i < nbuf; i++)
    frames[n++] = bufs[i];
  s_send_strs(sock, n, frames);
}

static const char *const s_dicts[4] = {
  "{\"msg_id\":\"m1\",\"msg_type\":\"execute_request\",\"session\":\"s1\","
  "\"username\":\"u\",\"date\":\"2024-01-01T00:00:00.000000Z\",\"version\":\"5.3\"}",
  "{\"msg_id\":\"p1\"}",
  "{}",
  "{\"code\":\"1+1\",\"silent\":false}",
};

static int
s_frame_is(kg_frame_t f, const char *s)
{
  return f.size == strlen(s) && memcmp(f.data, s, f.size) == 0;
}

KG_TEST(parse_signed)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3, 65536);
  const char *ids[] = {"client-1"};
  s_send_signed(s_a, signer, 1, ids, s_dicts, 0, NULL);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_frame_count(m), 7);
  KG_CHECK_INT(kg_msg_parse(m, signer), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_EUSAGE);      /*  only once */
  KG_CHECK_INT(kg_msg_ident_count(m), 1);
  KG_CHECK(s_frame_is(kg_msg_ident(m, 0), "client-1"));
  KG_CHECK(kg_msg_ident(m, 1).data == NULL);
  for (int p = 0; p < 4; p++)
    KG_CHECK(s_frame_is(kg_msg_part(m, (kg_part_t) p), s_dicts[p]));
  KG_CHECK_INT(kg_msg_buffer_count(m), 0);
  KG_CHECK_INT(kg_msg_check_header(m), 0);
  KG_CHECK_STR(kg_msg_type(m), "execute_request");
  KG_CHECK_STR(kg_msg_id(m), "m1");
  KG_CHECK_STR(kg_msg_session(m), "s1");
  KG_CHECK_STR(kg_msg_parent_id(m), "p1");
  cJSON *content = kg_msg_json(m, KG_PART_CONTENT);
  KG_CHECK(content && kg_msg_json(m, KG_PART_CONTENT) == content);    /*  cached */
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(content, "code")), "1+1");
  kg_msg_destroy(&m);
  KG_CHECK(m == NULL);
  kg_msg_destroy(&m);

  /*  The same frames again: a replay. */
  s_send_signed(s_a, signer, 1, ids, s_dicts, 0, NULL);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_EREPLAY);
  kg_msg_destroy(&m);

  /*  Signed with another key. */
  kg_signer_t *other = kg_signer_new("other", 5, 0);
  s_send_signed(s_a, other, 1, ids, s_dicts, 0, NULL);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_EBADSIG);
  kg_msg_destroy(&m);

  /*  Unsigned (empty signature frame) while signing is on. */
  kg_signer_t *none = kg_signer_new(NULL, 0, 0);
  s_send_signed(s_a, none, 1, ids, s_dicts, 0, NULL);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ENOSIG);
  kg_msg_destroy(&m);
  /*  ...which an unsigned session accepts. */
  s_send_signed(s_a, none, 1, ids, s_dicts, 0, NULL);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, none), 0);
  kg_msg_destroy(&m);

  kg_signer_destroy(&none);
  kg_signer_destroy(&other);
  kg_signer_destroy(&signer);
  s_unpair();
}

KG_TEST(framing_errors)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3, 0);
  kg_msg_t *m = NULL;

  /*  No delimiter at all (e.g. a heartbeat ping). */
  const char *ping[] = {"ping"};
  s_send_strs(s_a, 1, ping);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ENODELIM);
  KG_CHECK_INT(kg_msg_ident_count(m), 0);
  KG_CHECK(kg_msg_part(m, KG_PART_HEADER).data == NULL);
  KG_CHECK(kg_msg_json(m, KG_PART_HEADER) == NULL);
  kg_msg_destroy(&m);

  /*  A frame that merely starts with the delimiter is not one. */
  const char *near[] = {"id", "<IDS|MSG>x", "sig", "{}", "{}", "{}", "{}"};
  s_send_strs(s_a, 7, near);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ENODELIM);
  kg_msg_destroy(&m);

  /*  Four frames after the delimiter (no content). */
  const char *shortm[] = {"id", "<IDS|MSG>", "sig", "{}", "{}", "{}"};
  s_send_strs(s_a, 6, shortm);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ESHORTMSG);
  kg_msg_destroy(&m);

  /*  Delimiter as the last frame. */
  const char *last[] = {"id", "<IDS|MSG>"};
  s_send_strs(s_a, 2, last);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ESHORTMSG);
  kg_msg_destroy(&m);

  /*  Nothing waiting with ZMQ_DONTWAIT. */
  KG_CHECK_INT(kg_msg_recv(s_b, ZMQ_DONTWAIT, &m), -EAGAIN);
  KG_CHECK(m == NULL);
  kg_signer_destroy(&signer);
  s_unpair();
}

KG_TEST(bad_json_and_header)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3, 0);
  struct {
    const char *header;
    int code;
  } cases[] = {
    {"not json", KG_EBADJSON},
    {"[1,2]", KG_EBADJSON},
    {"\"msg_id\"", KG_EBADJSON},
    {"", KG_EBADJSON},
    {"{\"msg_id\":\"1\",\"msg_type\":\"x\"", KG_EBADJSON},
    {"{\"msg_id\":\"1\",\"msg_type\":\"x\"}", KG_EBADHEADER},
    {"{\"msg_id\":\"1\",\"session\":\"s\"}", KG_EBADHEADER},
    {"{\"msg_type\":\"x\",\"session\":\"s\"}", KG_EBADHEADER},
    {"{\"msg_id\":1,\"msg_type\":\"x\",\"session\":\"s\"}", KG_EBADHEADER},
    {"{\"msg_id\":\"1\",\"msg_type\":null,\"session\":\"s\"}", KG_EBADHEADER},
    {"{\"msg_id\":\"1\",\"msg_type\":\"x\",\"session\":\"s\"}", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *dicts[4] = {cases[i].header, "{}", "{}", "{}"};
    s_send_signed(s_a, signer, 0, NULL, dicts, 0, NULL);
    kg_msg_t *m = NULL;
    KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
    /*  The signature is checked on the bytes, whatever they are. */
    KG_CHECK_INT(kg_msg_parse(m, signer), 0);
    int rc = kg_msg_check_header(m);
    if (rc != cases[i].code) {
      fprintf(stderr, "header %s: %s\n", cases[i].header, kg_errname(rc));
      KG_CHECK(0);
    }
    if (cases[i].code == KG_EBADJSON) {
      KG_CHECK(kg_msg_json(m, KG_PART_HEADER) == NULL);
      KG_CHECK(kg_msg_type(m) == NULL);
    }
    kg_msg_destroy(&m);
  }
  /*  A bad signature is reported before the (bad) JSON is looked at. */
  const char *frames[] = {"<IDS|MSG>", "00", "not json", "{}", "{}", "{}"};
  s_send_strs(s_a, 6, frames);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_EBADSIG);
  kg_msg_destroy(&m);
  kg_signer_destroy(&signer);
  s_unpair();
}

KG_TEST(identities)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3, 0);
  const char *ids[] = {"router-a", "router-b", "client"};
  s_send_signed(s_a, signer, 3, ids, s_dicts, 0, NULL);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), 0);
  KG_CHECK_INT(kg_msg_ident_count(m), 3);
  for (size_t i = 0; i < 3; i++)
    KG_CHECK(s_frame_is(kg_msg_ident(m, i), ids[i]));
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_HEADER), s_dicts[0]));

  /*  A reply takes the request's identities. */
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "status", "ok");
  kg_msg_t *reply = kg_msg_new("execute_reply", "s2", kg_msg_json(m, KG_PART_HEADER), &content);
  KG_CHECK(reply && content == NULL);
  KG_CHECK_INT(kg_msg_ident_count(reply), 0);
  KG_CHECK_INT(kg_msg_copy_idents(reply, m), 0);
  KG_CHECK_INT(kg_msg_ident_count(reply), 3);
  for (size_t i = 0; i < 3; i++)
    KG_CHECK(s_frame_is(kg_msg_ident(reply, i), ids[i]));
  KG_CHECK_STR(kg_msg_parent_id(reply), "m1");

  /*  Growing past the inline frame array and shrinking back keep the
      dict frames intact. */
  kg_frame_t many[20];
  char names[20][8];
  for (int i = 0; i < 20; i++) {
    snprintf(names[i], sizeof names[i], "id%d", i);
    many[i] = (kg_frame_t) {names[i], strlen(names[i])};
  }
  KG_CHECK_INT(kg_msg_set_idents(reply, many, 20), 0);
  KG_CHECK_INT(kg_msg_ident_count(reply), 20);
  KG_CHECK(s_frame_is(kg_msg_ident(reply, 19), "id19"));
  KG_CHECK_STR(kg_msg_type(reply), "execute_reply");
  KG_CHECK_INT(kg_msg_set_idents(reply, many + 5, 1), 0);
  KG_CHECK_INT(kg_msg_ident_count(reply), 1);
  KG_CHECK(s_frame_is(kg_msg_ident(reply, 0), "id5"));
  KG_CHECK_INT(kg_msg_set_idents(reply, NULL, 0), 0);
  KG_CHECK_INT(kg_msg_ident_count(reply), 0);
  KG_CHECK_INT(kg_msg_frame_count(reply), 6);

  /*  Sent and received again, it still parses. */
  KG_CHECK_INT(kg_msg_copy_idents(reply, m), 0);
  KG_CHECK_INT(kg_msg_send(reply, s_a, signer, 0), 0);
  kg_msg_t *back = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &back), 0);
  KG_CHECK_INT(kg_msg_parse(back, signer), 0);
  KG_CHECK_INT(kg_msg_ident_count(back), 3);
  KG_CHECK(s_frame_is(kg_msg_ident(back, 2), "client"));
  cJSON *c = kg_msg_json(back, KG_PART_CONTENT);
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(c, "status")), "ok");
  kg_msg_destroy(&back);
  kg_msg_destroy(&reply);
  kg_msg_destroy(&m);
  kg_signer_destroy(&signer);
  s_unpair();
}

/*  Receive a whole message as raw frames with plain zmq (for checking what
    kg_msg_send put on the wire). Returns the frame count. */
static size_t
s_recv_raw(void *sock, zmq_msg_t *frames, size_t max)
{
  size_t n = 0;
  int more = 1;
  while (more && n < max) {
    zmq_msg_init(&frames[n]);
    if (zmq_msg_recv(&frames[n], sock, 0) < 0)
      abort();
    more = zmq_msg_more(&frames[n]);
    n++;
  }
  return n;
}

KG_TEST(buffers_and_resend)
{
  s_pair();
  kg_signer_t *in = kg_signer_new("inner", 5, 65536);
  kg_signer_t *out = kg_signer_new("outer", 5, 0);

  /*  A message with binary buffers: 1 MiB of bytes 0..255, an empty one,
      and one with NULs. Sent with zmq_msg_init_data so we know where the
      big one lives. */
  size_t big_len = 1 << 20;
  unsigned char *big = malloc(big_len);
  for (size_t i = 0; i < big_len; i++)
    big[i] = (unsigned char) (i * 7 + 3);
  const char *ids[] = {"c"};
  kg_frame_t parts[4];
  for (int i = 0; i < 4; i++)
    parts[i] = (kg_frame_t) {s_dicts[i], strlen(s_dicts[i])};
  char sig[65];
  kg_signer_sign(in, parts, sig);
  const char *pre[] = {ids[0], "<IDS|MSG>", sig, s_dicts[0], s_dicts[1], s_dicts[2], s_dicts[3]};
  for (int i = 0; i < 7; i++)
    zmq_send(s_a, pre[i], strlen(pre[i]), ZMQ_SNDMORE);
  zmq_msg_t bm;
  zmq_msg_init_data(&bm, big, big_len, NULL, NULL);     /*  we free it */
  zmq_msg_send(&bm, s_a, ZMQ_SNDMORE);
  zmq_send(s_a, "", 0, ZMQ_SNDMORE);
  zmq_send(s_a, "a\0b", 3, 0);

  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, in), 0);
  KG_CHECK_INT(kg_msg_buffer_count(m), 3);
  kg_frame_t b0 = kg_msg_buffer(m, 0);
  KG_CHECK_INT(b0.size, big_len);
  KG_CHECK(b0.data == big);                  /*  inproc: never copied */
  KG_CHECK_INT(kg_msg_buffer(m, 1).size, 0);
  KG_CHECK(kg_msg_buffer(m, 2).size == 3 && memcmp(kg_msg_buffer(m, 2).data, "a\0b", 3) == 0);
  KG_CHECK(kg_msg_buffer(m, 3).data == NULL);

  /*  Re-sign and resend twice (a relay retrying): both copies are complete
      and byte-identical, the big buffer still shared, not copied. */
  char expect[65];
  kg_signer_sign(out, parts, expect);
  for (int round = 0; round < 2; round++) {
    KG_CHECK_INT(kg_msg_send(m, s_a, out, 0), 0);
    zmq_msg_t raw[16];
    size_t n = s_recv_raw(s_b, raw, 16);
    KG_CHECK_INT(n, 10);
    KG_CHECK(zmq_msg_size(&raw[0]) == 1 && memcmp(zmq_msg_data(&raw[0]), "c", 1) == 0);
    KG_CHECK(zmq_msg_size(&raw[1]) == 9 && memcmp(zmq_msg_data(&raw[1]), "<IDS|MSG>", 9) == 0);
    /*  The signature covers the dicts only: identities and buffers do not
        change it. */
    KG_CHECK(zmq_msg_size(&raw[2]) == 64 && memcmp(zmq_msg_data(&raw[2]), expect, 64) == 0);
    for (int i = 0; i < 4; i++)
      KG_CHECK(zmq_msg_size(&raw[3 + i]) == strlen(s_dicts[i])
               && memcmp(zmq_msg_data(&raw[3 + i]), s_dicts[i], strlen(s_dicts[i])) == 0);
    KG_CHECK(zmq_msg_size(&raw[7]) == big_len && zmq_msg_data(&raw[7]) == big);
    KG_CHECK_INT(zmq_msg_size(&raw[8]), 0);
    KG_CHECK(zmq_msg_size(&raw[9]) == 3 && memcmp(zmq_msg_data(&raw[9]), "a\0b", 3) == 0);
    for (size_t i = 0; i < n; i++)
      zmq_msg_close(&raw[i]);
  }
  /*  Without identities the signature is the same too. */
  KG_CHECK_INT(kg_msg_set_idents(m, NULL, 0), 0);
  KG_CHECK_INT(kg_msg_send(m, s_a, out, 0), 0);
  zmq_msg_t raw[16];
  size_t n = s_recv_raw(s_b, raw, 16);
  KG_CHECK_INT(n, 9);
  KG_CHECK(zmq_msg_size(&raw[1]) == 64 && memcmp(zmq_msg_data(&raw[1]), expect, 64) == 0);
  for (size_t i = 0; i < n; i++)
    zmq_msg_close(&raw[i]);
  kg_msg_destroy(&m);
  free(big);
  kg_signer_destroy(&in);
  kg_signer_destroy(&out);
  s_unpair();
}

KG_TEST(set_json)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3, 65536);
  s_send_signed(s_a, signer, 0, NULL, s_dicts, 0, NULL);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), 0);

  /*  Editing the parsed copy in place and writing it back keeps it. */
  cJSON *md = kg_msg_json(m, KG_PART_METADATA);
  cJSON *kg = cJSON_AddObjectToObject(md, "kguard");
  cJSON_AddStringToObject(kg, "event", "advice");
  KG_CHECK_INT(kg_msg_set_json(m, KG_PART_METADATA, md), 0);
  KG_CHECK(kg_msg_json(m, KG_PART_METADATA) == md);
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_METADATA), "{\"kguard\":{\"event\":\"advice\"}}"));

  /*  A foreign object replaces the frame and the cache. */
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "code", "print(2)");
  KG_CHECK_INT(kg_msg_set_json(m, KG_PART_CONTENT, content), 0);
  cJSON_Delete(content);
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_CONTENT), "{\"code\":\"print(2)\"}"));
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(kg_msg_json(m, KG_PART_CONTENT),
                                                        "code")), "print(2)");

  /*  A large frame (zero-copy path) survives a round trip. */
  cJSON *big = cJSON_CreateObject();
  char *text = malloc(100001);
  memset(text, 'x', 100000);
  text[100000] = '\0';
  cJSON_AddStringToObject(big, "text", text);
  KG_CHECK_INT(kg_msg_set_json(m, KG_PART_CONTENT, big), 0);
  cJSON_Delete(big);
  KG_CHECK_INT(kg_msg_send(m, s_a, signer, 0), 0);
  kg_msg_t *back = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &back), 0);
  KG_CHECK_INT(kg_msg_parse(back, signer), 0);
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(kg_msg_json(back, KG_PART_CONTENT),
                                                        "text")), text);
  cJSON *bmd = kg_msg_json(back, KG_PART_METADATA);
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(bmd, "kguard"),
                                                        "event")), "advice");
  KG_CHECK_STR(kg_msg_id(back), "m1");
  free(text);
  kg_msg_destroy(&back);
  kg_msg_destroy(&m);
  kg_signer_destroy(&signer);
  s_unpair();
}

static int
s_is_uuid4(const char *s)
{
  if (!s || strlen(s) != 36)
    return 0;
  for (int i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-')
        return 0;
    }
    else if (!strchr("0123456789abcdef", s[i]))
      return 0;
  }
  return s[14] == '4' && strchr("89ab", s[19]) != NULL;
}

KG_TEST(new_message)
{
  cJSON *parent = cJSON_Parse("{\"msg_id\":\"req-1\",\"msg_type\":\"execute_request\"}");
  kg_msg_t *m = kg_msg_new("stream", "sess", parent, NULL);
  cJSON_Delete(parent);                          /*  copied, not kept */
  KG_CHECK(m != NULL);
  KG_CHECK_INT(kg_msg_check_header(m), 0);
  KG_CHECK_STR(kg_msg_type(m), "stream");
  KG_CHECK_STR(kg_msg_session(m), "sess");
  KG_CHECK_STR(kg_msg_parent_id(m), "req-1");
  KG_CHECK(s_is_uuid4(kg_msg_id(m)));
  cJSON *h = kg_msg_json(m, KG_PART_HEADER);
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(h, "username")), "kguard");
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(h, "version")), "5.3");
  const char *date = cJSON_GetStringValue(cJSON_GetObjectItem(h, "date"));
  KG_CHECK(date && strlen(date) == 27 && date[10] == 'T' && date[19] == '.' && date[26] == 'Z');
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_METADATA), "{}"));
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_CONTENT), "{}"));
  KG_CHECK_INT(kg_msg_buffer_count(m), 0);
  KG_CHECK_INT(kg_msg_frame_count(m), 6);
  /*  The header frame is the serialisation of the header. */
  kg_frame_t hf = kg_msg_part(m, KG_PART_HEADER);
  cJSON *reparsed = cJSON_ParseWithLength(hf.data, hf.size);
  KG_CHECK(cJSON_Compare(reparsed, h, 1));
  cJSON_Delete(reparsed);

  kg_msg_t *m2 = kg_msg_new("stream", "sess", NULL, NULL);
  KG_CHECK(strcmp(kg_msg_id(m), kg_msg_id(m2)) != 0);
  KG_CHECK(s_frame_is(kg_msg_part(m2, KG_PART_PARENT), "{}"));
  KG_CHECK(kg_msg_parent_id(m2) == NULL);
  kg_msg_destroy(&m2);
  kg_msg_destroy(&m);

  char now[32];
  kg_iso_now(now);
  KG_CHECK_INT(strlen(now), 27);
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char year[16];
  snprintf(year, sizeof year, "%04d-", tm.tm_year + 1900);
  KG_CHECK(strncmp(now, year, 5) == 0);
  char id[37];
  for (int i = 0; i < 100; i++) {
    kg_uuid4(id);
    KG_CHECK(s_is_uuid4(id));
  }
}

KG_TEST(heartbeat_raw)
{
  s_pair();
  const char *ping[] = {"peer-id", "", "ping \x01\x02"};
  s_send_strs(s_a, 3, ping);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_frame_count(m), 3);
  KG_CHECK_INT(kg_msg_send_raw(m, s_b, 0), 0);
  KG_CHECK_INT(kg_msg_send_raw(m, s_b, 0), 0);     /*  still ours: again */
  for (int round = 0; round < 2; round++) {
    zmq_msg_t raw[4];
    size_t n = s_recv_raw(s_a, raw, 4);
    KG_CHECK_INT(n, 3);
    for (size_t i = 0; i < n && i < 3; i++) {
      KG_CHECK(zmq_msg_size(&raw[i]) == strlen(ping[i])
               && memcmp(zmq_msg_data(&raw[i]), ping[i], strlen(ping[i])) == 0);
      zmq_msg_close(&raw[i]);
    }
  }
  /*  Unsplit messages cannot be signed and sent. */
  kg_signer_t *signer = kg_signer_new("k", 1, 0);
  KG_CHECK_INT(kg_msg_send(m, s_b, signer, 0), -EINVAL);
  kg_signer_destroy(&signer);
  kg_msg_destroy(&m);
  s_unpair();
}

/*  After an oversize message, the next one is received intact: the rest of
    the big one was drained. */
static void
s_check_next_ok(void)
{
  kg_signer_t *signer = kg_signer_new("key", 3, 0);
  s_send_signed(s_a, signer, 0, NULL, s_dicts, 0, NULL);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(m ? kg_msg_parse(m, signer) : -1, 0);
  KG_CHECK_INT(kg_msg_frame_count(m), 6);
  kg_msg_destroy(&m);
  kg_signer_destroy(&signer);
}

KG_TEST(too_many_frames)
{
  s_pair();
  int hwm = 0;                                   /*  no limit: 5000 frames */
  zmq_setsockopt(s_a, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(s_b, ZMQ_RCVHWM, &hwm, sizeof hwm);
  for (unsigned i = 0; i < KG_MSG_MAX_FRAMES + 100; i++)
    zmq_send(s_a, "f", 1, i + 1 < KG_MSG_MAX_FRAMES + 100 ? ZMQ_SNDMORE : 0);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), KG_ETOOBIG);
  KG_CHECK(m == NULL);
  s_check_next_ok();
  /*  Exactly the limit is accepted. */
  for (unsigned i = 0; i < KG_MSG_MAX_FRAMES; i++)
    zmq_send(s_a, "f", 1, i + 1 < KG_MSG_MAX_FRAMES ? ZMQ_SNDMORE : 0);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_frame_count(m), KG_MSG_MAX_FRAMES);
  kg_msg_destroy(&m);
  s_unpair();
}

static void
s_free(void *data, void *hint)
{
  (void) hint;
  free(data);
}

KG_TEST(too_many_bytes)
{
  s_pair();
  /*  One frame over the byte limit. calloc'd pages are never touched (the
      frame crosses inproc by reference), so this costs no real memory. */
  size_t len = (size_t) KG_MSG_MAX_BYTES + 1;
  void *huge = calloc(1, len);
  KG_CHECK(huge != NULL);
  zmq_send(s_a, "id", 2, ZMQ_SNDMORE);
  zmq_send(s_a, "<IDS|MSG>", 9, ZMQ_SNDMORE);
  zmq_msg_t hm;
  zmq_msg_init_data(&hm, huge, len, s_free, NULL);
  zmq_msg_send(&hm, s_a, ZMQ_SNDMORE);
  zmq_send(s_a, "tail", 4, 0);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), KG_ETOOBIG);
  KG_CHECK(m == NULL);
  s_check_next_ok();
  s_unpair();
}

/*  kg_socket: both sides over ipc in a private directory. */
KG_TEST(sockets)
{
  char dir[] = "/tmp/kg-sock-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  kg_conninfo_t *ci = kg_conninfo_new();
  strcpy(ci->transport, "ipc");
  snprintf(ci->ip, sizeof ci->ip, "%s/k", dir);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    ci->ports[ch] = ch + 1;
  void *ctx = zmq_ctx_new();
  void *front[KG_CH_COUNT], *back[KG_CH_COUNT];
  int err = 1;
  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    front[ch] = kg_socket_bind(ctx, ci, (kg_channel_t) ch, &err);
    KG_CHECK(front[ch] != NULL);
    KG_CHECK_INT(err, 0);
    back[ch] = kg_socket_connect(ctx, ci, (kg_channel_t) ch, "kg-ident", &err);
    KG_CHECK(back[ch] != NULL);
  }
  int type = 0;
  size_t tl = sizeof type;
  zmq_getsockopt(front[KG_CH_IOPUB], ZMQ_TYPE, &type, &tl);
  KG_CHECK_INT(type, ZMQ_PUB);
  zmq_getsockopt(back[KG_CH_IOPUB], ZMQ_TYPE, &type, &tl);
  KG_CHECK_INT(type, ZMQ_SUB);
  int linger = -1;
  tl = sizeof linger;
  zmq_getsockopt(front[KG_CH_SHELL], ZMQ_LINGER, &linger, &tl);
  KG_CHECK_INT(linger, 0);

  /*  shell, control and stdin: DEALER -> ROUTER carries the routing id. */
  kg_signer_t *signer = kg_signer_new("k", 1, 0);
  kg_channel_t dealers[] = {KG_CH_SHELL, KG_CH_CONTROL, KG_CH_STDIN};
  for (int i = 0; i < 3; i++) {
    kg_msg_t *m = kg_msg_new("kernel_info_request", "s", NULL, NULL);
    KG_CHECK_INT(kg_msg_send(m, back[dealers[i]], signer, 0), 0);
    kg_msg_destroy(&m);
    KG_CHECK_INT(kg_msg_recv(front[dealers[i]], 0, &m), 0);
    KG_CHECK_INT(kg_msg_parse(m, signer), 0);
    KG_CHECK_INT(kg_msg_ident_count(m), 1);
    KG_CHECK(s_frame_is(kg_msg_ident(m, 0), "kg-ident"));
    /*  and the ROUTER can answer by identity */
    KG_CHECK_INT(kg_msg_send(m, front[dealers[i]], signer, 0), 0);
    kg_msg_destroy(&m);
    KG_CHECK_INT(kg_msg_recv(back[dealers[i]], 0, &m), 0);
    KG_CHECK_INT(kg_msg_parse(m, signer), 0);
    KG_CHECK_STR(kg_msg_type(m), "kernel_info_request");
    kg_msg_destroy(&m);
  }

  /*  hb: REQ ping echoed by the ROUTER. */
  zmq_send(back[KG_CH_HB], "ping", 4, 0);
  kg_msg_t *hb = NULL;
  KG_CHECK_INT(kg_msg_recv(front[KG_CH_HB], 0, &hb), 0);
  KG_CHECK_INT(kg_msg_send_raw(hb, front[KG_CH_HB], 0), 0);
  kg_msg_destroy(&hb);
  char pong[8] = "";
  KG_CHECK_INT(zmq_recv(back[KG_CH_HB], pong, sizeof pong, 0), 4);
  KG_CHECK(memcmp(pong, "ping", 4) == 0);

  /*  iopub: the SUB joins asynchronously, so publish until it arrives
      (bounded by a deadline, not a sleep). */
  kg_msg_t *status = kg_msg_new("status", "s", NULL, NULL);
  kg_frame_t topic = {"kernel.status", 13};
  kg_msg_set_idents(status, &topic, 1);
  kg_msg_t *got = NULL;
  for (int tries = 0; tries < 1000 && !got; tries++) {
    KG_CHECK_INT(kg_msg_send(status, front[KG_CH_IOPUB], signer, 0), 0);
    zmq_pollitem_t item = {back[KG_CH_IOPUB], 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 10) == 1)
      KG_CHECK_INT(kg_msg_recv(back[KG_CH_IOPUB], 0, &got), 0);
  }
  KG_CHECK(got != NULL);
  if (got) {
    KG_CHECK_INT(kg_msg_parse(got, signer), 0);
    KG_CHECK(s_frame_is(kg_msg_ident(got, 0), "kernel.status"));
    KG_CHECK_STR(kg_msg_type(got), "status");
  }
  kg_msg_destroy(&got);
  kg_msg_destroy(&status);

  /*  Binding a tcp port in use fails with an error code. (zmq's ipc
      transport silently replaces an existing socket file instead.) */
  void *holder = zmq_socket(ctx, ZMQ_ROUTER);
  int zero = 0;
  zmq_setsockopt(holder, ZMQ_LINGER, &zero, sizeof zero);
  KG_CHECK_INT(zmq_bind(holder, "tcp://127.0.0.1:*"), 0);
  char last[64] = "";
  size_t ll = sizeof last;
  zmq_getsockopt(holder, ZMQ_LAST_ENDPOINT, last, &ll);
  kg_conninfo_t *tcp = kg_conninfo_new();
  tcp->ports[KG_CH_SHELL] = atoi(strrchr(last, ':') + 1);
  err = 0;
  void *dup = kg_socket_bind(ctx, tcp, KG_CH_SHELL, &err);
  KG_CHECK(dup == NULL);
  KG_CHECK_INT(err, -EADDRINUSE);
  kg_socket_close(&dup);
  zmq_close(holder);
  kg_conninfo_destroy(&tcp);

  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    kg_socket_close(&front[ch]);
    kg_socket_close(&back[ch]);
    KG_CHECK(front[ch] == NULL && back[ch] == NULL);
  }
  kg_socket_close(&front[0]);
  zmq_ctx_term(ctx);                              /*  LINGER 0: no hang */
  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    char path[256];
    snprintf(path, sizeof path, "%s/k-%d", dir, ch + 1);
    unlink(path);
  }
  rmdir(dir);
  kg_signer_destroy(&signer);
  kg_conninfo_destroy(&ci);
}

/*  Receive one message on s_b; return the signature frame's 64 hex chars
    compared with expect (an exact match). */
static bool
s_sent_sig_is(const char *expect)
{
  zmq_msg_t raw[16];
  size_t n = s_recv_raw(s_b, raw, 16);
  bool ok = n >= 2 && zmq_msg_size(&raw[1]) == 64
            && memcmp(zmq_msg_data(&raw[1]), expect, 64) == 0;
  for (size_t i = 0; i < n; i++)
    zmq_msg_close(&raw[i]);
  return ok;
}

/*  Relayed to a peer with the key that checked it, a message goes out with
    the received signature, unchanged and without an HMAC of its own; once
    a dict frame changed, or to a peer with another key, it is signed
    anew. A signature in uppercase hex (valid, but jupyter_client compares
    the text) is rewritten in the lowercase spelling frontends accept. */
KG_TEST(same_key_forwards_signature)
{
  s_pair();
  kg_signer_t *check = kg_signer_new("shared", 6, 65536);
  kg_signer_t *front = kg_signer_new("shared", 6, 0);
  kg_signer_t *other = kg_signer_new("other", 5, 0);
  KG_CHECK(kg_signer_same_key(check, front));
  KG_CHECK(!kg_signer_same_key(check, other));
  kg_frame_t parts[4];
  for (int i = 0; i < 4; i++)
    parts[i] = (kg_frame_t) {s_dicts[i], strlen(s_dicts[i])};
  char want[65], want_other[65];
  kg_signer_sign(front, parts, want);
  kg_signer_sign(other, parts, want_other);
  unsigned long front_macs = kg_signer_mac_count(front);

  s_send_signed(s_a, check, 0, NULL, s_dicts, 0, NULL);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, check), 0);
  KG_CHECK_INT(kg_msg_send(m, s_a, front, 0), 0);
  KG_CHECK(s_sent_sig_is(want));
  KG_CHECK_INT(kg_signer_mac_count(front), front_macs);   /* forwarded, not signed */
  KG_CHECK_INT(kg_msg_send(m, s_a, other, 0), 0);
  KG_CHECK(s_sent_sig_is(want_other));
  cJSON *meta = cJSON_Parse("{\"kguard\":1}");
  KG_CHECK_INT(kg_msg_set_json(m, KG_PART_METADATA, meta), 0);
  cJSON_Delete(meta);
  kg_frame_t changed[4] = {parts[0], parts[1], {"{\"kguard\":1}", 12}, parts[3]};
  char want_changed[65];
  kg_signer_sign(front, changed, want_changed);
  front_macs = kg_signer_mac_count(front);
  KG_CHECK_INT(kg_msg_send(m, s_a, front, 0), 0);
  KG_CHECK(s_sent_sig_is(want_changed));
  KG_CHECK_INT(kg_signer_mac_count(front), front_macs + 1);
  kg_msg_destroy(&m);

  /*  Uppercase hex: accepted, but sent on in lowercase. */
  const char *dicts[4] = {s_dicts[0], "{\"msg_id\":\"p2\"}", s_dicts[2], s_dicts[3]};
  for (int i = 0; i < 4; i++)
    parts[i] = (kg_frame_t) {dicts[i], strlen(dicts[i])};
  char sig[65];
  kg_signer_sign(front, parts, sig);
  memcpy(want, sig, sizeof want);
  for (char *c = sig; *c; c++)
    if (*c >= 'a' && *c <= 'f')
      *c = (char) (*c - 'a' + 'A');
  const char *frames[6] = {"<IDS|MSG>", sig, dicts[0], dicts[1], dicts[2], dicts[3]};
  s_send_strs(s_a, 6, frames);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, check), 0);
  KG_CHECK_INT(kg_msg_send(m, s_a, front, 0), 0);
  KG_CHECK(s_sent_sig_is(want));
  kg_msg_destroy(&m);

  kg_signer_destroy(&check);
  kg_signer_destroy(&front);
  kg_signer_destroy(&other);
  s_unpair();
}

/*  Send frames[0..n) (any bytes) as one message on sock. */
static void
s_send_frames(void *sock, size_t n, const kg_frame_t *frames)
{
  for (size_t i = 0; i < n; i++)
    zmq_send(sock, frames[i].data, frames[i].size, i + 1 < n ? ZMQ_SNDMORE : 0);
}

/*  Receive one message: is frame 2 (after the topic and the delimiter)
    the signature expect? */
static bool
s_topic_sig_is(const char *expect)
{
  zmq_msg_t raw[16];
  size_t n = s_recv_raw(s_b, raw, 16);
  bool ok = n >= 3 && zmq_msg_size(&raw[2]) == 64
            && memcmp(zmq_msg_data(&raw[2]), expect, 64) == 0;
  for (size_t i = 0; i < n; i++)
    zmq_msg_close(&raw[i]);
  return ok;
}

/*  Receive one whole message from sock and compare every frame with want. */
static bool
s_received_exactly(void *sock, size_t n, const kg_frame_t *want)
{
  zmq_msg_t raw[16];
  size_t got = s_recv_raw(sock, raw, 16);
  bool ok = got == n;
  for (size_t i = 0; i < got; i++) {
    ok = ok && zmq_msg_size(&raw[i]) == want[i].size
         && memcmp(zmq_msg_data(&raw[i]), want[i].data, want[i].size) == 0;
    zmq_msg_close(&raw[i]);
  }
  return ok;
}

/*  The kernel's side (kg_msg_parse_trusted): no HMAC is computed, and the
    message goes on byte for byte (topic, signature, the four dicts with
    their spacing, buffers), whatever its signature says: the receiver
    checks it. A signature not in signing's spelling, or a changed dict,
    is written anew. kg_msg_parse with the same bytes still rejects it. */
KG_TEST(trusted_forwards_byte_for_byte)
{
  s_pair();
  kg_signer_t *front = kg_signer_new("shared", 6, 0);
  const char *dicts[4] = {
    "{\"msg_id\": \"k1\", \"msg_type\": \"stream\", \"session\": \"ks\", "
    "\"username\": \"u\", \"date\": \"2026-12-03T08:00:00.000001Z\", \"version\": \"5.3\"}",
    "{\"msg_id\": \"p1\"}", "{}", "{\"name\": \"stdout\", \"text\": \"hi \\u00e9\\n\"}"};
  kg_frame_t parts[4];
  for (int i = 0; i < 4; i++)
    parts[i] = (kg_frame_t) {dicts[i], strlen(dicts[i])};
  char sig[65];
  kg_signer_sign(front, parts, sig);
  unsigned long macs = kg_signer_mac_count(front);
  char good0 = sig[0];
  kg_frame_t frames[8] = {{"kernel.1.stream", 15}, {"<IDS|MSG>", 9}, {sig, 64}, parts[0],
                          parts[1], parts[2], parts[3], {"\0\1\2buf", 6}};
  for (int forged = 0; forged <= 1; forged++) {
    if (forged)
      sig[0] = sig[0] == '0' ? '1' : '0';
    s_send_frames(s_a, 8, frames);
    kg_msg_t *m = NULL;
    KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
    KG_CHECK_INT(kg_msg_parse_trusted(m, front), 0);
    KG_CHECK_INT(kg_msg_parse_trusted(m, front), KG_EUSAGE);
    KG_CHECK_STR(kg_msg_type(m), "stream");
    KG_CHECK_INT(kg_msg_send(m, s_a, front, 0), 0);
    KG_CHECK(s_received_exactly(s_b, 8, frames));
    KG_CHECK_INT(kg_signer_mac_count(front), macs);   /* neither checked nor signed */
    kg_msg_destroy(&m);
    /* the frontend's side checks the same bytes */
    kg_signer_t *check = kg_signer_new("shared", 6, 64);
    s_send_frames(s_a, 8, frames);
    KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
    KG_CHECK_INT(kg_msg_parse(m, check), forged ? KG_EBADSIG : 0);
    kg_msg_destroy(&m);
    kg_signer_destroy(&check);
  }
  sig[0] = good0;   /* the right one again */

  /* a changed dict is signed anew */
  s_send_frames(s_a, 8, frames);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse_trusted(m, front), 0);
  cJSON *meta = cJSON_Parse("{\"kguard\":1}");
  KG_CHECK_INT(kg_msg_set_json(m, KG_PART_METADATA, meta), 0);
  cJSON_Delete(meta);
  kg_frame_t changed[4] = {parts[0], parts[1], {"{\"kguard\":1}", 12}, parts[3]};
  char want[65];
  kg_signer_sign(front, changed, want);
  KG_CHECK_INT(kg_msg_send(m, s_a, front, 0), 0);
  KG_CHECK(s_topic_sig_is(want));
  kg_msg_destroy(&m);

  /* uppercase hex: sent on in lowercase (signed anew) */
  char upper[65];
  memcpy(upper, sig, sizeof upper);
  for (char *c = upper; *c; c++)
    if (*c >= 'a' && *c <= 'f')
      *c = (char) (*c - 'a' + 'A');
  frames[2].data = upper;
  s_send_frames(s_a, 8, frames);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse_trusted(m, front), 0);
  KG_CHECK_INT(kg_msg_send(m, s_a, front, 0), 0);
  KG_CHECK(s_topic_sig_is(sig));
  kg_msg_destroy(&m);

  /* framing is still checked */
  const char *nodelim[3] = {"a", "b", "c"};
  s_send_strs(s_a, 3, nodelim);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse_trusted(m, front), KG_ENODELIM);
  kg_msg_destroy(&m);
  const char *shortm[4] = {"<IDS|MSG>", "sig", "{}", "{}"};
  s_send_strs(s_a, 4, shortm);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse_trusted(m, front), KG_ESHORTMSG);
  kg_msg_destroy(&m);

  kg_signer_destroy(&front);
  s_unpair();
}

KG_TEST_MAIN(KG_CASE(parse_signed), KG_CASE(framing_errors), KG_CASE(bad_json_and_header),
             KG_CASE(identities), KG_CASE(buffers_and_resend), KG_CASE(set_json),
             KG_CASE(new_message), KG_CASE(heartbeat_raw), KG_CASE(too_many_frames),
             KG_CASE(too_many_bytes), KG_CASE(sockets), 
             KG_CASE(same_key_forwards_signature),
             KG_CASE(trusted_forwards_byte_for_byte))
