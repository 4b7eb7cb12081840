/*  kg_outpath: checking an output path before a run (see kg_outpath.h). */
#include "kg_outpath.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"

int
kg_outpath_check(const char *path, char *err, size_t errlen)
{
  struct stat st;
  if (path[0] == '\0') {
    kg_errf(err, errlen, "an empty path");
    return -ENOENT;
  }
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    kg_errf(err, errlen, "is a directory; name the notebook file to write, "
            "e.g. %s%sout.ipynb", path, path[strlen(path) - 1] == '/' ? "" : "/");
    return -EISDIR;
  }
  char *copy = strdup(path);
  if (!copy)
    return -ENOMEM;
  const char *dir = dirname(copy);
  int rc = 0;
  if (stat(dir, &st) != 0)
    rc = -errno;
  else if (!S_ISDIR(st.st_mode))
    rc = -ENOTDIR;
  if (rc != 0) {
    if (rc == -ENOENT)
      kg_errf(err, errlen, "the directory %s does not exist (create it first)", dir);
    else if (rc == -ENOTDIR)
      kg_errf(err, errlen, "%s is not a directory", dir);
    else
      kg_errf(err, errlen, "cannot use the directory %s: %s", dir, strerror(-rc));
    free(copy);
    return rc;
  }
  size_t n = strlen(path) + 16;
  char *probe = malloc(n);
  if (!probe) {
    free(copy);
    return -ENOMEM;
  }
  snprintf(probe, n, "%s.tmp-XXXXXX", path);
  int fd = mkostemp(probe, O_CLOEXEC);
  if (fd < 0) {
    rc = -errno;
    kg_errf(err, errlen, "cannot create a file in %s: %s", dir, strerror(errno));
  }
  else {
    close(fd);
    unlink(probe);
  }
  free(probe);
  free(copy);
  return rc;
}
