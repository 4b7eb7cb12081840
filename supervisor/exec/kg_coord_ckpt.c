/*  kg_coord_ckpt: the ranks' checkpoints as the coordinator sees them
    (contracts in kg_coord_ckpt.h). */
#include "kg_coord_ckpt.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_json.h"

/*  The rank of listing row e found in directory rank-dir_rank: the signed
    manifest's rank where the row has one, else the directory's; -1 for a
    set index row or an archive that cannot serve this job. */
static int
s_row_rank(const cJSON *e, int dir_rank, int world)
{
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(e, "kind");
  if (cJSON_IsString(kind) && strcmp(kind->valuestring, "set") == 0)
    return -1;   /* a set index: its shards are listed on their own */
  const cJSON *rank = cJSON_GetObjectItemCaseSensitive(e, "rank");
  const cJSON *ws = cJSON_GetObjectItemCaseSensitive(e, "world_size");
  return kg_coord_archive_rank(cJSON_IsNumber(rank) ? (int64_t) rank->valuedouble : -1,
                               cJSON_IsNumber(ws) ? (int64_t) ws->valuedouble : -1,
                               dir_rank, world);
}

int
kg_coord_ckpt_archives(const cJSON *listing, int world, kg_coord_archive_t **out)
{
  int n = 0, alloc = 0;
  *out = NULL;
  for (int r = 0; r < world; r++) {
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetArrayItem(listing, r)) {
      const cJSON *step = cJSON_GetObjectItemCaseSensitive(e, "step");
      const cJSON *status = cJSON_GetObjectItemCaseSensitive(e, "status");
      const cJSON *sealed = cJSON_GetObjectItemCaseSensitive(e, "sealed_at_ms");
      int rank = s_row_rank(e, r, world);
      /* A snapshot serves only the rank whose memory holds it. */
      if (!cJSON_IsNumber(step) || !cJSON_IsString(status) || rank < 0
          || (kg_coord_ckpt_in_memory(e) && rank != r))
        continue;
      if (n == alloc) {
        alloc = alloc ? alloc * 2 : 64;
        kg_coord_archive_t *g = realloc(*out, (size_t) alloc * sizeof *g);
        if (!g)
          break;
        *out = g;
      }
      (*out)[n++] = (kg_coord_archive_t){
        .rank = rank, .step = (int64_t) step->valuedouble,
        .sealed_at_ms = cJSON_IsNumber(sealed) ? (int64_t) sealed->valuedouble : 0,
        .valid = strcmp(status->valuestring, "valid") == 0};
    }
  }
  return n;
}

bool
kg_coord_ckpt_in_memory(const cJSON *e)
{
  const cJSON *tier = cJSON_GetObjectItemCaseSensitive(e, "tier");
  return cJSON_IsString(tier) && strcmp(tier->valuestring, "memory") == 0;
}

/*  Row e of directory d is rank r's valid checkpoint of step s. */
static bool
s_row_is(const cJSON *e, int d, int world, int r, int64_t s)
{
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(e, "step");
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(e, "status");
  const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "archive");
  return cJSON_IsNumber(step) && (int64_t) step->valuedouble == s && cJSON_IsString(status)
         && strcmp(status->valuestring, "valid") == 0 && cJSON_IsString(path)
         && s_row_rank(e, d, world) == r;
}

const cJSON *
kg_coord_ckpt_row(const cJSON *listing, int world, int r, int64_t s)
{
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetArrayItem(listing, r))
    if (kg_coord_ckpt_in_memory(e) && s_row_is(e, r, world, r, s))
      return e;
  for (int k = 0; k < world; k++) {
    int d = (r + k) % world;
    cJSON_ArrayForEach(e, cJSON_GetArrayItem(listing, d))
      if (!kg_coord_ckpt_in_memory(e) && s_row_is(e, d, world, r, s))
        return e;
  }
  return NULL;
}

int
kg_coord_ckpt_unusable(const cJSON *listing, int world, int64_t fault_step, char *why,
                       size_t len)
{
  int count = 0;
  if (len)
    why[0] = '\0';
  for (int r = 0; r < world; r++) {
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetArrayItem(listing, r)) {
      const cJSON *step = cJSON_GetObjectItemCaseSensitive(e, "step");
      const cJSON *status = cJSON_GetObjectItemCaseSensitive(e, "status");
      const cJSON *kind = cJSON_GetObjectItemCaseSensitive(e, "kind");
      if (!cJSON_IsString(status) || strcmp(status->valuestring, "leftover") == 0
          || (cJSON_IsString(kind) && strcmp(kind->valuestring, "set") == 0))
        continue;
      if (cJSON_IsNumber(step) && fault_step >= 0 && step->valuedouble > (double) fault_step)
        continue;
      if (count++ == 0 && len) {
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "archive");
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(e, "reason");
        snprintf(why, len, "rank %d: %s: %s%s%s", r,
                 cJSON_IsString(path) ? path->valuestring : "?", status->valuestring,
                 cJSON_IsString(reason) && reason->valuestring[0] ? ": " : "",
                 cJSON_IsString(reason) ? reason->valuestring : "");
      }
    }
  }
  return count;
}

int64_t
kg_coord_ckpt_quarantine_from(const cJSON *rows, int64_t s, bool memory)
{
  int64_t from = -1;
  const cJSON *e;
  cJSON_ArrayForEach(e, rows) {
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(e, "step");
    const cJSON *sealed = cJSON_GetObjectItemCaseSensitive(e, "sealed_at_ms");
    if (kg_coord_ckpt_in_memory(e) == memory && cJSON_IsNumber(step)
        && cJSON_IsNumber(sealed) && step->valuedouble > (double) s
        && (from < 0 || sealed->valuedouble < (double) from))
      from = (int64_t) sealed->valuedouble;
  }
  return from;
}

void
kg_coord_ckpt_add_restore(cJSON *d, const cJSON *listing, int world, int64_t s,
                          bool quarantine)
{
  cJSON *quar = cJSON_AddObjectToObject(d, "quarantine");
  cJSON *mquar = cJSON_AddObjectToObject(d, "quarantine_memory");
  cJSON *arch = cJSON_AddObjectToObject(d, "archives");
  cJSON *tiers = cJSON_AddObjectToObject(d, "tiers");
  cJSON *digests = cJSON_AddObjectToObject(d, "digests");
  if (s >= 0)
    cJSON_AddNumberToObject(d, "step", (double) s);
  else
    cJSON_AddNullToObject(d, "step");
  for (int r = 0; r < world; r++) {
    char key[16];
    snprintf(key, sizeof key, "%d", r);
    const cJSON *rows = cJSON_GetArrayItem(listing, r);
    int64_t from = quarantine ? kg_coord_ckpt_quarantine_from(rows, s, false) : -1;
    if (from >= 0)
      cJSON_AddNumberToObject(quar, key, (double) from);
    from = quarantine ? kg_coord_ckpt_quarantine_from(rows, s, true) : -1;
    if (from >= 0)
      cJSON_AddNumberToObject(mquar, key, (double) from);
    if (s < 0)
      continue;
    const cJSON *row = kg_coord_ckpt_row(listing, world, r, s);
    const char *path = kg_json_string(row, "archive");
    cJSON_AddItemToObject(arch, key, path ? cJSON_CreateString(path) : cJSON_CreateNull());
    bool memory = row && kg_coord_ckpt_in_memory(row);
    if (row)
      cJSON_AddStringToObject(tiers, key, memory ? "memory" : "disk");
    const char *digest = kg_json_string(row, "digest");
    if (memory && digest)
      cJSON_AddStringToObject(digests, key, digest);
  }
}

kg_coord_start_t
kg_coord_ckpt_start(const cJSON *listing, int world, int nnodes, const char *run,
                    int fresh_node, int64_t *step, char *line, size_t len)
{
  *step = -1;
  if (fresh_node >= 0) {
    snprintf(line, len, "--fresh on node %d: run %s starts at step 0 on every node; the "
             "checkpoints already there stay (what this run seals is newer)", fresh_node, run);
    return KG_COORD_START_FRESH;
  }
  kg_coord_archive_t *a = NULL;
  int n = kg_coord_ckpt_archives(listing, world, &a);
  int64_t s = kg_coord_pick_step(a, n, world, -1, NULL, INT64_MAX);
  int64_t newest = -1;
  for (int i = 0; i < n; i++)
    if (a[i].step > newest)
      newest = a[i].step;
  free(a);
  if (s >= 0) {
    *step = s;
    int w = snprintf(line, len, "resuming run %s from step %" PRId64 ", sealed by all %d "
                     "ranks and verified on %d nodes (the newest step they all have)", run, s,
                     world, nnodes);
    if (newest > s && w >= 0 && (size_t) w < len)
      snprintf(line + w, len - (size_t) w, "; newer steps up to %" PRId64 " are not on every "
               "rank or do not verify everywhere: they go to quarantine", newest);
    return KG_COORD_START_RESUME;
  }
  char why[1024];
  int unusable = kg_coord_ckpt_unusable(listing, world, -1, why, sizeof why);
  if (unusable > 0) {
    snprintf(line, len, "%d checkpoint(s) of run %s exist, but no step was sealed by every "
             "rank and verifies on every node (first: %s): the job does not start over and "
             "lose them; make every node verify them (keys), or start over with --fresh",
             unusable, run, why);
    return KG_COORD_START_UNVERIFIED;
  }
  snprintf(line, len, "no checkpoint of run %s: starting fresh", run);
  return KG_COORD_START_FRESH;
}
