/*  kg_safepath: private directories and files opened without following links. */
#include "kg_safepath.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_file.h"

/*  "uid N (name)" of uid into buf. */
static const char *
s_who(uid_t uid, char *buf, size_t len)
{
  struct passwd pw, *res = NULL;
  char tmp[1024];
  if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
    snprintf(buf, len, "uid %u (%s)", (unsigned) uid, res->pw_name);
  else
    snprintf(buf, len, "uid %u", (unsigned) uid);
  return buf;
}

/*  True if gid is owner's private group: its primary group, named as the
    user, listing no other member (a user private group, Debian's default:
    umask 002 makes directories group-writable for nobody but their
    owner). As OpenSSH accepts for its own files. */
static bool
s_private_group(uid_t owner, gid_t gid)
{
  struct passwd pw, *pres = NULL;
  struct group gr, *gres = NULL;
  char pbuf[2048], gbuf[8192];
  if (getpwuid_r(owner, &pw, pbuf, sizeof pbuf, &pres) != 0 || !pres || pw.pw_gid != gid
      || getgrgid_r(gid, &gr, gbuf, sizeof gbuf, &gres) != 0 || !gres
      || strcmp(gr.gr_name, pw.pw_name) != 0)
    return false;
  for (char **m = gr.gr_mem; m && *m; m++)
    if (strcmp(*m, pw.pw_name) != 0)
      return false;
  return true;
}

/*  One directory of the checked path: leaf is the directory itself, else
    a directory above it. */
static int
s_check_one(const char *path, const char *shown, bool leaf, char *why, size_t whylen)
{
  struct stat st;
  if (lstat(path, &st) != 0) {
    int e = errno;
    kg_errf(why, whylen, "%s: %s", path, strerror(e));
    return -e;
  }
  if (!S_ISDIR(st.st_mode)) {
    kg_errf(why, whylen, "%s is not a directory", path);
    return -ENOTDIR;
  }
  uid_t me = geteuid();
  char who[300], mine[300];
  if (st.st_uid != me && st.st_uid != 0) {
    kg_errf(why, whylen, "%s%s%s%s is owned by %s, not by you (%s): another user could swap "
            "what kguard keeps there; remove it, or use a directory of your own",
            path, leaf ? "" : " (above ", leaf ? "" : shown, leaf ? "" : ")",
            s_who(st.st_uid, who, sizeof who),
            s_who(me, mine, sizeof mine));
    return KG_EUNSAFEPATH;
  }
  mode_t w = st.st_mode & (S_IWGRP | S_IWOTH);
  if (w == S_IWGRP && s_private_group(st.st_uid, st.st_gid))
    w = 0;
  if (w && (leaf || !(st.st_mode & S_ISVTX))) {
    kg_errf(why, whylen, "%s%s%s%s is writable by %s (mode %04o): another user could swap "
            "what kguard keeps there; `chmod go-w %s`, or use a directory of your own",
            path, leaf ? "" : " (above ", leaf ? "" : shown, leaf ? "" : ")",
            (w & S_IWOTH) ? "everyone" : "its group", (unsigned) (st.st_mode & 07777), path);
    return KG_EUNSAFEPATH;
  }
  return 0;
}

int
kg_safepath_check_dir(const char *dir, char *why, size_t whylen)
{
  char *real = realpath(dir, NULL);
  if (!real) {
    int e = errno;
    kg_errf(why, whylen, "%s: %s", dir, strerror(e));
    return -e;
  }
  int rc = s_check_one(real, dir, true, why, whylen);
  /* Every directory above, from the nearest up to the root. */
  size_t n = strlen(real);
  while (rc == 0 && n > 1) {
    while (n > 1 && real[n - 1] != '/')
      n--;
    if (n > 1)
      n--;                      /* drop the slash, except the root's */
    char saved = real[n];
    real[n] = '\0';
    rc = s_check_one(n ? real : "/", dir, false, why, whylen);
    real[n] = saved;
    if (n == 1)
      break;
  }
  free(real);
  return rc;
}

int
kg_safepath_make_dir(const char *dir, char *why, size_t whylen)
{
  int rc = kg_file_mkdirs(dir, 0700, 0700);
  if (rc != 0) {
    kg_errf(why, whylen, "cannot create %s: %s", dir, kg_strerror(rc));
    return rc;
  }
  return kg_safepath_check_dir(dir, why, whylen);
}

int
kg_safepath_open(const char *path, int flags, mode_t mode)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, mode);
  if (fd < 0)
    return -errno;
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0)
    rc = -errno;
  else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1)
    rc = KG_EUNSAFEPATH;
  else if ((st.st_mode & 07777 & ~mode) && fchmod(fd, mode) != 0)
    rc = -errno;
  if (rc != 0) {
    close(fd);
    return rc;
  }
  return fd;
}

FILE *
kg_safepath_fopen_append(const char *path, mode_t mode)
{
  int fd = kg_safepath_open(path, O_APPEND, mode);
  if (fd < 0) {
    errno = fd == KG_EUNSAFEPATH ? EPERM : -fd;
    return NULL;
  }
  FILE *f = fdopen(fd, "a");
  if (!f) {
    int e = errno;
    close(fd);
    errno = e;
    return NULL;
  }
  setvbuf(f, NULL, _IOLBF, 0);
  return f;
}
