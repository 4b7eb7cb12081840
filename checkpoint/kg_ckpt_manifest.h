/*  kg_ckpt_manifest: the signed table of contents of a checkpoint archive.

    JSON (cJSON), member KGUARD-MANIFEST.json, first in the archive:
      {"format": "kguard-checkpoint", "version": 1, "run": "...", "step": 42,
       "sealed_at": "2026-01-02T03:04:05.678Z", "sealed_at_ms": 1767323045678,
       "producer": "kguard 0.1.0", "key_id": "b2:...", "digest": "blake2b-256",
       "compression": "none"|"zstd", "total_size": N,
       "members": [{"path": "state.pt", "size": N, "blake2b": "<64 hex>"}],
    version 2: "chunk_size": 67108864 and, instead of "blake2b", each member
       has "chunks": ["<64 hex>", ...] (BLAKE2b-256 of each chunk),
       optional for a shard of a set: "rank": R, "world_size": N (N >= 2)}
    See checkpoint/FORMAT.md. Members are kept sorted by path (byte order)
    so lookups are a binary search.
*/
#ifndef KG_CKPT_MANIFEST_H
#define KG_CKPT_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_ckpt_util.h"
#include "kg_keys.h"

#define KG_CKPT_MANIFEST_NAME "KGUARD-MANIFEST.json"
#define KG_CKPT_SIG_NAME "KGUARD-MANIFEST.sig"
#define KG_CKPT_FORMAT_VERSION 2     /* written by default; 1 still read and writable */
#define KG_CKPT_CHUNK_SIZE (64ULL << 20) /* version 2: bytes per chunk digest */
#define KG_CKPT_CHUNKS_MAX 1000000     /* chunk digests in one manifest */
#define KG_CKPT_MANIFEST_MAX (4 << 20) /* bytes */
#define KG_CKPT_MEMBERS_MAX 20000
#define KG_CKPT_RUN_MAX 128
#define KG_CKPT_DIGEST_BYTES 32
#define KG_CKPT_WORLD_MAX 65536     /* ranks in a checkpoint set */

typedef struct {
  char *path;                                  /* relative, checked name */
  uint64_t size;                               /* exact byte count */
  unsigned char digest[KG_CKPT_DIGEST_BYTES];  /* v1: BLAKE2b-256 of the bytes */
  unsigned char (*chunks)[KG_CKPT_DIGEST_BYTES]; /* v2: BLAKE2b-256 of each chunk */
  size_t nchunks;                              /* v2: kg_ckpt_manifest_chunks(size) */
  bool seen;                                   /* set by readers */
} kg_ckpt_member_t;

typedef struct {
  int version;                        /* KG_CKPT_FORMAT_VERSION */
  char run[KG_CKPT_RUN_MAX + 1];      /* run id */
  int64_t step;                       /* training step, >= 0 */
  int64_t sealed_at_ms;               /* ms since the epoch, UTC */
  char sealed_at[32];                 /* same time, ISO 8601 */
  char producer[64];                  /* "kguard VERSION" */
  char key_id[KG_KEYS_ID_LEN];        /* signer's key id */
  bool zstd;                          /* archive is zstd-compressed */
  uint64_t total_size;                /* sum of member sizes */
  int64_t rank;                       /* shard of a set: this rank, else 0 */
  int64_t world_size;                 /* ranks in the set; 0: not a shard */
  kg_ckpt_member_t *members;          /* sorted by path */
  size_t count;                       /* number of members */
  size_t alloc;                       /* capacity of members */
} kg_ckpt_manifest_t;

/*  Chunks of a member of size bytes in version 2: ceil(size / chunk size),
    at least 1 (an empty member has one chunk, the digest of nothing). */
size_t kg_ckpt_manifest_chunks(uint64_t size);

/*  Version 2: allocate every member's chunk digests (zeroed) for its size.
    Returns 0, KG_ETOOBIG past KG_CKPT_CHUNKS_MAX, KG_ENOMEM. */
int kg_ckpt_manifest_alloc_chunks(kg_ckpt_manifest_t *self);

/*  New empty manifest (version set, everything else zero). NULL on ENOMEM. */
kg_ckpt_manifest_t *kg_ckpt_manifest_new(void);

/*  Free the manifest and NULL *p. Safe on NULL. */
void kg_ckpt_manifest_destroy(kg_ckpt_manifest_t **p);

/*  Append a member (path copied; digest filled later). Does not sort.
    Returns its index, KG_ETOOBIG past KG_CKPT_MEMBERS_MAX, KG_ENOMEM. */
int kg_ckpt_manifest_add(kg_ckpt_manifest_t *self, const char *path, uint64_t size);

/*  Sort members by path. Returns 0, or KG_EEXISTS if two share a path. */
int kg_ckpt_manifest_sort(kg_ckpt_manifest_t *self);

/*  Member named path or NULL (needs sorted members). */
kg_ckpt_member_t *kg_ckpt_manifest_find(kg_ckpt_manifest_t *self, const char *path);

/*  Encode as JSON text. Returns a malloc'd NUL-terminated string the caller
    frees, or NULL on ENOMEM. */
char *kg_ckpt_manifest_encode(const kg_ckpt_manifest_t *self);

/*  Decode and check JSON text (len bytes, not NUL-terminated). On success
    returns 0 and a new manifest in *out (caller destroys). Otherwise
    KG_ECKPT_MALFORMED (bad structure) or KG_ECKPT_UNSAFE (a member name that
    could escape or is not UTF-8, or a duplicate), with a phrase in why. */
int kg_ckpt_manifest_decode(const char *json, size_t len, kg_ckpt_manifest_t **out,
                            char *why, size_t whysize);

#endif
