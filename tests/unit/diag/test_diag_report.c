/*  kg_diag_report: the diagnosis report's signature, family, text and cell. */
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

KG_TEST_MAIN(KG_CASE(report_signature_family_text_and_cell))
