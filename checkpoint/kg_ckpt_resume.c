/*  kg_ckpt_resume: select + quarantine + restore in one call. */
#include "kg_ckpt_resume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_ckpt_list.h"
#include "kg_ckpt_quarantine.h"
#include "kg_ckpt_restore.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_retain.h"
#include "kg_ckpt_set.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_safepath.h"

/*  Append {"archive", key: value (when key), "reason"} to arr; returns it. */
static cJSON *
s_add_pair(cJSON *arr, const char *archive, const char *key, const char *value,
           const char *reason)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "archive", archive);
  if (key)
    cJSON_AddStringToObject(o, key, value);
  cJSON_AddStringToObject(o, "reason", reason);
  cJSON_AddItemToArray(arr, o);
  return o;
}

int
kg_ckpt_resume_copies_remove(const char *dir, const char *keep)
{
  DIR *d = NULL;
  int opened = kg_ckpt_opendir(dir, &d);
  if (opened <= 0)
    return opened;
  int rc = 0;
  size_t plen = strlen(KG_CKPT_COPY_PREFIX);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strncmp(de->d_name, KG_CKPT_COPY_PREFIX, plen) != 0)
      continue;
    if (keep && strcmp(de->d_name + plen, keep) == 0)
      continue;
    int e = kg_ckpt_remove_tree_at(dirfd(d), de->d_name);
    if (e < 0 && rc == 0)
      rc = e;
  }
  closedir(d);
  return rc;
}

/*  Copies made in the private --into directory record, beside them, the
    checkpoint directory they were made for (".<copy>.source"), so that the
    next incident of that directory removes them, as it removes its
    .restored-* copies. */
#define S_SOURCE_SUFFIX ".source"

static void
s_note_source(const char *copy, const char *dir)
{
  char note[PATH_MAX + 32], parent[PATH_MAX];
  char *real = realpath(dir, NULL);
  const char *base = strrchr(copy, '/');
  if (!real || !base || kg_ckpt_dirname(copy, parent, sizeof parent) < 0
      || snprintf(note, sizeof note, "%s/.%s" S_SOURCE_SUFFIX, parent, base + 1)
           >= (int) sizeof note) {
    free(real);
    return;
  }
  int fd = kg_safepath_open(note, O_TRUNC, 0600);
  if (fd >= 0) {
    kg_file_write_all(fd, real, strlen(real));
    close(fd);
  }
  free(real);
}

/*  Remove the copies in dest's directory made for dir (see s_note_source),
    except dest itself. */
static void
s_remove_private_copies(const char *dir, const char *dest)
{
  char parent[PATH_MAX];
  char *real = realpath(dir, NULL);
  DIR *d = NULL;
  if (!real || kg_ckpt_dirname(dest, parent, sizeof parent) < 0
      || kg_ckpt_opendir(parent, &d) <= 0) {
    free(real);
    return;
  }
  const char *keep = strrchr(dest, '/') ? strrchr(dest, '/') + 1 : dest;
  size_t sl = strlen(S_SOURCE_SUFFIX);
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name);
    if (de->d_name[0] != '.' || n <= sl + 1 || strcmp(de->d_name + n - sl, S_SOURCE_SUFFIX) != 0)
      continue;
    char copy[NAME_MAX + 1], source[PATH_MAX + 1];
    snprintf(copy, sizeof copy, "%.*s", (int) (n - sl - 1), de->d_name + 1);
    int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, source, sizeof source - 1) : -1;
    if (fd >= 0)
      close(fd);
    if (got < 0)
      continue;
    source[got] = '\0';
    if (strcmp(source, real) != 0 || strcmp(copy, keep) == 0)
      continue;
    kg_ckpt_remove_tree_at(dirfd(d), copy);
    unlinkat(dirfd(d), de->d_name, 0);
  }
  closedir(d);
  free(real);
}

/*  Where a zstd candidate is decompressed: beside the archives
    (dir/.restored-<incident>) when nobody but the user can change dir,
    else into dest (the state directory's restored/<incident>, private):
    a copy in a directory others can write could be swapped for anything
    between the restore and the kernel's torch.load. Fills copy; returns 0,
    or KG_EUSAGE with rep's reason when neither place is private. */
static int
s_copy_place(const char *dir, const char *incident, const char *dest, char *copy,
             size_t copysize, kg_ckpt_report_t *rep, bool *beside)
{
  char why[PATH_MAX + 512], why2[PATH_MAX + 512], parent[PATH_MAX];
  *beside = kg_safepath_check_dir(dir, why, sizeof why) == 0;
  if (*beside) {
    if (snprintf(copy, copysize, "%s/" KG_CKPT_COPY_PREFIX "%s", dir, incident)
        >= (int) copysize) {
      snprintf(rep->reason, sizeof rep->reason, "path too long");
      return rep->rc = KG_ETOOBIG;
    }
    return 0;
  }
  if (kg_ckpt_dirname(dest, parent, sizeof parent) < 0
      || kg_safepath_check_dir(parent, why2, sizeof why2) != 0) {
    snprintf(rep->reason, sizeof rep->reason, "a zstd checkpoint must be decompressed where "
             "nobody else can change it: not in the checkpoint directory (%.180s), nor in "
             "--into's (%.180s)", why, why2);
    return rep->rc = KG_EUSAGE;
  }
  snprintf(copy, copysize, "%s", dest);
  return 0;
}

/*  Check the candidate where it lies (uncompressed), or restore it, read
    only, into a private copy (zstd: its bytes cannot be read in place; see
    s_copy_place). Returns verify's/restore's code; *copy is set when a copy
    was made. */
static int
s_prepare_one(const char *dir, const kg_ckpt_entry_t *e, const char *incident, const char *dest,
              const kg_keyring_t *keys, const kg_ckpt_sink_t *watch, kg_ckpt_report_t *rep,
              char *copy, size_t copysize, bool *zstd)
{
  /* Which kind: authenticate the manifest only (cheap). */
  int rc = kg_ckpt_verify(e->path, keys, KG_CKPT_VERIFY_MANIFEST_ONLY, NULL, rep);
  if (rc != 0)
    return rc;
  *zstd = rep->manifest->zstd;
  kg_ckpt_report_clear(rep);
  if (!*zstd)
    return kg_ckpt_verify(e->path, keys, 0, watch, rep);
  bool beside;
  if ((rc = s_copy_place(dir, incident, dest, copy, copysize, rep, &beside)) != 0) {
    copy[0] = '\0';
    return rc;
  }
  /* A copy of an earlier attempt for this incident is not trusted. */
  char parent[PATH_MAX];
  int dfd = kg_ckpt_dirname(copy, parent, sizeof parent) == 0
              ? open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (dfd >= 0) {
    kg_ckpt_remove_tree_at(dfd, strrchr(copy, '/') + 1);
    close(dfd);
  }
  if (!beside)
    s_remove_private_copies(dir, copy);
  kg_ckpt_restore_opts_t opts = {.flags = KG_CKPT_RESTORE_READ_ONLY | KG_CKPT_RESTORE_PRIVATE};
  rc = kg_ckpt_restore(e->path, copy, keys, watch, &opts, rep);
  if (rc == 0 && !beside)
    s_note_source(copy, dir);
  return rc;
}

/*  The JSON of a restored set: the index is "archive"; every shard is read
    in place ("dir": ""). */
static void
s_add_set(cJSON *root, const kg_ckpt_set_t *st)
{
  char when[32], digest[80];
  cJSON_AddStringToObject(root, "archive", st->path);
  char *abs = realpath(st->path, NULL);
  cJSON_AddStringToObject(root, "archive_abs", abs ? abs : st->path);
  free(abs);
  cJSON_AddNumberToObject(root, "step", (double) st->step);
  cJSON_AddStringToObject(root, "run", st->run);
  cJSON_AddStringToObject(root, "sealed_at", kg_clock_iso_ms(st->sealed_at_ms, when, sizeof when));
  cJSON_AddNumberToObject(root, "sealed_at_ms", (double) st->sealed_at_ms);
  snprintf(digest, sizeof digest, "blake2b-256:%s", st->digest);
  cJSON_AddStringToObject(root, "digest", digest);
  cJSON_AddStringToObject(root, "dir", "");
  cJSON_AddBoolToObject(root, "in_place", true);
  cJSON_AddStringToObject(root, "compression", "none");
  cJSON *set = cJSON_AddObjectToObject(root, "set");
  cJSON_AddNumberToObject(set, "world_size", (double) st->world_size);
  cJSON *arr = cJSON_AddArrayToObject(set, "shards");
  for (int64_t r = 0; arr && r < st->world_size; r++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", (double) r);
    cJSON_AddStringToObject(o, "archive", st->shards[r].archive);
    cJSON_AddItemToArray(arr, o);
  }
}

/*  One tier's choice: its inputs, and what it found. prepare: the
    supervisor's restore (the quarantine ran before; zstd candidates on
    disk are copied); else the choice alone (kguard ckpt latest --json):
    every candidate verified where it lies, nothing moved, marked or
    copied. */
typedef struct {
  const char *dir, *incident, *dest, *run;
  int64_t before_ms;
  const kg_keyring_t *keys;
  const kg_ckpt_sink_t *watch;
  bool prepare;
  const char *qwhy;             /* why the quarantine failed (in qbuf), or NULL */
  char qbuf[PATH_MAX + 256];
  cJSON *skipped;
  kg_ckpt_entry_t *chosen;
  const kg_ckpt_set_t *cset;
  kg_ckpt_report_t rep;         /* the chosen archive's verification */
  char copy[PATH_MAX];          /* its copy ("" when read in place) */
  bool zstd;
  const char *failed;           /* a system error ended the search */
  char failbuf[900];
  int64_t failed_ms;            /* the seal time of the one that failed */
  bool memory;                  /* the memory tier: snapshots, read in place */
  int64_t floor;                /* only what was sealed after it can win */
  kg_ckpt_list_t *list;         /* the tier's scanned archives (owned) */
  kg_ckpt_sets_t *sets;         /* its scanned sets (owned) */
} s_choice_t;

/*  Try the sets sealed after `until` (newest first, advancing *j): skip
    those not strictly before T, verify the others completely; stop at
    c->floor. Returns the chosen set, or NULL; c->failed set on a system
    error. */
static const kg_ckpt_set_t *
s_try_sets(s_choice_t *c, const kg_ckpt_sets_t *sets, size_t *j, int64_t until)
{
  char reason[1100], when[32];
  const char *run = c->run;
  int64_t before_ms = c->before_ms;
  cJSON *skipped = c->skipped;
  for (; sets && *j < sets->count && !c->failed; (*j)++) {
    const kg_ckpt_set_t *st = &sets->sets[*j];
    if (st->sealed_at_ms < until && st->rc == 0)
      return NULL;
    if (st->sealed_at_ms <= c->floor && st->rc == 0) {
      *j = sets->count; /* not newer than the other tier's choice: cannot win */
      return NULL;
    }
    if (st->rc == 0 && strcmp(st->run, run) != 0) {
      snprintf(reason, sizeof reason, "set of run '%.130s', not of the run being resumed "
               "('%.130s')", st->run, run);
      s_add_pair(skipped, st->path, NULL, NULL, reason);
      continue;
    }
    if (st->rc == 0 && st->sealed_at_ms >= before_ms) {
      snprintf(reason, sizeof reason, "set sealed at %s, at or after the failure",
               kg_clock_iso_ms(st->sealed_at_ms, when, sizeof when));
      s_add_pair(skipped, st->path, NULL, NULL, reason);
      continue;
    }
    int rc = kg_ckpt_set_verify(st, c->keys, c->watch, reason, sizeof reason);
    if (rc == 0)
      return st;
    if (kg_ckpt_status_of(rc) < 0) {
      snprintf(c->failbuf, sizeof c->failbuf, "verifying set '%.300s' failed: %.500s",
               st->path, reason);
      c->failed = c->failbuf;
      c->failed_ms = st->sealed_at_ms;
      s_add_pair(skipped, st->path, NULL, NULL, c->failbuf);
      return NULL;
    }
    char line[1200];
    snprintf(line, sizeof line, "%s: %s", kg_ckpt_status_name(rc), reason);
    s_add_pair(skipped, st->path, NULL, NULL, line);
  }
  return NULL;
}

/*  Quarantine what c's tier holds sealed at or after T and list it in
    quarantined, each with its tier. In memory only the run's own
    snapshots move (kg_ckpt_quarantine_own): a snapshot sealed after the
    fault left there would be the newest before a second fault that comes
    before the restarted run's first snapshot. A quarantine that fails (a
    link planted at quarantine/ in a shared directory, no permission) does
    not stop the restore: what it would have moved is never chosen for
    this fault, and root's "quarantine_error" says why it stayed (both
    tiers' reasons when both failed). Sets c->qwhy to that reason. */
static void
s_quarantine_step(s_choice_t *c, cJSON *root, cJSON *quarantined)
{
  char when[32], reason[640];
  char *qwhy = c->qbuf;
  kg_ckpt_list_t *list = c->list;
  c->qwhy = NULL;
  if (!list)
    return;
  bool qfailed = (c->memory ? kg_ckpt_quarantine_own : kg_ckpt_quarantine)(
                   list, c->incident, c->before_ms, c->run, qwhy, sizeof c->qbuf) < 0;
  if (qfailed) {
    fprintf(stderr, "kguard ckpt resume-prepare: quarantine: %s\n", qwhy);
    const cJSON *had = cJSON_GetObjectItemCaseSensitive(root, "quarantine_error");
    if (cJSON_IsString(had)) {
      char both[2 * PATH_MAX + 600];
      snprintf(both, sizeof both, "%s; %s", had->valuestring, qwhy);
      cJSON_ReplaceItemInObjectCaseSensitive(root, "quarantine_error",
                                             cJSON_CreateString(both));
    } else {
      cJSON_AddStringToObject(root, "quarantine_error", qwhy);
    }
    c->qwhy = qwhy;
  }
  for (size_t i = 0; i < list->count; i++) {
    kg_ckpt_entry_t *e = &list->entries[i];
    if (!e->moved_to)
      continue;
    kg_clock_iso_ms(e->time_ms, when, sizeof when);
    if (e->authenticated)
      snprintf(reason, sizeof reason, "sealed at %s, at or after the failure", when);
    else
      snprintf(reason, sizeof reason, "%s; file modified at %s, at or after the failure",
               e->reason, when);
    cJSON_AddStringToObject(s_add_pair(quarantined, e->path, "to", e->moved_to, reason), "tier",
                            c->memory ? "memory" : "disk");
  }
}

/*  Why entry e is passed over before any byte of its payload is read
    (written into reason), or false when it is a candidate. */
static bool
s_passed_over(const s_choice_t *c, const kg_ckpt_entry_t *e, char *reason, size_t size)
{
  char when[32];
  if (!e->leftover && e->time_ms >= c->before_ms) {
    kg_clock_iso_ms(e->time_ms, when, sizeof when);
    snprintf(reason, size, "%s %s, at or after %s (left in place: %.400s)",
             e->authenticated ? "sealed at" : "modified at", when,
             c->prepare ? "the failure" : "--before",
             c->qwhy         ? c->qwhy
             : !c->prepare   ? "nothing is moved"
             : !e->authenticated ? "a snapshot that does not authenticate is never moved"
                             : "not this run's");
  } else if (c->memory && strstr(e->name, KG_CKPT_SUFFIX_ZSTD)) {
    snprintf(reason, size, "compressed with zstd: a snapshot is read in place");
  } else if (!e->leftover && e->authenticated && strcmp(e->run, c->run) != 0) {
    snprintf(reason, size, "run '%.130s', not the run being resumed ('%.130s')", e->run,
             c->run);
  } else if (e->world_size >= 2 && !e->leftover && e->rc == 0) {
    snprintf(reason, size, "shard of rank %lld of %lld: chosen only with its complete set",
             (long long) e->rank, (long long) e->world_size);
  } else if (e->leftover || !e->authenticated || e->rc != 0) {
    snprintf(reason, size, "%s: %s", e->leftover ? "incomplete" : kg_ckpt_status_name(e->rc),
             e->reason);
  } else {
    return false;
  }
  return true;
}

/*  Verify candidate e completely (prepare: in place, or restored into a
    private copy when zstd). Returns true when it is chosen; otherwise it
    is listed as skipped, and a system error ends the search (c->failed). */
static bool
s_try_one(s_choice_t *c, kg_ckpt_entry_t *e)
{
  char reason[640];
  int rc;
  c->copy[0] = '\0';
  if (c->prepare && !c->memory) {
    rc = s_prepare_one(c->dir, e, c->incident, c->dest, c->keys, c->watch, &c->rep, c->copy,
                       sizeof c->copy, &c->zstd);
  } else {
    rc = kg_ckpt_verify(e->path, c->keys, 0, c->watch, &c->rep);
    c->zstd = c->rep.manifest && c->rep.manifest->zstd;
  }
  if (rc == 0) {
    c->chosen = e;
    return true;
  }
  if (kg_ckpt_status_of(rc) < 0) {
    snprintf(c->failbuf, sizeof c->failbuf, "%s '%s' failed: %s",
             c->zstd && c->prepare && !c->memory ? "restoring" : "verifying", e->path,
             c->rep.reason);
    c->failed = c->failbuf;
    c->failed_ms = e->time_ms;
    s_add_pair(c->skipped, e->path, NULL, NULL, c->failbuf);
  } else {
    snprintf(reason, sizeof reason, "%s: %s", kg_ckpt_status_name(rc), c->rep.reason);
    s_add_pair(c->skipped, e->path, NULL, NULL, reason);
  }
  kg_ckpt_report_clear(&c->rep);
  return false;
}

/*  Newest first among those sealed strictly before T; each candidate is
    verified completely, so one that fails is simply skipped. A system
    error (unreadable disk, no space for a zstd copy) ends the search: the
    checkpoint existed but could not be restored, which is "failed", never
    "none". Sets newer than an archive are tried before it. */
static void
s_choose(s_choice_t *c, kg_ckpt_list_t *list, const kg_ckpt_sets_t *sets)
{
  char reason[640];
  size_t j = 0, n = list ? list->count : 0;
  for (size_t i = 0; i < n && !c->chosen && !c->cset && !c->failed; i++) {
    kg_ckpt_entry_t *e = &list->entries[i];
    if ((c->cset = s_try_sets(c, sets, &j, e->time_ms)) || c->failed)
      return;
    if (e->time_ms <= c->floor)
      break; /* the other tier's choice is at least as new: nothing here can win */
    if (e->moved_to)
      continue;
    if (s_passed_over(c, e, reason, sizeof reason))
      s_add_pair(c->skipped, e->path, NULL, NULL, reason);
    else
      s_try_one(c, e);
  }
  if (!c->chosen && !c->cset && !c->failed)
    c->cset = s_try_sets(c, sets, &j, INT64_MIN);
}

/*  The choice's fields of the JSON (see kg_ckpt_resume.h). */
static void
s_report(cJSON *root, s_choice_t *c)
{
  char when[32], digest[80];
  cJSON_AddStringToObject(root, "status",
                          c->chosen || c->cset ? "restored" : c->failed ? "failed" : "none");
  if (c->cset) {
    s_add_set(root, c->cset);
  } else if (c->chosen) {
    kg_ckpt_entry_t *e = c->chosen;
    cJSON_AddStringToObject(root, "archive", e->path);
    char *abs = realpath(e->path, NULL);
    cJSON_AddStringToObject(root, "archive_abs", abs ? abs : e->path);
    free(abs);
    cJSON_AddNumberToObject(root, "step", (double) e->step);
    cJSON_AddStringToObject(root, "run", e->run);
    cJSON_AddStringToObject(root, "sealed_at", kg_clock_iso_ms(e->sealed_at_ms, when, sizeof when));
    cJSON_AddNumberToObject(root, "sealed_at_ms", (double) e->sealed_at_ms);
    snprintf(digest, sizeof digest, "blake2b-256:%s", c->rep.manifest_digest);
    cJSON_AddStringToObject(root, "digest", digest);
    /* "": nothing was copied, the kernel reads the archive in place. */
    cJSON_AddStringToObject(root, "dir", c->copy);
    cJSON_AddBoolToObject(root, "in_place", c->copy[0] == '\0');
    cJSON_AddStringToObject(root, "compression", c->zstd ? "zstd" : "none");
    cJSON_AddNumberToObject(root, "bytes", (double) c->rep.archive_size);
  } else {
    static const char *const nulls[] = {"archive", "step", "run", "sealed_at",
                                        "sealed_at_ms", "digest", "dir"};
    for (size_t k = 0; k < sizeof nulls / sizeof *nulls; k++)
      cJSON_AddNullToObject(root, nulls[k]);
  }
  if (c->failed)
    cJSON_AddStringToObject(root, "error", c->failed);
  cJSON_AddStringToObject(root, "digest_of", "manifest");
  cJSON_AddNumberToObject(root, "before_ms", (double) c->before_ms);
  cJSON_AddStringToObject(root, "resumed_run", c->run);
}

/*  Scan dir (a missing one has no checkpoints). Returns 0 with *list
    (NULL when dir does not exist), or the scan's error with why. */
static int
s_scan(const char *dir, const kg_keyring_t *keys, kg_ckpt_list_t **list, char *why,
       size_t whysize)
{
  int rc;
  *list = kg_ckpt_list_scan(dir, keys, false, &rc);
  if (!*list && rc != -ENOENT) {
    snprintf(why, whysize, "scanning '%s': %s", dir, kg_strerror(rc));
    return rc;
  }
  return 0;
}

/*  What a disk candidate must be newer than to win over the memory tier:
    its choice's seal time, or the time of the snapshot whose read failed
    (an older one is never chosen past a failure, as on disk). */
static int64_t
s_floor(const s_choice_t *m)
{
  if (m->chosen)
    return m->chosen->sealed_at_ms;
  if (m->cset)
    return m->cset->sealed_at_ms;
  return m->failed ? m->failed_ms : INT64_MIN;
}

/*  Each skip says its tier; the memory tier's come first (into m's
    array, which is returned; d's is emptied and deleted). */
static cJSON *
s_skips(cJSON *m, cJSON *d)
{
  cJSON *it;
  cJSON_ArrayForEach(it, m)
    cJSON_AddStringToObject(it, "tier", "memory");
  while (cJSON_GetArraySize(d) > 0) {
    it = cJSON_DetachItemFromArray(d, 0);
    cJSON_AddStringToObject(it, "tier", "disk");
    cJSON_AddItemToArray(m, it);
  }
  cJSON_Delete(d);
  return m;
}

/*  Release what c owns (its skipped array is handed to the JSON). */
static void
s_choice_clear(s_choice_t *c)
{
  kg_ckpt_report_clear(&c->rep);
  kg_ckpt_sets_destroy(&c->sets);
  kg_ckpt_list_destroy(&c->list);
}

/*  c's choice among its scanned archives and sets, trying only what is
    newer than c->floor. With c->prepare the quarantine runs first, and on
    disk the markers and copies of an incident are made as without a
    memory tier; snapshots in memory are read in place, never copied or
    marked. A missing directory holds nothing, and nothing is made there. */
static void
s_tier_choose(const kg_ckpt_resume_opts_t *o, s_choice_t *c, cJSON *root, cJSON *quarantined)
{
  int rc;
  if (!c->dir)
    return;
  if (c->prepare)
    s_quarantine_step(c, root, quarantined);
  bool disk_prepare = c->prepare && !c->memory;
  /* Copies made for earlier incidents: the run has moved past them. The
     marker goes first: it tells a seal finishing meanwhile (a background
     seal captured before T) that this incident's copy is still needed. */
  if (disk_prepare) {
    kg_ckpt_resume_copies_remove(c->dir, NULL);
    if (c->list)
      kg_ckpt_retain_mark(c->dir, o->incident, o->before_ms, NULL);
  }
  c->sets = kg_ckpt_sets_scan(c->dir, o->keys, &rc);
  s_choose(c, c->list, c->sets);
  /* An open incident protects what it restored from pruning (kg_ckpt_retain.h). */
  if (disk_prepare && (c->chosen || c->cset))
    kg_ckpt_retain_mark(c->dir, o->incident, o->before_ms, c->chosen ? c->chosen->name : NULL);
}

/*  The two tiers' choice: resume-prepare's (prepare) or latest's. Both
    directories are scanned before anything moves, so a scan that fails
    leaves both as they were. */
static int
s_tiers(const kg_ckpt_resume_opts_t *o, bool prepare, cJSON **out, char *why, size_t whysize)
{
  *out = NULL;
  if (prepare && !kg_ckpt_quarantine_id_ok(o->incident)) {
    snprintf(why, whysize, "bad incident id '%.100s' (use [A-Za-z0-9._:-])", o->incident);
    return KG_EUSAGE;
  }
  s_choice_t m = {.dir = o->memory, .incident = o->incident, .run = o->run,
                  .before_ms = o->before_ms, .keys = o->keys, .watch = o->watch,
                  .prepare = prepare, .memory = true, .floor = INT64_MIN,
                  .skipped = cJSON_CreateArray()};
  s_choice_t c = {.dir = o->dir, .incident = o->incident, .dest = o->dest, .run = o->run,
                  .before_ms = o->before_ms, .keys = o->keys, .watch = o->watch,
                  .prepare = prepare, .skipped = cJSON_CreateArray()};
  int rc = o->memory ? s_scan(o->memory, o->keys, &m.list, why, whysize) : 0;
  if (rc == 0)
    rc = s_scan(o->dir, o->keys, &c.list, why, whysize);
  if (rc < 0) {
    cJSON_Delete(m.skipped);
    cJSON_Delete(c.skipped);
    s_choice_clear(&m);
    s_choice_clear(&c);
    return rc;
  }
  cJSON *root = cJSON_CreateObject();
  cJSON *quarantined = cJSON_CreateArray();
  s_tier_choose(o, &m, root, quarantined);
  c.floor = s_floor(&m);
  s_tier_choose(o, &c, root, quarantined);
  /* The newer wins: a disk choice (or failure) is newer than the floor. */
  bool disk = c.chosen || c.cset || c.failed || !(m.chosen || m.cset || m.failed);
  s_choice_t *w = disk ? &c : &m;
  s_report(root, w);
  if (w->chosen || w->cset)
    cJSON_AddStringToObject(root, "tier", disk ? "disk" : "memory");
  else
    cJSON_AddNullToObject(root, "tier");
  if (o->memory)
    cJSON_AddStringToObject(root, "memory_dir", o->memory);
  else
    cJSON_AddNullToObject(root, "memory_dir");
  if (prepare) {
    cJSON_AddStringToObject(root, "incident", o->incident);
    cJSON_AddItemToObject(root, "quarantined", quarantined);
  } else {
    cJSON_Delete(quarantined);
  }
  cJSON_AddItemToObject(root, "skipped", s_skips(m.skipped, c.skipped));
  s_choice_clear(&c);
  s_choice_clear(&m);
  *out = root;
  return 0;
}

int
kg_ckpt_resume_prepare_tiers(const kg_ckpt_resume_opts_t *o, cJSON **out, char *why,
                             size_t whysize)
{
  return s_tiers(o, true, out, why, whysize);
}

int
kg_ckpt_resume_choose_tiers(const kg_ckpt_resume_opts_t *o, cJSON **out, char *why,
                            size_t whysize)
{
  return s_tiers(o, false, out, why, whysize);
}

int
kg_ckpt_resume_prepare(const char *dir, int64_t before_ms, const char *incident,
                       const char *run, const char *dest, const kg_ckpt_sink_t *watch,
                       const kg_keyring_t *keys, cJSON **out, char *why, size_t whysize)
{
  kg_ckpt_resume_opts_t o = {.dir = dir, .before_ms = before_ms, .incident = incident,
                             .run = run, .dest = dest, .watch = watch, .keys = keys};
  return kg_ckpt_resume_prepare_tiers(&o, out, why, whysize);
}

int
kg_ckpt_resume_choose(const char *dir, int64_t before_ms, const char *run,
                      const kg_ckpt_sink_t *watch, const kg_keyring_t *keys, cJSON **out,
                      char *why, size_t whysize)
{
  kg_ckpt_resume_opts_t o = {.dir = dir, .before_ms = before_ms, .run = run, .watch = watch,
                             .keys = keys};
  return kg_ckpt_resume_choose_tiers(&o, out, why, whysize);
}
