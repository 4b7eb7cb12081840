/*  kg_socket over ipc on every channel, and kg_msg relaying: a message
    checked with the peer's key is forwarded with its own signature, and
    the kernel's side (kg_msg_parse_trusted) goes on byte for byte. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include <cjson/cJSON.h>

#include "kg_error.h"
#include "kg_msg.h"
#include "kg_socket.h"
#include "kg_test.h"
#include "msg_fixture.h"

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
  kg_signer_t *signer = kg_signer_new("k", 1);
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
  kg_signer_t *check = kg_signer_new("shared", 6);
  kg_signer_t *front = kg_signer_new("shared", 6);
  kg_signer_t *other = kg_signer_new("other", 5);
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
  kg_signer_t *front = kg_signer_new("shared", 6);
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
    kg_signer_t *check = kg_signer_new("shared", 6);
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

KG_TEST_MAIN(KG_CASE(sockets), KG_CASE(same_key_forwards_signature),
             KG_CASE(trusted_forwards_byte_for_byte))
