/*  kg_ckpt_snapkeep: a memory directory of snapshots (`kguard ckpt seal
    --snapshot`) holds one complete snapshot (or the N newest, --snapshot-keep
    N) plus those being written.

    Memory (tmpfs) is precious, so after each snapshot's seal the directory
    is pruned as a memory tier: the newest complete checkpoint C (a plain
    archive, or a set index whose shards are all present) stays, and so
    does every item sealed at or after C's start (C's seal time; for a set,
    its earliest shard's), such as shards of the next step other ranks are
    still writing. Every other item of the run sealed before C goes, by
    signed seal time rather than step: a snapshot sealed after a fault, that
    the restart then superseded, is older than the restart's new complete
    one even when its step is higher. Other runs' archives, leftovers of
    interrupted seals and files that do not authenticate are never removed.
    A rank of a multi-node job keeps its two newest (each rank's directory
    is its own, and synchronous ranks can be a step apart at a fault: the
    step they all hold is then the one before the newest).

    The decision is pure (kg_ckpt_snapkeep_plan, tested by tables); the
    removal (kg_ckpt_snapkeep_apply) keeps an archive being read.
*/
#ifndef KG_CKPT_SNAPKEEP_H
#define KG_CKPT_SNAPKEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_ckpt_verify.h"

typedef struct {
  bool authenticated;  /* of the run being pruned, manifest authenticated */
  bool index;          /* a set index (else a plain archive or a shard) */
  int64_t time_ms;     /* signed seal time (an index's: its newest shard's) */
  int64_t step;
  int64_t rank;        /* a shard's rank; an index's world size is world_size */
  int64_t world_size;  /* >= 2 for a shard or an index, else 0 */
  long set;            /* a shard: the position in items of the index that
                          lists it (-1: none does); -1 for the others */
} kg_ckpt_snapkeep_item_t;

/*  Decide, for items[0..n) in any order, which to remove (remove[i]): see
    the rules above, with the `keep` newest complete checkpoints kept (1
    normally; 2 where each rank's snapshots lie apart and ranks may be a
    step apart: several nodes): C is the oldest of them. Returns how many
    are marked (0 when there is no complete checkpoint). */
size_t kg_ckpt_snapkeep_plan(const kg_ckpt_snapkeep_item_t *items, size_t n, int keep,
                             bool *remove);

/*  Prune the memory directory dir for run: authenticate its archives and
    set indexes (manifests only), remove what the plan marks (an archive
    being read stays: kg_ckpt_retain_remove), and dir/quarantine/ with
    everything in it. Prints one line per removal to out (a FILE *) when not
    NULL. Returns the number of archives removed (>= 0; a missing dir has
    none), or -errno / KG_ENOMEM. */
int kg_ckpt_snapkeep_apply(const char *dir, const kg_keyring_t *keys, const char *run,
                           int keep, void *out);

#endif
