/*  kg_foreign by tables: ipykernel's "Bad pipe message" lines (text any
    local user can make the kernel print) leave the stream, from the marker
    to the end of the line, whatever the chunking; everything else passes
    byte for byte; a line of any length costs no memory. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_foreign.h"
#include "kg_test.h"

/*  Filter text fed in chunks of at most `chunk` bytes (0: split once at
    `split`); returns the output (new string). */
static char *
s_run(kg_foreign_t *f, const char *text, size_t chunk, size_t split)
{
  size_t len = strlen(text), o = 0;
  char *out = malloc(len + 2 * KG_FOREIGN_HOLD + 1);
  if (chunk)
    for (size_t i = 0; i < len; i += chunk)
      o += kg_foreign_filter(f, text + i, len - i < chunk ? len - i : chunk, out + o);
  else {
    o += kg_foreign_filter(f, text, split, out + o);
    o += kg_foreign_filter(f, text + split, len - split, out + o);
  }
  out[o] = '\0';
  return out;
}

KG_TEST(foreign_table_every_split)
{
  static const struct {
    const char *in, *out;
    unsigned long lines;
  } rows[] = {
    {"", "", 0},
    {"plain output\n", "plain output\n", 0},
    {"Bad pipe message: %s [b'CUDA error: device-side assert triggered']\n", "", 1},
    {"before\nBad pipe message: %s [b'x', b'y']\nafter\n", "before\nafter\n", 1},
    /* after text on the same line: that text keeps its newline */
    {"abcBad pipe message: %s [b'CUDA error']\nnext\n", "abc\nnext\n", 1},
    /* near misses pass intact */
    {"Bad pipe messag\n", "Bad pipe messag\n", 0},
    {"Bad pipe message: %d [\n", "Bad pipe message: %d [\n", 0},
    {"BBad pipe message: %s [b'']\n", "B\n", 1},
    {"Bad Bad pipe message: %s [1]\nok\n", "Bad \nok\n", 1},
    /* two in a row, and one without its newline yet */
    {"Bad pipe message: %s [1]\nBad pipe message: %s [2]\n", "", 2},
    {"x\nBad pipe message: %s [no newline yet", "x\n", 1},
    /* the kernel's own CUDA text is not touched */
    {"RuntimeError: CUDA error: device-side assert triggered\n",
     "RuntimeError: CUDA error: device-side assert triggered\n", 0},
  };
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    size_t len = strlen(rows[r].in);
    /* one chunk per byte, every split in two, and whole */
    for (size_t chunk = 1; chunk <= 2; chunk++) {
      kg_foreign_t *f = kg_foreign_new();
      char *out = s_run(f, rows[r].in, chunk, 0);
      KG_CHECK_STR(out, rows[r].out);
      KG_CHECK_INT(kg_foreign_lines(f), rows[r].lines);
      free(out);
      kg_foreign_destroy(&f);
    }
    for (size_t split = 0; split <= len; split++) {
      kg_foreign_t *f = kg_foreign_new();
      char *out = s_run(f, rows[r].in, 0, split);
      if (strcmp(out, rows[r].out) != 0)
        fprintf(stderr, "row %zu split %zu: \"%s\"\n", r, split, out);
      KG_CHECK_STR(out, rows[r].out);
      KG_CHECK_INT(kg_foreign_lines(f), rows[r].lines);
      free(out);
      kg_foreign_destroy(&f);
    }
  }
  kg_foreign_destroy(NULL);
}

/*  The filter's shortcut (a mismatch means the held bytes were text)
    holds only for a marker without a border. */
KG_TEST(foreign_marker_has_no_border)
{
  const char *m = KG_FOREIGN_MARKER;
  size_t n = strlen(m);
  KG_CHECK_INT(KG_FOREIGN_HOLD, n - 1);
  for (size_t k = 1; k <= n; k++)            /* every prefix m[0..k) */
    for (size_t b = 1; b < k; b++)           /* no border of length b */
      KG_CHECK(memcmp(m, m + k - b, b) != 0);
}

/*  A foreign line of 20 MB read in 64 KiB pieces: nothing of it comes out,
    the next line does, and the first line's start is kept for the log. */
KG_TEST(foreign_huge_line_and_sample)
{
  kg_foreign_t *f = kg_foreign_new();
  char *buf = malloc(65536), *out = malloc(65536 + KG_FOREIGN_HOLD);
  const char *head = "Bad pipe message: %s [b'";
  size_t o = kg_foreign_filter(f, head, strlen(head), out);
  KG_CHECK_INT(o, 0);
  memset(buf, 'A', 65536);
  size_t total = 0;
  for (int i = 0; i < 320; i++)
    total += kg_foreign_filter(f, buf, 65536, out);
  KG_CHECK_INT(total, 0);
  const char *tail = "']\nkernel line\n";
  o = kg_foreign_filter(f, tail, strlen(tail), out);
  out[o] = '\0';
  KG_CHECK_STR(out, "kernel line\n");
  KG_CHECK_INT(kg_foreign_lines(f), 1);
  const char *sample = kg_foreign_sample(f);
  KG_CHECK_INT(strlen(sample), KG_FOREIGN_SAMPLE);
  KG_CHECK(strncmp(sample, "Bad pipe message: %s [b'AAAA", 28) == 0);
  free(buf);
  free(out);
  kg_foreign_destroy(&f);
}

KG_TEST_MAIN(KG_CASE(foreign_table_every_split), KG_CASE(foreign_marker_has_no_border),
             KG_CASE(foreign_huge_line_and_sample))
