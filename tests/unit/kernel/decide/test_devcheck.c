/*  kg_devcheck: the device probe's verdict and timing, by tables with an
    injected clock (no sockets, no kernel), and the held reply and idle. */
#include <stdio.h>
#include <string.h>

#include "kg_classifier.h"
#include "kg_devcheck.h"
#include "kg_error.h"
#include "kg_test.h"
#include "kg_test_rules.h"

/*  The probe reply's content -> verdict (and the sticky family matched):
    ok, a sticky CUDA/HIP error, a non-sticky GPU error, a plain Python
    error, and hostile shapes (missing or non-string fields, not an object,
    no content at all) that must be judged, never crash. */
KG_TEST(devcheck_verdict_table)
{
  static const struct {
    const char *content;        /*  JSON, or NULL for no content            */
    kg_devcheck_verdict_t verdict;
    const char *family;         /*  for CONFIRMED                           */
  } rows[] = {
      {"{\"status\":\"ok\"}", KG_DEVCHECK_PASSED, NULL},
      {"{}", KG_DEVCHECK_PASSED, NULL},
      {NULL, KG_DEVCHECK_PASSED, NULL},
      {"[1,2]", KG_DEVCHECK_PASSED, NULL},
      {"{\"status\":7,\"ename\":\"RuntimeError\"}", KG_DEVCHECK_PASSED, NULL},
      {"{\"status\":\"aborted\"}", KG_DEVCHECK_PASSED, NULL},
      {"{\"status\":\"error\",\"ename\":\"RuntimeError\",\"evalue\":\"CUDA error: "
       "device-side assert triggered\"}", KG_DEVCHECK_CONFIRMED, "device-assert"},
      {"{\"status\":\"error\",\"ename\":\"RuntimeError\",\"evalue\":\"CUDA error: an "
       "illegal memory access was encountered\"}", KG_DEVCHECK_CONFIRMED, "illegal-address"},
      {"{\"status\":\"error\",\"ename\":\"RuntimeError\",\"evalue\":\"HIP error: an "
       "illegal memory access was encountered\"}", KG_DEVCHECK_CONFIRMED, "illegal-address"},
      {"{\"status\":\"error\",\"ename\":\"torch.OutOfMemoryError\",\"evalue\":\"CUDA out of "
       "memory. Tried to allocate 2.00 GiB\"}", KG_DEVCHECK_NOT_GPU, NULL},
      {"{\"status\":\"error\",\"ename\":\"ZeroDivisionError\",\"evalue\":\"division by "
       "zero\"}", KG_DEVCHECK_NOT_GPU, NULL},
      {"{\"status\":\"error\"}", KG_DEVCHECK_NOT_GPU, NULL},
      {"{\"status\":\"error\",\"ename\":null,\"evalue\":[\"CUDA error: device-side assert "
       "triggered\"]}", KG_DEVCHECK_NOT_GPU, NULL},
  };
  kg_classifier_t *rules = kg_test_rules();
  for (size_t n = 0; n < sizeof rows / sizeof rows[0]; n++) {
    cJSON *content = rows[n].content ? cJSON_Parse(rows[n].content) : NULL;
    KG_CHECK(!rows[n].content || content);
    kg_match_t m;
    memset(&m, 0, sizeof m);
    kg_devcheck_verdict_t v = kg_devcheck_verdict(content, rules, &m);
    if (v != rows[n].verdict)
      fprintf(stderr, "row %zu: %s\n", n, rows[n].content ? rows[n].content : "NULL");
    KG_CHECK_INT(v, rows[n].verdict);
    if (rows[n].family) {
      KG_CHECK(m.family != NULL);
      KG_CHECK_STR(m.family->id, rows[n].family);
    }
    /* no rules loaded: nothing can be confirmed */
    KG_CHECK(kg_devcheck_verdict(content, NULL, NULL) != KG_DEVCHECK_CONFIRMED);
    cJSON_Delete(content);
  }
  kg_classifier_destroy(&rules);
}

/*  The probe's life, at injected times: sent, deadline, is_probe, answered
    (how long it took) or expired exactly at the deadline, once; a fresh
    kernel forgets it; a bad id is refused and leaves no probe. */
KG_TEST(devcheck_timing_table)
{
  static const struct {
    int64_t sent;               /*  when the probe went out                 */
    int64_t at;                 /*  when something happens                  */
    char what;                  /*  a = answered, t = timers, r = reset     */
    bool expired;               /*  t: the deadline counts as reached       */
    int64_t took;               /*  a: what kg_devcheck_answered returns    */
  } rows[] = {
      {1000, 1000, 't', false, 0},
      {1000, 1000 + KG_DEVCHECK_MS - 1, 't', false, 0},
      {1000, 1000 + KG_DEVCHECK_MS, 't', true, 0},
      {1000, 1000 + 5 * KG_DEVCHECK_MS, 't', true, 0},
      {1000, 1250, 'a', false, 250},
      {0, KG_DEVCHECK_MS - 1, 'a', false, KG_DEVCHECK_MS - 1},
      {1000, 1001, 'r', false, 0},
  };
  for (size_t n = 0; n < sizeof rows / sizeof rows[0]; n++) {
    kg_devcheck_t *d = kg_devcheck_new();
    KG_CHECK(d != NULL);
    KG_CHECK(!kg_devcheck_probing(d));
    KG_CHECK_INT(kg_devcheck_deadline(d), 0);
    KG_CHECK(!kg_devcheck_expired(d, INT64_MAX));   /* nothing running */
    KG_CHECK_INT(kg_devcheck_sent(d, "probe-1", rows[n].sent), 0);
    KG_CHECK(kg_devcheck_probing(d));
    KG_CHECK_INT(kg_devcheck_deadline(d), rows[n].sent + KG_DEVCHECK_MS);
    KG_CHECK(kg_devcheck_is_probe(d, "probe-1"));
    KG_CHECK(!kg_devcheck_is_probe(d, "probe-2"));
    KG_CHECK(!kg_devcheck_is_probe(d, NULL));
    KG_CHECK(!kg_devcheck_is_probe(d, ""));
    switch (rows[n].what) {
    case 't':
      KG_CHECK(kg_devcheck_expired(d, rows[n].at) == rows[n].expired);
      KG_CHECK(kg_devcheck_probing(d) == !rows[n].expired);
      if (rows[n].expired)   /* once only */
        KG_CHECK(!kg_devcheck_expired(d, rows[n].at + 1));
      break;
    case 'a':
      KG_CHECK_INT(kg_devcheck_answered(d, rows[n].at), rows[n].took);
      KG_CHECK(!kg_devcheck_probing(d));
      KG_CHECK(!kg_devcheck_expired(d, rows[n].at + KG_DEVCHECK_MS));   /* answered */
      break;
    default:
      kg_devcheck_reset(d);
      KG_CHECK(!kg_devcheck_probing(d));
      break;
    }
    if (!kg_devcheck_probing(d)) {
      KG_CHECK_INT(kg_devcheck_deadline(d), 0);
      KG_CHECK(!kg_devcheck_is_probe(d, "probe-1"));
    }
    kg_devcheck_destroy(&d);
    KG_CHECK(d == NULL);
  }
  kg_devcheck_destroy(NULL);
  /* a bad id is refused and ends a running probe's bookkeeping too */
  kg_devcheck_t *d = kg_devcheck_new();
  KG_CHECK_INT(kg_devcheck_sent(d, NULL, 5), KG_EUSAGE);
  KG_CHECK_INT(kg_devcheck_sent(d, "", 5), KG_EUSAGE);
  KG_CHECK(!kg_devcheck_probing(d));
  /* the suspicion's time survives a reset (the gate dates the fault by it) */
  KG_CHECK_INT(kg_devcheck_suspect_ms(d), 0);
  kg_devcheck_suspected(d, 4242);
  kg_devcheck_reset(d);
  KG_CHECK_INT(kg_devcheck_suspect_ms(d), 4242);
  kg_devcheck_destroy(&d);
}

static kg_msg_t *
s_reply_to(const char *parent_id)
{
  cJSON *parent = cJSON_CreateObject();
  cJSON_AddStringToObject(parent, "msg_id", parent_id);
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "status", "ok");
  kg_msg_t *m = kg_msg_new("execute_reply", "session", parent, &content);
  cJSON_Delete(parent);
  KG_CHECK(m != NULL);
  return m;
}

/*  The suspected cell's reply is held (one at a time), its idle only when
    it is that cell's, and both are handed back by release; a reset drops
    them (the kernel that would be answered is gone). */
KG_TEST(devcheck_holds_reply_and_idle)
{
  kg_devcheck_t *d = kg_devcheck_new();
  cJSON *hdr = cJSON_CreateObject();
  cJSON_AddStringToObject(hdr, "msg_id", "cell-1");
  /* nothing held: an idle is not taken */
  KG_CHECK(!kg_devcheck_hold_idle(d, "cell-1", hdr));
  kg_msg_t *m = s_reply_to("cell-1");
  KG_CHECK(kg_devcheck_hold_reply(d, &m));
  KG_CHECK(m == NULL);
  KG_CHECK(kg_devcheck_holding(d));
  kg_msg_t *other = s_reply_to("cell-2");
  KG_CHECK(!kg_devcheck_hold_reply(d, &other));   /* one at a time: left to the caller */
  KG_CHECK(other != NULL);
  kg_msg_destroy(&other);
  KG_CHECK(!kg_devcheck_hold_idle(d, "cell-2", hdr));
  KG_CHECK(!kg_devcheck_hold_idle(d, NULL, hdr));
  KG_CHECK(kg_devcheck_hold_idle(d, "cell-1", hdr));
  KG_CHECK(kg_devcheck_hold_idle(d, "cell-1", hdr));   /* replaces, no leak */
  kg_msg_t *reply;
  cJSON *idle;
  kg_devcheck_release(d, &reply, &idle);
  KG_CHECK(reply != NULL && idle != NULL);
  KG_CHECK_STR(kg_msg_parent_id(reply), "cell-1");
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(idle, "msg_id")->valuestring, "cell-1");
  KG_CHECK(!kg_devcheck_holding(d));
  kg_msg_destroy(&reply);
  cJSON_Delete(idle);
  kg_devcheck_release(d, &reply, &idle);   /* nothing held */
  KG_CHECK(reply == NULL && idle == NULL);
  /* a reset drops what is held */
  m = s_reply_to("cell-3");
  KG_CHECK(kg_devcheck_hold_reply(d, &m));
  kg_devcheck_reset(d);
  KG_CHECK(!kg_devcheck_holding(d));
  m = s_reply_to("cell-4");   /* and destroy frees it */
  KG_CHECK(kg_devcheck_hold_reply(d, &m));
  cJSON_Delete(hdr);
  kg_devcheck_destroy(&d);
}

KG_TEST_MAIN(KG_CASE(devcheck_verdict_table), KG_CASE(devcheck_timing_table),
             KG_CASE(devcheck_holds_reply_and_idle))
