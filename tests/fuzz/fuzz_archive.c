/*  Fuzz archive verification (checkpoint/kg_ckpt_verify): the bytes of a
    checkpoint file, which anyone who can write the checkpoint directory
    controls. Verified against the public key in $KG_FUZZ_KEY_DIR (the key
    the seed archives were sealed with, see run_fuzz.sh), so mutations of a
    genuinely signed archive exercise the payload checks too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "kg_ckpt_verify.h"
#include "kg_keys.h"

static kg_keyring_t *s_keys;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  const char *dir = getenv("KG_FUZZ_KEY_DIR");
  unsigned char pk[KG_KEYS_PUBLIC_BYTES];
  if (dir && kg_keys_load_public(dir, pk, NULL, 0) == 0 && (s_keys = kg_keyring_new()))
    kg_keyring_add(s_keys, pk, NULL, NULL);
  return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char path[64];
  int fd = kg_fuzz_memfd(data, size, path, sizeof path);
  if (fd < 0)
    return 0;
  kg_ckpt_report_t report;
  memset(&report, 0, sizeof report);
  (void) kg_ckpt_verify(path, s_keys, 0, NULL, &report);
  kg_ckpt_report_clear(&report);
  close(fd);
  return 0;
}
