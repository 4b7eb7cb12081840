/*  kg_jsonscan: members found where cJSON finds them, and a string decoded
    piece by piece equal to cJSON's whole decoding, whatever the piece size,
    with no escape or surrogate pair split; malformed input rejected. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kg_error.h"
#include "kg_jsonscan.h"
#include "kg_test.h"

/*  Pieces appended into one growing buffer. */
typedef struct {
  char *buf;
  size_t len, calls, max_piece;
} s_acc_t;

static int
s_append(const char *text, size_t len, void *arg)
{
  s_acc_t *a = arg;
  a->buf = realloc(a->buf, a->len + len + 1);
  memcpy(a->buf + a->len, text, len);
  a->len += len;
  a->buf[a->len] = '\0';
  a->calls++;
  if (len > a->max_piece)
    a->max_piece = len;
  return 0;
}

static kg_frame_t
s_span(const char *s)
{
  return (kg_frame_t) {s, strlen(s)};
}

static bool
s_span_is(kg_frame_t f, const char *s)
{
  return f.data && f.size == strlen(s) && memcmp(f.data, s, f.size) == 0;
}

KG_TEST(members)
{
  static const char *const keys[3] = {"name", "text", "missing"};
  kg_frame_t spans[3];
  const char *obj = " { \"name\" : \"stdout\" ,\"n\":[1,{\"text\":\"inner\"}],\"x\":-1.5e3,"
                    "\"text\":\"a\\\"b\",\"t\":true,\"text\":\"second\"}\n";
  KG_CHECK_INT(kg_jsonscan_members(obj, strlen(obj), keys, 3, spans), 0);
  KG_CHECK(s_span_is(spans[0], "\"stdout\""));
  KG_CHECK(s_span_is(spans[1], "\"a\\\"b\""));   /* the first top-level one, as cJSON */
  KG_CHECK(spans[2].data == NULL && spans[2].size == 0);
  cJSON *whole = cJSON_Parse(obj);
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(whole, "text")->valuestring, "a\"b");
  cJSON_Delete(whole);
  /* an escaped key is decoded before it is compared */
  const char *esc = "{\"t\\u0065xt\":\"y\"}";
  KG_CHECK_INT(kg_jsonscan_members(esc, strlen(esc), keys, 3, spans), 0);
  KG_CHECK(s_span_is(spans[1], "\"y\""));
  KG_CHECK_INT(kg_jsonscan_members("{}", 2, keys, 3, spans), 0);
  KG_CHECK(spans[0].data == NULL && spans[1].data == NULL);
  /* the object may end where len says, not at a NUL */
  const char *longer = "{\"text\":\"z\"}GARBAGE";
  KG_CHECK_INT(kg_jsonscan_members(longer, 12, keys, 3, spans), 0);
  KG_CHECK(s_span_is(spans[1], "\"z\""));
}

/*  Every piece size from 16 to past the whole: the concatenation equals
    cJSON's decoding of the whole string, and no piece is over its size. */
KG_TEST(pieces_match_cjson)
{
  const char *raw = "\"plain ascii, then escapes \\n\\t\\\\ \\\" \\/ \\b\\f\\r and \\u00e9 "
                    "\\u4e2d and a pair \\ud83d\\ude00 twice \\uD83D\\uDE03 and utf-8 \xc3\xa9 "
                    "\xe2\x82\xac, line\\nline\\nline\\n\\\\\\\\\\\\\\\" end\"";
  cJSON *whole = cJSON_ParseWithLength(raw, strlen(raw));
  KG_CHECK(cJSON_IsString(whole));
  const char *want = whole->valuestring;
  for (size_t size = 16; size <= strlen(raw) + 2; size++) {
    s_acc_t a = {0};
    KG_CHECK_INT(kg_jsonscan_string_pieces(s_span(raw), size, s_append, &a), 0);
    KG_CHECK(a.buf && strcmp(a.buf, want) == 0);
    KG_CHECK(a.max_piece <= size);
    if (size == 16)
      KG_CHECK(a.calls > 5);
    free(a.buf);
  }
  cJSON_Delete(whole);
  s_acc_t a = {0};
  KG_CHECK_INT(kg_jsonscan_string_pieces(s_span("\"\""), 64, s_append, &a), 0);
  KG_CHECK_INT(a.calls, 0);
}

/*  A string made only of escapes and pairs, at every piece size: any split
    inside one would make cJSON reject the piece. */
KG_TEST(escapes_never_split)
{
  size_t n = 3000;
  char *raw = malloc(n * 12 + 3);
  size_t k = 0;
  raw[k++] = '"';
  static const char *const units[5] = {"\\n", "\\\\", "\\u0041", "\\ud83d\\ude00", "x"};
  for (size_t i = 0; i < n; i++) {
    const char *u = units[(i * 7 + i / 3) % 5];
    memcpy(raw + k, u, strlen(u));
    k += strlen(u);
  }
  raw[k++] = '"';
  raw[k] = '\0';
  cJSON *whole = cJSON_ParseWithLength(raw, k);
  KG_CHECK(cJSON_IsString(whole));
  for (size_t size = 16; size < 64; size++) {
    s_acc_t a = {0};
    KG_CHECK_INT(kg_jsonscan_string_pieces((kg_frame_t) {raw, k}, size, s_append, &a), 0);
    KG_CHECK(a.buf && strcmp(a.buf, whole->valuestring) == 0);
    free(a.buf);
  }
  cJSON_Delete(whole);
  free(raw);
}

static int
s_stop(const char *text, size_t len, void *arg)
{
  (void) text;
  (void) len;
  (*(int *) arg)++;
  return 42;
}

KG_TEST(malformed)
{
  static const char *const keys[1] = {"text"};
  kg_frame_t spans[1];
  static const char *const bad_objects[] = {
    "", "   ", "[]", "\"text\"", "{", "{\"text\"", "{\"text\":", "{\"text\":\"abc",
    "{\"text\":\"abc\\", "{\"text\":\"a\\u12\"}", "{\"text\" \"a\"}", "{\"text\":\"a\",}",
    "{\"text\":\"a\"} x", "{\"text\":\"a\" \"b\":1}", "{text:\"a\"}", "{\"a\":tru}",
    "{\"a\":[1,2}", "{\"k\\x\":1}", "{\"text\":\"a\"}}",
  };
  for (size_t i = 0; i < sizeof bad_objects / sizeof bad_objects[0]; i++) {
    int rc = kg_jsonscan_members(bad_objects[i], strlen(bad_objects[i]), keys, 1, spans);
    if (rc != KG_EBADJSON)
      fprintf(stderr, "accepted: %s\n", bad_objects[i]);
    KG_CHECK_INT(rc, KG_EBADJSON);
    KG_CHECK(spans[0].data == NULL);
  }
  KG_CHECK_INT(kg_jsonscan_members(NULL, 0, keys, 1, spans), KG_EBADJSON);
  static const char *const bad_strings[] = {
    "", "\"", "abc", "\"abc", "\"a\"b\"", "\"a\\\"", "\"\\u00g0\"", "\"\\q\"", "\"a\\",
  };
  for (size_t i = 0; i < sizeof bad_strings / sizeof bad_strings[0]; i++) {
    s_acc_t a = {0};
    KG_CHECK_INT(kg_jsonscan_string_pieces(s_span(bad_strings[i]), 64, s_append, &a),
                 KG_EBADJSON);
    free(a.buf);
  }
  /* pieces before a bad escape were delivered; then the error */
  char *late = malloc(200);
  memset(late, 'a', 199);
  late[0] = '"';
  memcpy(late + 190, "\\q\"", 4);
  s_acc_t a = {0};
  KG_CHECK_INT(kg_jsonscan_string_pieces(s_span(late), 16, s_append, &a), KG_EBADJSON);
  KG_CHECK(a.calls >= 10);
  free(a.buf);
  free(late);
  /* the callback's return stops the walk */
  int calls = 0;
  KG_CHECK_INT(kg_jsonscan_string_pieces(s_span("\"0123456789abcdef0123456789\""), 16, s_stop,
                                         &calls),
               42);
  KG_CHECK_INT(calls, 1);
}

KG_TEST(stream_content)
{
  bool is_stderr = true;
  s_acc_t a = {0};
  const char *out = "{\"name\": \"stdout\", \"text\": \"line 1\\nline 2\\n\"}";
  KG_CHECK_INT(kg_jsonscan_stream(s_span(out), 16, &is_stderr, s_append, NULL, &a), 0);
  KG_CHECK(!is_stderr);
  KG_CHECK_STR(a.buf, "line 1\nline 2\n");
  free(a.buf);
  a = (s_acc_t) {0};
  const char *err = "{\"text\": \"RuntimeError: CUDA error\\n\", \"name\": \"stderr\"}";
  KG_CHECK_INT(kg_jsonscan_stream(s_span(err), 1024, &is_stderr, s_append, NULL, &a), 0);
  KG_CHECK(is_stderr);
  KG_CHECK_STR(a.buf, "RuntimeError: CUDA error\n");
  free(a.buf);
  a = (s_acc_t) {0};
  const char *notext = "{\"name\": \"stderr\", \"text\": 12}";
  KG_CHECK_INT(kg_jsonscan_stream(s_span(notext), 1024, &is_stderr, s_append, NULL, &a),
               KG_ENOTFOUND);
  KG_CHECK_INT(a.calls, 0);
  KG_CHECK_INT(kg_jsonscan_stream(s_span("{\"name\": \"stdout\"}"), 1024, &is_stderr, s_append,
                                  NULL, &a),
               KG_ENOTFOUND);
  KG_CHECK_INT(kg_jsonscan_stream(s_span("not json"), 1024, &is_stderr, s_append, NULL, &a),
               KG_EBADJSON);
  KG_CHECK_INT(a.calls, 0);
}

/*  What a skip callback is offered and told: the raw text it saw, and its
    answer. */
typedef struct {
  s_acc_t acc;                  /* the decoded pieces fn was given          */
  char offered[256];            /* raw text offered to skip, "" if none     */
  int offers;
  bool answer;
} s_skip_t;

static int
s_skip_append(const char *text, size_t len, void *arg)
{
  return s_append(text, len, &((s_skip_t *) arg)->acc);
}

static bool
s_skip(const char *raw, size_t len, void *arg)
{
  s_skip_t *k = arg;
  k->offers++;
  snprintf(k->offered, sizeof k->offered, "%.*s", (int) len, raw);
  return k->answer;
}

/*  The text's whole lines (after its first newline escape up to and with
    its last) are offered raw only when their escapes are all short ones;
    a yes leaves fn with the text around them, a no with all of it. */
KG_TEST(stream_offers_plain_whole_lines)
{
  static const struct {
    const char *body;           /* the raw JSON of "text", no quotes        */
    const char *offered;        /* NULL: no offer                           */
    const char *kept;           /* decoded text fn gets when skip says yes  */
  } rows[] = {
    {"a\\nb\\nc\\nd", "b\\nc\\n", "a\nd"},
    {"a\\nb\\nc\\n", "b\\nc\\n", "a\n"},
    {"\\nmid\\n", "mid\\n", "\n"},
    {"a\\nb", NULL, "a\nb"},                         /* one newline: no whole line */
    {"no newline", NULL, "no newline"},
    {"", NULL, ""},
    {"a\\nb\\u001b[0mc\\nd", NULL, "a\nb\x1b[0mc\nd"}, /* \u in the lines */
    {"a\\nx\\/y\\nz", NULL, "a\nx/y\nz"},             /* \/ in the lines */
    {"\\u00e9\\nmid\\nt\\u00e9", "mid\\n", "\xc3\xa9\nt\xc3\xa9"}, /* \u only around them */
    {"a\\\\nb\\nc\\nd", "c\\n", "a\\nb\nd"},          /* \\ then n: no newline */
    {"q\\nx\\t\\\"y\\\\\\\\\\r\\b\\f\\nz", "x\\t\\\"y\\\\\\\\\\r\\b\\f\\n", "q\nz"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char content[512];
    snprintf(content, sizeof content, "{\"name\": \"stdout\", \"text\": \"%s\"}", rows[i].body);
    char quoted[512];
    snprintf(quoted, sizeof quoted, "\"%s\"", rows[i].body);
    cJSON *whole = cJSON_Parse(quoted);
    KG_CHECK(cJSON_IsString(whole));
    for (int answer = 0; answer < 2; answer++) {
      s_skip_t k = {.answer = answer == 1};
      bool is_stderr;
      KG_CHECK_INT(kg_jsonscan_stream(s_span(content), 16, &is_stderr, s_skip_append, s_skip, &k),
                   0);
      if (!rows[i].offered || !answer)
        KG_CHECK_STR(k.acc.buf ? k.acc.buf : "", whole->valuestring);
      else
        KG_CHECK_STR(k.acc.buf ? k.acc.buf : "", rows[i].kept);
      KG_CHECK_INT(k.offers, rows[i].offered ? 1 : 0);
      if (rows[i].offered)
        KG_CHECK_STR(k.offered, rows[i].offered);
      free(k.acc.buf);
    }
    cJSON_Delete(whole);
  }
}

/*  The nesting depth where a parser stopped: strings (escaped quotes and
    brackets inside them) do not count, closings do. */
KG_TEST(depth_at)
{
  static const struct { const char *text; size_t off; size_t depth; } rows[] = {
    {"", 0, 0},
    {"{\"a\": [1, [2", 99, 3},
    {"{\"a\": [1, [2]]}", 99, 0},
    {"{\"a\": [1, [2]]}", 6, 1},
    {"[\"[[{\\\"[\", [", 99, 2},
    {"[\"open string [[[", 99, 1},
    {"]]]{", 99, 1},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    size_t d = kg_jsonscan_depth_at(rows[i].text, strlen(rows[i].text), rows[i].off);
    if (d != rows[i].depth)
      fprintf(stderr, "row %zu: %s\n", i, rows[i].text);
    KG_CHECK_INT(d, rows[i].depth);
  }
}

KG_TEST_MAIN(KG_CASE(depth_at), KG_CASE(members), KG_CASE(pieces_match_cjson), KG_CASE(escapes_never_split),
             KG_CASE(malformed), KG_CASE(stream_content),
             KG_CASE(stream_offers_plain_whole_lines))
