/*  kg_ckpt_rangecheck: check byte ranges of one file against BLAKE2b-256
    digests on every core, each thread reading its own ranges.

    Verify of an uncompressed archive knows, from the tar headers, where
    each member's bytes lie; it hands every version 2 chunk (or version 1
    member) to this pool as a range. Each worker takes the next range,
    preads it into its own reused buffer of KG_CKPT_RANGECHECK_PIECE bytes
    (through its own file description, so the kernel's read-ahead follows
    each worker's sequential stream) and hashes it there: no reading
    thread, no ring, no copy between threads. Every core hashes, and memory
    is one piece per worker whatever the archive's size.

    Ranges are added in the order a streaming reader meets them; the answer
    is the first range, in that order, that failed, so a bad archive is
    reported exactly as a one-thread pass would report it. Once a range has
    failed, later ones are skipped.

    One producer thread:
        rc = kg_ckpt_rangecheck_new(fd, cap);       workers start idle
        kg_ckpt_rangecheck_add(rc, off, len, digest, tag, chunk);   in order
        ...
        kg_ckpt_rangecheck_close(rc);               no more ranges
        err = kg_ckpt_rangecheck_wait(rc, tick, arg, &bad);
        kg_ckpt_rangecheck_destroy(&rc);            also stops early
*/
#ifndef KG_CKPT_RANGECHECK_H
#define KG_CKPT_RANGECHECK_H

#include <stddef.h>
#include <stdint.h>

#include "kg_ckpt_ratecap.h"

#define KG_CKPT_RANGECHECK_PIECE (256u << 10)  /* bytes per pread: stays in L2 */
#define KG_CKPT_RANGECHECK_MAX_THREADS 32

typedef struct _kg_ckpt_rangecheck_t kg_ckpt_rangecheck_t;

/*  The first range that failed. */
typedef struct {
  const void *tag;     /* the tag it was added with                      */
  long chunk;          /* its chunk number as added (-1: a whole member)  */
  uint64_t got;        /* bytes of it that could be read                  */
} kg_ckpt_rangecheck_bad_t;

/*  Start one worker per CPU this process may run on (at most
    KG_CKPT_RANGECHECK_MAX_THREADS) reading fd (borrowed: it must stay open
    until destroy). cap (borrowed, may be NULL) limits the read rate.
    NULL on ENOMEM or when no thread could be started. */
kg_ckpt_rangecheck_t *kg_ckpt_rangecheck_new(int fd, kg_ckpt_ratecap_t *cap);

/*  Stop the workers (abandoning unchecked ranges), close their files,
    free, NULL *p. */
void kg_ckpt_rangecheck_destroy(kg_ckpt_rangecheck_t **p);

/*  Check that the len bytes of the file at off hash to digest (32 bytes,
    copied). tag (borrowed, never dereferenced) and chunk name the range in
    the answer. Returns 0 or KG_ENOMEM. */
int kg_ckpt_rangecheck_add(kg_ckpt_rangecheck_t *self, uint64_t off, uint64_t len,
                           const unsigned char *digest, const void *tag, long chunk);

/*  No more ranges will be added. */
void kg_ckpt_rangecheck_close(kg_ckpt_rangecheck_t *self);

/*  Bytes hashed so far (any thread). */
uint64_t kg_ckpt_rangecheck_hashed(kg_ckpt_rangecheck_t *self);

/*  Close, then wait until every range is checked (or skipped after a
    failure). tick (may be NULL) is called with arg and the bytes hashed
    so far about once a second while waiting. Returns 0 when every range
    matched; otherwise fills *bad with the first range, in the order added,
    that failed and returns KG_ECKPT_CORRUPT (digest differs),
    KG_ECKPT_TRUNC (the file ends inside it) or -errno (a read failed). */
int kg_ckpt_rangecheck_wait(kg_ckpt_rangecheck_t *self, void (*tick)(void *arg, uint64_t hashed),
                            void *arg, kg_ckpt_rangecheck_bad_t *bad);

#endif
