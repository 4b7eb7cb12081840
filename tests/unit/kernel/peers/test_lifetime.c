/*  Unit tests of kg_child's keeper: the kernel's whole process group dies
    with kguard, even when kguard is SIGKILLed.

    The tests that kill a "parent" make this test process a child subreaper
    (PR_SET_CHILD_SUBREAPER), so orphans come to it instead of init: it can
    then reap them and know for certain when they are gone. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kg_child.h"
#include "kg_clock.h"
#include "kg_error.h"
#include "kg_test.h"
#include "reap_fixture.h"


/*  True if pid is alive and not a zombie. */
static bool
s_running(pid_t pid)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  char state = '?';
  int ok = fscanf(f, "%*d %*s %c", &state);
  fclose(f);
  return ok == 1 && state != 'Z' && state != 'X';
}

/*  test -> M ("kguard") -> kernel (sh) -> grandchild sleep. SIGKILL M.
    Returns the grandchild's pid after M and the kernel are gone, with
    *reaped_p telling whether the grandchild was reaped within 5 s. */
static pid_t
s_kill_launcher(bool keeper, bool *reaped_p)
{
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int out[2];
  KG_CHECK_INT(pipe(out), 0);
  pid_t m = fork();
  if (m == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    char *argv[] = {"sh", "-c", "sleep 300 & echo $!; wait", NULL};
    kg_child_opts_t o = {.argv = argv, .keeper = keeper};
    kg_child_t *c = NULL;
    if (kg_child_spawn(&o, &c) != 0)
      _exit(2);
    pause();
    _exit(0);
  }
  close(out[1]);
  char buf[32] = "";
  size_t got = 0;
  int64_t deadline = kg_clock_mono_ms() + 5000;
  while (!strchr(buf, '\n') && got < sizeof buf - 1 && kg_clock_mono_ms() < deadline) {
    struct pollfd p = {.fd = out[0], .events = POLLIN};
    if (poll(&p, 1, 100) > 0) {
      ssize_t n = read(out[0], buf + got, sizeof buf - 1 - got);
      if (n <= 0)
        break;
      got += (size_t) n;
    }
  }
  close(out[0]);
  pid_t grandchild = (pid_t) atol(buf);
  KG_CHECK(grandchild > 0);
  kill(m, SIGKILL);
  KG_CHECK(s_reap_within(m, 5000));
  *reaped_p = grandchild > 0 && s_reap_within(grandchild, 5000);
  return grandchild;
}

KG_TEST(child_keeper_group_dies_with_sigkilled_parent)
{
  bool reaped = false;
  pid_t g = s_kill_launcher(true, &reaped);
  KG_CHECK(reaped);                         /* the orphaned sleep was ended */
  while (waitpid(-1, NULL, WNOHANG) > 0)    /* the kernel and the keeper */
    ;
  KG_CHECK(g > 0 && !s_running(g));
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

KG_TEST(child_without_keeper_grandchild_survives)
{
  /* The control: without the keeper the same grandchild outlives a
     SIGKILLed parent (this is the bug the keeper fixes). The kernel itself
     dies by PDEATHSIG; its sleep is reparented and keeps running. */
  bool reaped = true;
  pid_t g = s_kill_launcher(false, &reaped);
  KG_CHECK(!reaped);
  KG_CHECK(g > 0 && s_running(g));
  if (g > 0) {
    kill(g, SIGKILL);
    s_reap_within(g, 5000);
  }
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

KG_TEST(child_keeper_keeps_pipes_and_status)
{
  /* The keeper holds none of the kernel's pipes: EOF and the exit status
     reach kguard as without it; destroy then ends the keeper's group. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  char *argv[] = {"sh", "-c", "echo hi; exit 7", NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true, .keeper = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  char buf[16];
  size_t got = 0;
  int64_t deadline = kg_clock_mono_ms() + 5000;
  bool eof = false;
  while (!eof && kg_clock_mono_ms() < deadline) {
    struct pollfd p = {.fd = kg_child_stdout_fd(c), .events = POLLIN};
    poll(&p, 1, 100);
    ssize_t n = kg_child_read(c, 1, buf + got, sizeof buf - 1 - got);
    if (n > 0)
      got += (size_t) n;
    eof = n == 0;
  }
  KG_CHECK(eof);
  buf[got] = '\0';
  KG_CHECK_STR(buf, "hi\n");
  while (kg_child_reap(c) == 0 && kg_clock_mono_ms() < deadline)
    poll(NULL, 0, 10);
  KG_CHECK(kg_child_exited(c) && WIFEXITED(kg_child_status(c))
           && WEXITSTATUS(kg_child_status(c)) == 7);
  /* The keeper (now our orphan) is still in the group; destroy ends it. */
  pid_t group = kg_child_pid(c);
  KG_CHECK_INT(kill(-group, 0), 0);
  kg_child_destroy(&c);
  deadline = kg_clock_mono_ms() + 5000;
  while (kill(-group, 0) == 0 && kg_clock_mono_ms() < deadline) {
    waitpid(-1, NULL, WNOHANG);
    poll(NULL, 0, 10);
  }
  KG_CHECK(kill(-group, 0) != 0);
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

KG_TEST(child_keeper_spawn_failure_reported)
{
  char *argv[] = {"/nonexistent/kguard-test-binary", NULL};
  kg_child_opts_t o = {.argv = argv, .keeper = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), -ENOENT);
  KG_CHECK(c == NULL);
}

KG_TEST_MAIN(KG_CASE(child_keeper_group_dies_with_sigkilled_parent),
             KG_CASE(child_without_keeper_grandchild_survives),
             KG_CASE(child_keeper_keeps_pipes_and_status),
             KG_CASE(child_keeper_spawn_failure_reported))
