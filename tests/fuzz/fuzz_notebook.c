/*  Fuzz the notebook reader (supervisor/run/kg_notebook) that `kguard run`
    applies to a user's .ipynb, and the per-cell accessors the runner uses. */
#include <stdint.h>
#include <stdlib.h>

#include "kg_notebook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  kg_notebook_t *nb = NULL;
  char err[256];
  if (kg_notebook_parse((const char *) data, size, &nb, err, sizeof err) == 0) {
    (void) kg_notebook_kernel_name(nb);
    size_t n = kg_notebook_cell_count(nb);
    for (size_t i = 0; i < n && i < 256; i++) {
      (void) kg_notebook_is_code(nb, i);
      free(kg_notebook_source(nb, i));
      (void) kg_notebook_has_tag(nb, i, "raises-exception");
    }
  }
  kg_notebook_destroy(&nb);
  return 0;
}
