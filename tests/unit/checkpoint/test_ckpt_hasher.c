/*  kg_ckpt_hasher: the hashing thread against one-shot digests. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "kg_ckpt_hasher.h"
#include "kg_ckpt_manifest.h"
#include "kg_test.h"

/*  The hasher thread gives the same digests as one-shot hashing, for an
    empty input, a short one and one spanning more blocks than the ring has,
    pushed in uneven pieces and ended without waiting in between. */
KG_TEST(hasher_matches_one_shot_digests)
{
  size_t big = 5 * KG_CKPT_HASHER_BLOCK + 12345;
  unsigned char *data = malloc(big);
  KG_CHECK(data != NULL);
  for (size_t i = 0; i < big; i++)
    data[i] = (unsigned char) (i * 2654435761u >> 13);
  size_t sizes[3] = {0, 100, big};
  unsigned char got[3][KG_CKPT_DIGEST_BYTES], want[3][KG_CKPT_DIGEST_BYTES];
  kg_ckpt_hasher_t *h = kg_ckpt_hasher_new();
  KG_CHECK(h != NULL);
  for (int k = 0; k < 3; k++) {
    crypto_generichash(want[k], KG_CKPT_DIGEST_BYTES, data, sizes[k], NULL, 0);
    size_t done = 0, piece = 17;
    while (done < sizes[k]) {
      size_t n = sizes[k] - done < piece ? sizes[k] - done : piece;
      memcpy(kg_ckpt_hasher_slot(h), data + done, n);
      kg_ckpt_hasher_push(h, n);
      done += n;
      piece = piece == 17 ? KG_CKPT_HASHER_BLOCK : 17;
    }
    kg_ckpt_hasher_end(h, got[k]);
  }
  kg_ckpt_hasher_wait(h);
  for (int k = 0; k < 3; k++)
    KG_CHECK(memcmp(got[k], want[k], KG_CKPT_DIGEST_BYTES) == 0);
  kg_ckpt_hasher_destroy(&h);
  KG_CHECK(h == NULL);
  free(data);
}

KG_TEST_MAIN(KG_CASE(hasher_matches_one_shot_digests))
