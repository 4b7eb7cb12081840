/*  kg_keys: locate, create and load the checkpoint signing key pair. */
#include "kg_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_util.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"

#define SECRET_NAME "ckpt-ed25519.secret"
#define PUBLIC_NAME "ckpt-ed25519.public"

int
kg_keys_dir(char *buf, size_t size)
{
  const char *env = getenv("KGUARD_KEY_DIR");
  int n;
  if (env && *env)
    n = snprintf(buf, size, "%s", env);
  else if ((env = getenv("XDG_CONFIG_HOME")) && *env)
    n = snprintf(buf, size, "%s/kguard", env);
  else if ((env = getenv("HOME")) && *env)
    n = snprintf(buf, size, "%s/.config/kguard", env);
  else
    return KG_ENOTFOUND;
  return n < 0 || (size_t) n >= size ? KG_ETOOBIG : 0;
}

static int
s_resolve(const char *dir, char *buf, size_t size)
{
  if (!dir)
    return kg_keys_dir(buf, size);
  int n = snprintf(buf, size, "%s", dir);
  return n < 0 || (size_t) n >= size ? KG_ETOOBIG : 0;
}

/*  Write len bytes to dir/name atomically with mode; with noreplace an
    existing file wins and KG_EEXISTS is returned. */
static int
s_write_atomic(const char *dir, const char *name, const void *data, size_t len,
               mode_t mode, bool noreplace)
{
  char tmp[PATH_MAX], final[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s/.%s.tmp-XXXXXX", dir, name) >= (int) sizeof tmp
      || snprintf(final, sizeof final, "%s/%s", dir, name) >= (int) sizeof final)
    return KG_ETOOBIG;
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = 0;
  if (fchmod(fd, mode) < 0 || write(fd, data, len) != (ssize_t) len || fsync(fd) < 0)
    rc = errno ? -errno : -EIO;
  if (close(fd) < 0 && rc == 0)
    rc = -errno;
  if (rc == 0) {
    if (noreplace) {
      if (link(tmp, final) < 0)
        rc = errno == EEXIST ? KG_EEXISTS : -errno;
    } else if (rename(tmp, final) < 0) {
      rc = -errno;
    }
  }
  unlink(tmp);
  if (rc == 0)
    rc = kg_ckpt_fsync_dir(dir);
  return rc;
}

int
kg_keys_generate(const char *dir, bool force)
{
  char path[PATH_MAX];
  int rc = s_resolve(dir, path, sizeof path);
  if (rc < 0)
    return rc;
  if (sodium_init() < 0)
    return KG_EINTERNAL;
  if ((rc = kg_file_mkdirs(path, 0755, 0700)) < 0)
    return rc;
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_keypair(pk, sk);
  rc = s_write_atomic(path, SECRET_NAME, sk, sizeof sk, 0600, !force);
  sodium_memzero(sk, sizeof sk);
  if (rc < 0)
    return rc;
  return s_write_atomic(path, PUBLIC_NAME, pk, sizeof pk, 0644, false);
}

static int
s_read_exact(const char *path, unsigned char *buf, size_t len, struct stat *st)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return errno == ENOENT ? KG_ECKPT_NOKEY : -errno;
  int rc = 0;
  if (fstat(fd, st) < 0)
    rc = -errno;
  else if (!S_ISREG(st->st_mode) || st->st_size != (off_t) len
           || read(fd, buf, len) != (ssize_t) len)
    rc = KG_ECKPT_MALFORMED;
  close(fd);
  return rc;
}

int
kg_keys_load_secret(const char *dir, bool create, unsigned char sk[KG_KEYS_SECRET_BYTES])
{
  char base[PATH_MAX], path[PATH_MAX + 32];
  int rc = s_resolve(dir, base, sizeof base);
  if (rc < 0)
    return rc;
  snprintf(path, sizeof path, "%s/%s", base, SECRET_NAME);
  struct stat st;
  rc = s_read_exact(path, sk, KG_KEYS_SECRET_BYTES, &st);
  if (rc == KG_ECKPT_NOKEY && create) {
    kg_notice("no checkpoint signing key yet: creating one in %s (see kguard keygen)", base);
    rc = kg_keys_generate(base, false);
    if (rc < 0 && rc != KG_EEXISTS) /* EEXISTS: a concurrent seal made it */
      return rc;
    rc = s_read_exact(path, sk, KG_KEYS_SECRET_BYTES, &st);
  }
  if (rc < 0)
    return rc;
  if (st.st_mode & 077) {
    kg_error("%s is readable by others (mode %03o); chmod 600 it", path,
             (unsigned) (st.st_mode & 0777));
    sodium_memzero(sk, KG_KEYS_SECRET_BYTES);
    return KG_ECKPT_MALFORMED;
  }
  return 0;
}

int
kg_keys_load_public(const char *dir, unsigned char pk[KG_KEYS_PUBLIC_BYTES])
{
  char base[PATH_MAX], path[PATH_MAX + 32];
  int rc = s_resolve(dir, base, sizeof base);
  if (rc < 0)
    return rc == KG_ENOTFOUND ? KG_ECKPT_NOKEY : rc;
  snprintf(path, sizeof path, "%s/%s", base, PUBLIC_NAME);
  struct stat st;
  rc = s_read_exact(path, pk, KG_KEYS_PUBLIC_BYTES, &st);
  if (rc != KG_ECKPT_NOKEY)
    return rc;
  unsigned char sk[KG_KEYS_SECRET_BYTES];
  snprintf(path, sizeof path, "%s/%s", base, SECRET_NAME);
  rc = s_read_exact(path, sk, sizeof sk, &st);
  if (rc == 0)
    memcpy(pk, sk + 32, KG_KEYS_PUBLIC_BYTES);
  sodium_memzero(sk, sizeof sk);
  return rc;
}

void
kg_keys_id(const unsigned char pk[KG_KEYS_PUBLIC_BYTES], char out[KG_KEYS_ID_LEN])
{
  unsigned char h[32];
  crypto_generichash(h, sizeof h, pk, KG_KEYS_PUBLIC_BYTES, NULL, 0);
  memcpy(out, "b2:", 3);
  kg_ckpt_hex(h, 8, out + 3);
}
