/*  The pieces kg_diagnosis is built from: the stream buffer set (one per
    request and stream, least recently fed out, its tail handed back first),
    the bounded trail, the earlier-signs list and the error record; and the
    rules file's readers kg_classifier is loaded with. */
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

KG_TEST(trail_bounded_and_tail_keeps_last_lines)
{
  kg_trail_t *t = kg_trail_new();
  for (int i = 0; i < KG_TRAIL_MAX_FOLLOWING + 5; i++)
    kg_trail_follow_line(t, KG_SRC_RAW_STDERR, "line", i);
  char line[32];
  for (int i = 0; i < KG_TRAIL_STDERR_TAIL + 3; i++) {
    snprintf(line, sizeof line, "err %d", i);
    kg_trail_tail_add(t, line);
  }
  cJSON *o = cJSON_CreateObject();
  kg_trail_add_to_json(t, o);
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "following")), KG_TRAIL_MAX_FOLLOWING);
  KG_CHECK_INT(cJSON_GetObjectItem(o, "following_dropped")->valuedouble, 5);
  cJSON *tail = cJSON_GetObjectItem(o, "raw_stderr_tail");
  KG_CHECK_INT(cJSON_GetArraySize(tail), KG_TRAIL_STDERR_TAIL);
  KG_CHECK_STR(cJSON_GetArrayItem(tail, 0)->valuestring, "err 3");
  KG_CHECK_STR(cJSON_GetArrayItem(tail, KG_TRAIL_STDERR_TAIL - 1)->valuestring, "err 102");
  cJSON_Delete(o);
  kg_trail_clear(t);
  o = cJSON_CreateObject();
  kg_trail_add_to_json(t, o);
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "following")), 0);
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "raw_stderr_tail")), 0);
  cJSON_Delete(o);
  kg_trail_destroy(&t);
}

KG_TEST(signs_same_request_or_raw_within_ttl_move_t_back)
{
  kg_signs_t *s = kg_signs_new();
  kg_signs_add(s, "req-a", 100);
  kg_signs_add(s, "req-b", 50);
  kg_signs_add(s, NULL, 80);                 /* raw: belongs to any request */
  KG_CHECK_INT(kg_signs_earliest(s, "req-a", 500), 80);   /* not req-b's 50 */
  KG_CHECK_INT(kg_signs_earliest(s, "req-b", 500), 50);
  KG_CHECK_INT(kg_signs_earliest(s, NULL, 500), 50);
  kg_signs_prune(s, "req-a", 200);           /* req-b's sign is another request's */
  KG_CHECK_INT(kg_signs_earliest(s, NULL, 500), 80);
  kg_signs_prune(s, NULL, 80 + KG_SIGNS_RAW_TTL_MS + 1);   /* raw sign too old */
  KG_CHECK_INT(kg_signs_earliest(s, NULL, 500), 100);
  kg_signs_clear(s);
  KG_CHECK_INT(kg_signs_earliest(s, NULL, 500), 500);
  for (int i = 0; i < KG_SIGNS_MAX + 4; i++)   /* bounded: the oldest go */
    kg_signs_add(s, "r", 1000 + i);
  KG_CHECK_INT(kg_signs_earliest(s, "r", 5000), 1004);
  kg_signs_destroy(&s);
}

KG_TEST(errrecord_text_and_record)
{
  cJSON *tb = cJSON_CreateArray();
  cJSON_AddItemToArray(tb, cJSON_CreateString("\x1b[0;31mRuntimeError\x1b[0m: boom"));
  cJSON_AddItemToArray(tb, cJSON_CreateNumber(3));
  char *text = kg_errrecord_text("RuntimeError", "CUDA error", tb, 65536);
  KG_CHECK_STR(text, "RuntimeError: CUDA error\nRuntimeError: boom\n");
  free(text);
  text = kg_errrecord_text("RuntimeError", "CUDA error", tb, 10);
  KG_CHECK_STR(text, "RuntimeErr");   /* cut at the cap: 10 bytes */
  free(text);
  cJSON *r = kg_errrecord_new(KG_SRC_IOPUB_ERROR, "E", "v", tb, NULL, 7);
  KG_CHECK_STR(cJSON_GetObjectItem(r, "source")->valuestring, "iopub_error");
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "traceback")), 1);
  KG_CHECK_STR(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "traceback"), 0)->valuestring,
               "RuntimeError: boom");
  KG_CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "parent_msg_id")));
  cJSON_Delete(r);
  cJSON_Delete(tb);
}

KG_TEST(rules_json_family_fields_and_messages)
{
  static const struct {
    const char *json;
    int rc;
    const char *err;   /* a substring of the message; NULL: success */
  } t[] = {
    {"{\"id\":\"a\",\"title\":\"T\",\"first_check\":\"F\",\"avoid\":\"A\",\"sticky\":true,"
     "\"hints\":{\"cuda\":\"CUDA_LAUNCH_BLOCKING=1\",\"any\":\"h\"}}", 0, NULL},
    {"[]", KG_ERULES, "families[3]: must be an object"},
    {"{\"title\":\"T\"}", KG_ERULES, "families[3]: missing field \"id\""},
    {"{\"id\":\"\",\"title\":\"T\"}", KG_ERULES, "field \"id\" must be a non-empty string"},
    {"{\"id\":\"a\",\"title\":\"T\",\"first_check\":\"F\",\"avoid\":\"A\"}", KG_ERULES,
     "families[3] (\"a\"): field \"sticky\" must be true or false"},
    {"{\"id\":\"a\",\"title\":\"T\",\"first_check\":\"F\",\"avoid\":\"A\",\"sticky\":false,"
     "\"hints\":[]}", KG_ERULES, "field \"hints\" must be an object"},
    {"{\"id\":\"a\",\"title\":\"T\",\"first_check\":\"F\",\"avoid\":\"A\",\"sticky\":false,"
     "\"hints\":{\"rocm\":\"set CUDA_LAUNCH_BLOCKING=1\"}}", KG_ERULES,
     "families[3].hints: field \"rocm\" names CUDA_LAUNCH_BLOCKING"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *obj = cJSON_Parse(t[i].json);
    KG_CHECK(obj != NULL);
    kg_family_t f;
    memset(&f, 0, sizeof f);
    char err[256] = "";
    int rc = kg_rules_json_family(obj, 3, &f, err, sizeof err);
    if (rc != t[i].rc || (t[i].err && !strstr(err, t[i].err)))
      fprintf(stderr, "row %zu: rc %d, err '%s'\n", i, rc, err);
    KG_CHECK_INT(rc, t[i].rc);
    if (t[i].err)
      KG_CHECK(strstr(err, t[i].err) != NULL);
    kg_rules_json_family_clear(&f);
    cJSON_Delete(obj);
  }
  /* The first row, read in full. */
  cJSON *obj = cJSON_Parse(t[0].json);
  kg_family_t f;
  memset(&f, 0, sizeof f);
  char err[256] = "";
  KG_CHECK_INT(kg_rules_json_family(obj, 0, &f, err, sizeof err), 0);
  KG_CHECK_STR(f.id, "a");
  KG_CHECK_STR(f.avoid, "A");
  KG_CHECK(f.sticky);
  KG_CHECK_STR(f.hint_cuda, "CUDA_LAUNCH_BLOCKING=1");
  KG_CHECK(f.hint_rocm == NULL);
  KG_CHECK_STR(f.hint_any, "h");
  kg_rules_json_family_clear(&f);
  cJSON_Delete(obj);
}

KG_TEST(rules_json_string_lists)
{
  static const struct {
    const char *json;
    int rc;
    size_t n;          /* strings read, on success */
  } t[] = {
    {"[\"a\", \"b\"]", 0, 2},
    {"[]", KG_ERULES, 0},
    {"[\"a\", \"\"]", KG_ERULES, 0},
    {"[\"a\", 3]", KG_ERULES, 0},
    {"\"a\"", KG_ERULES, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *arr = cJSON_Parse(t[i].json);
    char **v = NULL, err[256] = "";
    int rc = kg_rules_json_strv(arr, "rules[1]", "any", &v, err, sizeof err);
    KG_CHECK_INT(rc, t[i].rc);
    if (rc == 0) {
      size_t n = 0;
      while (v[n])
        n++;
      KG_CHECK_INT(n, t[i].n);
    } else {
      KG_CHECK(v == NULL);
      KG_CHECK(strstr(err, "rules[1]: field \"match.any\"") != NULL);
    }
    kg_rules_json_strv_free(v);
    cJSON_Delete(arr);
  }
}

KG_TEST(report_signature_family_text_and_cell)
{
  char a[KG_DIAG_SIGNATURE_MAX], b[KG_DIAG_SIGNATURE_MAX];
  KG_CHECK_INT(kg_diag_report_signature("fam", "Assertion `x` failed.", "f(1)", a, sizeof a), 0);
  /* family:16 hex:16 hex */
  KG_CHECK_INT(strlen(a), 3 + 1 + 16 + 1 + 16);
  KG_CHECK(strncmp(a, "fam:", 4) == 0 && a[20] == ':');
  static const struct {
    const char *family, *text, *cell;
    bool same;           /* as a's signature */
  } t[] = {
    {"fam", "Assertion `x` failed.", "f(1)", true},
    {"fam", "Assertion `x` failed.", "f(2)", false},   /* another cell */
    {"other", "Assertion `x` failed.", "f(1)", false}, /* another family */
    {"fam", "Assertion `y` failed.", "f(1)", false},   /* another assertion */
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    KG_CHECK_INT(kg_diag_report_signature(t[i].family, t[i].text, t[i].cell, b, sizeof b), 0);
    KG_CHECK_INT(strcmp(a, b) == 0, t[i].same);
  }
  /* No cell code hashes as "". */
  char c[KG_DIAG_SIGNATURE_MAX], d[KG_DIAG_SIGNATURE_MAX];
  kg_diag_report_signature("fam", "t", NULL, c, sizeof c);
  kg_diag_report_signature("fam", "t", "", d, sizeof d);
  KG_CHECK_STR(c, d);
}

KG_TEST_MAIN(KG_CASE(streamset_one_buffer_per_request_and_stream_lru_out),
             KG_CASE(trail_bounded_and_tail_keeps_last_lines),
             KG_CASE(signs_same_request_or_raw_within_ttl_move_t_back),
             KG_CASE(errrecord_text_and_record),
             KG_CASE(rules_json_family_fields_and_messages),
             KG_CASE(rules_json_string_lists),
             KG_CASE(report_signature_family_text_and_cell))
