/*  kg_ckpt_seal_scan: what kg_ckpt_seal does before writing: walk the
    directory to be sealed into a manifest's member list, and hash those
    members in parallel (zstd archives, whose manifest must be complete
    before the first byte is written). */
#ifndef KG_CKPT_SEAL_SCAN_H
#define KG_CKPT_SEAL_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "kg_ckpt_manifest.h"

/*  Add every regular file under the directory open as dfd (taken: always
    closed) to m, named prefix/relative path ("" at the top), recursing
    into subdirectories without following links. Refuses (KG_EUSAGE, why
    names the file) links, devices, fifos, sockets, names kg_ckpt_path_problem
    rejects and the reserved manifest and signature names. Returns 0, or a
    negative kg_error code with why filled. */
int kg_ckpt_seal_walk(int dfd, const char *prefix, kg_ckpt_manifest_t *m, char *why,
                      size_t whysize);

/*  Fill every member's digest (or chunk digests, for a version 2 manifest)
    in m by reading the files relative to rootfd, on up to 4 threads, and
    record each file's mtime in mtimes[i] (m->count entries, caller-owned).
    A file whose size differs from m's is refused ("file changed while
    sealing"). progress (may be NULL) is called with arg from this thread
    only: bytes hashed by every thread of the members' total. Returns 0,
    or the first failure's negative code with why naming the member. */
int kg_ckpt_seal_hash_all(kg_ckpt_manifest_t *m, int rootfd, struct timespec *mtimes,
                          void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
                          char *why, size_t whysize);

#endif
