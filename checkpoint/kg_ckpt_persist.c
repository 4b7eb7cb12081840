/*  kg_ckpt_persist: the verbatim copy of a sealed archive into a
    checkpoint directory. */
#include "kg_ckpt_persist.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_seal.h"
#include "kg_ckpt_seal_names.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"
#include "kg_file.h"

/*  Copy all of in (size bytes) into out: copy_file_range while the kernel
    can (same filesystem, or one that copies across), else read/write
    (tmpfs to disk is usually across filesystems). Returns 0 or -errno. */
static int
s_copy(int in, int out, off_t size)
{
  off_t done = 0;
  bool plain = false;
  while (done < size && !plain) {
    ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t) (size - done), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP))
      plain = true;
    else if (n < 0)
      return -errno;
    else if (n == 0)
      return -EIO; /* the sealed archive shrank under us */
    else
      done += n;
  }
  if (lseek(in, done, SEEK_SET) < 0 || lseek(out, done, SEEK_SET) < 0)
    return -errno;
  char buf[1 << 16];
  while (done < size) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? -errno : -EIO;
    int rc = kg_file_write_all(out, buf, (size_t) n);
    if (rc < 0)
      return rc;
    done += n;
  }
  return 0;
}

/*  The temporary, written and synced, takes final's name (numbered on a
    collision). Returns 0 or a negative code. */
static int
s_publish(const char *tmp, char *final, size_t fsize)
{
  bool zstd = strlen(final) > strlen(KG_CKPT_SUFFIX_ZSTD)
              && strcmp(final + strlen(final) - strlen(KG_CKPT_SUFFIX_ZSTD),
                        KG_CKPT_SUFFIX_ZSTD) == 0;
  int rc;
  for (int k = 2; (rc = kg_ckpt_seal_rename_noreplace(tmp, final)) == KG_EEXISTS && k < 100;
       k++)
    if ((rc = kg_ckpt_seal_numbered(final, fsize, zstd, k)) < 0)
      break;
  return rc;
}

int
kg_ckpt_persist(const char *src, const char *dir, char *out, size_t outsize, char *why,
                size_t whysize)
{
  char final[PATH_MAX], tmp[PATH_MAX + 64];
  const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
  if (snprintf(final, sizeof final, "%s/%s", dir, base) >= (int) sizeof final
      || snprintf(tmp, sizeof tmp, "%s/.%s" KG_CKPT_TMP_MARK "XXXXXX", dir, base)
           >= (int) sizeof tmp)
    return kg_ckpt_fail(why, whysize, KG_ETOOBIG, "path too long: '%.200s' (%s)", dir);
  int in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), outfd = -1, rc;
  bool have_tmp = false;
  struct stat st;
  if (in < 0 || flock(in, LOCK_SH) < 0 || fstat(in, &st) < 0) {
    rc = kg_ckpt_fail(why, whysize, -errno, "reading '%s': %s", src);
    goto out;
  }
  if ((rc = kg_file_mkdirs(dir, 0777, 0777)) < 0
      || (rc = kg_ckpt_seal_tmp_create(tmp, &outfd)) < 0) {
    kg_ckpt_fail(why, whysize, rc, "creating a temporary file in '%s': %s", dir);
    goto out;
  }
  have_tmp = true;
  fchmod(outfd, 0666 & ~kg_file_umask()); /* mkostemp made it 0600 */
  if ((rc = s_copy(in, outfd, st.st_size)) == 0 && fsync(outfd) < 0)
    rc = -errno;
  if (rc < 0) {
    kg_ckpt_fail(why, whysize, rc, "writing into '%s': %s", dir);
    goto out;
  }
  /* Renamed while still open, and so locked: a gc meanwhile takes an
     unlocked temporary for an abandoned one. */
  if ((rc = s_publish(tmp, final, sizeof final)) < 0) {
    kg_ckpt_fail(why, whysize, rc, "renaming into place '%s': %s", final);
    goto out;
  }
  have_tmp = false;
  rc = close(outfd) < 0 ? -errno : 0;
  outfd = -1;
  if (rc == 0)
    rc = kg_ckpt_fsync_dir(dir);
  if (rc < 0) {
    unlink(final); /* not known to be on disk: never trusted */
    kg_ckpt_fail(why, whysize, rc, "syncing '%s': %s", final);
    goto out;
  }
  snprintf(out, outsize, "%s", final);
out:
  if (have_tmp)
    unlink(tmp);
  if (outfd >= 0)
    close(outfd);
  if (in >= 0)
    close(in);
  return rc;
}
