/*  kg_coord_store: the coordinator's files in CKPT_DIR/.kguard (contracts
    in the header). */
#include "kg_coord_store.h"

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

#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"

#define S_DECISION_MAX (1 << 20)

struct kg_coord_store_t {
  int dir;                  /* CKPT_DIR/.kguard                              */
  int decisions;            /* CKPT_DIR/.kguard/decisions                    */
  char path[PATH_MAX];      /* CKPT_DIR/.kguard, for messages                */
};

/*  mkdirat + open without following a link; the directory must be this
    user's and writable by nobody else. */
static int
s_private_dir(int at, const char *name, const char *shown, int *fd_out, char *err,
              size_t errlen)
{
  if (mkdirat(at, name, 0700) != 0 && errno != EEXIST) {
    int e = errno;
    kg_errf(err, errlen, "cannot create %s: %s", shown, strerror(e));
    return -e;
  }
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    struct stat ln;
    if (e == ELOOP || e == ENOTDIR) {
      bool link = fstatat(at, name, &ln, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ln.st_mode);
      kg_errf(err, errlen, "%s is %s; kguard keeps its files only in a directory of its "
              "own there (remove it)", shown, link ? "a symbolic link" : "not a directory");
      return KG_EUSAGE;
    }
    kg_errf(err, errlen, "cannot open %s: %s", shown, strerror(e));
    return -e;
  }
  struct stat st;
  const char *bad = NULL;
  if (fstat(fd, &st) != 0)
    bad = "cannot be examined";
  else if (st.st_uid != geteuid())
    bad = "belongs to another user";
  else if (st.st_mode & 022)
    bad = "is writable by others";
  if (bad) {
    close(fd);
    kg_errf(err, errlen, "%s %s; kguard keeps its files only in a private directory of "
            "its own (remove it, or chmod go-w it)", shown, bad);
    return KG_EUSAGE;
  }
  *fd_out = fd;
  return 0;
}

int
kg_coord_store_open(const char *ckpt_dir, kg_coord_store_t **self_p, char *err, size_t errlen)
{
  *self_p = NULL;
  kg_coord_store_t *self = calloc(1, sizeof *self);
  if (!self)
    return KG_ENOMEM;
  self->dir = self->decisions = -1;
  snprintf(self->path, sizeof self->path, "%s/.kguard", ckpt_dir);
  char shown[PATH_MAX + 16];
  int rc, top = open(ckpt_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0) {
    rc = -errno;
    kg_errf(err, errlen, "cannot open the checkpoint directory %s: %s", ckpt_dir,
            strerror(errno));
  } else {
    rc = s_private_dir(top, ".kguard", self->path, &self->dir, err, errlen);
    close(top);
  }
  snprintf(shown, sizeof shown, "%s/decisions", self->path);
  if (rc == 0)
    rc = s_private_dir(self->dir, "decisions", shown, &self->decisions, err, errlen);
  if (rc != 0) {
    kg_coord_store_destroy(&self);
    return rc;
  }
  *self_p = self;
  return 0;
}

void
kg_coord_store_destroy(kg_coord_store_t **self_p)
{
  kg_coord_store_t *self = *self_p;
  if (!self)
    return;
  if (self->dir >= 0)
    close(self->dir);
  if (self->decisions >= 0)
    close(self->decisions);
  free(self);
  *self_p = NULL;
}

/*  Create at/name exclusively with data, fsynced. */
static int
s_create(int at, const char *name, const void *data, size_t len)
{
  int fd = openat(at, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return -errno;
  int rc = kg_file_write_all(fd, data, len);
  if (rc == 0 && fsync(fd) != 0)
    rc = -errno;
  close(fd);
  if (rc != 0)
    unlinkat(at, name, 0);
  return rc;
}

int
kg_coord_store_create(kg_coord_store_t *self, const char *name, const void *data, size_t len)
{
  return s_create(self->dir, name, data, len);
}

int
kg_coord_store_remove(kg_coord_store_t *self, const char *name)
{
  return unlinkat(self->dir, name, 0) == 0 ? 0 : -errno;
}

void
kg_coord_store_probe_name(const char *nonce, int node, char *buf, size_t size)
{
  snprintf(buf, size, "probe-%s-node-%d.kgckpt.tar", nonce, node);
}

int
kg_coord_store_decision_name(const cJSON *decision, char *buf, size_t size)
{
  const cJSON *gen = cJSON_GetObjectItemCaseSensitive(decision, "gen");
  const cJSON *action = cJSON_GetObjectItemCaseSensitive(decision, "action");
  if (!cJSON_IsNumber(gen) || gen->valuedouble < 0 || gen->valuedouble > 1e9
      || gen->valuedouble != (double) (int) gen->valuedouble || !cJSON_IsString(action))
    return KG_EUSAGE;
  snprintf(buf, size, "%s-%d.json", strcmp(action->valuestring, "end") == 0 ? "end" : "gen",
           gen->valueint);
  return 0;
}

int
kg_coord_store_write_decision(kg_coord_store_t *self, const kg_coord_keys_t *keys,
                              const cJSON *decision)
{
  char name[64], tmp[96];
  int rc = kg_coord_store_decision_name(decision, name, sizeof name);
  if (rc != 0)
    return rc;
  char *text = cJSON_PrintUnformatted(decision);
  if (!text)
    return KG_ENOMEM;
  char mac[65];
  kg_coord_keys_mac(keys, text, strlen(text), mac);
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "decision", text);
  cJSON_AddStringToObject(doc, "mac", mac);
  cJSON_AddStringToObject(doc, "mac_alg", "crypto_auth (HMAC-SHA-512-256), job key");
  char *out = cJSON_Print(doc);
  cJSON_Delete(doc);
  free(text);
  if (!out)
    return KG_ENOMEM;
  unsigned char rnd[8];
  randombytes_buf(rnd, sizeof rnd);
  snprintf(tmp, sizeof tmp, ".%s.%02x%02x%02x%02x%02x%02x%02x%02x", name, rnd[0], rnd[1],
           rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
  rc = s_create(self->decisions, tmp, out, strlen(out));
  free(out);
  if (rc == 0 && renameat(self->decisions, tmp, self->decisions, name) != 0) {
    rc = -errno;
    unlinkat(self->decisions, tmp, 0);
  }
  if (rc == 0)
    fsync(self->decisions);
  return rc;
}

/*  One decision file: its decision if it verifies and matches its name,
    else NULL with why. */
static cJSON *
s_read_one(kg_coord_store_t *self, const kg_coord_keys_t *keys, const char *name, char *why,
           size_t wlen)
{
  int fd = openat(self->decisions, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(why, wlen, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
    return NULL;
  }
  struct stat st;
  char *buf = NULL;
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < S_DECISION_MAX
      && (buf = malloc((size_t) st.st_size + 1)))
    n = read(fd, buf, (size_t) st.st_size);
  close(fd);
  if (n < 0 || n != st.st_size) {
    free(buf);
    snprintf(why, wlen, "not a readable regular file under 1 MiB");
    return NULL;
  }
  cJSON *doc = cJSON_ParseWithLength(buf, (size_t) n);
  free(buf);
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(doc, "decision");
  const cJSON *mac = cJSON_GetObjectItemCaseSensitive(doc, "mac");
  cJSON *d = NULL;
  char want[65], shown[64];
  if (!cJSON_IsString(text) || !cJSON_IsString(mac)) {
    snprintf(why, wlen, "not a decision file");
  } else {
    kg_coord_keys_mac(keys, text->valuestring, strlen(text->valuestring), want);
    if (strlen(mac->valuestring) != 64 || sodium_memcmp(want, mac->valuestring, 64) != 0) {
      snprintf(why, wlen, "its MAC does not verify with this job's key (another job's "
               "decision, or altered)");
    } else if (!(d = cJSON_Parse(text->valuestring))
               || kg_coord_store_decision_name(d, shown, sizeof shown) != 0
               || strcmp(shown, name) != 0) {
      snprintf(why, wlen, "its name does not match the decision it holds");
      cJSON_Delete(d);
      d = NULL;
    }
  }
  cJSON_Delete(doc);
  return d;
}

/*  Newer: a higher generation; in one generation the end over the restart. */
static bool
s_newer(const cJSON *a, const cJSON *b)
{
  if (!b)
    return true;
  int ga = cJSON_GetObjectItemCaseSensitive(a, "gen")->valueint;
  int gb = cJSON_GetObjectItemCaseSensitive(b, "gen")->valueint;
  if (ga != gb)
    return ga > gb;
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(a, "action");
  return strcmp(act->valuestring, "end") == 0;
}

cJSON *
kg_coord_store_read_decisions(kg_coord_store_t *self, const kg_coord_keys_t *keys,
                              int *rejected)
{
  int copy = dup(self->decisions);
  DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
  if (rejected)
    *rejected = 0;
  if (!d) {
    if (copy >= 0)
      close(copy);
    return NULL;
  }
  rewinddir(d);
  cJSON *best = NULL;
  struct dirent *de;
  while ((de = readdir(d))) {
    const char *n = de->d_name;
    if (n[0] == '.')
      continue;   /* ., .., and a writer's temporary */
    char why[160];
    cJSON *dec = s_read_one(self, keys, n, why, sizeof why);
    if (!dec) {
      kg_warning("coordinator: %s/decisions/%s ignored: %s", self->path, n, why);
      if (rejected)
        (*rejected)++;
      continue;
    }
    if (s_newer(dec, best)) {
      cJSON_Delete(best);
      best = dec;
    } else {
      cJSON_Delete(dec);
    }
  }
  closedir(d);
  return best;
}
