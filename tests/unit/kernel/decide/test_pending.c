/*  kg_pending: the requests kguard has forwarded and not yet seen answered
    (routing, held queues, execute flags, expiry, the busy ledger). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_msg.h"
#include "kg_pending.h"
#include "kg_signer.h"
#include "kg_test.h"

/*  Build a parsed request as it would arrive on a ROUTER socket. */
static kg_msg_t *
s_request(void *ctx, const char *type, const char *code, const char *ident)
{
  void *a = zmq_socket(ctx, ZMQ_PAIR), *b = zmq_socket(ctx, ZMQ_PAIR);
  char ep[64];
  snprintf(ep, sizeof ep, "inproc://req-%p", (void *) a);
  zmq_bind(a, ep);
  zmq_connect(b, ep);
  cJSON *content = cJSON_CreateObject();
  if (code)
    cJSON_AddStringToObject(content, "code", code);
  kg_msg_t *m = kg_msg_new(type, "sess", NULL, &content);
  kg_frame_t id = {ident, strlen(ident)};
  kg_msg_set_idents(m, &id, 1);
  kg_signer_t *s = kg_signer_new("k", 1);
  kg_msg_send(m, b, s, 0);
  kg_msg_destroy(&m);
  kg_msg_recv(a, 0, &m);
  kg_msg_parse(m, s);
  kg_signer_destroy(&s);
  zmq_close(a);
  zmq_close(b);
  return m;
}

KG_TEST(pending_add_find_remove)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(4);
  kg_msg_t *m = s_request(ctx, "execute_request", "print(1)", "client-A");
  char id[64];
  snprintf(id, sizeof id, "%s", kg_msg_id(m));
  kg_pending_entry_t *e = kg_pending_add(p, m, KG_CH_SHELL, 42);
  KG_CHECK(e != NULL);
  KG_CHECK_STR(e->code, "print(1)");
  KG_CHECK_STR(e->msg_type, "execute_request");
  KG_CHECK_INT(e->ident_count, 1);
  KG_CHECK(e->idents[0].size == 8 && memcmp(e->idents[0].data, "client-A", 8) == 0);
  KG_CHECK_INT(e->arrival_ms, 42);
  const cJSON *mid = cJSON_GetObjectItemCaseSensitive(e->header, "msg_id");
  KG_CHECK_STR(mid->valuestring, id);
  kg_msg_destroy(&m);   /* the entry owns copies */
  KG_CHECK(kg_pending_find(p, id) == e);
  KG_CHECK_INT(kg_pending_count(p), 1);
  KG_CHECK(kg_pending_remove(p, id));
  KG_CHECK(!kg_pending_remove(p, id));
  KG_CHECK(kg_pending_find(p, id) == NULL);
  kg_pending_destroy(&p);
  zmq_ctx_term(ctx);
}

KG_TEST(pending_running)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(4);
  kg_msg_t *a = s_request(ctx, "kernel_info_request", NULL, "c");
  kg_msg_t *b = s_request(ctx, "execute_request", "a", "c");
  kg_msg_t *c = s_request(ctx, "execute_request", "b", "c");
  kg_pending_entry_t *ea = kg_pending_add(p, a, KG_CH_SHELL, 1);
  kg_pending_entry_t *eb = kg_pending_add(p, b, KG_CH_SHELL, 2);
  kg_pending_entry_t *ec = kg_pending_add(p, c, KG_CH_SHELL, 3);
  KG_CHECK(kg_pending_running(p) == NULL);   /* nothing forwarded yet */
  ea->forwarded = eb->forwarded = ec->forwarded = true;
  KG_CHECK(kg_pending_running(p) == eb);     /* the oldest forwarded execute */
  KG_CHECK(kg_pending_at(p, 2) == ec);
  kg_pending_remove(p, kg_msg_id(b));
  KG_CHECK(kg_pending_running(p) == ec);
  kg_msg_destroy(&a);
  kg_msg_destroy(&b);
  kg_msg_destroy(&c);
  kg_pending_destroy(&p);
  zmq_ctx_term(ctx);
}

KG_TEST(pending_held_queue_bounded)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(3);
  kg_msg_t *m1 = s_request(ctx, "execute_request", "1", "c");
  kg_msg_t *m2 = s_request(ctx, "interrupt_request", NULL, "c");
  kg_msg_t *m3 = s_request(ctx, "complete_request", NULL, "c");
  kg_msg_t *m4 = s_request(ctx, "execute_request", "4", "c");
  char id1[64], id3[64];
  snprintf(id1, sizeof id1, "%s", kg_msg_id(m1));
  snprintf(id3, sizeof id3, "%s", kg_msg_id(m3));
  KG_CHECK_INT(kg_pending_hold(p, &m1, KG_CH_SHELL), 0);
  KG_CHECK(m1 == NULL);
  KG_CHECK_INT(kg_pending_hold(p, &m2, KG_CH_CONTROL), 0);
  KG_CHECK_INT(kg_pending_hold(p, &m3, KG_CH_SHELL), 0);
  KG_CHECK_INT(kg_pending_hold(p, &m4, KG_CH_SHELL), KG_ETOOBIG);   /* both queues count */
  KG_CHECK(m4 != NULL);   /* still the caller's */
  KG_CHECK_INT(kg_pending_held(p), 3);
  KG_CHECK_INT(kg_pending_held_shell(p), 2);
  kg_channel_t ch;
  kg_msg_t *out = kg_pending_unhold(p, false, &ch);   /* the control queue */
  KG_CHECK_INT(ch, KG_CH_CONTROL);
  kg_msg_destroy(&out);
  KG_CHECK(kg_pending_unhold(p, false, &ch) == NULL);
  out = kg_pending_unhold(p, true, &ch);
  KG_CHECK_STR(kg_msg_id(out), id1);   /* the shell queue, in order */
  KG_CHECK_INT(ch, KG_CH_SHELL);
  kg_msg_destroy(&out);
  out = kg_pending_unhold(p, true, &ch);
  KG_CHECK_STR(kg_msg_id(out), id3);
  kg_msg_destroy(&out);
  KG_CHECK(kg_pending_unhold(p, true, &ch) == NULL);
  /* wraps around; drop empties one queue only */
  KG_CHECK_INT(kg_pending_hold(p, &m4, KG_CH_SHELL), 0);
  kg_msg_t *m5 = s_request(ctx, "shutdown_request", NULL, "c");
  KG_CHECK_INT(kg_pending_hold(p, &m5, KG_CH_CONTROL), 0);
  KG_CHECK_INT(kg_pending_drop_held(p, true), 1);
  KG_CHECK_INT(kg_pending_held(p), 1);
  kg_pending_destroy(&p);   /* frees what is still held */
  zmq_ctx_term(ctx);
}

KG_TEST(pending_execute_flags)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(4);
  kg_msg_t *a = s_request(ctx, "execute_request", "a", "c");
  cJSON *c = cJSON_Duplicate(kg_msg_json(a, KG_PART_CONTENT), 1);
  cJSON_AddBoolToObject(c, "silent", false);   /* no stop_on_error: true */
  kg_msg_set_json(a, KG_PART_CONTENT, c);
  kg_pending_entry_t *e = kg_pending_add(p, a, KG_CH_SHELL, 1);
  KG_CHECK(e->stop_on_error && !e->silent && e->well_formed);
  cJSON_AddBoolToObject(c, "stop_on_error", false);
  cJSON_ReplaceItemInObject(c, "silent", cJSON_CreateNumber(1));   /* Python truthiness */
  kg_msg_set_json(a, KG_PART_CONTENT, c);
  e = kg_pending_add(p, a, KG_CH_SHELL, 2);   /* same msg_id: replaces */
  KG_CHECK_INT(kg_pending_count(p), 1);
  KG_CHECK(!e->stop_on_error && e->silent && e->well_formed);
  cJSON_DeleteItemFromObject(c, "silent");   /* ipykernel would not reply */
  kg_msg_set_json(a, KG_PART_CONTENT, c);
  e = kg_pending_add(p, a, KG_CH_SHELL, 3);
  KG_CHECK(!e->well_formed);
  cJSON_Delete(c);
  kg_msg_destroy(&a);
  kg_pending_destroy(&p);
  zmq_ctx_term(ctx);
}

KG_TEST(pending_expire_keeps_late_routing)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(4);
  kg_pending_set_limits(p, 2000, 60000, 2);
  kg_msg_t *x = s_request(ctx, "execute_request", "x", "c");
  kg_msg_t *u = s_request(ctx, "frobnicate_request", NULL, "c");
  kg_msg_t *v = s_request(ctx, "frobnicate_request", NULL, "c");
  kg_msg_t *w = s_request(ctx, "complete_request", NULL, "c");
  kg_msg_t *y = s_request(ctx, "history_request", NULL, "c");
  kg_pending_entry_t *ex = kg_pending_add(p, x, KG_CH_SHELL, 1000);
  kg_pending_entry_t *eu = kg_pending_add(p, u, KG_CH_SHELL, 1000);
  kg_pending_entry_t *ev = kg_pending_add(p, v, KG_CH_SHELL, 1000);
  ex->forwarded = eu->forwarded = ev->forwarded = true;
  eu->idle_ms = 1500;   /* the kernel went idle without replying */
  KG_CHECK_INT(kg_pending_idle_expiry(p, eu), 3500);  /* the loop's deadline */
  KG_CHECK_INT(kg_pending_idle_expiry(p, ex), 0);     /* not idle: none */
  KG_CHECK_INT(kg_pending_expire(p, 3000), 0);       /* within the grace */
  KG_CHECK_INT(kg_pending_expire(p, 3500), 1);
  KG_CHECK(kg_pending_find(p, kg_msg_id(u)) == NULL);
  kg_pending_entry_t *late = kg_pending_find_expired(p, kg_msg_id(u));
  KG_CHECK(late != NULL && late->ident_count == 1);   /* a late reply still routes */
  KG_CHECK(kg_pending_remove(p, kg_msg_id(u)));
  KG_CHECK(kg_pending_find_expired(p, kg_msg_id(u)) == NULL);
  /* the cap: the oldest non-execute requests beyond 2 go; executes stay */
  kg_pending_add(p, w, KG_CH_SHELL, 3600)->forwarded = true;
  kg_pending_add(p, y, KG_CH_SHELL, 3700)->forwarded = true;
  KG_CHECK_INT(kg_pending_expire(p, 3800), 1);
  KG_CHECK(kg_pending_find(p, kg_msg_id(v)) == NULL);
  KG_CHECK(kg_pending_find_expired(p, kg_msg_id(v)) != NULL);
  /* age: non-execute requests older than the limit; the execute stays */
  KG_CHECK_INT(kg_pending_expire(p, 3600 + 60000), 1);
  KG_CHECK(kg_pending_find(p, kg_msg_id(w)) == NULL);
  KG_CHECK(kg_pending_find(p, kg_msg_id(x)) == ex);
  KG_CHECK(kg_pending_running(p) == ex);
  ex->idle_ms = 70000;   /* an execute the kernel went idle for unanswered */
  KG_CHECK_INT(kg_pending_expire(p, 72000), 2);   /* it and y (age) */
  KG_CHECK(kg_pending_running(p) == NULL);
  kg_msg_destroy(&x);
  kg_msg_destroy(&u);
  kg_msg_destroy(&v);
  kg_msg_destroy(&w);
  kg_msg_destroy(&y);
  kg_pending_destroy(&p);
  zmq_ctx_term(ctx);
}

KG_TEST(pending_busy_ledger)
{
  kg_pending_t *p = kg_pending_new(4);
  cJSON *h1 = cJSON_Parse("{\"msg_id\":\"m1\",\"msg_type\":\"execute_request\"}");
  cJSON *h2 = cJSON_Parse("{\"msg_id\":\"m2\",\"msg_type\":\"execute_request\"}");
  cJSON *bad = cJSON_Parse("{\"msg_type\":\"execute_request\"}");
  KG_CHECK_INT(kg_pending_busy_open(p, h1, "s-old"), 0);
  KG_CHECK_INT(kg_pending_busy_open(p, h1, "s-new"), 1);   /* one busy only */
  KG_CHECK(kg_pending_busy_open(p, bad, "s") < 0);
  KG_CHECK_INT(kg_pending_busy_open(p, h2, "s-old"), 0);
  KG_CHECK(kg_pending_busy_is_open(p, "m1"));
  KG_CHECK_INT(kg_pending_busy_count(p), 2);
  const cJSON *h;
  const char *session;
  KG_CHECK(kg_pending_busy_at(p, 0, &h, &session));
  KG_CHECK_STR(cJSON_GetObjectItem(h, "msg_id")->valuestring, "m1");
  KG_CHECK_STR(session, "s-old");   /* the session of the first busy */
  /* what kguard writes for m1 (the sticky notice, after a restart gave the
     kernel a new session) goes out under m1's busy session */
  KG_CHECK_STR(kg_pending_busy_session(p, "m1"), "s-old");
  KG_CHECK(kg_pending_busy_session(p, "m3") == NULL);
  KG_CHECK(kg_pending_busy_session(p, NULL) == NULL);
  KG_CHECK(kg_pending_busy_close(p, "m1"));
  KG_CHECK(kg_pending_busy_session(p, "m1") == NULL);
  KG_CHECK(!kg_pending_busy_close(p, "m1"));   /* one idle only */
  KG_CHECK(!kg_pending_busy_is_open(p, "m1"));
  KG_CHECK(!kg_pending_busy_at(p, 1, &h, &session));
  cJSON_Delete(h1);
  cJSON_Delete(h2);
  cJSON_Delete(bad);
  kg_pending_destroy(&p);   /* frees the open record of m2 */
}

KG_TEST_MAIN(KG_CASE(pending_add_find_remove), KG_CASE(pending_running),
             KG_CASE(pending_held_queue_bounded), KG_CASE(pending_execute_flags),
             KG_CASE(pending_expire_keeps_late_routing), KG_CASE(pending_busy_ledger))
