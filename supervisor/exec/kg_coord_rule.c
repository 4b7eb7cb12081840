/*  kg_coord_rule: s* and the root cause (see the header). */
#include "kg_coord_rule.h"

#include <stdlib.h>

static bool
s_has(const kg_coord_archive_t *a, int n, int rank, int64_t step, const bool *fault_ranks,
      int64_t fault_ms)
{
  for (int i = 0; i < n; i++)
    if (a[i].rank == rank && a[i].step == step && a[i].valid
        && !(fault_ranks && fault_ranks[rank] && a[i].sealed_at_ms >= fault_ms))
      return true;
  return false;
}

int64_t
kg_coord_pick_step(const kg_coord_archive_t *archives, int n, int world, int64_t fault_step,
                   const bool *fault_ranks, int64_t fault_ms)
{
  int64_t best = -1;
  for (int i = 0; i < n; i++) {
    int64_t s = archives[i].step;
    if (s <= best || (fault_step >= 0 && s > fault_step) || archives[i].rank != 0)
      continue;
    bool all = true;
    for (int r = 0; r < world && all; r++)
      all = s_has(archives, n, r, s, fault_ranks, fault_ms);
    if (all)
      best = s;
  }
  return best;
}

int
kg_coord_archive_rank(int64_t manifest_rank, int64_t manifest_world, int dir_rank, int world)
{
  int64_t r = dir_rank;
  if (manifest_rank >= 0) {
    if (manifest_world >= 0 && manifest_world != world)
      return -1;   /* another job's shard: its state does not fit this one */
    r = manifest_rank;
  }
  return r >= 0 && r < world ? (int) r : -1;
}

int
kg_coord_root(const kg_coord_report_t *reports, int n)
{
  int root = -1;
  for (int i = 0; i < n; i++)
    if (reports[i].sticky && (root < 0 || reports[i].fault_ms < reports[root].fault_ms))
      root = i;
  return root;
}

int
kg_coord_drain(const kg_coord_report_t *reports, int n, int root)
{
  if (root >= 0 && root < n && reports[root].needs_reset)
    return root;
  for (int i = 0; i < n; i++)
    if (reports[i].needs_reset)
      return i;
  return -1;
}
