/*  kg_streamset: one line buffer per request and stream, least recently fed
    out, its tail handed back first. */
#include <cjson/cJSON.h>
#include <string.h>

#include "kg_diag_report.h"
#include "kg_diagnosis.h"
#include "kg_errrecord.h"
#include "kg_error.h"
#include "kg_rules_json.h"
#include "kg_signs.h"
#include "kg_streamset.h"
#include "kg_test.h"
#include "kg_trail.h"

typedef struct {
  char parent[64];
  char tail[64];
  int calls;
} s_evicted_t;

static void
s_keep_line(void *arg, const char *line, size_t len, bool truncated, int64_t first_ms)
{
  (void) len, (void) truncated, (void) first_ms;
  s_evicted_t *e = arg;
  snprintf(e->tail, sizeof e->tail, "%s", line);
}

static void
s_on_evict(void *arg, const char *parent, kg_linebuf_t *lb)
{
  s_evicted_t *e = arg;
  e->calls++;
  snprintf(e->parent, sizeof e->parent, "%s", parent ? parent : "(null)");
  kg_linebuf_flush(lb, s_keep_line, e);
}

KG_TEST(streamset_one_buffer_per_request_and_stream_lru_out)
{
  kg_streamset_t *set = kg_streamset_new(128);
  s_evicted_t ev = {{0}, {0}, 0};
  kg_linebuf_t *a_out = kg_streamset_get(set, "stdout", "a", s_on_evict, &ev);
  kg_linebuf_t *a_err = kg_streamset_get(set, "stderr", "a", s_on_evict, &ev);
  KG_CHECK(a_out && a_err && a_out != a_err);
  KG_CHECK(kg_streamset_get(set, "stdout", "a", s_on_evict, &ev) == a_out);
  KG_CHECK(kg_streamset_get(set, NULL, "a", s_on_evict, &ev) == a_out);   /* not stderr */
  KG_CHECK(kg_streamset_get(set, "stdout", NULL, s_on_evict, &ev) != a_out);
  kg_linebuf_feed(a_err, "partial", 7, 1, NULL, NULL);
  /*  Fill the set with other requests; a_out stays fresh, a_err is the least
      recently used and goes first, its tail handed to the evict function. */
  char id[16];
  for (int i = 0; i < KG_STREAMSET_MAX - 3; i++) {
    snprintf(id, sizeof id, "r%d", i);
    KG_CHECK(kg_streamset_get(set, "stdout", id, s_on_evict, &ev) != NULL);
  }
  KG_CHECK_INT(ev.calls, 0);
  KG_CHECK(kg_streamset_get(set, "stdout", "a", s_on_evict, &ev) == a_out);
  KG_CHECK(kg_streamset_get(set, "stdout", "new", s_on_evict, &ev) != NULL);
  KG_CHECK_INT(ev.calls, 1);
  KG_CHECK_STR(ev.parent, "a");
  KG_CHECK_STR(ev.tail, "partial");
  /*  A 4 KiB request id is kept whole (no fixed buffer). */
  char big[4097];
  memset(big, 'x', sizeof big - 1);
  big[4096] = '\0';
  kg_linebuf_t *b = kg_streamset_get(set, "stdout", big, s_on_evict, &ev);
  big[4095] = 'y';
  KG_CHECK(kg_streamset_get(set, "stdout", big, s_on_evict, &ev) != b);
  kg_streamset_destroy(&set);
  kg_streamset_destroy(&set);
  KG_CHECK(set == NULL);
}

KG_TEST_MAIN(KG_CASE(streamset_one_buffer_per_request_and_stream_lru_out))
