/*  kg_heartbeat: pings are echoed by the heartbeat thread while the
    creating thread does nothing but wait (as kguard's loop does when a
    burst of output keeps it busy), and destroy stops the thread. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_heartbeat.h"
#include "kg_test.h"

static void *
s_socket(void *ctx, int type)
{
  void *s = zmq_socket(ctx, type);
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  return s;
}

/*  Bind a ROUTER on a free loopback port; its endpoint into ep. */
static void *
s_bound_router(void *ctx, char *ep, size_t len)
{
  void *s = s_socket(ctx, ZMQ_ROUTER);
  if (zmq_bind(s, "tcp://127.0.0.1:*") != 0)
    return NULL;
  zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &len);
  return s;
}

/*  Receive with a deadline (zmq_poll): the number of bytes, or -1. */
static int
s_recv_within(void *s, char *buf, size_t len, int ms)
{
  zmq_pollitem_t item = {s, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&item, 1, ms) != 1)
    return -1;
  return zmq_recv(s, buf, len, 0);
}

KG_TEST(echo_while_caller_waits)
{
  void *ctx = zmq_ctx_new();
  char ep[128];
  void *hb = s_bound_router(ctx, ep, sizeof ep);
  KG_CHECK(hb != NULL);
  int err = 1;
  kg_heartbeat_t *beat = kg_heartbeat_new(ctx, &hb, &err);
  KG_CHECK(beat != NULL);
  KG_CHECK_INT(err, 0);
  KG_CHECK(hb == NULL);                        /*  the thread owns it now */
  KG_CHECK_INT(kg_heartbeat_running(), 1);

  /*  Two clients as jupyter_client has them (REQ), several pings each; this
      thread only sends and waits, it never services the heartbeat socket. */
  void *a = s_socket(ctx, ZMQ_REQ), *b = s_socket(ctx, ZMQ_REQ);
  KG_CHECK_INT(zmq_connect(a, ep), 0);
  KG_CHECK_INT(zmq_connect(b, ep), 0);
  for (int i = 0; i < 20; i++) {
    char ping[32], got[64];
    int n = snprintf(ping, sizeof ping, "ping-%d", i);
    void *c = i % 2 ? a : b;
    KG_CHECK_INT(zmq_send(c, ping, (size_t) n, 0), n);
    KG_CHECK_INT(s_recv_within(c, got, sizeof got, 5000), n);
    KG_CHECK(memcmp(got, ping, (size_t) n) == 0);
  }
  /*  Multipart pings come back frame for frame. */
  void *d = s_socket(ctx, ZMQ_DEALER);
  KG_CHECK_INT(zmq_connect(d, ep), 0);
  zmq_send(d, "one", 3, ZMQ_SNDMORE);
  zmq_send(d, "two", 3, 0);
  char got[16];
  KG_CHECK_INT(s_recv_within(d, got, sizeof got, 5000), 3);
  KG_CHECK(memcmp(got, "one", 3) == 0);
  int more = 0;
  size_t ml = sizeof more;
  zmq_getsockopt(d, ZMQ_RCVMORE, &more, &ml);
  KG_CHECK(more);
  KG_CHECK_INT(zmq_recv(d, got, sizeof got, 0), 3);
  KG_CHECK(memcmp(got, "two", 3) == 0);

  kg_heartbeat_destroy(&beat);
  KG_CHECK(beat == NULL);
  KG_CHECK_INT(kg_heartbeat_running(), 0);
  kg_heartbeat_destroy(&beat);                 /*  safe on NULL */

  /*  After destroy nobody answers (the socket is closed). */
  KG_CHECK_INT(zmq_send(a, "late", 4, 0), 4);
  KG_CHECK_INT(s_recv_within(a, got, sizeof got, 200), -1);
  zmq_close(a);
  zmq_close(b);
  zmq_close(d);
  KG_CHECK_INT(zmq_ctx_term(ctx), 0);          /*  nothing left open */
}

/*  Started and stopped many times (a kguard that lives for days restarts
    nothing here, but tests and soak runs create many): no thread left. */
KG_TEST(start_stop_repeated)
{
  void *ctx = zmq_ctx_new();
  for (int i = 0; i < 50; i++) {
    char ep[128];
    void *hb = s_bound_router(ctx, ep, sizeof ep);
    int err = 0;
    kg_heartbeat_t *beat = kg_heartbeat_new(ctx, &hb, &err);
    KG_CHECK(beat != NULL);
    kg_heartbeat_destroy(&beat);
  }
  KG_CHECK_INT(kg_heartbeat_running(), 0);
  KG_CHECK_INT(zmq_ctx_term(ctx), 0);
}

KG_TEST(bad_arguments)
{
  void *ctx = zmq_ctx_new();
  void *none = NULL;
  int err = 0;
  KG_CHECK(kg_heartbeat_new(ctx, &none, &err) == NULL);
  KG_CHECK_INT(err, KG_EUSAGE);
  KG_CHECK(kg_heartbeat_new(ctx, NULL, &err) == NULL);
  char ep[128];
  void *hb = s_bound_router(ctx, ep, sizeof ep);
  KG_CHECK(kg_heartbeat_new(NULL, &hb, &err) == NULL);
  KG_CHECK(hb != NULL);                        /*  still the caller's */
  zmq_close(hb);
  KG_CHECK_INT(zmq_ctx_term(ctx), 0);
}

/*  kg_heartbeat_bind: a context of its own, bound at the connection info's
    hb endpoint; pings echoed; destroy terminates that context. */
KG_TEST(bind_own_context)
{
  kg_conninfo_t *info = kg_conninfo_new();
  /*  A free port: bind a probe socket to *, read it, close it. */
  void *ctx = zmq_ctx_new();
  char ep[128];
  void *probe = s_bound_router(ctx, ep, sizeof ep);
  zmq_close(probe);
  zmq_ctx_term(ctx);
  info->ports[KG_CH_HB] = atoi(strrchr(ep, ':') + 1);
  int err = 1;
  kg_heartbeat_t *beat = kg_heartbeat_bind(info, &err);
  KG_CHECK(beat != NULL);
  KG_CHECK_INT(err, 0);
  ctx = zmq_ctx_new();
  void *c = s_socket(ctx, ZMQ_REQ);
  KG_CHECK_INT(zmq_connect(c, ep), 0);
  char got[16];
  KG_CHECK_INT(zmq_send(c, "ping", 4, 0), 4);
  KG_CHECK_INT(s_recv_within(c, got, sizeof got, 5000), 4);
  kg_heartbeat_destroy(&beat);
  KG_CHECK_INT(kg_heartbeat_running(), 0);
  /*  The port is free again: a second bind works. */
  beat = kg_heartbeat_bind(info, &err);
  KG_CHECK(beat != NULL);
  kg_heartbeat_destroy(&beat);
  zmq_close(c);
  zmq_ctx_term(ctx);
  kg_conninfo_destroy(&info);
}

KG_TEST_MAIN(KG_CASE(echo_while_caller_waits), KG_CASE(start_stop_repeated),
             KG_CASE(bad_arguments), KG_CASE(bind_own_context))
