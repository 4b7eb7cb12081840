/*  kg_ckpt_hashpool: check the digests of files being written, in worker
    threads that read each file back as it grows.

    Restore writes every member of an archive into a file; the workers hash
    those files from the page cache, following the writer, several members
    at once. The writer never waits for hashing (except to keep at most
    KG_CKPT_HASHPOOL_OPEN files open), so on n cores restore costs about
    hash time / n instead of hash time, and a single member still hashes
    while it is written.

    One producer thread:
        pool = kg_ckpt_hashpool_new();
        job  = kg_ckpt_hashpool_add(pool, fd, size, digest, tag);
        write ...; kg_ckpt_hashpool_progress(pool, job, bytes_written_so_far);
        ...
        rc = kg_ckpt_hashpool_finish(pool, &bad);   once every file is whole
        kg_ckpt_hashpool_destroy(&pool);            also stops early on errors

    Memory: one KG_CKPT_HASHER_BLOCK buffer per worker (at most
    KG_CKPT_HASHPOOL_MAX_THREADS) plus a few bytes per file. */
#ifndef KG_CKPT_HASHPOOL_H
#define KG_CKPT_HASHPOOL_H

#include <stddef.h>
#include <stdint.h>

#define KG_CKPT_HASHPOOL_MAX_THREADS 4
#define KG_CKPT_HASHPOOL_OPEN 64   /* files added but not yet hashed */

typedef struct _kg_ckpt_hashpool_t kg_ckpt_hashpool_t;
typedef struct _kg_ckpt_hashjob_t kg_ckpt_hashjob_t;

/*  Start one worker per online CPU (at least 1, at most
    KG_CKPT_HASHPOOL_MAX_THREADS). NULL on ENOMEM or when no thread could be
    started. Destroy with kg_ckpt_hashpool_destroy. */
kg_ckpt_hashpool_t *kg_ckpt_hashpool_new(void);

/*  Stop the workers (abandoning unfinished files), close what the pool
    holds, free, NULL *p. */
void kg_ckpt_hashpool_destroy(kg_ckpt_hashpool_t **p);

/*  Hash the file open on fd (readable; the pool keeps a duplicate, the
    caller keeps fd) as it reaches size bytes, and compare with the 32-byte
    digest (copied). tag (borrowed, never dereferenced) names the file in
    kg_ckpt_hashpool_finish's answer. Waits while KG_CKPT_HASHPOOL_OPEN files are still being hashed.
    Returns the job, owned by the pool, or NULL with errno set. */
kg_ckpt_hashjob_t *kg_ckpt_hashpool_add(kg_ckpt_hashpool_t *self, int fd, uint64_t size,
                                        const unsigned char *digest, const void *tag);

/*  The first written bytes of job's file are on disk (written, not
    necessarily synced): workers may read that far. */
void kg_ckpt_hashpool_progress(kg_ckpt_hashpool_t *self, kg_ckpt_hashjob_t *job,
                               uint64_t written);

/*  Wait until every added file is hashed (each must have been written whole).
    Returns 0 when every digest matched; KG_ECKPT_CORRUPT with *bad set to the
    tag of the first file added whose digest differs; -errno (and *bad) when a
    file could not be read back. Call once. */
int kg_ckpt_hashpool_finish(kg_ckpt_hashpool_t *self, const void **bad);

#endif
