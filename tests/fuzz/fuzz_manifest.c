/*  Fuzz the checkpoint manifest parser (checkpoint/kg_ckpt_manifest). The
    decoder runs on the manifest's bytes before the signature is checked
    only for the size cap; still, it must reject anything, never crash. A
    manifest that decodes is re-encoded and decoded again: it must agree.
    One that decodes never lists a name that is also a directory of
    another (no directory could restore both) and never held a \u0000
    escape (C strings would end there while Python's do not: two readers,
    two files). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_ckpt_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*  True if the text holds \u0000 not right after a backslash (an escaped
    backslash followed by "u0000" is no NUL): never a false alarm, which is
    what an invariant needs. */
static int
s_has_nul_escape(const uint8_t *data, size_t size)
{
  for (size_t i = 0; i + 6 <= size; i++)
    if (memcmp(data + i, "\\u0000", 6) == 0 && (i == 0 || data[i - 1] != '\\'))
      return 1;
  return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  kg_ckpt_manifest_t *m = NULL, *again = NULL;
  char why[256];
  if (kg_ckpt_manifest_decode((const char *) data, size, &m, why, sizeof why) == 0) {
    if (s_has_nul_escape(data, size))
      abort();                  /* a NUL escape was accepted */
    for (size_t i = 0; i < m->count; i++) {
      char p[KG_CKPT_PATH_MAX + 1];
      snprintf(p, sizeof p, "%s", m->members[i].path);
      for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (kg_ckpt_manifest_find(m, p))
          abort();              /* a file that is also a directory */
        *s = '/';
      }
    }
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
