/*  kg_regex_lit: the literal runs a regex cannot match without. */
#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_classifier.h"
#include "kg_diagnosis.h"
#include "kg_prefilter.h"
#include "kg_prefilter_builder.h"
#include "kg_regex_lit.h"
#include "kg_test.h"
#include "kg_test_rules.h"

static int
s_collect(const char *lit, size_t len, void *arg)
{
  char *out = arg;
  size_t n = strlen(out);
  snprintf(out + n, 256 - n, "%s%.*s", n ? "|" : "", (int) len, lit);
  return 0;
}

static int
s_stop(const char *lit, size_t len, void *arg)
{
  (void) lit, (void) len;
  ++*(int *) arg;
  return -7;
}

/*  The run kept for each top-level alternative, exactly. */
KG_TEST(regex_lit_runs_per_alternative)
{
  struct {
    const char *re, *want;
  } cases[] = {
    {"device-side assert( triggered)?", "device-side assert"},
    {"illegal (memory )?access|an illegal instruction", "illegal |an illegal instruction"},
    {"x?yz+w", "yz"},                 /* x may be absent; z+ has one z    */
    {"CUDA error: [a-z ]+ \\(code 7\\)", "CUDA error: "},   /* the longer run */
    {"[0-9]+", ""},                   /* an alternative with no literal   */
    {"ab\\wcdef|(g|h)ijk", "cdef|ijk"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char got[256] = "";
    KG_CHECK_INT(kg_regex_literals(cases[i].re, s_collect, got), 0);
    if (strcmp(got, cases[i].want) != 0)
      fprintf(stderr, "  %s: got '%s', want '%s'\n", cases[i].re, got, cases[i].want);
    KG_CHECK(strcmp(got, cases[i].want) == 0);
  }
  int calls = 0;
  KG_CHECK_INT(kg_regex_literals("aaa|bbb|ccc", s_stop, &calls), -7);
  KG_CHECK_INT(calls, 1);   /* a callback's error stops the walk */
}

KG_TEST_MAIN(KG_CASE(regex_lit_runs_per_alternative))
