/*  kg_ckpt_gc: abandoned temporaries are those whose writer's lock is free. */
#include "kg_ckpt_gc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_resume.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_util.h"

int
kg_ckpt_gc_lock(int fd)
{
  while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if (errno != EINTR)
      return -errno;
  }
  return 0;
}

/*  Remove name when no writer holds its lock. Returns 1 removed, 2 busy
    (a writer holds it), 0 left alone (gone meanwhile, not ours), -errno. */
static int
s_collect(int dfd, const char *name, unsigned long long *bytes)
{
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return errno == ENOENT ? 0 : -errno;
  struct stat st;
  int rc = fstat(fd, &st) < 0 ? -errno : 0;
  if (rc == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    rc = 0; /* not ours: leave it */
  else if (rc == 0 && kg_ckpt_gc_lock(fd) < 0)
    rc = 2;
  else if (rc == 0) {
    /* Still the same file under that name? (a rename may have raced) */
    struct stat now;
    if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino
        && now.st_dev == st.st_dev) {
      rc = kg_ckpt_remove_tree_at(dfd, name);
      if (rc == 0) {
        rc = 1;
        if (S_ISREG(st.st_mode))
          *bytes += (unsigned long long) st.st_size;
      }
    }
  }
  close(fd); /* drops the lock, after the name is gone */
  return rc;
}

int
kg_ckpt_gc(const char *dir, bool keep_copies, kg_ckpt_gc_stats_t *stats)
{
  kg_ckpt_gc_stats_t dummy;
  if (!stats)
    stats = &dummy;
  memset(stats, 0, sizeof *stats);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return errno == ENOENT ? 0 : -errno;
  DIR *d = fdopendir(dfd);
  if (!d) {
    int e = -errno;
    close(dfd);
    return e;
  }
  int first = 0;
  struct dirent *de;
  size_t cplen = strlen(KG_CKPT_COPY_PREFIX), svlen = strlen(KG_CKPT_SAVE_PREFIX);
  while ((de = readdir(d))) {
    const char *name = de->d_name;
    int rc = 0;
    if (kg_ckpt_seal_is_leftover_name(name) || strncmp(name, KG_CKPT_SAVE_PREFIX, svlen) == 0) {
      rc = s_collect(dirfd(d), name, &stats->bytes);
      if (rc == 2)
        stats->busy++;
    } else if (!keep_copies && strncmp(name, KG_CKPT_COPY_PREFIX, cplen) == 0) {
      rc = kg_ckpt_remove_tree_at(dirfd(d), name);
      if (rc == 0)
        rc = 1;
    }
    if (rc == 1)
      stats->removed++;
    else if (rc < 0 && first == 0)
      first = rc;
  }
  closedir(d);
  return first;
}

int
kg_ckpt_gc_wait_writer(const char *path)
{
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return errno == ENOENT ? 0 : -errno;
  int rc = 0;
  while (flock(fd, LOCK_EX) < 0) {
    if (errno != EINTR) {
      rc = -errno;
      break;
    }
  }
  close(fd);
  return rc;
}
