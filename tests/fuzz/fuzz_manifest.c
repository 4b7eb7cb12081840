/*  Fuzz the checkpoint manifest parser (checkpoint/kg_ckpt_manifest). The
    decoder runs on the manifest's bytes before the signature is checked
    only for the size cap; still, it must reject anything, never crash. A
    manifest that decodes is re-encoded and decoded again: it must agree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kg_ckpt_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  kg_ckpt_manifest_t *m = NULL, *again = NULL;
  char why[256];
  if (kg_ckpt_manifest_decode((const char *) data, size, &m, why, sizeof why) == 0) {
    char *text = kg_ckpt_manifest_encode(m);
    if (text) {
      if (kg_ckpt_manifest_decode(text, strlen(text), &again, why, sizeof why) != 0)
        abort();                /* our own encoding must decode */
      if (again->count != m->count || again->step != m->step)
        abort();
      for (size_t i = 0; i < m->count; i++)
        if (!kg_ckpt_manifest_find(again, m->members[i].path))
          abort();
    }
    free(text);
  }
  kg_ckpt_manifest_destroy(&again);
  kg_ckpt_manifest_destroy(&m);
  return 0;
}
