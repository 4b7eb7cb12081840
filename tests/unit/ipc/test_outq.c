/*  kg_outq over inproc sockets whose peer does not read: sends never block,
    what the socket cannot take waits in order and goes out when the peer
    reads, the bounds drop (and count) what does not fit, a ROUTER's unknown
    peer is reported, and clearing discards. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_outq.h"
#include "kg_test.h"

static const char s_key[] = "outq-key";

typedef struct {
  void *ctx, *out, *in;         /*  out: DEALER (or ROUTER) kguard sends on */
  kg_signer_t *signer;
} s_fix_t;

static void
s_set(void *sock, int opt, int v)
{
  zmq_setsockopt(sock, opt, &v, sizeof v);
}

/*  out (type) -> in (peer type), both with a high-water mark of 2. */
static void
s_setup(s_fix_t *f, int type, int peer_type)
{
  static int n;
  char ep[64];
  snprintf(ep, sizeof ep, "inproc://outq-%d", n++);
  f->ctx = zmq_ctx_new();
  f->out = zmq_socket(f->ctx, type);
  f->in = zmq_socket(f->ctx, peer_type);
  s_set(f->out, ZMQ_LINGER, 0);
  s_set(f->in, ZMQ_LINGER, 0);
  s_set(f->out, ZMQ_SNDHWM, 2);
  s_set(f->in, ZMQ_RCVHWM, 2);
  if (type == ZMQ_ROUTER)
    s_set(f->out, ZMQ_ROUTER_MANDATORY, 1);
  if (peer_type == ZMQ_DEALER)
    zmq_setsockopt(f->in, ZMQ_ROUTING_ID, "peer", 4);
  KG_CHECK_INT(zmq_bind(f->out, ep), 0);
  KG_CHECK_INT(zmq_connect(f->in, ep), 0);
  f->signer = kg_signer_new(s_key, strlen(s_key));
}

static void
s_teardown(s_fix_t *f)
{
  zmq_close(f->out);
  zmq_close(f->in);
  zmq_ctx_term(f->ctx);
  kg_signer_destroy(&f->signer);
}

/*  Message number i (its content says so), with idents for a ROUTER. */
static kg_msg_t *
s_msg(int i, const char *ident)
{
  cJSON *content = cJSON_CreateObject();
  cJSON_AddNumberToObject(content, "i", i);
  kg_msg_t *m = kg_msg_new("comm_msg", "sess", NULL, &content);
  if (ident) {
    kg_frame_t id = {ident, strlen(ident)};
    kg_msg_set_idents(m, &id, 1);
  }
  return m;
}

/*  Receive what is waiting at the peer: each message's number, in order,
    appended to got[*n]; checks every signature. */
static void
s_read_all(s_fix_t *f, int *got, int *n, int max)
{
  kg_signer_t *check = kg_signer_new(s_key, strlen(s_key));
  for (;;) {
    kg_msg_t *m = NULL;
    if (kg_msg_recv(f->in, ZMQ_DONTWAIT, &m) != 0)
      break;
    KG_CHECK_INT(kg_msg_parse(m, check), 0);
    cJSON *i = cJSON_GetObjectItem(kg_msg_json(m, KG_PART_CONTENT), "i");
    if (*n < max && cJSON_IsNumber(i))
      got[(*n)++] = i->valueint;
    kg_msg_destroy(&m);
  }
  kg_signer_destroy(&check);
}

KG_TEST(outq_queues_in_order_and_flushes_when_read)
{
  s_fix_t f;
  s_setup(&f, ZMQ_DEALER, ZMQ_ROUTER);
  kg_outq_t *q = kg_outq_new(8, 1u << 20);
  KG_CHECK(q != NULL);
  /* nothing reads: the first few go to zmq, then they wait; never blocks */
  int sent = 0, queued = 0, full = 0, i = 0;
  for (; i < 40; i++) {
    kg_msg_t *m = s_msg(i, NULL);
    int rc = kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST);
    kg_msg_destroy(&m);   /* the queue keeps its own copy */
    if (rc == KG_OUTQ_SENT) {
      KG_CHECK_INT(queued, 0);   /* once one waits, everything after waits */
      sent++;
    } else if (rc == KG_OUTQ_QUEUED)
      queued++;
    else {
      KG_CHECK_INT(rc, KG_EQFULL);
      full++;
    }
  }
  KG_CHECK(sent >= 1);
  KG_CHECK_INT(queued, 8);
  KG_CHECK_INT(full, 40 - 8 - sent);
  KG_CHECK_INT(kg_outq_length(q), 8);
  KG_CHECK_INT(kg_outq_peak(q), 8);
  KG_CHECK_INT(kg_outq_dropped(q), (unsigned long) full);
  /* the peer reads; flushing sends the rest in order, until it is empty */
  int got[64], n = 0;
  for (int round = 0; round < 100 && (kg_outq_length(q) || round == 0); round++) {
    s_read_all(&f, got, &n, 64);
    kg_outq_flush(q, f.out, f.signer);
  }
  s_read_all(&f, got, &n, 64);
  KG_CHECK_INT(kg_outq_length(q), 0);
  KG_CHECK_INT(kg_outq_bytes(q), 0);
  KG_CHECK_INT(n, sent + 8);
  for (int k = 0; k < n; k++)
    KG_CHECK_INT(got[k], k);   /* 0..sent+7: in order, none twice, none lost */
  /* empty again: once the socket has seen the peer read (ZMQ_EVENTS, as
     the loop asks on every wake-up), the next one goes straight out */
  int events;
  size_t elen = sizeof events;
  zmq_getsockopt(f.out, ZMQ_EVENTS, &events, &elen);
  kg_msg_t *m = s_msg(99, NULL);
  KG_CHECK_INT(kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST), KG_OUTQ_SENT);
  kg_msg_destroy(&m);
  kg_outq_destroy(&q);
  KG_CHECK(q == NULL);
  kg_outq_destroy(&q);   /* safe twice */
  s_teardown(&f);
}

KG_TEST(outq_byte_bound)
{
  s_fix_t f;
  s_setup(&f, ZMQ_DEALER, ZMQ_ROUTER);
  kg_msg_t *m0 = s_msg(0, NULL);
  size_t size = kg_msg_size(m0);
  kg_msg_destroy(&m0);
  /* room for two messages' bytes, ten messages' slots */
  kg_outq_t *q = kg_outq_new(10, 2 * size + size / 2);
  int rc = KG_OUTQ_SENT, i = 0;
  for (; i < 50 && rc == KG_OUTQ_SENT; i++) {
    kg_msg_t *m = s_msg(i, NULL);
    rc = kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST);
    kg_msg_destroy(&m);
  }
  KG_CHECK_INT(rc, KG_OUTQ_QUEUED);
  kg_msg_t *m = s_msg(i++, NULL);
  KG_CHECK_INT(kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST), KG_OUTQ_QUEUED);
  KG_CHECK_INT(kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST), KG_EQFULL);   /* bytes, not slots */
  KG_CHECK_INT(kg_outq_length(q), 2);
  KG_CHECK_INT(kg_outq_bytes(q), 2 * size);
  KG_CHECK_INT(kg_outq_dropped(q), 1);
  kg_msg_destroy(&m);
  /* one message bigger than the bound still goes into an empty queue */
  KG_CHECK_INT(kg_outq_clear(q), 2);
  KG_CHECK_INT(kg_outq_discarded(q), 2);
  kg_outq_t *tiny = kg_outq_new(4, 1);
  m = s_msg(7, NULL);
  rc = KG_OUTQ_SENT;
  while (rc == KG_OUTQ_SENT)
    rc = kg_outq_send(tiny, f.out, f.signer, m, KG_OUTQ_REQUEST);
  KG_CHECK_INT(rc, KG_OUTQ_QUEUED);
  KG_CHECK_INT(kg_outq_send(tiny, f.out, f.signer, m, KG_OUTQ_REQUEST), KG_EQFULL);
  kg_msg_destroy(&m);
  kg_outq_destroy(&tiny);
  kg_outq_destroy(&q);
  KG_CHECK(kg_outq_new(0, 100) == NULL);
  s_teardown(&f);
}

KG_TEST(outq_router_unknown_peer_and_slow_peer)
{
  s_fix_t f;
  s_setup(&f, ZMQ_ROUTER, ZMQ_DEALER);
  /* the peer says hello so that the ROUTER knows its routing id */
  zmq_send(f.in, "hi", 2, 0);
  char buf[8];
  KG_CHECK_INT(zmq_recv(f.out, buf, sizeof buf, 0), 4);   /* its id */
  KG_CHECK_INT(zmq_recv(f.out, buf, sizeof buf, 0), 2);
  kg_outq_t *q = kg_outq_new(4, 1u << 20);
  kg_msg_t *m = s_msg(0, "nobody");
  KG_CHECK_INT(kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST), -EHOSTUNREACH);   /* reported */
  KG_CHECK_INT(kg_outq_length(q), 0);
  kg_msg_destroy(&m);
  int rc = KG_OUTQ_SENT, i = 0;
  for (; i < 50 && rc == KG_OUTQ_SENT; i++) {
    m = s_msg(i, "peer");
    rc = kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST);
    kg_msg_destroy(&m);
  }
  KG_CHECK_INT(rc, KG_OUTQ_QUEUED);   /* the peer's pipe is full: it waits */
  /* the peer goes away while messages wait: they are dropped as failed on
     the next flush, never retried for ever */
  zmq_close(f.in);
  f.in = zmq_socket(f.ctx, ZMQ_DEALER);
  int64_t deadline = kg_clock_mono_ms() + 5000;   /* the pipe ends asynchronously */
  while (kg_outq_length(q) && kg_clock_mono_ms() < deadline)
    kg_outq_flush(q, f.out, f.signer);
  KG_CHECK_INT(kg_outq_length(q), 0);
  KG_CHECK_INT(kg_outq_failed(q), 1);
  kg_outq_destroy(&q);
  s_teardown(&f);
}

/*  A burst of messages nobody answers fills three quarters of the queue;
    requests still find room behind it; a message that must not wait is
    refused (EAGAIN, not counted) as soon as anything waits. */
KG_TEST(outq_classes)
{
  s_fix_t f;
  s_setup(&f, ZMQ_DEALER, ZMQ_ROUTER);
  kg_outq_t *q = kg_outq_new(8, 1u << 20);
  kg_msg_t *m = s_msg(0, NULL);
  int rc = KG_OUTQ_SENT;
  while (rc == KG_OUTQ_SENT)
    rc = kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_BULK);
  KG_CHECK_INT(rc, KG_OUTQ_QUEUED);
  while (rc == KG_OUTQ_QUEUED)
    rc = kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_BULK);
  KG_CHECK_INT(rc, KG_EQFULL);
  KG_CHECK_INT(kg_outq_length(q), 6);   /* 8 - 8/4 */
  KG_CHECK_INT(kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_NOWAIT), -EAGAIN);
  KG_CHECK_INT(kg_outq_dropped(q), 1);   /* the refused nudge is not a drop */
  KG_CHECK_INT(kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST), KG_OUTQ_QUEUED);
  KG_CHECK_INT(kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST), KG_OUTQ_QUEUED);
  KG_CHECK_INT(kg_outq_send(q, f.out, f.signer, m, KG_OUTQ_REQUEST), KG_EQFULL);
  KG_CHECK_INT(kg_outq_length(q), 8);
  kg_msg_destroy(&m);
  kg_outq_destroy(&q);
  s_teardown(&f);
}

KG_TEST_MAIN(KG_CASE(outq_queues_in_order_and_flushes_when_read), KG_CASE(outq_byte_bound),
             KG_CASE(outq_router_unknown_peer_and_slow_peer), KG_CASE(outq_classes))
