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

/*  Open (creating it when missing) the directory name under dfd without
    following a symbolic link: a link planted in a shared checkpoint
    directory must not send archives elsewhere. Returns an fd or -errno. */
static int
s_open_sub(int dfd, const char *name)
{
  if (mkdirat(dfd, name, 0777) < 0 && errno != EEXIST)
    return -errno;
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0)
    return fd;
  int e = errno;
  struct stat st;
  /* O_DIRECTORY answers ENOTDIR for a link: say what it is. */
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
    return -ELOOP;
  return -e;
}

/*  own: only run's authenticated archives move (kg_ckpt_quarantine_own). */
static int
s_quarantine(kg_ckpt_list_t *list, const char *incident, int64_t from_ms, const char *run,
             bool own, char *why, size_t whylen)
{
  if (!kg_ckpt_quarantine_id_ok(incident)) {
    kg_errf(why, whylen, "bad incident id '%.100s'", incident);
    return KG_EUSAGE;
  }
  int moved = 0, rc = 0;
  int dfd = -1, topfd = -1, qfd = -1;
  for (size_t i = 0; i < list->count && rc == 0; i++) {
    kg_ckpt_entry_t *e = &list->entries[i];
    if (e->leftover || e->moved_to || e->time_ms < from_ms
        || (own && !e->authenticated)
        || (run && e->authenticated && strcmp(e->run, run) != 0))
      continue;
    if (qfd < 0) {
      char where[PATH_MAX + 160];
      snprintf(where, sizeof where, "%s", list->dir);
      if ((dfd = open(list->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        rc = -errno;
      else if (snprintf(where, sizeof where, "%s/quarantine", list->dir) > 0
               && (topfd = s_open_sub(dfd, "quarantine")) < 0)
        rc = topfd;
      else if (snprintf(where, sizeof where, "%s/quarantine/%s", list->dir, incident) > 0
               && (qfd = s_open_sub(topfd, incident)) < 0)
        rc = qfd;
      if (rc) {
        kg_errf(why, whylen, "%s: %s", where, rc == -ELOOP
                ? "is a symbolic link (refused: archives are never moved through a link)"
                : kg_strerror(rc));
        break;
      }
    }
    char to[PATH_MAX];
    rc = -EEXIST;
    for (int k = 0; k < 1000 && rc == -EEXIST; k++) {
      if (k == 0)
        snprintf(to, sizeof to, "%s", e->name);
      else
        snprintf(to, sizeof to, "%s.%d", e->name, k);
      rc = renameat2(dfd, e->name, qfd, to, RENAME_NOREPLACE) == 0 ? 0 : -errno;
    }
    if (rc < 0) {
      kg_errf(why, whylen, "moving %s into %s/quarantine/%s: %s", e->path, list->dir, incident,
              kg_strerror(rc));
      break;
    }
    char full[PATH_MAX + 300];
    snprintf(full, sizeof full, "%s/quarantine/%s/%s", list->dir, incident, to);
    if (!(e->moved_to = strdup(full))) {
      kg_errf(why, whylen, "out of memory");
      rc = KG_ENOMEM;
      break;
    }
    moved++;
  }
  if (qfd >= 0) {
    fsync(qfd);
    fsync(dfd);
  }
  if (qfd >= 0)
    close(qfd);
  if (topfd >= 0)
    close(topfd);
  if (dfd >= 0)
    close(dfd);
  return rc < 0 ? rc : moved;
}

int
kg_ckpt_quarantine(kg_ckpt_list_t *list, const char *incident, int64_t from_ms, const char *run,
                   char *why, size_t whylen)
{
  return s_quarantine(list, incident, from_ms, run, false, why, whylen);
}

int
kg_ckpt_quarantine_own(kg_ckpt_list_t *list, const char *incident, int64_t from_ms,
                       const char *run, char *why, size_t whylen)
{
  return s_quarantine(list, incident, from_ms, run, true, why, whylen);
}
