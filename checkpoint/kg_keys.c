/*  kg_keys: locate, create and load the checkpoint signing key pair, and
    the trusted public keys. */
#include "kg_keys.h"

#include <dirent.h>
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
#include "kg_paths.h"
#include "kg_safepath.h"

#define SECRET_NAME "ckpt-ed25519.secret"
#define PUBLIC_NAME "ckpt-ed25519.public"
#define TRUSTED_SUB "trusted"
#define TRUSTED_EXT ".pub"
#define TRUSTED_ENV "KGUARD_TRUSTED_KEYS_DIR"
#define TRUSTED_MAX 4096 /* keys in one directory */

int
kg_keys_dir(char *buf, size_t size)
{
  const char *env = getenv("KGUARD_KEY_DIR");
  char home[PATH_MAX];
  int n;
  if (env && *env)
    n = snprintf(buf, size, "%s", env);
  else if ((env = getenv("XDG_CONFIG_HOME")) && *env)
    n = snprintf(buf, size, "%s/kguard", env);
  else if (kg_paths_home(home, sizeof home) == 0)
    n = snprintf(buf, size, "%s/.config/kguard", home);
  else
    return KG_ENOTFOUND;
  return n < 0 || (size_t) n >= size ? KG_ETOOBIG : 0;
}

static int
s_resolve(const char *dir, char *buf, size_t size, char *why, size_t whylen)
{
  int rc;
  if (!dir) {
    rc = kg_keys_dir(buf, size);
    if (rc == KG_ENOTFOUND)
      kg_errf(why, whylen, "no key directory: set KGUARD_KEY_DIR (no HOME, "
              "XDG_CONFIG_HOME or home directory is known)");
    else if (rc)
      kg_errf(why, whylen, "the key directory's path is too long");
    return rc;
  }
  int n = snprintf(buf, size, "%s", dir);
  if (n < 0 || (size_t) n >= size) {
    kg_errf(why, whylen, "the key directory's path is too long");
    return KG_ETOOBIG;
  }
  return 0;
}

/*  The key directory must be private; a missing one is KG_ECKPT_NOKEY. */
static int
s_check_dir(const char *dir, char *why, size_t whylen)
{
  char sub[PATH_MAX + 512];
  int rc = kg_safepath_check_dir(dir, sub, sizeof sub);
  if (rc == -ENOENT)
    return KG_ECKPT_NOKEY;
  if (rc)
    kg_errf(why, whylen, "key directory: %s", sub);
  return rc;
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
kg_keys_generate(const char *dir, bool force, char *why, size_t whylen)
{
  char path[PATH_MAX];
  int rc = s_resolve(dir, path, sizeof path, why, whylen);
  if (rc < 0)
    return rc;
  if (sodium_init() < 0) {
    kg_errf(why, whylen, "libsodium failed to initialise");
    return KG_EINTERNAL;
  }
  char sub[PATH_MAX + 512];
  if ((rc = kg_safepath_make_dir(path, sub, sizeof sub)) < 0) {
    kg_errf(why, whylen, "key directory: %s", sub);
    return rc;
  }
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_keypair(pk, sk);
  rc = s_write_atomic(path, SECRET_NAME, sk, sizeof sk, 0600, !force);
  sodium_memzero(sk, sizeof sk);
  if (rc == 0)
    rc = s_write_atomic(path, PUBLIC_NAME, pk, sizeof pk, 0644, false);
  if (rc < 0 && rc != KG_EEXISTS)
    kg_errf(why, whylen, "cannot write the key pair in %s: %s", path, kg_strerror(rc));
  else if (rc == KG_EEXISTS)
    kg_errf(why, whylen, "a key already exists in %s", path);
  return rc;
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
kg_keys_load_secret(const char *dir, bool create, unsigned char sk[KG_KEYS_SECRET_BYTES],
                    char *why, size_t whylen)
{
  char base[PATH_MAX], path[PATH_MAX + 32];
  int rc = s_resolve(dir, base, sizeof base, why, whylen);
  if (rc < 0)
    return rc;
  snprintf(path, sizeof path, "%s/%s", base, SECRET_NAME);
  struct stat st;
  rc = s_check_dir(base, why, whylen);
  if (rc == 0)
    rc = s_read_exact(path, sk, KG_KEYS_SECRET_BYTES, &st);
  if (rc == KG_ECKPT_NOKEY && create) {
    kg_notice("no checkpoint signing key yet: creating one in %s (see kguard keygen)", base);
    rc = kg_keys_generate(base, false, why, whylen);
    if (rc < 0 && rc != KG_EEXISTS) /* EEXISTS: a concurrent seal made it */
      return rc;
    rc = s_read_exact(path, sk, KG_KEYS_SECRET_BYTES, &st);
  }
  if (rc == KG_ECKPT_NOKEY)
    kg_errf(why, whylen, "no signing key in %s (kguard keygen makes one)", base);
  else if (rc == KG_ECKPT_MALFORMED)
    kg_errf(why, whylen, "%s is not a %d-byte key file", path, KG_KEYS_SECRET_BYTES);
  else if (rc < 0 && rc != KG_EUNSAFEPATH)
    kg_errf(why, whylen, "cannot read %s: %s", path, kg_strerror(rc));
  if (rc < 0)
    return rc;
  if (st.st_mode & 077) {
    kg_errf(why, whylen, "%s is readable by others (mode %03o): `chmod 600 %s`", path,
            (unsigned) (st.st_mode & 0777), path);
    sodium_memzero(sk, KG_KEYS_SECRET_BYTES);
    return KG_ECKPT_MALFORMED;
  }
  return 0;
}

int
kg_keys_load_public(const char *dir, unsigned char pk[KG_KEYS_PUBLIC_BYTES], char *why,
                    size_t whylen)
{
  char base[PATH_MAX], path[PATH_MAX + 32];
  int rc = s_resolve(dir, base, sizeof base, why, whylen);
  if (rc < 0)
    return rc == KG_ENOTFOUND ? KG_ECKPT_NOKEY : rc;
  if ((rc = s_check_dir(base, why, whylen)) < 0)
    return rc;
  snprintf(path, sizeof path, "%s/%s", base, PUBLIC_NAME);
  struct stat st;
  rc = s_read_exact(path, pk, KG_KEYS_PUBLIC_BYTES, &st);
  if (rc == KG_ECKPT_NOKEY) {
    unsigned char sk[KG_KEYS_SECRET_BYTES];
    snprintf(path, sizeof path, "%s/%s", base, SECRET_NAME);
    rc = s_read_exact(path, sk, sizeof sk, &st);
    if (rc == 0)
      memcpy(pk, sk + 32, KG_KEYS_PUBLIC_BYTES);
    sodium_memzero(sk, sizeof sk);
  }
  if (rc == KG_ECKPT_MALFORMED)
    kg_errf(why, whylen, "%s is not a key file of the right size", path);
  else if (rc < 0 && rc != KG_ECKPT_NOKEY)
    kg_errf(why, whylen, "cannot read %s: %s", path, kg_strerror(rc));
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

/* ---- export lines ------------------------------------------------------ */

int
kg_keys_format_line(const unsigned char pk[KG_KEYS_PUBLIC_BYTES], const char *comment,
                    char *out, size_t size)
{
  char b64[sodium_base64_ENCODED_LEN(KG_KEYS_PUBLIC_BYTES, sodium_base64_VARIANT_ORIGINAL)];
  char id[KG_KEYS_ID_LEN];
  sodium_bin2base64(b64, sizeof b64, pk, KG_KEYS_PUBLIC_BYTES, sodium_base64_VARIANT_ORIGINAL);
  kg_keys_id(pk, id);
  int n = snprintf(out, size, KG_KEYS_LINE_TYPE " %s %s%s%s\n", b64, id,
                   comment && *comment ? " " : "", comment ? comment : "");
  return n < 0 || (size_t) n >= size ? KG_ETOOBIG : 0;
}

bool
kg_keys_name_ok(const char *name)
{
  size_t n = strlen(name);
  if (n == 0 || n > KG_KEYS_NAME_MAX || name[0] == '.')
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '.' || c == '_' || c == '-'))
      return false;
  }
  return true;
}

int
kg_keys_parse(const void *data, size_t len, unsigned char pk[KG_KEYS_PUBLIC_BYTES], char *why,
              size_t whylen)
{
  const char *p = data, *end = p + len;
  /* A raw ckpt-ed25519.public: exactly 32 bytes (any bytes at all; an
     export line is always longer). */
  if (len == KG_KEYS_PUBLIC_BYTES) {
    memcpy(pk, p, KG_KEYS_PUBLIC_BYTES);
    return 0;
  }
  /* The first line that is neither blank nor a '#' comment. */
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t) (end - p));
    const char *next = eol ? eol + 1 : end;
    const char *q = p;
    while (q < next && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
      q++;
    if (q < next && *q != '#')
      break;
    p = next;
  }
  if (p >= end) {
    kg_errf(why, whylen, "no key in it (expected a line '" KG_KEYS_LINE_TYPE
            " BASE64 ...' from `kguard keys export`, or a 32-byte .public file)");
    return KG_EUSAGE;
  }
  const char *eol = memchr(p, '\n', (size_t) (end - p));
  size_t ll = eol ? (size_t) (eol - p) : (size_t) (end - p);
  char line[KG_KEYS_LINE_MAX + 1];
  if (ll > KG_KEYS_LINE_MAX || memchr(p, '\0', ll)) {
    kg_errf(why, whylen, "its first line is not a kguard public key (too long or binary)");
    return KG_EUSAGE;
  }
  memcpy(line, p, ll);
  line[ll] = '\0';
  char *save = NULL;
  const char *type = strtok_r(line, " \t\r", &save);
  const char *b64 = type ? strtok_r(NULL, " \t\r", &save) : NULL;
  if (!type || strcmp(type, KG_KEYS_LINE_TYPE) != 0 || !b64) {
    kg_errf(why, whylen, "its first line does not start with '" KG_KEYS_LINE_TYPE " BASE64' "
            "(what `kguard keys export` prints)");
    return KG_EUSAGE;
  }
  size_t got = 0;
  unsigned char bin[KG_KEYS_PUBLIC_BYTES + 1];
  if (sodium_base642bin(bin, sizeof bin, b64, strlen(b64), NULL, &got, NULL,
                        sodium_base64_VARIANT_ORIGINAL) != 0
      || got != KG_KEYS_PUBLIC_BYTES) {
    kg_errf(why, whylen, "its key is not %d bytes of base64", KG_KEYS_PUBLIC_BYTES);
    return KG_EUSAGE;
  }
  memcpy(pk, bin, KG_KEYS_PUBLIC_BYTES);
  return 0;
}

/* ---- the keyring ------------------------------------------------------- */

kg_keyring_t *
kg_keyring_new(void)
{
  return calloc(1, sizeof(kg_keyring_t));
}

void
kg_keyring_destroy(kg_keyring_t **p)
{
  if (!p || !*p)
    return;
  for (size_t i = 0; i < (*p)->count; i++)
    free((*p)->keys[i].file);
  free((*p)->keys);
  free(*p);
  *p = NULL;
}

int
kg_keyring_add(kg_keyring_t *self, const unsigned char pk[KG_KEYS_PUBLIC_BYTES],
               const char *name, const char *file)
{
  bool own = !name || !*name;
  for (size_t i = 0; i < self->count; i++)
    if (sodium_memcmp(self->keys[i].pk, pk, KG_KEYS_PUBLIC_BYTES) == 0)
      return 0;
  kg_key_t *v = realloc(self->keys, (self->count + 1) * sizeof *v);
  if (!v)
    return KG_ENOMEM;
  self->keys = v;
  kg_key_t k = {0};
  snprintf(k.name, sizeof k.name, "%s", own ? "" : name);
  memcpy(k.pk, pk, KG_KEYS_PUBLIC_BYTES);
  kg_keys_id(pk, k.id);
  if (file && !(k.file = strdup(file)))
    return KG_ENOMEM;
  if (own) {
    memmove(self->keys + 1, self->keys, self->count * sizeof *v);
    self->keys[0] = k;
    self->own = true;
  } else {
    self->keys[self->count] = k;
  }
  self->count++;
  return 0;
}

const kg_key_t *
kg_keyring_find(const kg_keyring_t *self, const char *id)
{
  for (size_t i = 0; self && i < self->count; i++)
    if (strcmp(self->keys[i].id, id) == 0)
      return &self->keys[i];
  return NULL;
}

const kg_key_t *
kg_keyring_verify(const kg_keyring_t *self, const unsigned char sig[64], const void *msg,
                  size_t len)
{
  for (size_t i = 0; self && i < self->count; i++)
    if (crypto_sign_verify_detached(sig, msg, (unsigned long long) len, self->keys[i].pk) == 0)
      return &self->keys[i];
  return NULL;
}

void
kg_keyring_describe(const kg_keyring_t *self, char *buf, size_t size)
{
  size_t trusted = self ? self->count - (self->own ? 1 : 0) : 0;
  int n = self && self->own ? snprintf(buf, size, "yours is %s", self->keys[0].id)
                            : snprintf(buf, size, "you have no key of your own");
  if (trusted && n > 0 && (size_t) n < size)
    snprintf(buf + n, size - (size_t) n, ", and %zu trusted key%s", trusted,
             trusted == 1 ? "" : "s");
}

static int
s_cmp_names(const void *a, const void *b)
{
  return strcmp(*(char *const *) a, *(char *const *) b);
}

/*  Read one trusted key file (dir fd + name). */
static int
s_read_trusted(int dfd, const char *dir, const char *name, unsigned char pk[32], char *why,
               size_t whylen)
{
  int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    kg_errf(why, whylen, "cannot read the trusted key %s/%s: %s", dir, name, strerror(e));
    return -e;
  }
  struct stat st;
  char buf[KG_KEYS_LINE_MAX * 4];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (off_t) sizeof buf)
    n = read(fd, buf, sizeof buf);
  close(fd);
  char sub[256];
  if (n < 0 || kg_keys_parse(buf, (size_t) n, pk, sub, sizeof sub) != 0) {
    kg_errf(why, whylen, "the trusted key %s/%s is not a kguard public key (%s): remove it "
            "with `kguard keys remove` or import it again", dir, name,
            n < 0 ? "not a small regular file" : sub);
    return KG_ECKPT_MALFORMED;
  }
  return 0;
}

/*  Add every NAME.pub of dir (missing: nothing) to the keyring. */
static int
s_load_trusted(kg_keyring_t *ring, const char *dir, char *why, size_t whylen)
{
  char sub[PATH_MAX + 512];
  int rc = kg_safepath_check_dir(dir, sub, sizeof sub);
  if (rc == -ENOENT)
    return 0;
  if (rc) {
    kg_errf(why, whylen, "trusted keys: %s", sub);
    return rc;
  }
  DIR *d = opendir(dir);
  if (!d) {
    rc = -errno;
    kg_errf(why, whylen, "cannot read %s: %s", dir, strerror(errno));
    return rc;
  }
  char **names = NULL;
  size_t n = 0;
  struct dirent *de;
  size_t el = strlen(TRUSTED_EXT);
  while ((de = readdir(d)) && rc == 0) {
    size_t l = strlen(de->d_name);
    if (l <= el || strcmp(de->d_name + l - el, TRUSTED_EXT) != 0 || de->d_name[0] == '.')
      continue;
    char **v = n < TRUSTED_MAX ? realloc(names, (n + 1) * sizeof *v) : NULL;
    if (!v || !(v[n] = strdup(de->d_name))) {
      if (v)
        names = v;
      rc = n < TRUSTED_MAX ? KG_ENOMEM : KG_ETOOBIG;
      kg_errf(why, whylen, "%s: %s", dir, n < TRUSTED_MAX ? "out of memory"
              : "more than 4096 trusted keys");
      break;
    }
    names = v;
    n++;
  }
  if (n > 1)
    qsort(names, n, sizeof *names, s_cmp_names);
  for (size_t i = 0; i < n && rc == 0; i++) {
    unsigned char pk[KG_KEYS_PUBLIC_BYTES];
    char name[KG_KEYS_NAME_MAX + 1], file[PATH_MAX + 300];
    size_t l = strlen(names[i]) - el;
    snprintf(name, sizeof name, "%.*s", (int) (l < sizeof name - 1 ? l : sizeof name - 1),
             names[i]);
    snprintf(file, sizeof file, "%s/%s", dir, names[i]);
    if ((rc = s_read_trusted(dirfd(d), dir, names[i], pk, why, whylen)) == 0)
      rc = kg_keyring_add(ring, pk, name, file);
  }
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  closedir(d);
  return rc;
}

int
kg_keys_trusted_dir(const char *dir, char *buf, size_t size)
{
  char base[PATH_MAX];
  int rc = s_resolve(dir, base, sizeof base, NULL, 0);
  if (rc)
    return rc;
  int n = snprintf(buf, size, "%s/" TRUSTED_SUB, base);
  return n < 0 || (size_t) n >= size ? KG_ETOOBIG : 0;
}

kg_keyring_t *
kg_keyring_load(const char *dir, int *rc, char *why, size_t whylen)
{
  kg_keyring_t *ring = kg_keyring_new();
  if (!ring) {
    *rc = KG_ENOMEM;
    kg_errf(why, whylen, "out of memory");
    return NULL;
  }
  unsigned char pk[KG_KEYS_PUBLIC_BYTES];
  char base[PATH_MAX], file[PATH_MAX + 64], tdir[PATH_MAX + 16];
  *rc = s_resolve(dir, base, sizeof base, NULL, 0);
  if (*rc == KG_ENOTFOUND) {
    *rc = 0;               /* no home: no own key, no trusted keys there */
    base[0] = '\0';
  }
  if (*rc == 0 && base[0]) {
    *rc = kg_keys_load_public(base, pk, why, whylen);
    if (*rc == 0) {
      snprintf(file, sizeof file, "%s/" PUBLIC_NAME, base);
      *rc = kg_keyring_add(ring, pk, NULL, file);
    } else if (*rc == KG_ECKPT_NOKEY) {
      *rc = 0;
    }
  }
  if (*rc == 0 && base[0]) {
    snprintf(tdir, sizeof tdir, "%s/" TRUSTED_SUB, base);
    *rc = s_load_trusted(ring, tdir, why, whylen);
  }
  const char *extra = getenv(TRUSTED_ENV);
  if (*rc == 0 && extra && *extra)
    *rc = s_load_trusted(ring, extra, why, whylen);
  if (*rc != 0)
    kg_keyring_destroy(&ring);
  return ring;
}

int
kg_keys_trust(const char *tdir, const char *name, const unsigned char pk[KG_KEYS_PUBLIC_BYTES],
              bool replace, char other[KG_KEYS_NAME_MAX + 1], char *why, size_t whylen)
{
  if (!kg_keys_name_ok(name)) {
    kg_errf(why, whylen, "bad key name '%.80s': use 1-%d of A-Z a-z 0-9 . _ -, not starting "
            "with '.'", name, KG_KEYS_NAME_MAX);
    return KG_EUSAGE;
  }
  char sub[PATH_MAX + 512];
  int rc = kg_safepath_make_dir(tdir, sub, sizeof sub);
  if (rc) {
    kg_errf(why, whylen, "trusted keys: %s", sub);
    return rc;
  }
  kg_keyring_t *ring = kg_keyring_new();
  if (!ring)
    return KG_ENOMEM;
  rc = s_load_trusted(ring, tdir, why, whylen);
  for (size_t i = 0; rc == 0 && i < ring->count; i++) {
    const kg_key_t *k = &ring->keys[i];
    bool same = sodium_memcmp(k->pk, pk, KG_KEYS_PUBLIC_BYTES) == 0;
    if (strcmp(k->name, name) == 0) {
      if (same)
        rc = 1;
      else if (!replace) {
        kg_errf(why, whylen, "%s/%s" TRUSTED_EXT " already holds another key (%s): "
                "choose another name, or --replace it", tdir, name, k->id);
        rc = KG_EEXISTS;
      }
    } else if (same) {
      snprintf(other, KG_KEYS_NAME_MAX + 1, "%s", k->name);
      rc = 2;
    }
  }
  kg_keyring_destroy(&ring);
  if (rc != 0)
    return rc;
  char line[KG_KEYS_LINE_MAX], file[KG_KEYS_NAME_MAX + 8];
  snprintf(file, sizeof file, "%s" TRUSTED_EXT, name);
  if ((rc = kg_keys_format_line(pk, name, line, sizeof line)) == 0)
    rc = s_write_atomic(tdir, file, line, strlen(line), 0644, false);
  if (rc)
    kg_errf(why, whylen, "cannot write %s/%s: %s", tdir, file, kg_strerror(rc));
  return rc;
}
