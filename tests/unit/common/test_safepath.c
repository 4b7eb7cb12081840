/*  kg_safepath: which directories count as private, and how kguard opens
    the files it writes. Run as root (the project's test machine), files
    and directories of "another user" are made with chown to uid 65534. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_paths.h"
#include "kg_safepath.h"
#include "kg_test.h"

#define OTHER_UID 65534

static char s_root[64];

/*  A fresh 0700 root under /tmp (private: /tmp is sticky). */
static void
s_setup(void)
{
  snprintf(s_root, sizeof s_root, "/tmp/kgsafe-XXXXXX");
  if (!mkdtemp(s_root))
    abort();
}

static void
s_teardown(void)
{
  char cmd[256];
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", s_root, s_root);
  KG_CHECK_INT(system(cmd), 0);
}

/*  mkdir root/name with mode (exactly: chmod after), owned by uid and
    gid. */
static const char *
s_dir_g(const char *name, mode_t mode, uid_t uid, gid_t gid)
{
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", s_root, name);
  KG_CHECK_INT(mkdir(path, 0700), 0);
  KG_CHECK_INT(chown(path, uid, gid), 0);
  KG_CHECK_INT(chmod(path, mode), 0);
  return path;
}

/*  The same in group 65534 (nogroup: a group shared with others). */
static const char *
s_dir(const char *name, mode_t mode, uid_t uid)
{
  return s_dir_g(name, mode, uid, OTHER_UID);
}

KG_TEST(safepath_dir_table)
{
  if (geteuid() != 0)
    return; /* needs chown */
  s_setup();
  struct {
    const char *name;
    mode_t mode;
    uid_t uid;
    int rc;
    const char *says;
  } rows[] = {
    {"own-0700", 0700, 0, 0, NULL},
    {"own-0755", 0755, 0, 0, NULL},
    {"group-writable", 0770, 0, KG_EUNSAFEPATH, "writable by its group"},
    {"world-writable", 0777, 0, KG_EUNSAFEPATH, "writable by everyone"},
    {"sticky-world", 01777, 0, KG_EUNSAFEPATH, "writable by everyone"}, /* a leaf: never */
    {"other-owner", 0700, OTHER_UID, KG_EUNSAFEPATH, "not by you"},
  };
  char why[1024];
  /* root's own private group (group root, root's primary, no other
     member on this machine): group write is no one else's. */
  const char *upg = s_dir_g("upg-writable", 0770, 0, 0);
  KG_CHECK_INT(kg_safepath_check_dir(upg, why, sizeof why), 0);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *p = s_dir(rows[i].name, rows[i].mode, rows[i].uid);
    why[0] = '\0';
    int rc = kg_safepath_check_dir(p, why, sizeof why);
    if (rc != rows[i].rc)
      fprintf(stderr, "row %s: %d (%s)\n", rows[i].name, rc, why);
    KG_CHECK_INT(rc, rows[i].rc);
    if (rows[i].says) {
      KG_CHECK(strstr(why, rows[i].says) != NULL);
      KG_CHECK(strstr(why, p) != NULL); /* names the directory */
    }
  }
  /* A directory above that others can write: refused unless sticky. */
  const char *open_parent = s_dir("open", 0777, 0);
  char child[300];
  snprintf(child, sizeof child, "%s/mine", open_parent);
  KG_CHECK_INT(mkdir(child, 0700), 0);
  KG_CHECK_INT(kg_safepath_check_dir(child, why, sizeof why), KG_EUNSAFEPATH);
  KG_CHECK(strstr(why, "(above ") != NULL);
  KG_CHECK_INT(chmod(open_parent, 01777), 0);
  KG_CHECK_INT(kg_safepath_check_dir(child, why, sizeof why), 0);
  /* A parent owned by someone else: refused even when not writable. */
  const char *theirs = s_dir("theirs", 0755, OTHER_UID);
  snprintf(child, sizeof child, "%s/mine", theirs);
  KG_CHECK_INT(mkdir(child, 0700), 0);
  KG_CHECK_INT(kg_safepath_check_dir(child, why, sizeof why), KG_EUNSAFEPATH);
  /* A symbolic link is judged by where it leads. */
  char link[300];
  snprintf(link, sizeof link, "%s/link-to-theirs", s_root);
  KG_CHECK_INT(symlink(child, link), 0);
  KG_CHECK_INT(kg_safepath_check_dir(link, why, sizeof why), KG_EUNSAFEPATH);
  snprintf(link, sizeof link, "%s/link-to-mine", s_root);
  snprintf(child, sizeof child, "%s/own-0700", s_root);
  KG_CHECK_INT(symlink(child, link), 0);
  KG_CHECK_INT(kg_safepath_check_dir(link, why, sizeof why), 0);
  /* Missing: -ENOENT; make_dir creates it 0700 and then accepts it. */
  snprintf(child, sizeof child, "%s/new/deeper", s_root);
  KG_CHECK_INT(kg_safepath_check_dir(child, why, sizeof why), -ENOENT);
  KG_CHECK_INT(kg_safepath_make_dir(child, why, sizeof why), 0);
  struct stat st;
  KG_CHECK_INT(stat(child, &st), 0);
  KG_CHECK_INT(st.st_mode & 07777, 0700);
  s_teardown();
}

KG_TEST(safepath_open_refuses_links_and_strangers)
{
  if (geteuid() != 0)
    return;
  s_setup();
  char target[256], path[256];
  snprintf(target, sizeof target, "%s/victim", s_root);
  FILE *f = fopen(target, "w");
  fputs("precious\n", f);
  fclose(f);
  /* A symbolic link at the name: refused, the target untouched. */
  snprintf(path, sizeof path, "%s/link.log", s_root);
  KG_CHECK_INT(symlink(target, path), 0);
  KG_CHECK_INT(kg_safepath_open(path, O_APPEND, 0600), -ELOOP);
  /* A second hard link to another file: refused. */
  snprintf(path, sizeof path, "%s/hard.log", s_root);
  KG_CHECK_INT(link(target, path), 0);
  KG_CHECK_INT(kg_safepath_open(path, O_APPEND, 0600), KG_EUNSAFEPATH);
  /* Someone else's file: refused. */
  snprintf(path, sizeof path, "%s/theirs.log", s_root);
  int fd = open(path, O_CREAT | O_WRONLY, 0644);
  KG_CHECK(fd >= 0);
  close(fd);
  KG_CHECK_INT(chown(path, OTHER_UID, (gid_t) -1), 0);
  KG_CHECK_INT(kg_safepath_open(path, O_APPEND, 0600), KG_EUNSAFEPATH);
  /* None of those refusals wrote a byte through the link. */
  struct stat st;
  KG_CHECK_INT(stat(target, &st), 0);
  KG_CHECK_INT(st.st_size, 9);
  /* Our own file, left 0644 by an older version: narrowed to 0600. */
  snprintf(path, sizeof path, "%s/ours.log", s_root);
  fd = open(path, O_CREAT | O_WRONLY, 0644);
  KG_CHECK(fd >= 0);
  close(fd);
  KG_CHECK_INT(chmod(path, 0644), 0);
  fd = kg_safepath_open(path, O_APPEND, 0600);
  KG_CHECK(fd >= 0);
  KG_CHECK_INT(write(fd, "x\n", 2), 2);
  close(fd);
  KG_CHECK_INT(stat(path, &st), 0);
  KG_CHECK_INT(st.st_mode & 07777, 0600);
  FILE *a = kg_safepath_fopen_append(path, 0600);
  KG_CHECK(a != NULL);
  if (a)
    fclose(a);
  snprintf(path, sizeof path, "%s/link.log", s_root);
  KG_CHECK(kg_safepath_fopen_append(path, 0600) == NULL);
  s_teardown();
}

/*  The state directory: one someone else owns is refused with a message
    naming it and the variable that moves it; with no HOME, the passwd
    entry's home is used. */
KG_TEST(safepath_state_dir)
{
  if (geteuid() != 0)
    return;
  s_setup();
  char *old = getenv("KGUARD_STATE_DIR") ? strdup(getenv("KGUARD_STATE_DIR")) : NULL;
  const char *theirs = s_dir("their-state", 0755, OTHER_UID);
  setenv("KGUARD_STATE_DIR", theirs, 1);
  char buf[512], why[1024];
  KG_CHECK_INT(kg_paths_state_dir_why(buf, sizeof buf, why, sizeof why), KG_EUNSAFEPATH);
  KG_CHECK(strstr(why, theirs) != NULL && strstr(why, "KGUARD_STATE_DIR") != NULL);
  char mine[300];
  snprintf(mine, sizeof mine, "%s/my-state", s_root);
  setenv("KGUARD_STATE_DIR", mine, 1);
  KG_CHECK_INT(kg_paths_state_dir_why(buf, sizeof buf, why, sizeof why), 0);
  /* A link planted at logs/ (by an earlier, careless run): refused. */
  char logs[400];
  snprintf(logs, sizeof logs, "%s/logs", mine);
  KG_CHECK_INT(rmdir(logs), 0);
  KG_CHECK_INT(symlink("/tmp", logs), 0);
  KG_CHECK_INT(kg_paths_state_dir_why(buf, sizeof buf, why, sizeof why), KG_EUNSAFEPATH);
  if (old) {
    setenv("KGUARD_STATE_DIR", old, 1);
    free(old);
  } else {
    unsetenv("KGUARD_STATE_DIR");
  }
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(safepath_dir_table), KG_CASE(safepath_open_refuses_links_and_strangers),
             KG_CASE(safepath_state_dir))
