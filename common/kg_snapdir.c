/*  kg_snapdir: see kg_snapdir.h. */
#include "kg_snapdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_log.h"

struct _kg_snapdir_t {
  char path[PATH_MAX];
  int lockfd;                   /* the directory, flock'd LOCK_EX while we live */
  size_t reaped;
  long reaped_pid;
};

static int
s_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st;
  (void) ftw;
  if (flag == FTW_DP)
    rmdir(path);
  else
    unlink(path);
  return 0;
}

/*  Remove path and what it holds, never following a link. */
static void
s_remove_tree(const char *path)
{
  nftw(path, s_rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

const char *
kg_snapdir_base(void)
{
  const char *base = getenv("KGUARD_SNAPSHOT_BASE");
  return base && *base ? base : "/dev/shm";
}

/*  BASE/kguard-<uid>, created 0700 if missing; refused unless it is a real
    directory, ours, that nobody else can write or read. */
static int
s_user_dir(char *out, size_t size, char *why, size_t whysize)
{
  const char *base = kg_snapdir_base();
  struct stat st;
  if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(why, whysize, "%s is not a directory (set KGUARD_SNAPSHOT_BASE to a tmpfs "
             "directory for in-memory snapshots)", base);
    return -ENOTDIR;
  }
  if (snprintf(out, size, "%s/kguard-%u", base, (unsigned) getuid()) >= (int) size) {
    snprintf(why, whysize, "KGUARD_SNAPSHOT_BASE is too long");
    return -ENAMETOOLONG;
  }
  if (mkdir(out, 0700) != 0 && errno != EEXIST) {
    int e = errno;
    snprintf(why, whysize, "cannot create %s: %s", out, strerror(e));
    return -e;
  }
  if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()
      || (st.st_mode & 077) != 0) {
    snprintf(why, whysize, "%s is not a private directory of this user (owner, mode 0700): "
             "remove it, or set KGUARD_SNAPSHOT_BASE elsewhere", out);
    return -EPERM;
  }
  return 0;
}

/*  Remove each entry of user whose lock is free: its owner is gone. */
static void
s_reap(kg_snapdir_t *self, const char *user)
{
  DIR *d = opendir(user);
  if (!d)
    return;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      char path[PATH_MAX];
      if (snprintf(path, sizeof path, "%s/%s", user, de->d_name) < (int) sizeof path) {
        s_remove_tree(path);
        self->reaped++;
        const char *dot = strrchr(de->d_name, '.');
        if (dot)
          self->reaped_pid = strtol(dot + 1, NULL, 10);
      }
    }
    close(fd);
  }
  closedir(d);
}

kg_snapdir_t *
kg_snapdir_new(const char *run, char *why, size_t whysize)
{
  char user[PATH_MAX - 96], tag[65];
  if (s_user_dir(user, sizeof user, why, whysize) < 0)
    return NULL;
  kg_snapdir_t *self = calloc(1, sizeof *self);
  if (!self) {
    snprintf(why, whysize, "out of memory");
    return NULL;
  }
  self->lockfd = -1;
  s_reap(self, user);
  size_t n = 0;
  for (const char *c = run && *run ? run : "default"; *c && n < sizeof tag - 1; c++, n++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
              || *c == '.' || *c == '_' || *c == '-';
    tag[n] = ok ? *c : '_';
  }
  tag[n] = '\0';
  snprintf(self->path, sizeof self->path, "%s/%s.%ld", user, tag, (long) getpid());
  /* A directory of our pid's name is a dead owner's whose pid came round
     again (its lock was free, so the reap above removed it), or our own
     from an earlier kg_snapdir in this process: start empty either way. */
  s_remove_tree(self->path);
  if (mkdir(self->path, 0700) != 0) {
    int e = errno;
    snprintf(why, whysize, "cannot create %s: %s", self->path, strerror(e));
    free(self);
    return NULL;
  }
  self->lockfd = open(self->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (self->lockfd < 0 || flock(self->lockfd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    snprintf(why, whysize, "cannot lock %s: %s", self->path, strerror(e));
    kg_snapdir_destroy(&self);
    return NULL;
  }
  return self;
}

kg_snapdir_t *
kg_snapdir_open(const char *run, const char *who)
{
  char why[600];
  long dead = 0;
  kg_snapdir_t *self = kg_snapdir_new(run, why, sizeof why);
  if (!self)
    kg_warning("%sno memory for kguard.snapshot (%s): snapshots raise, kguard.save still "
               "seals to disk", who, why);
  else if (kg_snapdir_reaped(self, &dead) > 0)
    kg_notice("%sremoved the in-memory snapshots of a kguard that is gone (pid %ld): a run "
              "it supervised continues from disk", who, dead);
  return self;
}

const char *
kg_snapdir_path(const kg_snapdir_t *self)
{
  return self->path;
}

size_t
kg_snapdir_reaped(const kg_snapdir_t *self, long *one_pid)
{
  if (one_pid)
    *one_pid = self->reaped_pid;
  return self->reaped;
}

void
kg_snapdir_destroy(kg_snapdir_t **p)
{
  kg_snapdir_t *self = *p;
  if (!self)
    return;
  s_remove_tree(self->path);
  if (self->lockfd >= 0)
    close(self->lockfd);
  free(self);
  *p = NULL;
}
