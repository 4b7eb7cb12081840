/*  kg_coord_ckpt: the ranks' checkpoints as the coordinator sees them
    (contracts in kg_coord_ckpt.h). */
#include "kg_coord_ckpt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
      if (!cJSON_IsNumber(step) || !cJSON_IsString(status) || rank < 0)
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

const char *
kg_coord_ckpt_archive(const cJSON *listing, int world, int r, int64_t s)
{
  for (int k = 0; k < world; k++) {
    int d = (r + k) % world;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetArrayItem(listing, d)) {
      const cJSON *step = cJSON_GetObjectItemCaseSensitive(e, "step");
      const cJSON *status = cJSON_GetObjectItemCaseSensitive(e, "status");
      const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "archive");
      if (cJSON_IsNumber(step) && (int64_t) step->valuedouble == s && cJSON_IsString(status)
          && strcmp(status->valuestring, "valid") == 0 && cJSON_IsString(path)
          && s_row_rank(e, d, world) == r)
        return path->valuestring;
    }
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
kg_coord_ckpt_quarantine_from(const cJSON *rows, int64_t s)
{
  int64_t from = -1;
  const cJSON *e;
  cJSON_ArrayForEach(e, rows) {
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(e, "step");
    const cJSON *sealed = cJSON_GetObjectItemCaseSensitive(e, "sealed_at_ms");
    if (cJSON_IsNumber(step) && cJSON_IsNumber(sealed) && step->valuedouble > (double) s
        && (from < 0 || sealed->valuedouble < (double) from))
      from = (int64_t) sealed->valuedouble;
  }
  return from;
}
