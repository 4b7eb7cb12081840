/*  kg_snapdir: the memory directory of a run's snapshots is private, lives
    as long as its owner's lock, and a new owner removes those whose owner
    is gone (decided by the lock, never by a pid). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_snapdir.h"
#include "kg_test.h"

/*  A fresh BASE for the test, in KGUARD_SNAPSHOT_BASE. */
static void
s_base(char *base)
{
  KG_CHECK(mkdtemp(base) != NULL);
  setenv("KGUARD_SNAPSHOT_BASE", base, 1);
}

static void
s_remove(const char *base)
{
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  KG_CHECK_INT(system(cmd), 0);
  unsetenv("KGUARD_SNAPSHOT_BASE");
}

static bool
s_is_dir(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

KG_TEST(snapdir_private_and_removed_with_its_owner)
{
  char base[] = "/tmp/kgsnap-XXXXXX", why[512] = "";
  s_base(base);
  kg_snapdir_t *d = kg_snapdir_new("my run/1", why, sizeof why);
  KG_CHECK(d != NULL);
  char want[600];
  snprintf(want, sizeof want, "%s/kguard-%u/my_run_1.%ld", base, (unsigned) getuid(),
           (long) getpid());
  KG_CHECK_STR(kg_snapdir_path(d), want);
  struct stat st;
  KG_CHECK_INT(stat(kg_snapdir_path(d), &st), 0);
  KG_CHECK_INT((int) (st.st_mode & 0777), 0700);
  char path[700];
  snprintf(path, sizeof path, "%s/kguard-%u", base, (unsigned) getuid());
  KG_CHECK_INT(stat(path, &st), 0);
  KG_CHECK_INT((int) (st.st_mode & 0777), 0700);
  snprintf(path, sizeof path, "%s/snapshot.tar", want);
  FILE *f = fopen(path, "w");
  KG_CHECK(f != NULL);
  fputs("state", f);
  fclose(f);
  kg_snapdir_destroy(&d);
  KG_CHECK(d == NULL);
  KG_CHECK(!s_is_dir(want));
  s_remove(base);
}

/*  An owner that died without cleaning up (here: _exit without destroy,
    as SIGKILL would) leaves its directory; the next owner removes it and
    says whose it was. A live owner's directory is left alone. */
KG_TEST(snapdir_reaps_a_dead_owner_keeps_a_live_one)
{
  char base[] = "/tmp/kgsnap-XXXXXX", why[512] = "";
  s_base(base);
  kg_snapdir_t *live = kg_snapdir_new("live", why, sizeof why);
  KG_CHECK(live != NULL);
  pid_t child = fork();
  if (child == 0) {
    char w[512];
    kg_snapdir_t *dead = kg_snapdir_new("dead", w, sizeof w);
    _exit(dead ? 0 : 1);
  }
  int status = 0;
  KG_CHECK(waitpid(child, &status, 0) == child);
  KG_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char dead_path[600];
  snprintf(dead_path, sizeof dead_path, "%s/kguard-%u/dead.%ld", base, (unsigned) getuid(),
           (long) child);
  KG_CHECK(s_is_dir(dead_path));
  kg_snapdir_t *next = kg_snapdir_new("next", why, sizeof why);
  KG_CHECK(next != NULL);
  long pid = 0;
  KG_CHECK_INT((int) kg_snapdir_reaped(next, &pid), 1);
  KG_CHECK_INT((int) pid, (int) child);
  KG_CHECK(!s_is_dir(dead_path));
  KG_CHECK(s_is_dir(kg_snapdir_path(live)));
  kg_snapdir_destroy(&next);
  kg_snapdir_destroy(&live);
  s_remove(base);
}

/*  BASE is usually world-writable (/dev/shm): a kguard-<uid> that others
    can write (or that is somebody else's) is refused, naming it, never
    used; a BASE that is not a directory says how to choose another. */
KG_TEST(snapdir_refuses_a_shared_user_dir)
{
  char base[] = "/tmp/kgsnap-XXXXXX", why[512] = "";
  s_base(base);
  char user[600];
  snprintf(user, sizeof user, "%s/kguard-%u", base, (unsigned) getuid());
  KG_CHECK_INT(mkdir(user, 0700), 0);
  KG_CHECK_INT(chmod(user, 0777), 0);
  KG_CHECK(kg_snapdir_new("r", why, sizeof why) == NULL);
  KG_CHECK(strstr(why, "not a private directory") != NULL);
  KG_CHECK(strstr(why, user) != NULL);
  s_remove(base);
  setenv("KGUARD_SNAPSHOT_BASE", "/nonexistent/kguard-base", 1);
  KG_CHECK(kg_snapdir_new("r", why, sizeof why) == NULL);
  KG_CHECK(strstr(why, "KGUARD_SNAPSHOT_BASE") != NULL);
  unsetenv("KGUARD_SNAPSHOT_BASE");
}

KG_TEST(snapdir_base_from_the_environment)
{
  setenv("KGUARD_SNAPSHOT_BASE", "/mnt/ram", 1);
  KG_CHECK_STR(kg_snapdir_base(), "/mnt/ram");
  setenv("KGUARD_SNAPSHOT_BASE", "", 1);   /* empty is unset, as for kg_snapdir_new */
  KG_CHECK_STR(kg_snapdir_base(), "/dev/shm");
  unsetenv("KGUARD_SNAPSHOT_BASE");
  KG_CHECK_STR(kg_snapdir_base(), "/dev/shm");
}

KG_TEST_MAIN(KG_CASE(snapdir_private_and_removed_with_its_owner),
             KG_CASE(snapdir_reaps_a_dead_owner_keeps_a_live_one),
             KG_CASE(snapdir_refuses_a_shared_user_dir),
             KG_CASE(snapdir_base_from_the_environment))
