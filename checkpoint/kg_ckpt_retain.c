/*  kg_ckpt_retain: the pure plan, the markers, and pruning a directory. */
#include "kg_ckpt_retain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "kg_ckpt_util.h"
#include "kg_error.h"
#include "kg_file.h"

size_t
kg_ckpt_retain_plan(const kg_ckpt_retain_item_t *it, size_t n, int keep, int64_t every,
                    const int64_t *open, size_t nopen, bool *remove)
{
  size_t marked = 0;
  for (size_t i = 0; i < n; i++)
    remove[i] = false;
  size_t v = n;
  for (size_t i = 0; i < n && v == n; i++)
    if (it[i].verified)
      v = i;
  if (v == n || keep < 1)
    return 0;
  int kept = 1; /* V */
  for (size_t i = v + 1; i < n; i++) {
    if (!it[i].authenticated)
      continue;
    bool hold = it[i].named;
    if (kept < keep) {
      kept++;
      hold = true;
    }
    if (every > 0 && it[i].step % every == 0)
      hold = true;
    for (size_t k = 0; k < nopen && !hold; k++) {
      /* Is i the newest authenticated item sealed strictly before T? */
      if (it[i].time_ms >= open[k])
        continue;
      bool newer = false;
      for (size_t j = 0; j < i && !newer; j++)
        newer = it[j].authenticated && it[j].time_ms < open[k];
      hold = !newer;
    }
    if (!hold) {
      remove[i] = true;
      marked++;
    }
  }
  return marked;
}

int
kg_ckpt_retain_mark(const char *dir, const char *incident, int64_t before_ms,
                    const char *archive_name)
{
  char path[4096], text[1200];
  if (snprintf(path, sizeof path, "%s/" KG_CKPT_INCIDENT_PREFIX "%s", dir, incident)
      >= (int) sizeof path)
    return KG_ETOOBIG;
  int len = snprintf(text, sizeof text, "%lld %s\n", (long long) before_ms,
                     archive_name ? archive_name : "-");
  if (len >= (int) sizeof text)
    return KG_ETOOBIG;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return -errno;
  int rc = kg_file_write_all(fd, text, (size_t) len);
  if (close(fd) < 0 && rc == 0)
    rc = -errno;
  return rc;
}

int
kg_ckpt_retain_marker_time(const char *dir, const char *incident, int64_t *t)
{
  char path[4096], buf[64] = "";
  if (snprintf(path, sizeof path, "%s/" KG_CKPT_INCIDENT_PREFIX "%s", dir, incident)
      >= (int) sizeof path)
    return KG_ETOOBIG;
  FILE *f = fopen(path, "re");
  if (!f)
    return -errno;
  char *ok = fgets(buf, sizeof buf, f);
  fclose(f);
  long long v;
  if (!ok || sscanf(buf, "%lld", &v) != 1)
    return KG_ECKPT_MALFORMED;
  *t = (int64_t) v;
  return 0;
}

int
kg_ckpt_retain_resolve(const char *dir, const char *incident)
{
  char path[4096];
  if (snprintf(path, sizeof path, "%s/" KG_CKPT_INCIDENT_PREFIX "%s", dir, incident)
      >= (int) sizeof path)
    return KG_ETOOBIG;
  return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

/*  Read the markers of dir: times appended to *open, names to *names.
    Malformed markers are skipped (they protect nothing, remove nothing). */
static int
s_markers(const char *dir, int64_t **open, size_t *nopen, char ***names, size_t *nnames)
{
  DIR *d = opendir(dir);
  if (!d)
    return -errno;
  struct dirent *de;
  size_t plen = strlen(KG_CKPT_INCIDENT_PREFIX);
  int rc = 0;
  while ((de = readdir(d)) && rc == 0) {
    if (strncmp(de->d_name, KG_CKPT_INCIDENT_PREFIX, plen) != 0)
      continue;
    char path[4096], buf[1200] = "";
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE *f = fopen(path, "re");
    if (!f)
      continue;
    char *ok = fgets(buf, sizeof buf, f);
    fclose(f);
    long long t;
    char name[1100];
    if (!ok || sscanf(buf, "%lld %1099s", &t, name) != 2)
      continue;
    int64_t *o = realloc(*open, (*nopen + 1) * sizeof **open);
    char **nm = realloc(*names, (*nnames + 1) * sizeof **names);
    if (o)
      *open = o;
    if (nm)
      *names = nm;
    if (!o || !nm || !(nm[*nnames] = strdup(name))) {
      rc = KG_ENOMEM;
      break;
    }
    o[(*nopen)++] = (int64_t) t;
    (*nnames)++;
  }
  closedir(d);
  return rc;
}

int
kg_ckpt_retain_remove(const char *path)
{
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = 0;
  if (flock(fd, LOCK_EX | LOCK_NB) < 0)
    rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
  else if (unlink(path) < 0)   /* while locked: no reader starts on it now */
    rc = -errno;
  close(fd);
  return rc;
}

/*  The plan's items for list: this run's authenticated archives (every
    run's when run is NULL), marker names, and the newest one that verifies
    completely (V). Another run's archives are neither counted nor
    removed: the plan sees them as not authenticated. */
static void
s_items(kg_ckpt_list_t *list, const kg_keyring_t *keys, const char *run, char **names,
        size_t nnames, kg_ckpt_retain_item_t *items)
{
  bool found = false;
  for (size_t i = 0; i < list->count; i++) {
    kg_ckpt_entry_t *e = &list->entries[i];
    items[i].authenticated = !e->leftover && e->authenticated && e->rc == 0
                             && (!run || strcmp(e->run, run) == 0);
    items[i].step = e->step;
    items[i].time_ms = e->time_ms;
    for (size_t k = 0; k < nnames; k++)
      if (strcmp(names[k], e->name) == 0)
        items[i].named = true;
    if (!found && items[i].authenticated && kg_ckpt_list_verify(list, i, keys) == 0)
      found = items[i].verified = true;
  }
}

/*  Remove what the plan marked (or say what would go); an archive being
    read stays. Returns the number removed. */
static int
s_apply(const kg_ckpt_list_t *list, const bool *remove, bool dry_run, FILE *o)
{
  int n = 0;
  for (size_t i = 0; i < list->count; i++) {
    const kg_ckpt_entry_t *e = &list->entries[i];
    if (!remove[i])
      continue;
    int rc = dry_run ? 0 : kg_ckpt_retain_remove(e->path);
    if (rc == -EBUSY) {
      if (o)
        fprintf(o, "kept %s (step %lld): being read\n", e->path, (long long) e->step);
      continue;
    }
    if (rc < 0) {
      if (o)
        fprintf(o, "could not remove %s: %s\n", e->path, strerror(-rc));
      continue;
    }
    if (o)
      fprintf(o, "%s %s (step %lld)\n", dry_run ? "would remove" : "removed", e->path,
              (long long) e->step);
    n++;
  }
  return n;
}

int
kg_ckpt_retain_prune(const char *dir, const kg_keyring_t *keys, const char *run, int keep,
                     int64_t every, const int64_t *extra_open, size_t nextra, bool dry_run,
                     const kg_ckpt_sink_t *watch, void *out)
{
  int rc;
  kg_ckpt_list_t *list = kg_ckpt_list_scan(dir, keys, false, &rc);
  if (!list)
    return rc == -ENOENT ? 0 : rc;
  list->watch = watch;
  int64_t *open = calloc(nextra + 1, sizeof *open);
  size_t nopen = nextra, nnames = 0;
  char **names = NULL;
  kg_ckpt_retain_item_t *items = calloc(list->count + 1, sizeof *items);
  bool *remove = calloc(list->count + 1, sizeof *remove);
  if (!items || !remove || !open) {
    rc = KG_ENOMEM;
    goto out;
  }
  if (nextra)
    memcpy(open, extra_open, nextra * sizeof *open);
  if ((rc = s_markers(dir, &open, &nopen, &names, &nnames)) < 0)
    goto out;
  s_items(list, keys, run, names, nnames, items);
  rc = 0;
  if (kg_ckpt_retain_plan(items, list->count, keep, every, open, nopen, remove) > 0)
    rc = s_apply(list, remove, dry_run, out);
  if (rc > 0 && !dry_run)
    kg_ckpt_fsync_dir(dir);
out:
  for (size_t k = 0; k < nnames; k++)
    free(names[k]);
  free(names);
  free(open);
  free(items);
  free(remove);
  kg_ckpt_list_destroy(&list);
  return rc;
}
