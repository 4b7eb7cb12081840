/*  kg_ckpt_list: scan, order and choose checkpoints in a directory. */
#include "kg_ckpt_list.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kg_clock.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"

static void
s_fill(kg_ckpt_entry_t *e, const kg_ckpt_report_t *r, bool full)
{
  e->rc = r->rc;
  e->full = full;
  snprintf(e->reason, sizeof e->reason, "%s", r->reason);
  snprintf(e->manifest_digest, sizeof e->manifest_digest, "%s", r->manifest_digest);
  if (r->authenticated && r->manifest) {
    e->authenticated = true;
    e->step = r->manifest->step;
    e->sealed_at_ms = r->manifest->sealed_at_ms;
    e->time_ms = e->sealed_at_ms;
    snprintf(e->run, sizeof e->run, "%s", r->manifest->run);
    e->rank = r->manifest->rank;
    e->world_size = r->manifest->world_size;
  }
}

static int
s_cmp(const void *pa, const void *pb)
{
  const kg_ckpt_entry_t *a = pa, *b = pb;
  if (a->time_ms != b->time_ms)
    return a->time_ms > b->time_ms ? -1 : 1;
  if (a->step != b->step)
    return a->step > b->step ? -1 : 1;
  return -strcmp(a->name, b->name);
}

kg_ckpt_list_t *
kg_ckpt_list_scan(const char *dir, const kg_keyring_t *keys, bool full, int *rc)
{
  DIR *d = opendir(dir);
  if (!d) {
    *rc = -errno;
    return NULL;
  }
  kg_ckpt_list_t *self = calloc(1, sizeof *self);
  size_t alloc = 0;
  *rc = 0;
  if (!self || !(self->dir = strdup(dir))) {
    *rc = KG_ENOMEM;
    goto fail;
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    bool leftover = kg_ckpt_seal_is_leftover_name(de->d_name);
    if (!leftover && !kg_ckpt_seal_is_archive_name(de->d_name))
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
      continue;
    if (self->count == alloc) {
      alloc = alloc ? alloc * 2 : 16;
      kg_ckpt_entry_t *v = realloc(self->entries, alloc * sizeof *v);
      if (!v) {
        *rc = KG_ENOMEM;
        goto fail;
      }
      self->entries = v;
    }
    kg_ckpt_entry_t *e = &self->entries[self->count++];
    memset(e, 0, sizeof *e);
    e->name = strdup(de->d_name);
    e->path = strdup(path);
    if (!e->name || !e->path) {
      *rc = KG_ENOMEM;
      goto fail;
    }
    e->leftover = leftover;
    e->size = (uint64_t) st.st_size;
    e->step = -1;
    e->sealed_at_ms = -1;
    e->time_ms = (int64_t) st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    if (leftover) {
      e->rc = KG_ECKPT_TRUNC;
      snprintf(e->reason, sizeof e->reason, "incomplete leftover of an interrupted seal");
      continue;
    }
    kg_ckpt_report_t r;
    kg_ckpt_verify(path, keys, full ? 0 : KG_CKPT_VERIFY_MANIFEST_ONLY, NULL, &r);
    s_fill(e, &r, full);
    kg_ckpt_report_clear(&r);
  }
  closedir(d);
  if (self->count > 1)
    qsort(self->entries, self->count, sizeof *self->entries, s_cmp);
  return self;
fail:
  closedir(d);
  kg_ckpt_list_destroy(&self);
  return NULL;
}

void
kg_ckpt_list_destroy(kg_ckpt_list_t **p)
{
  if (!p || !*p)
    return;
  kg_ckpt_list_t *self = *p;
  for (size_t i = 0; i < self->count; i++) {
    free(self->entries[i].name);
    free(self->entries[i].path);
    free(self->entries[i].moved_to);
  }
  free(self->entries);
  free(self->dir);
  free(self);
  *p = NULL;
}

int
kg_ckpt_list_verify(kg_ckpt_list_t *self, size_t i, const kg_keyring_t *keys)
{
  kg_ckpt_entry_t *e = &self->entries[i];
  if (e->full || e->leftover || e->rc != 0)
    return e->rc;
  kg_ckpt_report_t r;
  kg_ckpt_verify(e->path, keys, 0, NULL, &r);
  s_fill(e, &r, true);
  kg_ckpt_report_clear(&r);
  return e->rc;
}

const char *
kg_ckpt_list_skip_reason(const kg_ckpt_list_t *self, size_t i, int64_t before_ms, char *buf,
                         size_t size)
{
  const kg_ckpt_entry_t *e = &self->entries[i];
  char when[32];
  if (e->moved_to)
    snprintf(buf, size, "quarantined to %s", e->moved_to);
  else if (e->leftover)
    snprintf(buf, size, "%s", e->reason);
  else if (e->authenticated && e->sealed_at_ms >= before_ms)
    snprintf(buf, size, "sealed at %s, not before %s",
             kg_clock_iso_ms(e->sealed_at_ms, when, sizeof when),
             kg_clock_iso_ms(before_ms, (char[32]){0}, 32));
  else if (e->rc != 0)
    snprintf(buf, size, "%s: %s", kg_ckpt_status_name(e->rc), e->reason);
  else if (e->world_size >= 2)
    snprintf(buf, size, "shard of rank %lld of %lld: chosen only with its complete set",
             (long long) e->rank, (long long) e->world_size);
  else if (!e->full)
    snprintf(buf, size, "not verified yet");
  else
    return NULL;
  return buf;
}

int
kg_ckpt_list_latest(kg_ckpt_list_t *self, const kg_keyring_t *keys, int64_t before_ms,
                    size_t *index)
{
  for (size_t i = 0; i < self->count; i++) {
    kg_ckpt_entry_t *e = &self->entries[i];
    if (e->leftover || e->moved_to || !e->authenticated || e->sealed_at_ms >= before_ms
        || e->world_size >= 2)
      continue;
    if (kg_ckpt_list_verify(self, i, keys) == 0) {
      *index = i;
      return 0;
    }
  }
  return KG_ECKPT_NONE;
}
