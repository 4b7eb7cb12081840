/*  kg_ckpt_retain: the pure plan, the markers, and pruning a directory. */
#include "kg_ckpt_retain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
kg_ckpt_retain_prune(const char *dir, const kg_keyring_t *keys, int keep, int64_t every,
                     const int64_t *extra_open, size_t nextra, bool dry_run, void *out)
{
  FILE *o = out;
  int rc;
  kg_ckpt_list_t *list = kg_ckpt_list_scan(dir, keys, false, &rc);
  if (!list)
    return rc == -ENOENT ? 0 : rc;
  int64_t *open = NULL;
  size_t nopen = 0, nnames = 0;
  char **names = NULL;
  kg_ckpt_retain_item_t *items = calloc(list->count + 1, sizeof *items);
  bool *remove = calloc(list->count + 1, sizeof *remove);
  if (!items || !remove) {
    rc = KG_ENOMEM;
    goto out;
  }
  for (size_t k = 0; k < nextra; k++) {
    int64_t *g = realloc(open, (nopen + 1) * sizeof *open);
    if (!g) {
      rc = KG_ENOMEM;
      goto out;
    }
    open = g;
    open[nopen++] = extra_open[k];
  }
  if ((rc = s_markers(dir, &open, &nopen, &names, &nnames)) < 0)
    goto out;
  bool found = false;
  for (size_t i = 0; i < list->count; i++) {
    kg_ckpt_entry_t *e = &list->entries[i];
    items[i].authenticated = !e->leftover && e->authenticated && e->rc == 0;
    items[i].step = e->step;
    items[i].time_ms = e->time_ms;
    for (size_t k = 0; k < nnames; k++)
      if (strcmp(names[k], e->name) == 0)
        items[i].named = true;
    /* Verify completely from the newest down until one is valid (V). */
    if (!found && items[i].authenticated && kg_ckpt_list_verify(list, i, keys) == 0)
      found = items[i].verified = true;
  }
  size_t n = kg_ckpt_retain_plan(items, list->count, keep, every, open, nopen, remove);
  rc = 0;
  for (size_t i = 0; i < list->count && n; i++) {
    if (!remove[i])
      continue;
    if (!dry_run && unlink(list->entries[i].path) < 0) {
      if (o)
        fprintf(o, "could not remove %s: %s\n", list->entries[i].path, strerror(errno));
      continue;
    }
    if (o)
      fprintf(o, "%s %s (step %lld)\n", dry_run ? "would remove" : "removed",
              list->entries[i].path, (long long) list->entries[i].step);
    rc++;
  }
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
