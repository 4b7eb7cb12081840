/*  kg_file: whole-file reads and atomic, durable whole-file writes. */
#include "kg_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"

int
kg_file_read(const char *path, size_t max, char **data_p, size_t *size_p)
{
  *data_p = NULL;
  *size_p = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  size_t cap = 4096, size = 0;
  char *data = malloc(cap + 1);
  int rc = data ? 0 : KG_ENOMEM;
  while (rc == 0) {
    if (size == cap) {
      if (cap > max)
        break;
      cap *= 2;
      char *bigger = realloc(data, cap + 1);
      if (!bigger) {
        rc = KG_ENOMEM;
        break;
      }
      data = bigger;
    }
    ssize_t n = read(fd, data + size, cap - size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      rc = -errno;
    else if (n == 0)
      break;
    else
      size += (size_t) n;
  }
  close(fd);
  if (rc == 0 && size > max)
    rc = KG_ETOOBIG;
  if (rc != 0) {
    free(data);
    return rc;
  }
  data[size] = '\0';
  *data_p = data;
  *size_p = size;
  return 0;
}

int
kg_file_write_all(int fd, const void *data, size_t size)
{
  const char *p = data;
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    p += n;
    size -= (size_t) n;
  }
  return 0;
}

int
kg_file_sync_parent(const char *path)
{
  char *copy = strdup(path);
  if (!copy)
    return -ENOMEM;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(copy);
  if (fd < 0)
    return -errno;
  int rc = fsync(fd) == 0 ? 0 : -errno;
  close(fd);
  return rc == -EINVAL ? 0 : rc;
}

int
kg_file_write_atomic(const char *path, const void *data, size_t size, mode_t mode)
{
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 16);
  if (!tmp)
    return -ENOMEM;
  /*  Same directory as the target, so rename() is atomic; mkostemp creates
      the file 0600 with O_EXCL, and it is widened only once it is ours. */
  snprintf(tmp, plen + 16, "%s.tmp-XXXXXX", path);
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    int rc = -errno;
    free(tmp);
    return rc;
  }
  int rc = 0;
  if (fchmod(fd, mode) != 0)
    rc = -errno;
  if (rc == 0)
    rc = kg_file_write_all(fd, data, size);
  /*  Any fsync error means the data may not be on disk: never retry and
      trust it ("fsyncgate"); the caller gets the error and no file. */
  if (rc == 0 && fsync(fd) != 0)
    rc = -errno;
  if (close(fd) != 0 && rc == 0)
    rc = -errno;
  if (rc == 0 && rename(tmp, path) != 0)
    rc = -errno;
  if (rc != 0)
    unlink(tmp);
  free(tmp);
  return rc == 0 ? kg_file_sync_parent(path) : rc;
}

mode_t
kg_file_umask(void)
{
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  unsigned mask = 0;
  bool found = false;
  while (f && !found && fgets(line, sizeof line, f))
    found = sscanf(line, "Umask: %o", &mask) == 1;
  if (f)
    fclose(f);
  if (found)
    return (mode_t) mask;
  mode_t old = umask(022);
  umask(old);
  return old;
}

int
kg_file_mkdirs(const char *path, mode_t parent_mode, mode_t leaf_mode)
{
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int) sizeof tmp)
    return KG_ETOOBIG;
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(tmp, parent_mode) != 0 && errno != EEXIST)
      return -errno;
    *p = '/';
  }
  return mkdir(tmp, leaf_mode) != 0 && errno != EEXIST ? -errno : 0;
}
