/*  The shipped GPU error rules for a unit test: one loader instead of a
    copy per test program. The program defines KG_RULES_PATH (the tests'
    CMakeLists pass supervisor/rules/gpu-errors.json) and links kg_diag. */
#ifndef KG_TEST_RULES_H
#define KG_TEST_RULES_H

#include <stdio.h>

#include "kg_classifier.h"
#include "kg_test.h"

/*  A new classifier over KG_RULES_PATH (the caller destroys it), or NULL
    with the test marked failed and the loader's reason on stderr. */
static inline kg_classifier_t *
kg_test_rules(void)
{
  kg_classifier_t *c = NULL;
  char err[512] = "";
  int rc = kg_classifier_load_file(KG_RULES_PATH, &c, err, sizeof err);
  if (rc)
    fprintf(stderr, "load %s: %s\n", KG_RULES_PATH, err);
  KG_CHECK_INT(rc, 0);
  return c;
}

#endif
