/*  kg_ckpt_rangecheck: ranges of a file checked on every core. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "kg_ckpt_manifest.h"
#include "kg_ckpt_rangecheck.h"
#include "kg_error.h"
#include "kg_test.h"

/*  Ranges of a file checked on every core: all matching gives 0 and every
    byte hashed once; otherwise the answer is the first failing range in
    the order added, never a later one that failed sooner (range 2 is five
    bytes, range 1 two dozen pieces: with two or more workers range 2 fails
    first; repeated), with its tag and chunk; a range past the end of the
    file is incomplete with the bytes that could be read; a pool destroyed
    before waiting stops. */
KG_TEST(rangecheck_reports_the_first_failure_in_order)
{
  char path[] = "/tmp/kg-rangecheck-XXXXXX";
  int fd = mkstemp(path);
  KG_CHECK(fd >= 0);
  const uint64_t P = KG_CKPT_RANGECHECK_PIECE;
  size_t size = 26 * P + 4321;
  unsigned char *data = malloc(size);
  KG_CHECK(data != NULL);
  for (size_t i = 0; i < size; i++)
    data[i] = (unsigned char) (i * 2654435761u >> 9);
  KG_CHECK(write(fd, data, size) == (ssize_t) size);
  /* A short range, a long one, a tiny one, an empty one, one past the end. */
  uint64_t off[5] = {0, P, 17, 99, size - 100};
  uint64_t len[5] = {P, 24 * P + 4321, 5, 0, 150};
  unsigned char want[5][KG_CKPT_DIGEST_BYTES];
  for (int k = 0; k < 4; k++)
    crypto_generichash(want[k], KG_CKPT_DIGEST_BYTES, data + off[k], len[k], NULL, 0);
  memset(want[4], 0, KG_CKPT_DIGEST_BYTES);
  int tags[5];
  kg_ckpt_rangecheck_bad_t bad;

  kg_ckpt_rangecheck_t *rc = kg_ckpt_rangecheck_new(fd, NULL);
  KG_CHECK(rc != NULL);
  for (int k = 0; k < 4; k++)
    KG_CHECK(kg_ckpt_rangecheck_add(rc, off[k], len[k], want[k], &tags[k], k) == 0);
  KG_CHECK(kg_ckpt_rangecheck_wait(rc, NULL, NULL, &bad) == 0);
  KG_CHECK(kg_ckpt_rangecheck_hashed(rc) == len[0] + len[1] + len[2]);
  kg_ckpt_rangecheck_destroy(&rc);
  KG_CHECK(rc == NULL);

  /* Ranges 1 (long) and 2 (five bytes) wrong: range 1 is named. */
  want[1][0] ^= 1;
  want[2][0] ^= 1;
  for (int round = 0; round < 20; round++) {
    rc = kg_ckpt_rangecheck_new(fd, NULL);
    KG_CHECK(rc != NULL);
    for (int k = 0; k < 5; k++)
      KG_CHECK(kg_ckpt_rangecheck_add(rc, off[k], len[k], want[k], &tags[k], 10 + k) == 0);
    KG_CHECK(kg_ckpt_rangecheck_wait(rc, NULL, NULL, &bad) == KG_ECKPT_CORRUPT);
    KG_CHECK(bad.tag == &tags[1] && bad.chunk == 11);
    kg_ckpt_rangecheck_destroy(&rc);
  }

  /* Only the range past the end fails: incomplete, 100 of its bytes read. */
  want[1][0] ^= 1;
  want[2][0] ^= 1;
  rc = kg_ckpt_rangecheck_new(fd, NULL);
  for (int k = 0; k < 5; k++)
    KG_CHECK(kg_ckpt_rangecheck_add(rc, off[k], len[k], want[k], &tags[k], -1) == 0);
  KG_CHECK(kg_ckpt_rangecheck_wait(rc, NULL, NULL, &bad) == KG_ECKPT_TRUNC);
  KG_CHECK(bad.tag == &tags[4] && bad.chunk == -1 && bad.got == 100);
  kg_ckpt_rangecheck_destroy(&rc);

  /* Destroyed with ranges queued and no wait: returns. */
  rc = kg_ckpt_rangecheck_new(fd, NULL);
  for (int i = 0; i < 50; i++)
    KG_CHECK(kg_ckpt_rangecheck_add(rc, 0, size, want[0], NULL, i) == 0);
  kg_ckpt_rangecheck_destroy(&rc);
  KG_CHECK(rc == NULL);
  close(fd);
  unlink(path);
  free(data);
}

KG_TEST_MAIN(KG_CASE(rangecheck_reports_the_first_failure_in_order))
