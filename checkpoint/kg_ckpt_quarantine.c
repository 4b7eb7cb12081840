/*  kg_ckpt_quarantine: move checkpoints sealed at/after a failure aside. */
#include "kg_ckpt_quarantine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_util.h"
#include "kg_error.h"

bool
kg_ckpt_quarantine_id_ok(const char *id)
{
  size_t n = strlen(id);
  if (n == 0 || n > 128 || id[0] == '.')
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = id[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.'
          || c == '_' || c == '-' || c == ':'))
      return false;
  }
  return true;
}

int
kg_ckpt_quarantine(kg_ckpt_list_t *list, const char *incident, int64_t from_ms)
{
  if (!kg_ckpt_quarantine_id_ok(incident))
    return KG_EUSAGE;
  char qdir[PATH_MAX];
  int moved = 0;
  bool made = false;
  if (snprintf(qdir, sizeof qdir, "%s/quarantine/%s", list->dir, incident) >= (int) sizeof qdir)
    return KG_ETOOBIG;
  for (size_t i = 0; i < list->count; i++) {
    kg_ckpt_entry_t *e = &list->entries[i];
    if (e->leftover || e->moved_to || e->time_ms < from_ms)
      continue;
    if (!made) {
      char top[PATH_MAX];
      snprintf(top, sizeof top, "%s/quarantine", list->dir);
      if ((mkdir(top, 0755) < 0 && errno != EEXIST) || (mkdir(qdir, 0755) < 0 && errno != EEXIST))
        return -errno;
      made = true;
    }
    char to[PATH_MAX + 16];
    int rc = -EEXIST;
    for (int k = 0; k < 1000 && rc == -EEXIST; k++) {
      if (k == 0)
        snprintf(to, sizeof to, "%s/%s", qdir, e->name);
      else
        snprintf(to, sizeof to, "%s/%s.%d", qdir, e->name, k);
      rc = renameat2(AT_FDCWD, e->path, AT_FDCWD, to, RENAME_NOREPLACE) == 0 ? 0 : -errno;
    }
    if (rc < 0)
      return rc;
    if (!(e->moved_to = strdup(to)))
      return KG_ENOMEM;
    moved++;
  }
  if (made) {
    kg_ckpt_fsync_dir(qdir);
    kg_ckpt_fsync_dir(list->dir);
  }
  return moved;
}
