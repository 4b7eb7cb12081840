/*  kg_ckpt_hasher: BLAKE2b-256 in a second thread, so that hashing (the
    costliest step: about 1 s per GiB) overlaps with the read and write
    system calls of seal instead of adding to them (restore uses
    kg_ckpt_hashpool, which hashes several members at once).

    The caller fills blocks the hasher owns and hands them over in order:
        buf = kg_ckpt_hasher_slot(h);     fill up to KG_CKPT_HASHER_BLOCK bytes
        kg_ckpt_hasher_push(h, len);      queued; the caller may still READ buf
                                          until its next kg_ckpt_hasher_slot call
        ...
        kg_ckpt_hasher_end(h, digest);    digest of everything pushed since the
                                          previous end is stored into digest
        kg_ckpt_hasher_wait(h);           every queued block hashed, digests stored
    Memory: the ring's blocks (KG_CKPT_HASHER_SLOTS unless made deeper),
    whatever the amount hashed. One
    producer thread only.
*/
#ifndef KG_CKPT_HASHER_H
#define KG_CKPT_HASHER_H

#include <stddef.h>

#define KG_CKPT_HASHER_BLOCK (1 << 20)
#define KG_CKPT_HASHER_SLOTS 4

typedef struct _kg_ckpt_hasher_t kg_ckpt_hasher_t;

/*  Start the hashing thread with a fresh digest. NULL on ENOMEM or when no
    thread could be started. Destroy with kg_ckpt_hasher_destroy. */
kg_ckpt_hasher_t *kg_ckpt_hasher_new(void);

/*  The same with a ring of slots blocks (kg_ckpt_hasher_new: KG_CKPT_HASHER_SLOTS).
    A deeper ring lets the producer run further ahead of this hasher. */
kg_ckpt_hasher_t *kg_ckpt_hasher_new_depth(size_t slots);

/*  Stop the thread (after it hashed what was queued), free, NULL *p. */
void kg_ckpt_hasher_destroy(kg_ckpt_hasher_t **p);

/*  The next free block (KG_CKPT_HASHER_BLOCK bytes) to fill, waiting until
    the hasher is done with it. Owned by the hasher; the caller must push it
    before asking for another. */
unsigned char *kg_ckpt_hasher_slot(kg_ckpt_hasher_t *self);

/*  Queue the first len bytes of the block from the last kg_ckpt_hasher_slot. */
void kg_ckpt_hasher_push(kg_ckpt_hasher_t *self, size_t len);

/*  Queue the end of the current digest: once hashed, its 32 bytes are
    written to out (which must stay valid until kg_ckpt_hasher_wait) and a
    fresh digest starts. */
void kg_ckpt_hasher_end(kg_ckpt_hasher_t *self, unsigned char *out);

/*  Wait until everything queued is hashed and every digest stored. */
void kg_ckpt_hasher_wait(kg_ckpt_hasher_t *self);

#endif
