/*  kg_paths: state, data and runtime directories. */
#include "kg_paths.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_file.h"

#ifndef KGUARD_SOURCE_DIR
#define KGUARD_SOURCE_DIR "."
#endif

/*  buf = a + sep + b, checked for truncation. */
static int
s_fmt(char *buf, size_t len, const char *a, const char *sep, const char *b)
{
  int n = snprintf(buf, len, "%s%s%s", a, sep, b);
  return (n < 0 || (size_t) n >= len) ? KG_ETOOBIG : 0;
}

static int
s_is_dir(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int
kg_paths_mkdirs(const char *path, unsigned mode)
{
  return kg_file_mkdirs(path, (mode_t) mode, (mode_t) mode);
}

int
kg_paths_exe(char *buf, size_t len)
{
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n < 0)
    return -errno;
  if ((size_t) n >= len - 1)
    return KG_ETOOBIG;
  buf[n] = '\0';
  return 0;
}

int
kg_paths_state_dir(char *buf, size_t len)
{
  const char *env = getenv("KGUARD_STATE_DIR");
  const char *xdg = getenv("XDG_STATE_HOME");
  const char *home = getenv("HOME");
  int rc;
  if (env && *env)
    rc = s_fmt(buf, len, env, "", "");
  else if (xdg && *xdg)
    rc = s_fmt(buf, len, xdg, "/", "kguard");
  else if (home && *home)
    rc = s_fmt(buf, len, home, "/", ".local/state/kguard");
  else
    rc = s_fmt(buf, len, "/tmp", "/", "kguard-state");
  if (rc)
    return rc;
  if ((rc = kg_paths_mkdirs(buf, 0700)))
    return rc;
  static const char *subs[] = {"logs", "incidents", "restored"};
  for (size_t i = 0; i < 3; i++) {
    char sub[PATH_MAX];
    if ((rc = s_fmt(sub, sizeof sub, buf, "/", subs[i])))
      return rc;
    if (mkdir(sub, 0700) != 0 && errno != EEXIST)
      return -errno;
  }
  return 0;
}

int
kg_paths_data_dir(char *buf, size_t len)
{
  const char *env = getenv("KGUARD_DATADIR");
  if (env && *env)
    return s_fmt(buf, len, env, "", "");
  char exe[PATH_MAX];
  if (kg_paths_exe(exe, sizeof exe) == 0) {
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      char cand[PATH_MAX];
      if (s_fmt(cand, sizeof cand, exe, "/", "../share/kguard") == 0 && s_is_dir(cand)) {
        char *real = realpath(cand, NULL);
        int rc = s_fmt(buf, len, real ? real : cand, "", "");
        free(real);
        return rc;
      }
    }
  }
  int rc = s_fmt(buf, len, KGUARD_SOURCE_DIR, "", "");
  if (rc)
    return rc;
  return s_is_dir(buf) ? 0 : KG_ENOTFOUND;
}

int
kg_paths_python_dir(char *buf, size_t len)
{
  char data[PATH_MAX];
  int rc = kg_paths_data_dir(data, sizeof data);
  if (rc)
    return rc;
  if ((rc = s_fmt(buf, len, data, "/", "python")))
    return rc;
  return s_is_dir(buf) ? 0 : KG_ENOTFOUND;
}

int
kg_paths_rules_file(char *buf, size_t len)
{
  char data[PATH_MAX];
  int rc = kg_paths_data_dir(data, sizeof data);
  if (rc)
    return rc;
  if ((rc = s_fmt(buf, len, data, "/", "rules/gpu-errors.json")))
    return rc;
  if (access(buf, R_OK) == 0)
    return 0;
  if ((rc = s_fmt(buf, len, data, "/", "supervisor/rules/gpu-errors.json")))
    return rc;
  return access(buf, R_OK) == 0 ? 0 : KG_ENOTFOUND;
}

int
kg_paths_runtime_dir(char *buf, size_t len)
{
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  int rc = KG_ENOTFOUND;
  if (xdg && *xdg && s_is_dir(xdg) && access(xdg, W_OK) == 0
      && strlen(xdg) < 60) {   /* unix socket paths are limited to 107 bytes */
    if ((rc = s_fmt(buf, len, xdg, "/", "kguard-XXXXXX")))
      return rc;
    if (mkdtemp(buf))
      return 0;
  }
  if ((rc = s_fmt(buf, len, "/tmp", "/", "kguard-XXXXXX")))
    return rc;
  if (!mkdtemp(buf))
    return -errno;
  return 0;   /* mkdtemp creates it 0700 */
}

int
kg_paths_remove_tree(const char *dir)
{
  DIR *d = opendir(dir);
  if (!d)
    return errno == ENOENT ? 0 : -errno;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char p[PATH_MAX];
    if (s_fmt(p, sizeof p, dir, "/", e->d_name) == 0)
      unlink(p);
  }
  closedir(d);
  return rmdir(dir) == 0 ? 0 : -errno;
}
