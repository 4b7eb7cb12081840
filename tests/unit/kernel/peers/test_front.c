/*  kg_front over inproc socket pairs: what kguard writes itself gets a fresh
    msg_id each time, the session and parent it is given, the frontend's
    signature (a client with another key rejects it), and replies reach the
    client that asked (its routing id). No kernel, no supervisor. */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_front.h"
#include "kg_test.h"

static const char s_key[] = "front-key-0123456789";

typedef struct {
  void *ctx;
  kg_front_t *front;
  void *shell;   /* the client's DEALER */
  void *iopub;   /* the client's SUB    */
  kg_signer_t *signer;   /* the client's, same key */
} s_fixture_t;

static void
s_setup(s_fixture_t *f)
{
  f->ctx = zmq_ctx_new();
  void *socks[KG_CH_COUNT] = {NULL};
  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    if (ch == KG_CH_HB)
      continue;
    int type = ch == KG_CH_IOPUB ? ZMQ_PUB : ZMQ_ROUTER;
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://front-%p-%d", (void *) f, ch);
    socks[ch] = zmq_socket(f->ctx, type);
    KG_CHECK_INT(zmq_bind(socks[ch], ep), 0);
    if (ch == KG_CH_SHELL) {
      f->shell = zmq_socket(f->ctx, ZMQ_DEALER);
      zmq_setsockopt(f->shell, ZMQ_ROUTING_ID, "client-A", 8);
      KG_CHECK_INT(zmq_connect(f->shell, ep), 0);
    } else if (ch == KG_CH_IOPUB) {
      f->iopub = zmq_socket(f->ctx, ZMQ_SUB);
      zmq_setsockopt(f->iopub, ZMQ_SUBSCRIBE, "", 0);
      KG_CHECK_INT(zmq_connect(f->iopub, ep), 0);
    }
  }
  f->front = kg_front_adopt(socks, s_key, strlen(s_key));
  KG_CHECK(f->front != NULL);
  KG_CHECK(socks[KG_CH_SHELL] == NULL);   /* taken */
  KG_CHECK(kg_front_socket(f->front, KG_CH_HB) == NULL);
  f->signer = kg_signer_new(s_key, strlen(s_key));
}

static void
s_teardown(s_fixture_t *f)
{
  kg_front_destroy(&f->front);
  KG_CHECK(f->front == NULL);
  kg_front_destroy(&f->front);   /* safe twice */
  int zero = 0;
  zmq_setsockopt(f->shell, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(f->iopub, ZMQ_LINGER, &zero, sizeof zero);
  zmq_close(f->shell);
  zmq_close(f->iopub);
  kg_signer_destroy(&f->signer);
  zmq_ctx_term(f->ctx);
}

/*  Receive one message from socket within timeout_ms, or NULL. */
static kg_msg_t *
s_recv(void *socket, int timeout_ms)
{
  zmq_pollitem_t item = {socket, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&item, 1, timeout_ms) != 1)
    return NULL;
  kg_msg_t *m = NULL;
  return kg_msg_recv(socket, ZMQ_DONTWAIT, &m) == 0 ? m : NULL;
}

static const char *
s_str(cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

KG_TEST(front_publish_fresh_ids_session_signature)
{
  s_fixture_t f = {0};
  s_setup(&f);
  cJSON *parent = cJSON_Parse("{\"msg_id\":\"req-1\",\"session\":\"old-kernel\"}");
  /* a SUB's subscription reaches the PUB asynchronously: publish until one
     arrives (bounded by a deadline), then check the next two */
  kg_msg_t *got = NULL;
  int64_t deadline = kg_clock_mono_ms() + 5000;
  while (!got && kg_clock_mono_ms() < deadline) {
    cJSON *content = cJSON_CreateObject();
    KG_CHECK_INT(kg_front_publish(f.front, "s-old", "status", parent, &content, NULL), 0);
    KG_CHECK(content == NULL);
    got = s_recv(f.iopub, 20);
  }
  KG_CHECK(got != NULL);
  kg_msg_destroy(&got);
  while ((got = s_recv(f.iopub, 0)))   /* the ones sent before the first arrived */
    kg_msg_destroy(&got);
  char first_id[64] = "";
  for (int i = 0; i < 2; i++) {
    cJSON *content = cJSON_CreateObject();
    cJSON_AddStringToObject(content, "text", "kguard notice");
    cJSON *meta = cJSON_Parse("{\"kguard\":{\"kind\":\"sticky-restart\"}}");
    KG_CHECK_INT(kg_front_publish(f.front, "s-old", "display_data", parent, &content, &meta), 0);
    KG_CHECK(meta == NULL);
    kg_msg_t *m = s_recv(f.iopub, 5000);
    KG_CHECK(m != NULL);
    if (!m)
      break;
    KG_CHECK_INT(kg_msg_parse(m, f.signer), 0);   /* the frontend's signature */
    KG_CHECK_STR(kg_msg_type(m), "display_data");
    KG_CHECK_STR(kg_msg_session(m), "s-old");     /* the session it was given */
    KG_CHECK_STR(kg_msg_parent_id(m), "req-1");
    KG_CHECK_INT(kg_msg_ident_count(m), 1);       /* topic = type */
    KG_CHECK(kg_msg_ident(m, 0).size == strlen("display_data"));
    cJSON *md = cJSON_GetObjectItemCaseSensitive(kg_msg_json(m, KG_PART_METADATA), "kguard");
    KG_CHECK_STR(s_str(md, "kind"), "sticky-restart");
    if (i == 0)
      snprintf(first_id, sizeof first_id, "%s", kg_msg_id(m));
    else
      KG_CHECK(strcmp(first_id, kg_msg_id(m)) != 0);   /* a fresh msg_id each */
    kg_msg_destroy(&m);
  }
  /* a client with another key rejects what kguard signed */
  kg_signer_t *other = kg_signer_new("another-key", 11);
  cJSON *content = cJSON_CreateObject();
  kg_front_publish(f.front, "s", "status", NULL, &content, NULL);
  kg_msg_t *m = s_recv(f.iopub, 5000);
  KG_CHECK(m != NULL);
  KG_CHECK_INT(kg_msg_parse(m, other), KG_EBADSIG);
  kg_msg_destroy(&m);
  kg_signer_destroy(&other);
  cJSON_Delete(parent);
  s_teardown(&f);
}

KG_TEST(front_reply_routes_to_the_asker)
{
  s_fixture_t f = {0};
  s_setup(&f);
  /* the client's request */
  cJSON *content = cJSON_CreateObject();
  kg_msg_t *req = kg_msg_new("kernel_info_request", "client-session", NULL, &content);
  KG_CHECK_INT(kg_msg_send(req, f.shell, f.signer, 0), 0);
  kg_msg_destroy(&req);
  kg_msg_t *in = s_recv(kg_front_socket(f.front, KG_CH_SHELL), 5000);
  KG_CHECK(in != NULL);
  kg_signer_t *fs = kg_front_signer(f.front);
  KG_CHECK_INT(kg_msg_parse(in, fs), 0);
  KG_CHECK_INT(kg_msg_ident_count(in), 1);
  kg_frame_t id = kg_msg_ident(in, 0);
  KG_CHECK(id.size == 8 && memcmp(id.data, "client-A", 8) == 0);
  char ids[2][64];
  for (int i = 0; i < 2; i++) {
    cJSON *reply = cJSON_CreateObject();
    cJSON_AddStringToObject(reply, "status", "ok");
    KG_CHECK_INT(kg_front_reply(f.front, KG_CH_SHELL, &id, 1, "kernel-session",
                                "kernel_info_reply", kg_msg_json(in, KG_PART_HEADER), &reply,
                                NULL),
                 0);
    KG_CHECK(reply == NULL);
    kg_msg_t *out = s_recv(f.shell, 5000);
    KG_CHECK(out != NULL);
    if (!out)
      break;
    KG_CHECK_INT(kg_msg_parse(out, f.signer), 0);
    KG_CHECK_STR(kg_msg_type(out), "kernel_info_reply");
    KG_CHECK_STR(kg_msg_session(out), "kernel-session");
    KG_CHECK_STR(kg_msg_parent_id(out), kg_msg_id(in));
    KG_CHECK_STR(s_str(kg_msg_json(out, KG_PART_CONTENT), "status"), "ok");
    snprintf(ids[i], sizeof ids[i], "%s", kg_msg_id(out));
    kg_msg_destroy(&out);
  }
  KG_CHECK(strcmp(ids[0], ids[1]) != 0);
  /* no socket for the heartbeat: refused, not crashed */
  cJSON *c = cJSON_CreateObject();
  KG_CHECK(kg_front_reply(f.front, KG_CH_HB, &id, 1, "s", "x_reply", NULL, &c, NULL) < 0);
  kg_msg_destroy(&in);
  s_teardown(&f);
}

static int
s_reader(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop;
  (void) id;
  (void) events;
  (void) arg;
  return KG_LOOP_OK;
}

static int
s_tick(kg_loop_t *loop, int id, void *arg)
{
  (void) loop;
  (void) id;
  (void) arg;
  return KG_LOOP_OK;
}

/*  A send may consume the edge that announces a socket's input (kg_loop.h):
    kg_front tells its loop of every send, so the loop looks at the socket
    before it waits. */
KG_TEST(front_send_tells_the_loop)
{
  s_fixture_t f;
  s_setup(&f);
  kg_loop_t *loop = kg_loop_new();
  void *shell = kg_front_socket(f.front, KG_CH_SHELL);
  kg_loop_socket(loop, shell, KG_LOOP_IN, s_reader, NULL);
  int t = kg_loop_timer(loop, 1, s_tick, NULL);
  kg_loop_once(loop);   /* a new socket is looked at once */
  kg_frame_t id = {"client-A", 8};
  cJSON *c = cJSON_CreateObject();
  KG_CHECK_INT(kg_front_reply(f.front, KG_CH_SHELL, &id, 1, "s", "x_reply", NULL, &c, NULL), 0);
  KG_CHECK_INT(kg_loop_timeout(loop), -1);   /* no loop set: nobody was told */
  kg_front_set_loop(f.front, loop);
  c = cJSON_CreateObject();
  KG_CHECK_INT(kg_front_reply(f.front, KG_CH_SHELL, &id, 1, "s", "x_reply", NULL, &c, NULL), 0);
  KG_CHECK_INT(kg_loop_timeout(loop), 0);
  kg_loop_timer_set(loop, t, 1);
  kg_loop_once(loop);
  KG_CHECK_INT(kg_loop_timeout(loop), -1);   /* looked at: nothing there */
  kg_front_set_loop(f.front, NULL);
  kg_loop_destroy(&loop);
  s_teardown(&f);
}

KG_TEST_MAIN(KG_CASE(front_publish_fresh_ids_session_signature),
             KG_CASE(front_reply_routes_to_the_asker), KG_CASE(front_send_tells_the_loop))
