/*  kg_ckpt_util: time, name checks and filesystem helpers for checkpoints. */
#include "kg_ckpt_util.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kg_error.h"

int
kg_ckpt_parse_time(const char *text, int64_t *ms)
{
  if (!text || !*text)
    return KG_EUSAGE;
  /* All digits: milliseconds since the epoch. */
  const char *p = text;
  while (isdigit((unsigned char) *p))
    p++;
  if (*p == '\0') {
    if (p - text > 15)
      return KG_EUSAGE;
    *ms = strtoll(text, NULL, 10);
    return 0;
  }
  int Y, M, D, h, m, s, used = 0;
  char sep;
  if (sscanf(text, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &Y, &M, &D, &sep, &h, &m, &s, &used) != 7
      || (sep != 'T' && sep != ' ' && sep != 't'))
    return KG_EUSAGE;
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || s > 60)
    return KG_EUSAGE;
  p = text + used;
  int frac = 0;
  if (*p == '.' || *p == ',') {
    p++;
    int digits = 0;
    while (isdigit((unsigned char) *p)) {
      if (digits < 3)
        frac = frac * 10 + (*p - '0');
      digits++;
      p++;
    }
    if (digits == 0)
      return KG_EUSAGE;
    for (; digits < 3; digits++)
      frac *= 10;
  }
  long offset = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int oh, om;
    if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59)
      return KG_EUSAGE;
    offset = (oh * 60L + om) * 60L * (*p == '-' ? -1 : 1);
    p += 6;
  }
  if (*p != '\0')
    return KG_EUSAGE;
  struct tm tm = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D,
                  .tm_hour = h, .tm_min = m, .tm_sec = s};
  time_t t = timegm(&tm);
  *ms = ((int64_t) t - offset) * 1000 + frac;
  return 0;
}

bool
kg_ckpt_utf8_valid(const char *str, size_t len)
{
  const unsigned char *s = (const unsigned char *) str;
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t n;
    unsigned cp;
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= len)
      return false;
    for (size_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xc0) != 0x80)
        return false;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff
        || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

const char *
kg_ckpt_path_problem(const char *path)
{
  size_t len = strlen(path);
  if (len == 0)
    return "empty name";
  if (len > KG_CKPT_PATH_MAX)
    return "name too long";
  if (!kg_ckpt_utf8_valid(path, len))
    return "name is not valid UTF-8";
  if (path[0] == '/')
    return "absolute name";
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char) path[i];
    if (c < 0x20 || c == 0x7f)
      return "control character in name";
    if (c == '\\')
      return "backslash in name";
  }
  const char *comp = path;
  while (1) {
    const char *end = strchr(comp, '/');
    size_t n = end ? (size_t) (end - comp) : strlen(comp);
    if (n == 0)
      return "empty path component";
    if (n == 1 && comp[0] == '.')
      return "'.' path component";
    if (n == 2 && comp[0] == '.' && comp[1] == '.')
      return "'..' path component";
    if (n > 255)
      return "path component too long";
    if (!end)
      break;
    comp = end + 1;
  }
  return NULL;
}

int
kg_ckpt_fsync_dir(const char *path)
{
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = fsync(fd) < 0 ? -errno : 0;
  close(fd);
  return rc;
}

int
kg_ckpt_dirname(const char *path, char *buf, size_t size)
{
  const char *slash = strrchr(path, '/');
  if (!slash)
    return snprintf(buf, size, ".") < (int) size ? 0 : KG_ETOOBIG;
  size_t n = slash == path ? 1 : (size_t) (slash - path);
  if (n + 1 > size)
    return KG_ETOOBIG;
  memcpy(buf, path, n);
  buf[n] = '\0';
  return 0;
}

int
kg_ckpt_remove_tree_at(int dfd, const char *name)
{
  if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
    return 0;
  if (errno != EISDIR && errno != EPERM)
    return -errno;
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  /* A read-only restored copy (directories 0500) of ours: writable again,
     so that its entries can go. */
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 0700) != 0700)
    fchmod(fd, (st.st_mode & 07777) | 0700);
  DIR *d = fdopendir(fd);
  if (!d) {
    int e = -errno;
    close(fd);
    return e;
  }
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    int r = kg_ckpt_remove_tree_at((dirfd)(d), de->d_name);
    if (r < 0 && rc == 0)
      rc = r;
  }
  closedir(d);
  if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && rc == 0)
    rc = -errno;
  return rc;
}

void
kg_ckpt_hex(const unsigned char *bin, size_t len, char *out)
{
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < len; i++) {
    out[2 * i] = digits[bin[i] >> 4];
    out[2 * i + 1] = digits[bin[i] & 15];
  }
  out[2 * len] = '\0';
}

int
kg_ckpt_opendir(const char *dir, DIR **d)
{
  *d = NULL;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return errno == ENOENT ? 0 : -errno;
  if (!(*d = fdopendir(dfd))) {
    int e = -errno;
    close(dfd);
    return e;
  }
  return 1;
}

/*  Allocation failures inside cJSON on this thread (kg_ckpt_json_parse). */
static _Thread_local unsigned long s_json_nomem;
static pthread_once_t s_json_once = PTHREAD_ONCE_INIT;

static void *
s_json_malloc(size_t size)
{
  void *p = malloc(size);
  if (!p)
    s_json_nomem++;
  return p;
}

static void
s_json_hooks(void)
{
  cJSON_Hooks hooks = {s_json_malloc, free};
  cJSON_InitHooks(&hooks);
}

struct cJSON *
kg_ckpt_json_parse(const char *json, size_t len, int *rc)
{
  pthread_once(&s_json_once, s_json_hooks);
  unsigned long before = s_json_nomem;
  cJSON *root = json ? cJSON_ParseWithLength(json, len) : NULL;
  if (!root)
    *rc = s_json_nomem != before ? KG_ENOMEM : KG_ECKPT_MALFORMED;
  return root;
}

/*  Callers pass only literals, so the nonliteral format is harmless. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
int
kg_ckpt_fail(char *why, size_t size, int rc, const char *fmt, const char *arg)
{
  snprintf(why, size, fmt, arg, kg_strerror(rc));
  return rc;
}
#pragma GCC diagnostic pop

int
kg_ckpt_writer_lock(int fd)
{
  while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if (errno != EINTR)
      return -errno;
  }
  return 0;
}

int
kg_ckpt_writer_wait(const char *path)
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
