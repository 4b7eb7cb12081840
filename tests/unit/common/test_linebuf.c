/*  kg_linebuf: lines reassembled from pieces, cut at the bound, each with
    the arrival time of its first byte. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kg_linebuf.h"
#include "kg_test.h"

typedef struct {
  char lines[8][64];
  bool cut[8];
  int64_t t[8];
  int n;
} s_lines_t;

static void
s_collect(void *arg, const char *line, size_t len, bool truncated, int64_t first_ms)
{
  s_lines_t *l = arg;
  if (l->n < 8) {
    snprintf(l->lines[l->n], sizeof l->lines[0], "%.*s", (int) len, line);
    l->cut[l->n] = truncated;
    l->t[l->n] = first_ms;
    l->n++;
  }
}

KG_TEST(linebuf)
{
  kg_linebuf_t *lb = kg_linebuf_new(10);
  s_lines_t l = {0};
  kg_linebuf_feed(lb, "ab", 2, 1, s_collect, &l);
  kg_linebuf_feed(lb, "c\r\nde", 5, 2, s_collect, &l);
  KG_CHECK_INT(l.n, 1);
  KG_CHECK_STR(l.lines[0], "abc");
  KG_CHECK_INT(l.t[0], 1);
  size_t plen;
  kg_linebuf_pending(lb, &plen);
  KG_CHECK_INT(plen, 2);
  kg_linebuf_feed(lb, "0123456789XYZ\nok\n", 17, 3, s_collect, &l);
  KG_CHECK_INT(l.n, 3);
  KG_CHECK_STR(l.lines[1], "de01234567");
  KG_CHECK(l.cut[1]);
  KG_CHECK_INT(l.t[1], 2);
  KG_CHECK_STR(l.lines[2], "ok");
  KG_CHECK(!l.cut[2]);
  kg_linebuf_feed(lb, "tail", 4, 4, s_collect, &l);
  kg_linebuf_flush(lb, s_collect, &l);
  KG_CHECK_INT(l.n, 4);
  KG_CHECK_STR(l.lines[3], "tail");
  kg_linebuf_destroy(&lb);
  KG_CHECK(lb == NULL);
}

KG_TEST_MAIN(KG_CASE(linebuf))
