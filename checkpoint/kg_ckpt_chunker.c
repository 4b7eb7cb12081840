/*  kg_ckpt_chunker: version 2 chunk digests hashed on several threads. */
#include "kg_ckpt_chunker.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_error.h"

int
kg_ckpt_chunker_start(kg_ckpt_chunker_t *c)
{
  if (c->n)
    return 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t want = cpus > 0 ? (size_t) cpus : 1;
  if (want > KG_CKPT_CHUNKER_MAX)
    want = KG_CKPT_CHUNKER_MAX;
  size_t chunk_mib = KG_CKPT_CHUNK_SIZE >> 20;
  size_t depth = want == 1 ? KG_CKPT_HASHER_SLOTS : KG_CKPT_CHUNKER_BUDGET_MIB / want;
  if (depth > chunk_mib + KG_CKPT_HASHER_SLOTS)
    depth = chunk_mib + KG_CKPT_HASHER_SLOTS;
  if (depth < KG_CKPT_HASHER_SLOTS)
    depth = KG_CKPT_HASHER_SLOTS;
  for (size_t i = 0; i < want; i++)
    if ((c->h[c->n] = kg_ckpt_hasher_new_depth(depth)))
      c->n++;
  return c->n ? 0 : KG_ENOMEM;
}

void
kg_ckpt_chunker_stop(kg_ckpt_chunker_t *c)
{
  for (size_t i = 0; i < c->n; i++)
    kg_ckpt_hasher_destroy(&c->h[i]);
  c->n = 0;
  free(c->got);
  c->got = NULL;
}

/*  Queue len bytes of mem at offset pos (the bytes before were queued). */
void
kg_ckpt_chunker_feed(kg_ckpt_chunker_t *c, const kg_ckpt_member_t *mem, uint64_t pos, const void *buf,
               size_t len)
{
  const unsigned char *p = buf;
  while (len > 0) {
    size_t k = (size_t) (pos / KG_CKPT_CHUNK_SIZE);
    kg_ckpt_hasher_t *h = c->h[k % c->n];
    uint64_t to_end = KG_CKPT_CHUNK_SIZE - pos % KG_CKPT_CHUNK_SIZE;
    size_t n = len < KG_CKPT_HASHER_BLOCK ? len : KG_CKPT_HASHER_BLOCK;
    if (n > to_end)
      n = (size_t) to_end;
    memcpy(kg_ckpt_hasher_slot(h), p, n);
    kg_ckpt_hasher_push(h, n);
    p += n;
    len -= n;
    pos += n;
    if (pos % KG_CKPT_CHUNK_SIZE == 0 && k + 1 < mem->nchunks)
      kg_ckpt_hasher_end(h, c->got[k]);
  }
}

/*  The member's last chunk ends; wait for every digest; index of the first
    chunk that does not match, or -1. */
long
kg_ckpt_chunker_check(kg_ckpt_chunker_t *c, const kg_ckpt_member_t *mem)
{
  size_t last = mem->nchunks - 1;
  kg_ckpt_hasher_end(c->h[last % c->n], c->got[last]);
  for (size_t i = 0; i < c->n; i++)
    kg_ckpt_hasher_wait(c->h[i]);
  for (size_t k = 0; k < mem->nchunks; k++)
    if (sodium_memcmp(c->got[k], mem->chunks[k], KG_CKPT_DIGEST_BYTES) != 0)
      return (long) k;
  return -1;
}
