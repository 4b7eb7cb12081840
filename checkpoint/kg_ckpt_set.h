/*  kg_ckpt_set: checkpoint sets across ranks.

    A checkpoint of step s by N ranks is N shard archives (each sealed by
    its rank, "rank"/"world_size" in its signed manifest, named
    step-<s>-<time>-rank<R>of<N>.kgckpt.tar) plus a set index, written by
    whichever rank's seal completes the set: set-<s>-<run hash>.kgset.tar,
    itself a signed kguard archive whose one member KGUARD-SET.json lists
    each rank's archive file name and manifest digest:
      {"format": "kguard-checkpoint-set", "run", "step", "world_size",
       "shards": [{"rank", "archive", "manifest_digest", "sealed_at_ms"}]}
    Its seal time is the newest shard's. A shard is never chosen alone; a
    set is chosen only when its index verifies and every shard it lists is
    present, verifies completely and has the listed manifest digest.
*/
#ifndef KG_CKPT_SET_H
#define KG_CKPT_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_ckpt_manifest.h"
#include "kg_ckpt_verify.h"

#define KG_CKPT_SET_SUFFIX ".kgset.tar"
#define KG_CKPT_SET_MEMBER "KGUARD-SET.json"

typedef struct {
  int64_t rank;
  char *archive;                 /* dir/<file name> */
  char digest[65];               /* hex manifest digest */
} kg_ckpt_shard_t;

typedef struct {
  char *path;                    /* the index archive */
  char run[KG_CKPT_RUN_MAX + 1];
  int64_t step, world_size, sealed_at_ms;
  char digest[65];               /* the index's manifest digest */
  kg_ckpt_shard_t *shards;       /* world_size entries, by rank */
  int rc;                        /* 0 or why the index itself is bad */
  char reason[512];
} kg_ckpt_set_t;

typedef struct {
  kg_ckpt_set_t *sets;           /* newest first */
  size_t count;
} kg_ckpt_sets_t;

/*  Read and verify every set index in dir (each is small). Bad indexes
    are kept with rc/reason set. Returns NULL with *rc (-errno, -ENOENT if
    dir is missing) or a list the caller destroys. */
kg_ckpt_sets_t *kg_ckpt_sets_scan(const char *dir, const kg_keyring_t *keys, int *rc);

void kg_ckpt_sets_destroy(kg_ckpt_sets_t **p);

/*  Verify every shard of set completely (watch: progress, may be NULL).
    Returns 0, or a KG_ECKPT_* verdict / -errno with reason filled. */
int kg_ckpt_set_verify(const kg_ckpt_set_t *set, const kg_keyring_t *keys,
                       const kg_ckpt_sink_t *watch, char *reason, size_t size);

/*  After a shard of (run, step, world_size) was sealed into dir: when every
    rank's shard is there (manifest authenticated), write the set index,
    signed with sk, and put its path in out (else out = ""). Another rank
    writing it first is success. Returns 0 or a negative code. */
int kg_ckpt_set_try_index(const char *dir, const unsigned char *sk, const char *run,
                          int64_t step, int64_t world_size, char *out, size_t outsize);

/*  True if name is a set index's file name. */
bool kg_ckpt_set_is_index_name(const char *name);

#endif
