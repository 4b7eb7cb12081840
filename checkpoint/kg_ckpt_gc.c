/*  kg_ckpt_gc: abandoned temporaries are those whose writer's lock is free. */
#include "kg_ckpt_gc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_resume.h"
#include "kg_ckpt_retain.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_util.h"

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
  else if (rc == 0 && kg_ckpt_writer_lock(fd) < 0)
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

/*  Is name a copy (or a copy's restore temporary) whose incident's fault
    time is before limit? */
static bool
s_copy_expired(const char *dir, const char *name, int64_t limit)
{
  size_t plen = strlen(KG_CKPT_COPY_PREFIX);
  const char *id = NULL;
  if (strncmp(name, KG_CKPT_COPY_PREFIX, plen) == 0)
    id = name + plen;
  else if (name[0] == '.' && strncmp(name + 1, KG_CKPT_COPY_PREFIX, plen) == 0)
    id = name + 1 + plen;
  if (!id || limit == INT64_MIN)
    return false;
  if (limit == INT64_MAX)
    return true;
  char incident[256];
  size_t n = strcspn(id, ".");
  if (n == 0 || n >= sizeof incident)
    return true;
  memcpy(incident, id, n);
  incident[n] = '\0';
  int64_t t;
  if (kg_ckpt_retain_marker_time(dir, incident, &t) < 0)
    return true; /* no marker: nothing says the run still needs it */
  return t < limit;
}

int
kg_ckpt_gc(const char *dir, int64_t copies_before_ms, kg_ckpt_gc_stats_t *stats)
{
  kg_ckpt_gc_stats_t dummy;
  if (!stats)
    stats = &dummy;
  memset(stats, 0, sizeof *stats);
  DIR *d = NULL;
  int opened = kg_ckpt_opendir(dir, &d);
  if (opened <= 0)
    return opened;
  int first = 0;
  struct dirent *de;
  size_t svlen = strlen(KG_CKPT_SAVE_PREFIX);
  while ((de = readdir(d))) {
    const char *name = de->d_name;
    int rc = 0;
    if (kg_ckpt_seal_is_leftover_name(name) || strncmp(name, KG_CKPT_SAVE_PREFIX, svlen) == 0) {
      rc = s_collect(dirfd(d), name, &stats->bytes);
      if (rc == 2)
        stats->busy++;
    } else if (s_copy_expired(dir, name, copies_before_ms)) {
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
