/*  kg_paths: state, data and runtime directories. */
#include "kg_paths.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"
#include "kg_safepath.h"

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
kg_paths_home(char *buf, size_t len)
{
  const char *home = getenv("HOME");
  if (home && *home)
    return s_fmt(buf, len, home, "", "");
  struct passwd pw, *res = NULL;
  char tmp[2048];
  if (getpwuid_r(geteuid(), &pw, tmp, sizeof tmp, &res) == 0 && res && res->pw_dir
      && res->pw_dir[0] == '/' && strcmp(res->pw_dir, "/") != 0 && s_is_dir(res->pw_dir))
    return s_fmt(buf, len, res->pw_dir, "", "");
  return KG_ENOTFOUND;
}

int
kg_paths_state_dir_name(char *buf, size_t len)
{
  const char *env = getenv("KGUARD_STATE_DIR");
  const char *xdg = getenv("XDG_STATE_HOME");
  char home[PATH_MAX];
  if (env && *env)
    return s_fmt(buf, len, env, "", "");
  if (xdg && *xdg)
    return s_fmt(buf, len, xdg, "/", "kguard");
  if (kg_paths_home(home, sizeof home) == 0)
    return s_fmt(buf, len, home, "/", ".local/state/kguard");
  /* No home at all (a service account without one): per user, in /tmp. */
  char tail[64];
  snprintf(tail, sizeof tail, "kguard-state-%u", (unsigned) geteuid());
  return s_fmt(buf, len, "/tmp", "/", tail);
}

int
kg_paths_state_dir_why(char *buf, size_t len, char *why, size_t whylen)
{
  int rc = kg_paths_state_dir_name(buf, len);
  if (rc) {
    kg_errf(why, whylen, "the state directory's path is too long");
    return rc;
  }
  char sub[PATH_MAX];
  if ((rc = kg_safepath_make_dir(buf, sub, sizeof sub)) != 0) {
    kg_errf(why, whylen, "state directory: %s%s", sub,
            rc == KG_EUNSAFEPATH ? " (or set KGUARD_STATE_DIR)" : "");
    return rc;
  }
  static const char *subs[] = {"logs", "incidents", "restored"};
  for (size_t i = 0; i < 3; i++) {
    struct stat st;
    if ((rc = s_fmt(sub, sizeof sub, buf, "/", subs[i])))
      return rc;
    if (mkdir(sub, 0700) != 0 && errno != EEXIST) {
      rc = -errno;
      kg_errf(why, whylen, "cannot create %s: %s", sub, strerror(errno));
      return rc;
    }
    /* Inside a private directory only the user (or root) made it; a link
       or a directory of someone else's is still refused. */
    if (lstat(sub, &st) != 0 || !S_ISDIR(st.st_mode)
        || (st.st_uid != geteuid() && st.st_uid != 0)) {
      kg_errf(why, whylen, "%s is not a directory of yours: remove it", sub);
      return KG_EUNSAFEPATH;
    }
  }
  return 0;
}

int
kg_paths_state_dir(char *buf, size_t len)
{
  char why[PATH_MAX + 256];
  int rc = kg_paths_state_dir_why(buf, len, why, sizeof why);
  if (rc)
    kg_error("%s", why);
  return rc;
}

/*  <dir of the executable>/../share/kguard into buf when it is a
    directory: 0, else KG_ENOTFOUND. */
static int
s_installed_data_dir(char *buf, size_t len)
{
  char exe[PATH_MAX];
  if (kg_paths_exe(exe, sizeof exe) != 0)
    return KG_ENOTFOUND;
  char *slash = strrchr(exe, '/');
  if (!slash)
    return KG_ENOTFOUND;
  *slash = '\0';
  char cand[PATH_MAX];
  if (s_fmt(cand, sizeof cand, exe, "/", "../share/kguard") != 0 || !s_is_dir(cand))
    return KG_ENOTFOUND;
  char *real = realpath(cand, NULL);
  int rc = s_fmt(buf, len, real ? real : cand, "", "");
  free(real);
  return rc;
}

int
kg_paths_installed(void)
{
  char buf[PATH_MAX];
  return s_installed_data_dir(buf, sizeof buf) == 0;
}

int
kg_paths_data_dir(char *buf, size_t len)
{
  const char *env = getenv("KGUARD_DATADIR");
  if (env && *env)
    return s_fmt(buf, len, env, "", "");
  if (s_installed_data_dir(buf, len) == 0)
    return 0;
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

/*  The install's prefix (the data dir's ../..) into buf: 0, or
    KG_ENOTFOUND in a build tree. */
static int
s_install_prefix(char *buf, size_t len)
{
  char data[PATH_MAX];
  if (s_installed_data_dir(data, sizeof data) != 0)
    return KG_ENOTFOUND;
  /* realpath'd: strip "/share/kguard" */
  char *slash = strrchr(data, '/');
  if (slash)
    *slash = '\0';
  slash = strrchr(data, '/');
  if (!slash)
    return KG_ENOTFOUND;
  *slash = '\0';
  return s_fmt(buf, len, *data ? data : "/", "", "");
}

const char *
kg_paths_install_kind(char *prefix, size_t len)
{
  if (s_install_prefix(prefix, len) != 0) {
    if (len)
      prefix[0] = '\0';
    return "build tree";
  }
  char path[PATH_MAX];
  char kind[64] = "";
  if (s_fmt(path, sizeof path, prefix, "/", "share/kguard/install-kind") == 0) {
    FILE *f = fopen(path, "re");
    if (f) {
      if (!fgets(kind, sizeof kind, f))
        kind[0] = '\0';
      fclose(f);
    }
  }
  if (strncmp(kind, "wheel", 5) == 0)
    return "wheel (pip)";
  /* dpkg's own list of the package's files: present while it is installed */
  if (strcmp(prefix, "/usr") == 0 && access("/var/lib/dpkg/info/kguard.list", F_OK) == 0)
    return "Debian package";
  return "cmake --install";
}

int
kg_paths_env_prefix(char *buf, size_t len)
{
  char prefix[PATH_MAX], probe[PATH_MAX];
  if (s_install_prefix(prefix, sizeof prefix) != 0)
    return KG_ENOTFOUND;
  const char *marks[] = {"pyvenv.cfg", "conda-meta"};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (s_fmt(probe, sizeof probe, prefix, "/", marks[i]) == 0 && access(probe, F_OK) == 0)
      return s_fmt(buf, len, prefix, "", "");
  return KG_ENOTFOUND;
}

/*  Runtime dirs of a kguard that died without cleaning up (SIGKILL, a
    crash) would pile up, each holding a connection file with a key.

    Liveness is a lock, not a pid: each dir holds "lock", a file its
    creator keeps write-locked (a POSIX record lock) for its whole life.
    The kernel releases such a lock when the process ends however it ends,
    and a fork does not inherit it (the keeper and the kernel never hold
    it), so "lock exists and nobody holds it" means the owner is gone:
    even when it was killed before or while writing its "owner" record,
    and whatever process now has its pid. "lock" appears only already
    locked: it is locked under a temporary name and hard-linked into place.

    Dirs of kguard versions from before the lock have only "owner" (a pid):
    removed when that pid no longer exists. A dir with neither that is
    empty (its creator died between mkdtemp and the lock) is removed after
    a minute. Dirs of another user, or of this very process (POSIX locks do
    not conflict within one process), are left alone. */
#define S_LOCK_NAME "lock"
#define S_EMPTY_GRACE_S 60

/*  The lock of the dir this process made (kept open for its life: closing
    any fd of the file would drop a POSIX lock). */
static int s_lock_fd = -1;

/*  Try to write-lock dir's lock file. 1: locked (nobody held it; *fd_out
    open, the caller closes it, which unlocks), 0: held by a live process,
    -1: no lock file (or unreadable). */
static int
s_try_lock(const char *dir, int *fd_out)
{
  char path[PATH_MAX];
  if (s_fmt(path, sizeof path, dir, "/", S_LOCK_NAME))
    return -1;
  int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return -1;
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  if (fcntl(fd, F_SETLK, &fl) != 0) {
    close(fd);
    return (errno == EACCES || errno == EAGAIN) ? 0 : -1;
  }
  *fd_out = fd;
  return 1;
}

/*  The pid in dir's owner record, or 0 when it has none or it is not a
    number. */
static long
s_owner_pid(const char *dir)
{
  char owner[PATH_MAX];
  char *text = NULL;
  size_t size = 0;
  if (s_fmt(owner, sizeof owner, dir, "/", "owner") || kg_file_read(owner, 32, &text, &size))
    return 0;
  char *end = NULL;
  long pid = strtol(text, &end, 10);
  free(text);
  return end != text && pid > 0 ? pid : 0;
}

/*  True if dir has no entries but . and .. */
static bool
s_dir_empty(const char *dir)
{
  DIR *d = opendir(dir);
  if (!d)
    return false;
  struct dirent *e;
  bool empty = true;
  while (empty && (e = readdir(d)))
    empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
  closedir(d);
  return empty;
}

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
    char dir[PATH_MAX];
    if (s_fmt(dir, sizeof dir, parent, "/", e->d_name))
      continue;
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
      continue;
    long pid = s_owner_pid(dir);
    if (pid == (long) getpid())
      continue;
    int fd = -1;
    int lock = s_try_lock(dir, &fd);
    const char *why = NULL;
    if (lock == 1)
      why = "its lock is free";
    else if (lock < 0 && pid > 0 && kill((pid_t) pid, 0) != 0 && errno == ESRCH)
      why = "its owner pid is gone";
    else if (lock < 0 && pid == 0 && s_dir_empty(dir)
             && time(NULL) - st.st_mtime > S_EMPTY_GRACE_S)
      why = "empty and ownerless for a minute";
    if (why) {
      kg_info("removing the runtime directory %s of a kguard that is gone (%s)", dir, why);
      kg_paths_remove_tree(dir);   /* while holding the lock */
    }
    if (fd >= 0)
      close(fd);
  }
  closedir(d);
}

/*  Create dir's lock file already locked (see s_reap_stale): locked under
    a temporary name, then linked into place. Returns the open, locked fd,
    or -errno. */
static int
s_make_lock(const char *dir)
{
  char tmp[PATH_MAX], path[PATH_MAX];
  if (s_fmt(tmp, sizeof tmp, dir, "/", ".lock-XXXXXX")
      || s_fmt(path, sizeof path, dir, "/", S_LOCK_NAME))
    return KG_ETOOBIG;
  int fd = mkostemp(tmp, O_CLOEXEC);   /* 0600 */
  if (fd < 0)
    return -errno;
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  int rc = 0;
  if (fcntl(fd, F_SETLK, &fl) != 0 || link(tmp, path) != 0)
    rc = -errno;
  unlink(tmp);
  if (rc) {
    close(fd);
    return rc;
  }
  return fd;
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
  int fd = s_make_lock(buf);
  if (fd < 0) {
    kg_paths_remove_tree(buf);
    return fd;
  }
  if (s_lock_fd >= 0)
    close(s_lock_fd);   /* a second runtime dir: the first one's owner goes */
  s_lock_fd = fd;
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
  char why[PATH_MAX + 256];
  if (xdg && *xdg && s_is_dir(xdg) && access(xdg, W_OK) == 0
      && strlen(xdg) < 60) {  /* unix socket paths are limited to 107 bytes */
    /* The XDG spec makes it the user's own 0700 directory; one that is not
       is not used (a new private one in /tmp is, made by mkdtemp). */
    if (kg_safepath_check_dir(xdg, why, sizeof why) != 0)
      kg_warning("not using XDG_RUNTIME_DIR: %s", why);
    else if (s_make_runtime_dir(buf, len, xdg) == 0)
      return 0;
  }
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
