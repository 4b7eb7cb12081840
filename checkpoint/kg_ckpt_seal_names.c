/*  kg_ckpt_seal_names: final and temporary names of sealed archives, and
    the commit steps that must never replace or lose a file. */
#include "kg_ckpt_seal_names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_seal.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"

/* ---- names and the atomic commit --------------------------------------- */

bool
kg_ckpt_seal_is_archive_name(const char *name)
{
  size_t n = strlen(name);
  if (n == 0 || name[0] == '.')
    return false;
  size_t a = strlen(KG_CKPT_SUFFIX), b = strlen(KG_CKPT_SUFFIX_ZSTD);
  return (n > a && strcmp(name + n - a, KG_CKPT_SUFFIX) == 0)
         || (n > b && strcmp(name + n - b, KG_CKPT_SUFFIX_ZSTD) == 0);
}

bool
kg_ckpt_seal_is_leftover_name(const char *name)
{
  return name[0] == '.' && strstr(name, KG_CKPT_TMP_MARK) != NULL;
}

int
kg_ckpt_seal_rename_noreplace(const char *from, const char *to)
{
  if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
    return 0;
  if (errno != EINVAL && errno != ENOSYS)
    return errno == EEXIST ? KG_EEXISTS : -errno;
  /* Filesystems without RENAME_NOREPLACE: link refuses to replace too. */
  if (link(from, to) < 0)
    return errno == EEXIST ? KG_EEXISTS : -errno;
  unlink(from);
  return 0;
}

static int
s_writer_lock(int fd, void *arg)
{
  (void) arg;
  return kg_ckpt_writer_lock(fd);
}

int
kg_ckpt_seal_tmp_create(char *tmpl, int *fd)
{
  return kg_ckpt_seal_tmp_create_locking(tmpl, fd, s_writer_lock, NULL);
}

int
kg_ckpt_seal_tmp_create_locking(char *tmpl, int *fd, int (*lock)(int fd, void *arg),
                                void *arg)
{
  size_t len = strlen(tmpl);
  for (int tries = 0; tries < 10; tries++) {
    memcpy(tmpl + len - 6, "XXXXXX", 6);
    int f = mkostemp(tmpl, O_CLOEXEC);
    if (f < 0)
      return -errno;
    struct stat mine, named;
    int rc = lock(f, arg);
    if (rc == 0 && fstat(f, &mine) == 0 && stat(tmpl, &named) == 0
        && mine.st_ino == named.st_ino && mine.st_dev == named.st_dev) {
      *fd = f;
      return 0;
    }
    close(f);
    /* A gc holds the fresh file's lock only to remove it: a new name. */
    if (rc < 0 && rc != -EWOULDBLOCK)
      return rc;
  }
  return -EAGAIN;
}

/*  Rewrite final ("...<stamp>.kgckpt.tar[.zst]" or "...<stamp>-<k-1>...")
    as "...<stamp>-<k>.kgckpt.tar[.zst]". */
int
kg_ckpt_seal_numbered(char *final, size_t size, bool zstd, int k)
{
  const char *suffix = zstd ? KG_CKPT_SUFFIX_ZSTD : KG_CKPT_SUFFIX;
  size_t n = strlen(final) - strlen(suffix);
  if (k > 2) { /* drop the previous "-<k-1>" */
    while (n > 0 && final[n - 1] != '-')
      n--;
    n--;
  }
  if ((size_t) snprintf(final + n, size - n, "-%d%s", k, suffix) >= size - n)
    return KG_ETOOBIG;
  return 0;
}

