/*  Fuzz the rule-table loader (supervisor/diag/kg_classifier): a user may
    point kguard at their own rules file. A table that loads is then used
    to classify a fixed text, as the supervisor does with kernel output. */
#include <stdint.h>

#include "kg_classifier.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char text[] =
      "RuntimeError: CUDA error: device-side assert triggered\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
  kg_classifier_t *c = NULL;
  char err[256];
  if (kg_classifier_load_string((const char *) data, size, &c, err, sizeof err) == 0) {
    (void) kg_classifier_may_match(c, text, sizeof text - 1);
    (void) kg_classifier_family_count(c);
    (void) kg_classifier_rule_count(c);
  }
  kg_classifier_destroy(&c);
  return 0;
}
