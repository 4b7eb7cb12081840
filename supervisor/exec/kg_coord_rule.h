/*  kg_coord_rule: the multi-node agreement, as pure functions.

    The agreed step s* after a fault: the newest step s such that EVERY
    rank has a checkpoint of step s that verifies, and s is at most the last
    step the first faulting rank completed before its fault (synchronous
    training keeps ranks within one step, so steps are the clock across
    hosts; wall clocks are compared only on the faulting host: its own
    archives must be sealed before its fault time T). A rank with no such
    archive makes s* = -1 (all ranks start over).

    The root cause: among the nodes' reports, the sticky one with the
    earliest fault time; every other report (a peer's "Connection closed by
    peer", a timeout, a rendezvous error, a plain failure) is a consequence.

    The node to drain: a node whose own health check (kg_gpuhealth, run
    there after its proven fault) found a GPU that needs a reset. The job
    is never restarted on it, whichever node's fault came first: the root
    cause when its GPU needs the reset, else the first such node.
*/
#ifndef KG_COORD_RULE_H
#define KG_COORD_RULE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  int rank;
  int64_t step;
  int64_t sealed_at_ms;
  bool valid;                  /* verified: signature and every digest      */
} kg_coord_archive_t;

/*  s* over archives (n entries, any order) of ranks 0..world-1.
    fault_step: the faulting rank's last completed step (-1: unknown: no
    bound); fault_ranks/fault_ms: archives of rank r with fault_ranks[r]
    true must be sealed before fault_ms. Returns s* or -1. */
int64_t kg_coord_pick_step(const kg_coord_archive_t *archives, int n, int world,
                           int64_t fault_step, const bool *fault_ranks, int64_t fault_ms);

/*  The rank an archive found in CKPT_DIR/rank-<dir_rank> belongs to.
    manifest_rank/manifest_world: its signed manifest's "rank"/"world_size"
    (as `kguard ckpt list --json` shows them), -1 when it has none (sealed
    before checkpoint sets, or by a single process). The signed rank wins
    over the directory it lies in; without one the directory name decides.
    Returns -1 when the archive cannot serve this job of world ranks: a
    shard of a job of another size, or a rank outside 0..world-1. */
int kg_coord_archive_rank(int64_t manifest_rank, int64_t manifest_world, int dir_rank, int world);

/*  One node's report after its tree stopped. */
typedef struct {
  bool sticky;                 /* a proven sticky fault on that node         */
  int64_t fault_ms;            /* its T (wall ms), if sticky                 */
  bool needs_reset;            /* its health check: a GPU needs a reset      */
} kg_coord_report_t;

/*  Index of the root-cause report among n, or -1 if none is sticky. */
int kg_coord_root(const kg_coord_report_t *reports, int n);

/*  Index of the node to drain among n reports given the root cause root
    (-1: none), or -1 when no node's GPU needs a reset. */
int kg_coord_drain(const kg_coord_report_t *reports, int n, int root);

#endif
