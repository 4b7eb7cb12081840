/*  kg_coord_ckpt: the coordinator's view of the ranks' checkpoints on
    shared storage (kg_coord_decide.c decides; kg_coord_rule picks the step).

    A listing is a cJSON array with one array per rank-R directory (R =
    0..world-1, an empty array where the directory is absent), each holding
    the rows `kguard ckpt list --json` printed for it (each node lists and
    verifies its own ranks' directories after its tree stopped, in
    parallel, and sends them with paths relative to the shared directory).
    A node also lists its ranks' snapshots in its own memory
    (kguard.snapshot, KGUARD_SNAPSHOT_DIR/rank-R): those rows say
    "tier": "memory" and keep the node's absolute path; they count for
    their own rank only, and only that node can restore them. A node whose
    memory is gone (its kguard restarted) lists none, so a step only its
    memory held is never agreed: every rank then restores from disk.
    The pure functions below read a listing and never run anything.
*/
#ifndef KG_COORD_CKPT_H
#define KG_COORD_CKPT_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kg_coord_rule.h"

/*  Pure. Every usable row of listing as an archive (caller frees *out):
    rows with a numeric "step" and a string "status"; the rank is the signed
    manifest's where the row has one (kg_coord_archive_rank), set index
    rows and shards of another job size are left out; valid = status is
    "valid". Returns the number of archives (*out NULL when 0). */
int kg_coord_ckpt_archives(const cJSON *listing, int world, kg_coord_archive_t **out);

/*  Pure. The row of rank r's valid checkpoint of step s: its snapshot in
    its node's memory when there is one (read there, no disk), else its
    archive looked for in r's own directory first, then in the others in
    order; NULL when none. Points into listing. */
const cJSON *kg_coord_ckpt_row(const cJSON *listing, int world, int r, int64_t s);

/*  Pure. Whether listing row e is a snapshot in a node's memory. */
bool kg_coord_ckpt_in_memory(const cJSON *e);

/*  Pure. The earliest "sealed_at_ms" among rows (one rank's array) of one
    tier (memory: its snapshots, else its disk archives) whose step is
    newer than s: where that tier's quarantine must start; -1 when none. */
int64_t kg_coord_ckpt_quarantine_from(const cJSON *rows, int64_t s, bool memory);

/*  Pure. Add to decision d what every node does to restore step s (-1:
    nothing): "step", "archives" {rank: path or null} (a disk path relative
    to the shared directory, or a snapshot's absolute path on its node),
    "tiers" {rank: "memory"|"disk"}, "digests" {rank: the manifest digest
    of a snapshot}, and, with quarantine, "quarantine" /
    "quarantine_memory" {rank: from}: each tier's checkpoints newer than s
    to move away (all of them when s is -1). */
void kg_coord_ckpt_add_restore(cJSON *d, const cJSON *listing, int world, int64_t s,
                               bool quarantine);

/*  Pure. When no step can be agreed, is anything lost by starting over?
    Counts the listing's archives (every row but leftovers of interrupted
    writes and set index rows) that could have been a resume point: not
    newer than fault_step (-1: any), or unauthenticated (no step known).
    The first one's rank, path, status and reason go into why. Returns the
    count: 0 means nothing was there to resume from. */
int kg_coord_ckpt_unusable(const cJSON *listing, int world, int64_t fault_step, char *why,
                           size_t len);

/*  What a multi-node job does at its start (no fault): */
typedef enum {
  KG_COORD_START_RESUME = 0,   /* every rank sealed step *step, every node verified it */
  KG_COORD_START_FRESH,        /* no checkpoint of the run, or --fresh on a node  */
  KG_COORD_START_UNVERIFIED    /* checkpoints exist, no step common and verified  */
} kg_coord_start_t;

/*  Pure. The start's choice over listing (the merged listing of world
    ranks on nnodes nodes, of run `run`): the newest step every rank sealed
    and every node verified (kg_coord_pick_step with no fault bound), else
    fresh when nothing could have been resumed from, else UNVERIFIED (a
    start over would lose them in silence). fresh_node >= 0: that node was
    started with --fresh, which decides fresh for every node. Writes the
    one line every node says (no "exec: " prefix) into line (len bytes)
    and the step into *step (-1 unless RESUME). */
kg_coord_start_t kg_coord_ckpt_start(const cJSON *listing, int world, int nnodes,
                                     const char *run, int fresh_node, int64_t *step,
                                     char *line, size_t len);

#endif
