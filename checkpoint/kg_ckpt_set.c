/*  kg_ckpt_set: write, read and verify checkpoint set indexes. */
#include "kg_ckpt_set.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_gc.h"
#include "kg_ckpt_list.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"
#include "kg_file.h"

bool
kg_ckpt_set_is_index_name(const char *name)
{
  size_t n = strlen(name), k = strlen(KG_CKPT_SET_SUFFIX);
  return name[0] != '.' && n > k && strcmp(name + n - k, KG_CKPT_SET_SUFFIX) == 0;
}

/* ---- reading an index --------------------------------------------------- */

typedef struct {
  char *buf;
  size_t len, cap;
} s_capture_t;

static int
s_cap_data(void *arg, const void *buf, size_t len)
{
  s_capture_t *c = arg;
  if (c->len + len > KG_CKPT_MANIFEST_MAX)
    return KG_ETOOBIG;
  if (c->len + len > c->cap) {
    size_t cap = (c->len + len) * 2;
    char *g = realloc(c->buf, cap);
    if (!g)
      return KG_ENOMEM;
    c->buf = g;
    c->cap = cap;
  }
  memcpy(c->buf + c->len, buf, len);
  c->len += len;
  return 0;
}

static int
s_parse(kg_ckpt_set_t *s, const char *dir, const char *json, size_t len)
{
  int rc = KG_ECKPT_MALFORMED;
  cJSON *root = kg_ckpt_json_parse(json, len, &rc);
  if (!root && rc == KG_ENOMEM) {
    snprintf(s->reason, sizeof s->reason, "out of memory while parsing the set index");
    return rc;
  }
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(root, "run");
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(root, "step");
  const cJSON *world = cJSON_GetObjectItemCaseSensitive(root, "world_size");
  const cJSON *shards = cJSON_GetObjectItemCaseSensitive(root, "shards");
  if (!cJSON_IsString(f) || strcmp(f->valuestring, "kguard-checkpoint-set") != 0
      || !cJSON_IsString(run) || strlen(run->valuestring) > KG_CKPT_RUN_MAX
      || !cJSON_IsNumber(step) || !cJSON_IsNumber(world) || !cJSON_IsArray(shards)
      || world->valuedouble < 2 || world->valuedouble > KG_CKPT_WORLD_MAX
      || cJSON_GetArraySize(shards) != (int) world->valuedouble) {
    snprintf(s->reason, sizeof s->reason, "malformed: set index fields");
    goto out;
  }
  snprintf(s->run, sizeof s->run, "%s", run->valuestring);
  s->step = (int64_t) step->valuedouble;
  s->world_size = (int64_t) world->valuedouble;
  if (!(s->shards = calloc((size_t) s->world_size, sizeof *s->shards))) {
    rc = KG_ENOMEM;
    goto out;
  }
  const cJSON *o;
  cJSON_ArrayForEach(o, shards)
  {
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "rank");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "archive");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "manifest_digest");
    if (!cJSON_IsNumber(r) || !cJSON_IsString(a) || !cJSON_IsString(d)
        || r->valuedouble < 0 || r->valuedouble >= (double) s->world_size
        || strlen(d->valuestring) != 64 || strchr(a->valuestring, '/')
        || !kg_ckpt_seal_is_archive_name(a->valuestring)) {
      snprintf(s->reason, sizeof s->reason, "malformed: set index shard entry");
      goto out;
    }
    kg_ckpt_shard_t *sh = &s->shards[(size_t) r->valuedouble];
    if (sh->archive) {
      snprintf(s->reason, sizeof s->reason, "malformed: rank listed twice");
      goto out;
    }
    sh->rank = (int64_t) r->valuedouble;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, a->valuestring);
    if (!(sh->archive = strdup(path))) {
      rc = KG_ENOMEM;
      goto out;
    }
    snprintf(sh->digest, sizeof sh->digest, "%s", d->valuestring);
  }
  rc = 0;
out:
  cJSON_Delete(root);
  return rc;
}

static void
s_set_clear(kg_ckpt_set_t *s)
{
  if (s->shards)
    for (int64_t i = 0; i < s->world_size; i++)
      free(s->shards[i].archive);
  free(s->shards);
  free(s->path);
}

static int
s_cmp_sets(const void *pa, const void *pb)
{
  const kg_ckpt_set_t *a = pa, *b = pb;
  if (a->sealed_at_ms != b->sealed_at_ms)
    return a->sealed_at_ms > b->sealed_at_ms ? -1 : 1;
  return a->step > b->step ? -1 : a->step < b->step;
}

kg_ckpt_sets_t *
kg_ckpt_sets_scan(const char *dir, const kg_keyring_t *keys, int *rc)
{
  DIR *d = opendir(dir);
  if (!d) {
    *rc = -errno;
    return NULL;
  }
  kg_ckpt_sets_t *self = calloc(1, sizeof *self);
  size_t alloc = 0;
  *rc = self ? 0 : KG_ENOMEM;
  struct dirent *de;
  while (self && (de = readdir(d))) {
    if (!kg_ckpt_set_is_index_name(de->d_name))
      continue;
    if (self->count == alloc) {
      alloc = alloc ? 2 * alloc : 8;
      kg_ckpt_set_t *g = realloc(self->sets, alloc * sizeof *g);
      if (!g) {
        *rc = KG_ENOMEM;
        break;
      }
      self->sets = g;
    }
    kg_ckpt_set_t *s = &self->sets[self->count++];
    memset(s, 0, sizeof *s);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    s->path = strdup(path);
    s->sealed_at_ms = -1;
    s_capture_t cap = {0};
    kg_ckpt_sink_t sink = {.arg = &cap, .data = s_cap_data};
    kg_ckpt_report_t r;
    s->rc = kg_ckpt_verify(path, keys, 0, &sink, &r);
    if (s->rc == 0) {
      kg_ckpt_member_t *m = kg_ckpt_manifest_find(r.manifest, KG_CKPT_SET_MEMBER);
      if (!m || r.manifest->count != 1) {
        s->rc = KG_ECKPT_MALFORMED;
        snprintf(s->reason, sizeof s->reason, "malformed: not a set index");
      } else {
        s->sealed_at_ms = r.manifest->sealed_at_ms;
        snprintf(s->digest, sizeof s->digest, "%s", r.manifest_digest);
        s->rc = s_parse(s, dir, cap.buf, cap.len);
      }
    } else {
      snprintf(s->reason, sizeof s->reason, "%s: %.400s", kg_ckpt_status_name(s->rc),
               r.reason);
    }
    kg_ckpt_report_clear(&r);
    free(cap.buf);
  }
  closedir(d);
  if (self && self->count > 1)
    qsort(self->sets, self->count, sizeof *self->sets, s_cmp_sets);
  if (*rc < 0)
    kg_ckpt_sets_destroy(&self);
  return self;
}

void
kg_ckpt_sets_destroy(kg_ckpt_sets_t **p)
{
  if (!p || !*p)
    return;
  for (size_t i = 0; i < (*p)->count; i++)
    s_set_clear(&(*p)->sets[i]);
  free((*p)->sets);
  free(*p);
  *p = NULL;
}

int
kg_ckpt_set_verify(const kg_ckpt_set_t *set, const kg_keyring_t *keys,
                   const kg_ckpt_sink_t *watch, char *reason, size_t size)
{
  if (set->rc != 0) {
    snprintf(reason, size, "%s", set->reason);
    return set->rc;
  }
  for (int64_t i = 0; i < set->world_size; i++) {
    const kg_ckpt_shard_t *sh = &set->shards[i];
    struct stat st;
    if (stat(sh->archive, &st) < 0) {
      snprintf(reason, size, "incomplete set: shard of rank %lld (%s) is missing",
               (long long) i, sh->archive);
      return KG_ECKPT_TRUNC;
    }
    kg_ckpt_report_t r;
    int rc = kg_ckpt_verify(sh->archive, keys, 0, watch, &r);
    if (rc == 0 && (strcmp(r.manifest_digest, sh->digest) != 0 || r.manifest->step != set->step
                    || r.manifest->rank != i || r.manifest->world_size != set->world_size
                    || strcmp(r.manifest->run, set->run) != 0 || r.manifest->zstd)) {
      rc = KG_ECKPT_CORRUPT;
      snprintf(r.reason, sizeof r.reason, "%s",
               r.manifest->zstd ? "a zstd shard cannot be read in place"
                                : "not the shard the set index names");
    }
    if (rc != 0)
      snprintf(reason, size, "shard of rank %lld (%.300s): %s: %.300s", (long long) i, sh->archive,
               kg_ckpt_status_name(rc), r.reason);
    kg_ckpt_report_clear(&r);
    if (rc != 0)
      return rc;
  }
  snprintf(reason, size, "valid");
  return 0;
}

/* ---- writing an index --------------------------------------------------- */

/*  The set index's JSON text (the caller frees it) for one shard per rank,
    by_rank[0..world). NULL when out of memory. */
static char *
s_index_json(const char *run, int64_t step, int64_t world, const kg_ckpt_entry_t **by_rank)
{
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return NULL;
  cJSON_AddStringToObject(root, "format", "kguard-checkpoint-set");
  cJSON_AddStringToObject(root, "run", run);
  cJSON_AddNumberToObject(root, "step", (double) step);
  cJSON_AddNumberToObject(root, "world_size", (double) world);
  cJSON *arr = cJSON_AddArrayToObject(root, "shards");
  for (int64_t r = 0; arr && r < world; r++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", (double) r);
    cJSON_AddStringToObject(o, "archive", by_rank[r]->name);
    cJSON_AddStringToObject(o, "manifest_digest", by_rank[r]->manifest_digest);
    cJSON_AddNumberToObject(o, "sealed_at_ms", (double) by_rank[r]->sealed_at_ms);
    cJSON_AddItemToArray(arr, o);
  }
  char *json = cJSON_Print(root);
  cJSON_Delete(root);
  return json;
}

/*  Seal json as the set index of run's step in dir, signed with sk and
    dated now_ms, its path into out[outsize]. Staged like kguard.save:
    locked, so gc leaves it while we work. Another rank sealing the same
    index first is success (its path in out). Returns 0 or a negative code. */
static int
s_index_seal(const char *dir, const unsigned char *sk, const char *run, int64_t step,
             int64_t now_ms, const char *json, char *out, size_t outsize)
{
  char stage[PATH_MAX];
  snprintf(stage, sizeof stage, "%s/" KG_CKPT_SAVE_PREFIX "set-XXXXXX", dir);
  if (!mkdtemp(stage))
    return -errno;
  int lockfd = open(stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lockfd >= 0)
    kg_ckpt_writer_lock(lockfd);
  char file[PATH_MAX + 32];
  snprintf(file, sizeof file, "%s/" KG_CKPT_SET_MEMBER, stage);
  int rc = kg_file_write_atomic(file, json, strlen(json), 0666 & ~kg_file_umask());
  unsigned char h[4];
  crypto_generichash(h, sizeof h, (const unsigned char *) run, strlen(run), NULL, 0);
  char final[PATH_MAX];
  if (rc >= 0
      && snprintf(final, sizeof final, "%s/set-%010lld-%02x%02x%02x%02x" KG_CKPT_SET_SUFFIX, dir,
                  (long long) step, h[0], h[1], h[2], h[3]) >= (int) sizeof final)
    rc = KG_ETOOBIG;
  if (rc >= 0) {
    kg_ckpt_seal_opts_t o = {.dir = stage, .step = step, .run = run, .output = final, .sk = sk,
                             .now_ms = now_ms, .producer = "kguard"};
    char why[512];
    rc = kg_ckpt_seal(&o, out, outsize, why, sizeof why);
    if (rc == KG_EEXISTS) { /* another rank completed the set first */
      snprintf(out, outsize, "%s", final);
      rc = 0;
    }
  }
  kg_ckpt_remove_tree_at(AT_FDCWD, stage);
  if (lockfd >= 0)
    close(lockfd);
  return rc;
}

int
kg_ckpt_set_try_index(const char *dir, const unsigned char *sk, const char *run,
                      int64_t step, int64_t world, char *out, size_t outsize)
{
  out[0] = '\0';
  int rc;
  /* Shards count when signed by this key or one the user trusts (the
     ranks of one job may sign with their own nodes' keys). */
  kg_keyring_t *keys = kg_keyring_load(NULL, &rc, NULL, 0);
  if (!keys)
    keys = kg_keyring_new();
  if (!keys || kg_keyring_add(keys, sk + 32, NULL, NULL) < 0) {
    kg_keyring_destroy(&keys);
    return KG_ENOMEM;
  }
  kg_ckpt_list_t *list = kg_ckpt_list_scan(dir, keys, false, &rc);
  kg_keyring_destroy(&keys);
  if (!list)
    return rc;
  const kg_ckpt_entry_t **by_rank = calloc((size_t) world, sizeof *by_rank);
  char *json = NULL;
  if (!by_rank) {
    rc = KG_ENOMEM;
    goto out;
  }
  /* Newest first: a rank sealed twice counts with its newest shard. */
  for (size_t i = 0; i < list->count; i++) {
    const kg_ckpt_entry_t *e = &list->entries[i];
    if (e->leftover || !e->authenticated || e->rc != 0 || e->world_size != world
        || e->step != step || strcmp(e->run, run) != 0 || by_rank[e->rank])
      continue;
    by_rank[e->rank] = e;
  }
  int64_t newest = 0;
  for (int64_t r = 0; r < world; r++) {
    if (!by_rank[r]) {
      rc = 0; /* not complete yet: the last rank to seal writes it */
      goto out;
    }
    if (by_rank[r]->sealed_at_ms > newest)
      newest = by_rank[r]->sealed_at_ms;
  }
  if (!(json = s_index_json(run, step, world, by_rank))) {
    rc = KG_ENOMEM;
    goto out;
  }
  rc = s_index_seal(dir, sk, run, step, newest, json, out, outsize);
out:
  free(json);
  free(by_rank);
  kg_ckpt_list_destroy(&list);
  return rc;
}
