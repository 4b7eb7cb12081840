/*  kg_coord_ckpt: the ranks' checkpoints as the coordinator sees them,
    through kguard-ckpt (contracts in kg_coord_ckpt.h). Running kguard-ckpt
    blocks the coordinator; that is fine: nodes wait for its decision. */
#include "kg_coord_ckpt.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kg_child.h"
#include "kg_log.h"

/*  Run argv, collect its stdout (bounded), wait for it. Returns the
    wait status, or -1 if it could not start. */
static int
s_run(char **argv, char **out)
{
  kg_child_t *c = NULL;
  kg_child_opts_t o = {.argv = argv, .capture = true};
  *out = NULL;
  if (kg_child_spawn(&o, &c) != 0)
    return -1;
  size_t len = 0;
  char buf[8192];
  for (;;) {
    int fd1 = kg_child_stdout_fd(c), fd2 = kg_child_stderr_fd(c);
    if (fd1 < 0 && fd2 < 0)
      break;
    struct pollfd p[2] = {{.fd = fd1, .events = POLLIN}, {.fd = fd2, .events = POLLIN}};
    if (poll(p, 2, -1) < 0 && errno != EINTR)
      break;
    ssize_t n;
    while ((n = kg_child_read(c, 1, buf, sizeof buf)) > 0) {
      if (len + (size_t) n > (64u << 20))
        continue;
      char *g = realloc(*out, len + (size_t) n + 1);
      if (!g)
        continue;
      *out = g;
      memcpy(g + len, buf, (size_t) n);
      len += (size_t) n;
      g[len] = '\0';
    }
    while ((n = kg_child_read(c, 2, buf, sizeof buf)) > 0)
      kg_info("coordinator: ckpt: %.*s", (int) n, buf);
  }
  int st = 0;
  waitpid(kg_child_pid(c), &st, 0);
  kg_child_destroy(&c);   /* already reaped by us: destroy only closes */
  return st;
}

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

cJSON *
kg_coord_ckpt_listing(const char *exe, const char *ckpt_dir, int world)
{
  cJSON *listing = cJSON_CreateArray();
  for (int r = 0; r < world; r++) {
    char dir[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/rank-%d", ckpt_dir, r);
    char *argv[] = {(char *) exe, "ckpt", "list", dir, "--json", NULL};
    char *text = NULL;
    struct stat st;
    if (stat(dir, &st) != 0) {
      cJSON_AddItemToArray(listing, cJSON_CreateArray());
      continue;
    }
    s_run(argv, &text);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!cJSON_IsArray(j)) {
      cJSON_Delete(j);
      j = cJSON_CreateArray();
    }
    cJSON_AddItemToArray(listing, j);
  }
  return listing;
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

void
kg_coord_ckpt_quarantine(const char *exe, const char *ckpt_dir, const cJSON *listing, int world,
                         int64_t s, const char *incident)
{
  for (int r = 0; r < world; r++) {
    int64_t from = kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, r), s);
    if (from < 0)
      continue;
    char dir[PATH_MAX + 32], froms[32];
    snprintf(dir, sizeof dir, "%s/rank-%d", ckpt_dir, r);
    snprintf(froms, sizeof froms, "%lld", (long long) from);
    char *argv[] = {(char *) exe, "ckpt", "quarantine", dir, "--incident", (char *) incident,
                    "--from", froms, NULL};
    char *out = NULL;
    s_run(argv, &out);
    if (out)
      kg_notice("coordinator: quarantined on rank %d: %s", r, out);
    free(out);
  }
}
