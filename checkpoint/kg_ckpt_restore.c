/*  kg_ckpt_restore: verify-while-extracting into a temporary directory. */
#include "kg_ckpt_restore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_hashpool.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_safepath.h"

/*  Members are written straight from libarchive's block in this thread;
    the hash pool's workers read each file back as it grows and check its
    digest, several members at once (kg_ckpt_hashpool.h). Nothing is
    renamed into place before every digest matched. */
typedef struct {
  int rootfd;                        /* the temporary directory            */
  int fd;                            /* member being written, or -1        */
  uint64_t written;                  /* of that member                     */
  kg_ckpt_hashpool_t *pool;
  kg_ckpt_hashjob_t *job;            /* that member's check                */
  const kg_ckpt_sink_t *watch;       /* the caller's progress, or NULL     */
} s_sink_t;

static void
s_progress(void *arg, uint64_t done, uint64_t total)
{
  s_sink_t *s = arg;
  s->watch->progress(s->watch->arg, done, total);
}

/*  Open (creating) each directory of path's parent under rootfd without
    following links; returns the parent's fd and sets *leaf. */
static int
s_open_parent(int rootfd, const char *path, const char **leaf)
{
  int fd = dup(rootfd);
  if (fd < 0)
    return -errno;
  const char *comp = path;
  const char *slash;
  while ((slash = strchr(comp, '/'))) {
    char name[256];
    size_t n = (size_t) (slash - comp);
    if (n >= sizeof name) {
      close(fd);
      return -ENAMETOOLONG;
    }
    memcpy(name, comp, n);
    name[n] = '\0';
    if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST) {
      int e = -errno;
      close(fd);
      return e;
    }
    int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = -errno;
    close(fd);
    if (sub < 0)
      return e;
    fd = sub;
    comp = slash + 1;
  }
  *leaf = comp;
  return fd;
}

static int
s_begin(void *arg, const kg_ckpt_member_t *m)
{
  s_sink_t *s = arg;
  const char *leaf;
  int dirfd = s_open_parent(s->rootfd, m->path, &leaf);
  if (dirfd < 0)
    return dirfd;
  /* Read-write: the pool reads it back through a duplicate. */
  s->fd = openat(dirfd, leaf, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  int e = -errno;
  close(dirfd);
  if (s->fd < 0)
    return e;
  /* Version 2 members are checked chunk by chunk by verify itself. */
  s->job = m->chunks ? NULL : kg_ckpt_hashpool_add(s->pool, s->fd, m->size, m->digest, m);
  if (!s->job && !m->chunks)
    return -errno;
  s->written = 0;
  return 0;
}

static int
s_data(void *arg, const void *buf, size_t len)
{
  s_sink_t *s = arg;
  int rc = kg_file_write_all(s->fd, buf, len);
  if (rc == 0) {
    s->written += len;
    if (s->job)
      kg_ckpt_hashpool_progress(s->pool, s->job, s->written);
  }
  return rc;
}

static int
s_end(void *arg, const kg_ckpt_member_t *m)
{
  (void) m;
  s_sink_t *s = arg;
  int rc = close(s->fd) < 0 ? -errno : 0;
  s->fd = -1;
  return rc;
}

static int
s_finish(void *arg, const kg_ckpt_member_t **bad)
{
  s_sink_t *s = arg;
  const void *tag = NULL;
  int rc = kg_ckpt_hashpool_finish(s->pool, &tag);
  *bad = tag;
  return rc;
}

/*  Take write permission away from the restored tree under dfd (files
    0400, directories 0500), deepest first. Only what restore created is
    here, in a directory nobody else can enter: no link to follow. */
static int
s_read_only(int dfd)
{
  int fd = dup(dfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    int e = -errno;
    if (fd >= 0)
      close(fd);
    return e;
  }
  int rc = 0;
  struct dirent *de;
  while (rc == 0 && (de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (sub < 0 || fstat(sub, &st) != 0)
      rc = -errno;
    else if (S_ISDIR(st.st_mode))
      rc = s_read_only(sub);
    else if (fchmod(sub, 0400) != 0)
      rc = -errno;
    if (sub >= 0)
      close(sub);
  }
  closedir(d);
  if (rc == 0 && fchmod(dfd, 0500) != 0)
    rc = -errno;
  return rc;
}

/*  The check step: dest without its trailing slashes into dbuf[PATH_MAX],
    its directory into parent[PATH_MAX]. dest must not exist, its directory
    must (a missing one is a typo, never created), and with
    KG_CKPT_RESTORE_PRIVATE it must be a safe private path. Returns 0, or a
    negative code with report->rc and report->reason set. */
static int
s_restore_check_dest(const char *dest, const kg_ckpt_restore_opts_t *opts, char *dbuf,
                     char *parent, kg_ckpt_report_t *report)
{
  struct stat st;
  /* "out/" and "out" name the same directory. */
  size_t dl = strlen(dest);
  while (dl > 1 && dest[dl - 1] == '/')
    dl--;
  if (dl == 0 || dl >= PATH_MAX) {
    snprintf(report->reason, sizeof report->reason, "bad destination path");
    return report->rc = KG_EUSAGE;
  }
  memcpy(dbuf, dest, dl);
  dbuf[dl] = '\0';
  dest = dbuf;
  if (lstat(dest, &st) == 0) {
    snprintf(report->reason, sizeof report->reason, "destination '%.300s' already exists", dest);
    return report->rc = KG_EEXISTS;
  }
  if (kg_ckpt_dirname(dest, parent, PATH_MAX) < 0) {
    snprintf(report->reason, sizeof report->reason, "destination path too long");
    return report->rc = KG_ETOOBIG;
  }
  /* As tar -C and cp: a missing parent is a mistake (a typo), never
     created (it once made a directory at the filesystem's root). */
  int pe = stat(parent, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  if (pe) {
    kg_errf(report->reason, sizeof report->reason, "cannot restore into '%.200s': its "
             "directory '%.200s' %s", dest, parent,
             pe == ENOENT ? "does not exist (create it first)"
             : pe == ENOTDIR ? "is not a directory" : strerror(pe));
    return report->rc = (pe == ENOENT || pe == ENOTDIR) ? KG_EUSAGE : -pe;
  }
  char pwhy[PATH_MAX + 512];
  if ((opts->flags & KG_CKPT_RESTORE_PRIVATE)
      && (pe = kg_safepath_check_dir(parent, pwhy, sizeof pwhy)) != 0) {
    kg_errf(report->reason, sizeof report->reason, "refusing to restore into '%.200s': %s",
             dest, pwhy);
    return report->rc = pe == KG_EUNSAFEPATH ? KG_EUSAGE : pe;
  }
  return 0;
}

/*  The run step: the archive verified and written into the temporary
    directory tmp (open as rootfd, borrowed), checked against the expected
    manifest digest, made read-only if asked, then renamed to dest (never
    over an existing one). Returns 0, or a negative code with report->rc and
    report->reason set; tmp is the caller's to remove on failure. */
static int
s_restore_into(const char *archive, const char *tmp, int rootfd, const char *dest,
               const kg_keyring_t *keys, const kg_ckpt_sink_t *watch,
               const kg_ckpt_restore_opts_t *opts, kg_ckpt_report_t *report)
{
  kg_ckpt_hashpool_t *pool = kg_ckpt_hashpool_new();
  if (!pool) {
    snprintf(report->reason, sizeof report->reason, "cannot start the hashing threads");
    return report->rc = KG_ENOMEM;
  }
  s_sink_t s = {.rootfd = rootfd, .fd = -1, .pool = pool, .watch = watch};
  kg_ckpt_sink_t sink = {.arg = &s, .begin = s_begin, .data = s_data, .end = s_end,
                         .finish = s_finish,
                         .progress = watch && watch->progress ? s_progress : NULL};
  int rc = kg_ckpt_verify(archive, keys, 0, &sink, report);
  kg_ckpt_hashpool_destroy(&pool);   /* stops the workers on an early error */
  if (s.fd >= 0) /* a member cut short by an error */
    close(s.fd);
  if (rc == 0 && opts->expect_digest
      && strcmp(opts->expect_digest, report->manifest_digest) != 0) {
    snprintf(report->reason, sizeof report->reason, "manifest digest %.16s... is not the "
             "expected %.16s... (the file was replaced)", report->manifest_digest,
             opts->expect_digest);
    rc = report->rc = KG_ECKPT_CORRUPT;
  }
  if (rc == 0 && (opts->flags & KG_CKPT_RESTORE_READ_ONLY) && (rc = s_read_only(rootfd)) < 0) {
    report->rc = rc;
    snprintf(report->reason, sizeof report->reason, "making '%.300s' read-only: %s", tmp,
             kg_strerror(rc));
  }
  if (rc == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, dest, RENAME_NOREPLACE) < 0) {
    rc = report->rc = errno == EEXIST ? KG_EEXISTS : -errno;
    snprintf(report->reason, sizeof report->reason, "renaming into '%.300s': %s", dest,
             kg_strerror(rc));
  }
  return rc;
}

int
kg_ckpt_restore(const char *archive, const char *dest, const kg_keyring_t *keys,
                const kg_ckpt_sink_t *watch, const kg_ckpt_restore_opts_t *opts,
                kg_ckpt_report_t *report)
{
  static const kg_ckpt_restore_opts_t none = {0};
  if (!opts)
    opts = &none;
  memset(report, 0, sizeof *report);
  char parent[PATH_MAX], tmp[PATH_MAX + 64], dbuf[PATH_MAX];
  int rc = s_restore_check_dest(dest, opts, dbuf, parent, report);
  if (rc < 0)
    return rc;
  dest = dbuf;
  size_t dlen = strlen(dest);
  while (dlen > 1 && dest[dlen - 1] == '/')
    dlen--;
  const char *base = dest + dlen;
  while (base > dest && base[-1] != '/')
    base--;
  snprintf(tmp, sizeof tmp, "%s/.%.*s.restore-XXXXXX", parent, (int) (dest + dlen - base), base);
  if (!mkdtemp(tmp)) {
    int e = -errno;
    snprintf(report->reason, sizeof report->reason, "creating a temporary directory in '%.300s': %s",
             parent, strerror(errno));
    return report->rc = e;
  }
  int rootfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (rootfd < 0) {
    rc = report->rc = -errno;
    snprintf(report->reason, sizeof report->reason, "opening '%.300s': %s", tmp, strerror(errno));
  } else {
    rc = s_restore_into(archive, tmp, rootfd, dest, keys, watch, opts, report);
    close(rootfd);
  }
  if (rc != 0) {
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd >= 0) {
      kg_ckpt_remove_tree_at(pfd, strrchr(tmp, '/') + 1);
      close(pfd);
    }
    return rc;
  }
  kg_ckpt_fsync_dir(parent);
  return 0;
}
