/*  kg_ratelog by tables: each row is one call with its time and the answer
    it must give; no clock, no I/O. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kg_ratelog.h"
#include "kg_test.h"

static const char *const s_names[] = {"forged", "replayed", "malformed"};
enum { FORGED, REPLAYED, MALFORMED };

typedef enum { NOTE, DEADLINE, SUMMARY, FORCE } s_op_t;

typedef struct {
  s_op_t op;
  size_t kind;         /*  NOTE                                           */
  int64_t now;
  long long want;      /*  NOTE: verdict; DEADLINE: time                   */
  const char *line;    /*  SUMMARY/FORCE: expected line, NULL for none     */
} s_row_t;

static const s_row_t s_rows[] = {
  {DEADLINE, 0, 0, 0, NULL},                    /*  nothing yet: no window */
  {NOTE, FORGED, 100, KG_RATELOG_FULL, NULL},
  {DEADLINE, 0, 100, 1100, NULL},
  {NOTE, FORGED, 200, KG_RATELOG_FULL, NULL},
  {NOTE, FORGED, 300, KG_RATELOG_QUIET, NULL},  /*  third: over the burst  */
  {NOTE, REPLAYED, 400, KG_RATELOG_FULL, NULL}, /*  bursts are per kind    */
  {SUMMARY, 0, 1099, 0, NULL},                  /*  not due yet            */
  {SUMMARY, 0, 1100, 0, "dropped in the last 1.0 s: 3 forged (1 not shown), 1 replayed; "
                        "4 in all since start"},
  {DEADLINE, 0, 1100, 0, NULL},
  {SUMMARY, 0, 5000, 0, NULL},                  /*  closed: nothing to say */
  /*  forged overflowed: hushed in the next window; replayed is not. */
  {NOTE, FORGED, 1200, KG_RATELOG_QUIET, NULL},
  {NOTE, REPLAYED, 1300, KG_RATELOG_FULL, NULL},
  {DEADLINE, 0, 1300, 2200, NULL},
  {SUMMARY, 0, 2250, 0, "dropped in the last 1.0 s: 1 forged (1 not shown), 1 replayed; "
                        "6 in all since start"},
  /*  A window without forged, everything shown: no line, forged unhushed. */
  {NOTE, REPLAYED, 2300, KG_RATELOG_FULL, NULL},
  {SUMMARY, 0, 3300, 0, NULL},
  {NOTE, FORGED, 3400, KG_RATELOG_FULL, NULL},
  {NOTE, FORGED, 3401, KG_RATELOG_FULL, NULL},
  {NOTE, FORGED, 3402, KG_RATELOG_QUIET, NULL},
  {SUMMARY, 0, 4400, 0, "dropped in the last 1.0 s: 3 forged (1 not shown); "
                        "10 in all since start"},
  /*  No window for a whole interval: forged is news again at once. */
  {NOTE, FORGED, 5400, KG_RATELOG_FULL, NULL},
  {NOTE, MALFORMED, 5500, KG_RATELOG_FULL, NULL},
  {NOTE, MALFORMED, 5501, KG_RATELOG_FULL, NULL},
  {NOTE, MALFORMED, 5502, KG_RATELOG_QUIET, NULL},
  {NOTE, 7, 5503, KG_RATELOG_QUIET, NULL},      /*  unknown kind: ignored  */
  {FORCE, 0, 5650, 0, "dropped in the last 0.2 s: 1 forged, 3 malformed (1 not shown); "
                      "14 in all since start"},
  {DEADLINE, 0, 5650, 0, NULL},
};

KG_TEST(table)
{
  kg_ratelog_t *r = kg_ratelog_new(3, s_names, 2, 1000);
  KG_CHECK(r != NULL);
  for (size_t i = 0; r && i < sizeof s_rows / sizeof s_rows[0]; i++) {
    const s_row_t *row = &s_rows[i];
    switch (row->op) {
    case NOTE:
      KG_CHECK_INT(kg_ratelog_note(r, row->kind, row->now), row->want);
      break;
    case DEADLINE:
      KG_CHECK_INT(kg_ratelog_deadline(r), row->want);
      break;
    case SUMMARY:
    case FORCE: {
      char *line = kg_ratelog_summary(r, row->now, row->op == FORCE);
      if (row->line)
        KG_CHECK_STR(line, row->line);
      else
        KG_CHECK(line == NULL);
      free(line);
      break;
    }
    }
    if (kg_test__failed) {
      fprintf(stderr, "  at row %zu\n", i);
      break;
    }
  }
  KG_CHECK_INT(kg_ratelog_total(r, FORGED), 8);
  KG_CHECK_INT(kg_ratelog_total(r, REPLAYED), 3);
  KG_CHECK_INT(kg_ratelog_total(r, MALFORMED), 3);
  KG_CHECK_INT(kg_ratelog_total(r, 7), 0);
  kg_ratelog_destroy(&r);
  kg_ratelog_destroy(&r);   /*  safe on NULL */
}

/*  10,000 forged messages, one per millisecond, with the caller writing
    the summary whenever the deadline passes (as the loop does): the log
    gets the burst in full and one line per interval, whatever the count. */
KG_TEST(flood)
{
  kg_ratelog_t *r = kg_ratelog_new(3, s_names, 5, 1000);
  unsigned long full = 0, lines = 0, bytes = 0;
  for (int64_t t = 0; t < 10000; t++) {
    int64_t d = kg_ratelog_deadline(r);
    if (d && t >= d) {
      char *line = kg_ratelog_summary(r, t, false);
      if (line) {
        lines++;
        bytes += strlen(line);
      }
      free(line);
    }
    full += kg_ratelog_note(r, FORGED, t) == KG_RATELOG_FULL;
  }
  char *last = kg_ratelog_summary(r, 10000, true);
  lines += last != NULL;
  KG_CHECK(last && strstr(last, "10000 in all since start"));
  free(last);
  KG_CHECK_INT(full, 5);
  KG_CHECK_INT(lines, 10);
  KG_CHECK(bytes < 10 * 120);
  KG_CHECK_INT(kg_ratelog_total(r, FORGED), 10000);
  kg_ratelog_destroy(&r);
}

KG_TEST(bad_arguments)
{
  KG_CHECK(kg_ratelog_new(0, s_names, 1, 1000) == NULL);
  KG_CHECK(kg_ratelog_new(3, NULL, 1, 1000) == NULL);
  KG_CHECK(kg_ratelog_new(3, s_names, 1, 0) == NULL);
  /*  burst 0: nothing in full, everything in the summary. */
  kg_ratelog_t *r = kg_ratelog_new(3, s_names, 0, 10);
  KG_CHECK_INT(kg_ratelog_note(r, REPLAYED, 0), KG_RATELOG_QUIET);
  char *line = kg_ratelog_summary(r, 10, false);
  KG_CHECK_STR(line, "dropped in the last 0.0 s: 1 replayed (1 not shown); 1 in all since start");
  free(line);
  kg_ratelog_destroy(&r);
}

KG_TEST_MAIN(KG_CASE(table), KG_CASE(flood), KG_CASE(bad_arguments))
