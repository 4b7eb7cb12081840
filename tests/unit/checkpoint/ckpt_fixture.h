/*  The checkpoint unit tests' fixture: a fresh temporary root with a key
    pair (the public key as the user's own in s_keys) and a payload folder
    "src" of two files, and a seal of it into "ck". Included by the tests that
    seal real archives; each program gets its own copy (static). */
#ifndef KG_CKPT_FIXTURE_H
#define KG_CKPT_FIXTURE_H

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_seal.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"
#include "kg_keys.h"
#include "kg_test.h"

static char s_root[PATH_MAX];
static unsigned char s_sk[KG_KEYS_SECRET_BYTES], s_pk[KG_KEYS_PUBLIC_BYTES];
static kg_keyring_t *s_keys; /* s_pk as the user's own key */

static inline void
s_write(const char *path, size_t size, unsigned seed)
{
  FILE *f = fopen(path, "wb");
  for (size_t i = 0; i < size; i++)
    fputc((int) ((i * 131 + seed) & 0xff), f);
  fclose(f);
}

/* A fresh temp root with keys and a payload dir "src" (two files). */
static inline void
s_setup(void)
{
  snprintf(s_root, sizeof s_root, "/tmp/kg-ckpt-test-XXXXXX");
  if (!mkdtemp(s_root))
    abort();
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/keys", s_root);
  KG_CHECK_INT(kg_keys_generate(p, false, NULL, 0), 0);
  KG_CHECK_INT(kg_keys_generate(p, false, NULL, 0), KG_EEXISTS);
  KG_CHECK_INT(kg_keys_load_secret(p, false, s_sk, NULL, 0), 0);
  KG_CHECK_INT(kg_keys_load_public(p, s_pk, NULL, 0), 0);
  KG_CHECK(memcmp(s_sk + 32, s_pk, 32) == 0);
  kg_keyring_destroy(&s_keys);
  s_keys = kg_keyring_new();
  KG_CHECK(s_keys && kg_keyring_add(s_keys, s_pk, NULL, NULL) == 0);
  snprintf(p, sizeof p, "%s/src/d", s_root);
  char src[PATH_MAX + 64];
  snprintf(src, sizeof src, "%s/src", s_root);
  mkdir(src, 0755);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/src/state.pt", s_root);
  s_write(p, 200000, 1);
  snprintf(p, sizeof p, "%s/src/d/extra.bin", s_root);
  s_write(p, 777, 2);
}

static inline void
s_teardown(void)
{
  int fd = open("/tmp", O_RDONLY | O_DIRECTORY);
  kg_ckpt_remove_tree_at(fd, s_root + 5);
  close(fd);
}

static inline int
s_seal(int64_t step, int64_t when, bool zstd, char *out)
{
  char src[PATH_MAX + 8], into[PATH_MAX + 8], why[512];
  snprintf(src, sizeof src, "%s/src", s_root);
  snprintf(into, sizeof into, "%s/ck", s_root);
  kg_ckpt_seal_opts_t o = {.dir = src, .step = step, .run = "unit", .into = into,
                           .zstd = zstd, .sk = s_sk, .now_ms = when};
  int rc = kg_ckpt_seal(&o, out, PATH_MAX, why, sizeof why);
  if (rc < 0)
    fprintf(stderr, "seal: %s\n", why);
  return rc;
}

#endif
