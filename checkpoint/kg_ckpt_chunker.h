/*  kg_ckpt_chunker: check a version 2 member's chunk digests on several
    threads while one thread streams its bytes.

    Chunk k of a member goes to hasher k % n (n = online CPUs, at most
    KG_CKPT_CHUNKER_MAX; each a kg_ckpt_hasher with its own ring of blocks,
    one chunk deep within KG_CKPT_CHUNKER_BUDGET_MIB), so one large member
    is hashed on n cores while the caller reads. Memory: at most the budget
    (touched only as data fills it) plus 32 bytes per chunk of the member.

        kg_ckpt_chunker_t c = {0};
        kg_ckpt_chunker_start(&c);                  once (idempotent)
        c.got = calloc(mem->nchunks, 32);           per member (owned by c)
        kg_ckpt_chunker_feed(&c, mem, pos, buf, len);   in order
        bad = kg_ckpt_chunker_check(&c, mem);       after the member's last byte
        kg_ckpt_chunker_stop(&c);                   frees hashers and got
*/
#ifndef KG_CKPT_CHUNKER_H
#define KG_CKPT_CHUNKER_H

#include <stddef.h>
#include <stdint.h>

#include "kg_ckpt_hasher.h"
#include "kg_ckpt_manifest.h"

#define KG_CKPT_CHUNKER_MAX 8

/* Read-ahead the hashers may hold, in all (MiB). The reader streams the
   archive in order and chunk k goes to hasher k % n, so hasher k can only
   work while the reader is already feeding chunk k + 1, k + 2, ...: with a
   ring of 4 MiB per hasher the reader waited for the hasher of the chunk
   it was in, and n hashers ran at about one core's speed (sampled: one
   thread runnable 70 % of the time). A ring of one chunk (64 MiB + 4) per
   hasher lets all n work at once; the budget bounds it (n = 8: 32 MiB
   each, still 1.5 chunks in flight per hasher pair). */
#define KG_CKPT_CHUNKER_BUDGET_MIB 272

typedef struct {
  kg_ckpt_hasher_t *h[KG_CKPT_CHUNKER_MAX];
  size_t n;                                   /* hashers started */
  unsigned char (*got)[KG_CKPT_DIGEST_BYTES]; /* the member's computed digests */
} kg_ckpt_chunker_t;

/*  Start the hashers (if not yet). Returns 0 or KG_ENOMEM. */
int kg_ckpt_chunker_start(kg_ckpt_chunker_t *c);

/*  Stop the hashers, free got, zero the counts. */
void kg_ckpt_chunker_stop(kg_ckpt_chunker_t *c);

/*  Queue len bytes of mem found at offset pos (all bytes before pos were
    queued); ends each chunk's digest at its boundary. */
void kg_ckpt_chunker_feed(kg_ckpt_chunker_t *c, const kg_ckpt_member_t *mem, uint64_t pos,
                          const void *buf, size_t len);

/*  End the member's last chunk, wait for every digest, and return the index
    of the first chunk that does not match mem->chunks, or -1. */
long kg_ckpt_chunker_check(kg_ckpt_chunker_t *c, const kg_ckpt_member_t *mem);

#endif
