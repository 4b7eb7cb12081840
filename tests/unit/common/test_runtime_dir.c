/*  kg_paths_runtime_dir: a new kguard's private runtime dir, and the
    reaping of dirs whose owner is gone (decided by the owner's lock, not
    its pid). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kg_paths.h"
#include "kg_test.h"

/*  Give XDG_RUNTIME_DIR back the value a test found (old, which is freed;
    NULL: it was unset) and remove the test's parent dir. */
static void
s_restore_and_remove(char *old, const char *parent)
{
  if (old) {
    setenv("XDG_RUNTIME_DIR", old, 1);
    free(old);
  } else
    unsetenv("XDG_RUNTIME_DIR");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", parent);
  KG_CHECK_INT(system(cmd), 0);
}

/*  A runtime dir whose owner is gone (a kguard killed with SIGKILL) is
    removed when the next one is made; live owners, dirs without an owner
    file and unrelated names are left alone. */
static void
s_fake_runtime_dir(const char *parent, const char *name, long owner_pid)
{
  char dir[512], file[600];
  snprintf(dir, sizeof dir, "%s/%s", parent, name);
  KG_CHECK_INT(mkdir(dir, 0700), 0);
  snprintf(file, sizeof file, "%s/kernel.json", dir);
  FILE *f = fopen(file, "w");
  fputs("{}", f);
  fclose(f);
  if (owner_pid > 0) {
    snprintf(file, sizeof file, "%s/owner", dir);
    f = fopen(file, "w");
    fprintf(f, "%ld\n", owner_pid);
    fclose(f);
  }
}

static bool
s_exists(const char *parent, const char *name)
{
  char path[512];
  snprintf(path, sizeof path, "%s/%s", parent, name);
  struct stat st;
  return stat(path, &st) == 0;
}

KG_TEST(runtime_dir_reaps_stale)
{
  char parent[] = "/tmp/kgrt-XXXXXX";
  KG_CHECK(mkdtemp(parent) != NULL);
  pid_t dead = fork();
  if (dead == 0)
    _exit(0);
  KG_CHECK(waitpid(dead, NULL, 0) == dead);   /* reaped: its pid is free */
  s_fake_runtime_dir(parent, "kguard-DEAD01", (long) dead);
  s_fake_runtime_dir(parent, "kguard-ALIVE1", (long) getpid());
  s_fake_runtime_dir(parent, "kguard-NOOWNR", 0);
  s_fake_runtime_dir(parent, "other-DEAD002", (long) dead);
  char *old = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
  setenv("XDG_RUNTIME_DIR", parent, 1);
  char made[512];
  KG_CHECK_INT(kg_paths_runtime_dir(made, sizeof made), 0);
  KG_CHECK(strncmp(made, parent, strlen(parent)) == 0);
  KG_CHECK(!s_exists(parent, "kguard-DEAD01"));
  KG_CHECK(s_exists(parent, "kguard-ALIVE1"));
  KG_CHECK(s_exists(parent, "kguard-NOOWNR"));
  KG_CHECK(s_exists(parent, "other-DEAD002"));
  char owner[600];
  snprintf(owner, sizeof owner, "%s/owner", made);
  FILE *f = fopen(owner, "r");
  long pid = 0;
  KG_CHECK(f && fscanf(f, "%ld", &pid) == 1);
  if (f)
    fclose(f);
  KG_CHECK_INT(pid, getpid());
  s_restore_and_remove(old, parent);
}

/*  Make a runtime dir in a child under parent; its path comes back on a
    pipe. mode 0: the child then waits until *wait_w closes (alive);
    1: it removes its owner record and is SIGKILLed (killed mid-write of
    that record: the dir is ownerless); 2: like 0, but its owner record
    names a pid that is gone (a lock outranks a pid). */
static int s_holds[8], s_n_holds;

static pid_t
s_child_runtime_dir(const char *parent, int mode, char *made, size_t len, int *wait_w)
{
  int out[2], hold[2];
  KG_CHECK_INT(pipe(out), 0);
  KG_CHECK_INT(pipe(hold), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(out[0]);
    close(hold[1]);
    for (int i = 0; i < s_n_holds; i++)
      close(s_holds[i]);   /* the other children's: they must see EOF */
    setenv("XDG_RUNTIME_DIR", parent, 1);
    char dir[512];
    if (kg_paths_runtime_dir(dir, sizeof dir) != 0)
      _exit(1);
    char owner[600];
    snprintf(owner, sizeof owner, "%s/owner", dir);
    if (mode == 1)
      unlink(owner);
    if (mode == 2) {
      FILE *f = fopen(owner, "w");
      fprintf(f, "999999999\n");
      fclose(f);
    }
    if (write(out[1], dir, strlen(dir) + 1) < 0)
      _exit(1);
    close(out[1]);
    if (mode == 1)
      raise(SIGKILL);
    char c;
    while (read(hold[0], &c, 1) > 0) {
    }
    _exit(0);
  }
  close(out[1]);
  close(hold[0]);
  size_t got = 0;
  ssize_t n;
  while (got < len && (n = read(out[0], made + got, len - got)) > 0)
    got += (size_t) n;
  close(out[0]);
  KG_CHECK(got > 0 && made[got - 1] == '\0');
  *wait_w = hold[1];
  if (s_n_holds < 8)
    s_holds[s_n_holds++] = hold[1];
  return pid;
}

KG_TEST(runtime_dir_lock_decides)
{
  char parent[] = "/tmp/kgrt-XXXXXX";
  KG_CHECK(mkdtemp(parent) != NULL);
  char alive[512], killed[512], reused[512];
  int hold_alive, hold_killed, hold_reused;
  pid_t a = s_child_runtime_dir(parent, 0, alive, sizeof alive, &hold_alive);
  pid_t r = s_child_runtime_dir(parent, 2, reused, sizeof reused, &hold_reused);
  pid_t k = s_child_runtime_dir(parent, 1, killed, sizeof killed, &hold_killed);
  int status;
  KG_CHECK(waitpid(k, &status, 0) == k && WIFSIGNALED(status));
  close(hold_killed);
  /* empty, ownerless dirs: one from long ago, one just made */
  char old_empty[600], new_empty[600];
  snprintf(old_empty, sizeof old_empty, "%s/kguard-EMPTY1", parent);
  snprintf(new_empty, sizeof new_empty, "%s/kguard-EMPTY2", parent);
  KG_CHECK_INT(mkdir(old_empty, 0700), 0);
  KG_CHECK_INT(mkdir(new_empty, 0700), 0);
  struct timespec then[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
  KG_CHECK_INT(utimensat(AT_FDCWD, old_empty, then, 0), 0);
  struct stat st;
  KG_CHECK(stat(killed, &st) == 0);
  char owner[600];
  snprintf(owner, sizeof owner, "%s/owner", killed);
  KG_CHECK(access(owner, F_OK) != 0);   /* ownerless: the case the pid check skipped */

  /* a new kguard (this process) makes its dir: the reaper runs */
  char *old = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
  setenv("XDG_RUNTIME_DIR", parent, 1);
  char made[512];
  KG_CHECK_INT(kg_paths_runtime_dir(made, sizeof made), 0);
  KG_CHECK(stat(killed, &st) != 0 && errno == ENOENT);     /* its lock was free */
  KG_CHECK(stat(alive, &st) == 0);                         /* held by a live child */
  KG_CHECK(stat(reused, &st) == 0);                        /* held, whatever its pid says */
  KG_CHECK(stat(old_empty, &st) != 0 && errno == ENOENT);  /* empty, an hour old */
  KG_CHECK(stat(new_empty, &st) == 0);                     /* may be in its first moment */
  char lock[600];
  snprintf(lock, sizeof lock, "%s/lock", made);
  KG_CHECK(stat(lock, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);

  /* the alive child ends: its dir goes at the next start */
  s_n_holds = 0;
  close(hold_alive);
  KG_CHECK(waitpid(a, &status, 0) == a);
  close(hold_reused);
  KG_CHECK(waitpid(r, &status, 0) == r);
  char made2[512];
  KG_CHECK_INT(kg_paths_runtime_dir(made2, sizeof made2), 0);
  KG_CHECK(stat(alive, &st) != 0 && errno == ENOENT);
  KG_CHECK(stat(reused, &st) != 0 && errno == ENOENT);
  KG_CHECK(stat(made, &st) == 0);   /* this process's own first dir stays */
  s_restore_and_remove(old, parent);
}

/*  An XDG_RUNTIME_DIR others can write (or another user's) is not used:
    the runtime dir, which holds the connection file and its key, is made
    in /tmp instead (mkdtemp, 0700). */
KG_TEST(runtime_dir_refuses_a_shared_xdg)
{
  char parent[] = "/tmp/kgrt-XXXXXX";
  KG_CHECK(mkdtemp(parent) != NULL);
  KG_CHECK_INT(chmod(parent, 0777), 0);
  char *old = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
  setenv("XDG_RUNTIME_DIR", parent, 1);
  char made[512];
  KG_CHECK_INT(kg_paths_runtime_dir(made, sizeof made), 0);
  KG_CHECK(strncmp(made, "/tmp/kguard-", 12) == 0);
  KG_CHECK(strncmp(made, parent, strlen(parent)) != 0);
  struct stat st;
  KG_CHECK(stat(made, &st) == 0 && (st.st_mode & 07777) == 0700 && st.st_uid == geteuid());
  kg_paths_remove_tree(made);
  s_restore_and_remove(old, parent);
}

KG_TEST_MAIN(KG_CASE(runtime_dir_reaps_stale), KG_CASE(runtime_dir_lock_decides),
             KG_CASE(runtime_dir_refuses_a_shared_xdg))
