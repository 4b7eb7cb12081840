/*  kg_ckpt_retain: the retention plan, by table. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kg_ckpt_retain.h"
#include "kg_test.h"

/* Retention plan by table: items newest first as (authenticated, verified,
   named, step, time); "K" kept, "R" removed. */
KG_TEST(retain_plan_table)
{
  struct {
    const char *what;
    int keep;
    int64_t every;
    int64_t open[2];
    size_t nopen;
    size_t n;
    kg_ckpt_retain_item_t it[6];
    const char *want;
  } t[] = {
    {"nothing verified: nothing removed", 1, 0, {0}, 0, 3,
     {{true, false, false, 3, 300}, {true, false, false, 2, 200}, {true, false, false, 1, 100}},
     "KKK"},
    {"keep 2 from the newest valid", 2, 0, {0}, 0, 4,
     {{true, true, false, 4, 400}, {true, false, false, 3, 300}, {true, false, false, 2, 200},
      {true, false, false, 1, 100}},
     "KKRR"},
    {"newer than V (unverified or corrupt) always kept", 1, 0, {0}, 0, 4,
     {{true, false, false, 4, 400}, {true, true, false, 3, 300}, {true, false, false, 2, 200},
      {true, false, false, 1, 100}},
     "KKRR"},
    {"keep-every 10", 1, 10, {0}, 0, 4,
     {{true, true, false, 31, 400}, {true, false, false, 30, 300}, {true, false, false, 20, 200},
      {true, false, false, 15, 100}},
     "KKKR"},
    {"open incident keeps the newest before T", 1, 0, {250}, 1, 4,
     {{true, true, false, 4, 400}, {true, false, false, 3, 300}, {true, false, false, 2, 200},
      {true, false, false, 1, 100}},
     "KRKR"},
    {"a marker's archive is kept", 1, 0, {0}, 0, 3,
     {{true, true, false, 3, 300}, {true, false, false, 2, 200}, {true, false, true, 1, 100}},
     "KRK"},
    {"unauthenticated never removed, not counted", 2, 0, {0}, 0, 4,
     {{true, true, false, 4, 400}, {false, false, false, -1, 350}, {true, false, false, 3, 300},
      {true, false, false, 2, 200}},
     "KKKR"},
  };
  for (size_t c = 0; c < sizeof t / sizeof *t; c++) {
    bool rm[6];
    size_t n = kg_ckpt_retain_plan(t[c].it, t[c].n, t[c].keep, t[c].every, t[c].open,
                                   t[c].nopen, rm);
    char got[8] = "";
    size_t want_r = 0;
    for (size_t i = 0; i < t[c].n; i++) {
      got[i] = rm[i] ? 'R' : 'K';
      want_r += t[c].want[i] == 'R';
    }
    got[t[c].n] = '\0';
    if (strcmp(got, t[c].want) != 0)
      fprintf(stderr, "case '%s': got %s\n", t[c].what, got);
    KG_CHECK_STR(got, t[c].want);
    KG_CHECK_INT(n, want_r);
  }
}

KG_TEST_MAIN(KG_CASE(retain_plan_table))
