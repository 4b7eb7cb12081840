/*  A removal plan's decisions checked against a table row's: want is one
    letter per item, 'R' removed or 'K' kept, and n (what the plan
    returned) the number removed. Shared by the retention and snapshot
    plans' table tests. */
#ifndef KG_TEST_PLAN_CHECK_H
#define KG_TEST_PLAN_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kg_test.h"

static inline void
kg_check_plan(const char *what, const bool *rm, size_t items, size_t n, const char *want)
{
  char got[64] = "";
  size_t want_r = 0;
  for (size_t i = 0; i < items && i + 1 < sizeof got; i++) {
    got[i] = rm[i] ? 'R' : 'K';
    want_r += want[i] == 'R';
  }
  got[items < sizeof got ? items : sizeof got - 1] = '\0';
  if (strcmp(got, want) != 0)
    fprintf(stderr, "case '%s': got %s\n", what, got);
  KG_CHECK_STR(got, want);
  KG_CHECK_INT(n, want_r);
}

#endif
