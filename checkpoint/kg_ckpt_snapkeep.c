/*  kg_ckpt_snapkeep: the memory tier's pure plan and its removal. */
#include "kg_ckpt_snapkeep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_ckpt_list.h"
#include "kg_ckpt_retain.h"
#include "kg_ckpt_set.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"

/*  True when the index at c has, for every rank, an authenticated shard
    that it lists. */
static bool
s_complete(const kg_ckpt_snapkeep_item_t *it, size_t n, size_t c)
{
  for (int64_t r = 0; r < it[c].world_size; r++) {
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
      found = it[i].authenticated && !it[i].index && it[i].set == (long) c && it[i].rank == r;
    if (!found)
      return false;
  }
  return it[c].world_size >= 2;
}

/*  When the complete checkpoint at c began: its seal time, or its earliest
    shard's for a set. */
static int64_t
s_start(const kg_ckpt_snapkeep_item_t *it, size_t n, size_t c)
{
  int64_t t = it[c].time_ms;
  for (size_t i = 0; it[c].index && i < n; i++)
    if (it[i].authenticated && !it[i].index && it[i].set == (long) c && it[i].time_ms < t)
      t = it[i].time_ms;
  return t;
}

/*  Whether item i is a complete checkpoint: a plain archive, or a set
    index whose shards are all present. */
static bool
s_is_complete(const kg_ckpt_snapkeep_item_t *it, size_t n, size_t i)
{
  if (!it[i].authenticated || (!it[i].index && it[i].world_size >= 2))
    return false; /* a shard is complete only with its set */
  return !it[i].index || s_complete(it, n, i);
}

size_t
kg_ckpt_snapkeep_plan(const kg_ckpt_snapkeep_item_t *it, size_t n, int keep, bool *remove)
{
  /* The oldest of the `keep` newest complete checkpoints: what is sealed
     before it goes. */
  size_t best = n, marked = 0;
  for (int k = 0; k < (keep > 0 ? keep : 1); k++) {
    size_t next = n;
    for (size_t i = 0; i < n; i++)
      if (s_is_complete(it, n, i) && (best == n || it[i].time_ms < it[best].time_ms)
          && (next == n || it[i].time_ms > it[next].time_ms))
        next = i;
    if (next == n)
      break;
    best = next;
  }
  for (size_t i = 0; i < n; i++)
    remove[i] = false;
  if (best == n)
    return 0;
  int64_t start = s_start(it, n, best);
  for (size_t i = 0; i < n; i++) {
    if (!it[i].authenticated || i == best || (!it[i].index && it[i].set == (long) best))
      continue;
    if (it[i].time_ms < start) {
      remove[i] = true;
      marked++;
    }
  }
  return marked;
}

/*  The plan's items: list's entries first, then the set indexes; a shard
    belongs to the index that lists its file name with its manifest
    digest. Only run's authenticated items count. */
static void
s_items(const kg_ckpt_list_t *list, const kg_ckpt_sets_t *sets, const char *run,
        kg_ckpt_snapkeep_item_t *it)
{
  size_t nl = list ? list->count : 0;
  for (size_t i = 0; i < nl; i++) {
    const kg_ckpt_entry_t *e = &list->entries[i];
    it[i] = (kg_ckpt_snapkeep_item_t){
      .authenticated = !e->leftover && e->authenticated && e->rc == 0
                       && strcmp(e->run, run) == 0,
      .time_ms = e->time_ms, .step = e->step, .rank = e->rank,
      .world_size = e->world_size >= 2 ? e->world_size : 0, .set = -1};
  }
  for (size_t j = 0; sets && j < sets->count; j++) {
    const kg_ckpt_set_t *st = &sets->sets[j];
    bool ours = st->rc == 0 && strcmp(st->run, run) == 0;
    it[nl + j] = (kg_ckpt_snapkeep_item_t){
      .authenticated = ours, .index = true, .time_ms = st->sealed_at_ms, .step = st->step,
      .world_size = st->world_size, .set = -1};
    for (int64_t r = 0; ours && r < st->world_size; r++) {
      const char *want = strrchr(st->shards[r].archive, '/');
      want = want ? want + 1 : st->shards[r].archive;
      for (size_t i = 0; i < nl; i++)
        if (strcmp(list->entries[i].name, want) == 0
            && strcmp(list->entries[i].manifest_digest, st->shards[r].digest) == 0)
          it[i].set = (long) (nl + j);
    }
  }
}

/*  Remove the marked items (list's entries, then the indexes). Returns the
    number removed. */
static int
s_remove(const kg_ckpt_list_t *list, const kg_ckpt_sets_t *sets, const bool *remove, FILE *o)
{
  size_t nl = list ? list->count : 0, ns = sets ? sets->count : 0;
  int n = 0;
  for (size_t i = 0; i < nl + ns; i++) {
    if (!remove[i])
      continue;
    const char *path = i < nl ? list->entries[i].path : sets->sets[i - nl].path;
    int rc = kg_ckpt_retain_remove(path);
    if (o && rc == -EBUSY)
      fprintf(o, "kept %s: being read\n", path);
    else if (o && rc < 0)
      fprintf(o, "could not remove %s: %s\n", path, kg_strerror(rc));
    else if (o)
      fprintf(o, "removed %s (superseded snapshot)\n", path);
    n += rc == 0;
  }
  return n;
}

int
kg_ckpt_snapkeep_apply(const char *dir, const kg_keyring_t *keys, const char *run, int keep,
                       void *out)
{
  int rc;
  kg_ckpt_list_t *list = kg_ckpt_list_scan(dir, keys, false, &rc);
  if (!list)
    return rc == -ENOENT ? 0 : rc;
  kg_ckpt_sets_t *sets = kg_ckpt_sets_scan(dir, keys, &rc);
  size_t n = list->count + (sets ? sets->count : 0);
  kg_ckpt_snapkeep_item_t *items = calloc(n + 1, sizeof *items);
  bool *remove = calloc(n + 1, sizeof *remove);
  rc = KG_ENOMEM;
  if (items && remove) {
    s_items(list, sets, run, items);
    rc = kg_ckpt_snapkeep_plan(items, n, keep, remove) > 0 ? s_remove(list, sets, remove, out) : 0;
  }
  /* What resume-prepare quarantined in memory (the run's snapshots sealed
     at or after a fault) is never restored, and tmpfs pages are the
     training's RAM: it goes. */
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    kg_ckpt_remove_tree_at(dfd, "quarantine");
    close(dfd);
  }
  free(items);
  free(remove);
  kg_ckpt_sets_destroy(&sets);
  kg_ckpt_list_destroy(&list);
  return rc;
}
