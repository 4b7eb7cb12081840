/*  kg_prefilter_builder: a prefilter from the rules, kind by kind. */
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

/*  The builder, rule kind by rule kind: "any" needs each string, "all" its
    longest, a regex its alternatives' runs; one rule without a usable
    literal (too short, or nothing to go by) means no prefilter at all. */
KG_TEST(builder_per_rule_kind)
{
  char *any[] = {"CUDA error", "HIP error", NULL};
  char *all[] = {"ab", "device-side", NULL};
  char *short_any[] = {"ok", NULL};
  struct {
    int kind;          /* 0 any, 1 all, 2 regex, 3 unusable, 4 short any */
    const char *text;  /* must be found ... */
    const char *miss;  /* ... must not */
    bool usable;
  } rows[] = {
    {0, "x CUDA error: y", "plain output", true},
    {0, "HIP error: z", "cuda", true},
    {1, "a device-side assert", "ab only", true},
    {2, "an illegal memory access was", "nothing", true},
    {3, NULL, NULL, false},
    {4, NULL, NULL, false},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_prefilter_builder_t *b = kg_prefilter_builder_new();
    int rc = 0;
    switch (rows[i].kind) {
    case 0: rc = kg_prefilter_builder_any(b, any); break;
    case 1: rc = kg_prefilter_builder_all(b, all); break;
    case 2: rc = kg_prefilter_builder_regex(b, "illegal memory access|misaligned address"); break;
    case 3: kg_prefilter_builder_unusable(b); break;
    case 4: rc = kg_prefilter_builder_any(b, short_any); break;
    }
    KG_CHECK_INT(rc, 0);
    kg_prefilter_t *pf = NULL;
    KG_CHECK_INT(kg_prefilter_builder_finish(b, &pf), 0);
    KG_CHECK_INT(pf != NULL, rows[i].usable);
    if (pf && rows[i].text) {
      KG_CHECK(kg_prefilter_search(pf, rows[i].text, strlen(rows[i].text)));
      KG_CHECK(!kg_prefilter_search(pf, rows[i].miss, strlen(rows[i].miss)));
    }
    kg_prefilter_destroy(&pf);
    kg_prefilter_builder_destroy(&b);
    KG_CHECK(b == NULL);
  }
}

KG_TEST_MAIN(KG_CASE(builder_per_rule_kind))
