/*  kg_ckpt_hashpool: files hashed while they are written. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <sodium.h>

#include "kg_ckpt_hasher.h"
#include "kg_ckpt_manifest.h"
#include "kg_ckpt_hashpool.h"
#include "kg_error.h"
#include "kg_test.h"

/*  Files written piece by piece, progress reported as they grow: every
    digest checked, the first failing file named; a pool destroyed with a
    file half written stops without waiting for the rest. */
KG_TEST(hashpool_follows_growing_files)
{
  char dir[] = "/tmp/kg-hashpool-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  size_t big = 3 * KG_CKPT_HASHER_BLOCK + 777;
  unsigned char *data = malloc(big);
  KG_CHECK(data != NULL);
  for (size_t i = 0; i < big; i++)
    data[i] = (unsigned char) (i * 2654435761u >> 11);
  size_t sizes[5] = {big, 0, 100, big, 5000};
  kg_ckpt_hashpool_t *pool = kg_ckpt_hashpool_new();
  KG_CHECK(pool != NULL);
  for (size_t k = 0; k < 5; k++) {
    char path[64];
    snprintf(path, sizeof path, "%s/f%zu", dir, k);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    KG_CHECK(fd >= 0);
    unsigned char want[KG_CKPT_DIGEST_BYTES];
    crypto_generichash(want, sizeof want, data, sizes[k], NULL, 0);
    if (k == 2 || k == 3)
      want[5] ^= 1;   /* the archive's digest says otherwise */
    kg_ckpt_hashjob_t *job = kg_ckpt_hashpool_add(pool, fd, sizes[k], want, &sizes[k]);
    KG_CHECK(job != NULL);
    for (size_t done = 0; done < sizes[k];) {
      size_t n = sizes[k] - done < 65536 ? sizes[k] - done : 65536;
      KG_CHECK(write(fd, data + done, n) == (ssize_t) n);
      done += n;
      kg_ckpt_hashpool_progress(pool, job, done);
    }
    close(fd);   /* the pool reads through its own duplicate */
  }
  const void *bad = NULL;
  KG_CHECK(kg_ckpt_hashpool_finish(pool, &bad) == KG_ECKPT_CORRUPT);
  KG_CHECK(bad == &sizes[2]);   /* the first of the two bad ones */
  kg_ckpt_hashpool_destroy(&pool);
  KG_CHECK(pool == NULL);

  /* All digests right: 0. Then a file never finished: destroy returns. */
  pool = kg_ckpt_hashpool_new();
  KG_CHECK(pool != NULL);
  char path[64];
  snprintf(path, sizeof path, "%s/g", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  KG_CHECK(fd >= 0);
  unsigned char want[KG_CKPT_DIGEST_BYTES];
  crypto_generichash(want, sizeof want, data, 100, NULL, 0);
  kg_ckpt_hashjob_t *job = kg_ckpt_hashpool_add(pool, fd, 100, want, NULL);
  KG_CHECK(job != NULL && write(fd, data, 100) == 100);
  kg_ckpt_hashpool_progress(pool, job, 100);
  bad = NULL;
  KG_CHECK(kg_ckpt_hashpool_finish(pool, &bad) == 0);
  kg_ckpt_hashpool_destroy(&pool);
  pool = kg_ckpt_hashpool_new();
  KG_CHECK(pool != NULL);
  job = kg_ckpt_hashpool_add(pool, fd, big, want, NULL);
  KG_CHECK(job != NULL);
  kg_ckpt_hashpool_progress(pool, job, 50);   /* half written, then an error */
  kg_ckpt_hashpool_destroy(&pool);
  KG_CHECK(pool == NULL);
  close(fd);
  for (size_t k = 0; k < 5; k++) {
    snprintf(path, sizeof path, "%s/f%zu", dir, k);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/g", dir);
  unlink(path);
  rmdir(dir);
  free(data);
}

KG_TEST_MAIN(KG_CASE(hashpool_follows_growing_files))
