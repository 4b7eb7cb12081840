/*  kg_paths: state, data and runtime directories. */
#include "kg_paths.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"

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

/*  Runtime dirs of a kguard that died without cleaning up (SIGKILL, a
    crash) would pile up, each holding a connection file with a key. Each
    dir records its owner's pid in "owner"; a dir of ours whose owner no
    longer exists is removed. Dirs without an owner file, of another user,
    or whose owner is alive (or whose pid was reused) are left alone. */
static void
s_reap_stale(const char *parent)
{
  DIR *d = opendir(parent);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "kguard-", 7) != 0 || strlen(e->d_name) != 13)
      continue;
    char dir[PATH_MAX], owner[PATH_MAX];
    if (s_fmt(dir, sizeof dir, parent, "/", e->d_name)
        || s_fmt(owner, sizeof owner, dir, "/", "owner"))
      continue;
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
      continue;
    char *text = NULL;
    size_t size = 0;
    if (kg_file_read(owner, 32, &text, &size) != 0)
      continue;
    char *end = NULL;
    long pid = strtol(text, &end, 10);
    bool valid = end != text && pid > 0;
    free(text);
    if (valid && kill((pid_t) pid, 0) != 0 && errno == ESRCH) {
      kg_info("removing the runtime directory %s of kguard %ld, which is gone", dir, pid);
      kg_paths_remove_tree(dir);
    }
  }
  closedir(d);
}

static int
s_make_runtime_dir(char *buf, size_t len, const char *parent)
{
  int rc = s_fmt(buf, len, parent, "/", "kguard-XXXXXX");
  if (rc)
    return rc;
  s_reap_stale(parent);
  if (!mkdtemp(buf))   /* 0700 */
    return -errno;
  char owner[PATH_MAX], pid[24];
  int n = snprintf(pid, sizeof pid, "%ld\n", (long) getpid());
  if (s_fmt(owner, sizeof owner, buf, "/", "owner") == 0)
    kg_file_write_atomic(owner, pid, (size_t) n, 0600);
  return 0;
}

int
kg_paths_runtime_dir(char *buf, size_t len)
{
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg && *xdg && s_is_dir(xdg) && access(xdg, W_OK) == 0
      && strlen(xdg) < 60   /* unix socket paths are limited to 107 bytes */
      && s_make_runtime_dir(buf, len, xdg) == 0)
    return 0;
  return s_make_runtime_dir(buf, len, "/tmp");
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
