/*  kg_child: spawn errors reported synchronously, the process group killed
    with its grandchildren, captured pipes, exit statuses described; the
    keeper known by pid, not counted as the group's, reaped by a subreaper
    caller, SIGKILLing at once when asked. Deadlines and polling on a condition, no sleeps. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kg_child.h"
#include "kg_test.h"

static long long
s_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
s_wait_exit(kg_child_t *c, int timeout_ms)
{
  long long deadline = s_now_ms() + timeout_ms;
  while (s_now_ms() < deadline) {
    int r = kg_child_reap(c);
    if (r != 0)
      return r;
    poll(NULL, 0, 10);   /* polling a condition with a deadline */
  }
  return 0;
}

KG_TEST(child_true)
{
  char *argv[] = {"true", NULL};
  kg_child_opts_t o = {.argv = argv};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  KG_CHECK(c != NULL);
  KG_CHECK_INT(s_wait_exit(c, 5000), 1);
  KG_CHECK(WIFEXITED(kg_child_status(c)) && WEXITSTATUS(kg_child_status(c)) == 0);
  kg_child_destroy(&c);
  KG_CHECK(c == NULL);
}

KG_TEST(child_missing_command)
{
  char *argv[] = {"/nonexistent/kg-command", NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), -ENOENT);   /* synchronously, via the error pipe */
  KG_CHECK(c == NULL);
  char *argv2[] = {"/etc/passwd", NULL};           /* not executable */
  o.argv = argv2;
  KG_CHECK_INT(kg_child_spawn(&o, &c), -EACCES);
  char *argv3[] = {"true", NULL};
  o.argv = argv3;
  o.cwd = "/nonexistent-dir";
  KG_CHECK_INT(kg_child_spawn(&o, &c), -ENOENT);
  KG_CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);    /* nothing left to reap */
}

/*  The first line the child prints (its pid for a grandchild), as a pid. */
static pid_t
s_read_pid(kg_child_t *c)
{
  char buf[64] = "";
  size_t got = 0;
  long long deadline = s_now_ms() + 5000;
  while (!strchr(buf, '\n') && s_now_ms() < deadline) {
    struct pollfd p = {kg_child_stdout_fd(c), POLLIN, 0};
    poll(&p, 1, 100);
    ssize_t n = kg_child_read(c, 1, buf + got, sizeof buf - 1 - got);
    if (n > 0)
      got += (size_t) n;
  }
  return (pid_t) atol(buf);
}

KG_TEST(child_group_kill_grandchildren)
{
  /* The child starts a grandchild that ignores SIGTERM, prints its pid and
     waits; killing the group with SIGKILL takes both. */
  char *argv[] = {"sh", "-c",
                  "sh -c 'trap \"\" TERM; echo $$; exec sleep 300' & wait", NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  KG_CHECK(getpgid(kg_child_pid(c)) == kg_child_pid(c));   /* its own group */
  KG_CHECK(getsid(kg_child_pid(c)) == kg_child_pid(c));    /* and session */
  pid_t grandchild = s_read_pid(c);
  KG_CHECK(grandchild > 0);
  KG_CHECK_INT(getpgid(grandchild), kg_child_pid(c));
  KG_CHECK_INT(kg_child_kill_group(c, SIGKILL), 0);
  KG_CHECK_INT(s_wait_exit(c, 5000), 1);
  KG_CHECK(WIFSIGNALED(kg_child_status(c)) && WTERMSIG(kg_child_status(c)) == SIGKILL);
  /* the grandchild (reparented to init) is gone too */
  long long deadline = s_now_ms() + 5000;
  bool dead = false;
  while (!dead && s_now_ms() < deadline) {
    if (kill(grandchild, 0) != 0) {
      dead = true;
      break;
    }
    char st[64];
    snprintf(st, sizeof st, "/proc/%d/stat", (int) grandchild);
    FILE *f = fopen(st, "r");
    char state = '?';
    if (f) {
      if (fscanf(f, "%*d %*s %c", &state) != 1)
        state = '?';
      fclose(f);
    }
    if (state == 'Z' || !f)
      dead = true;   /* a zombie waiting for init to reap it is dead */
    else
      poll(NULL, 0, 20);
  }
  KG_CHECK(dead);
  kg_child_destroy(&c);
}

/*  pid's parent, from /proc/PID/stat, or -1. */
static pid_t
s_ppid(pid_t pid)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
  FILE *f = fopen(path, "r");
  long ppid = -1;
  if (f) {
    if (fscanf(f, "%*d %*s %*c %ld", &ppid) != 1)
      ppid = -1;
    fclose(f);
  }
  return (pid_t) ppid;
}

KG_TEST(child_keeper_is_not_the_group)
{
  /* This test process is a subreaper, as kguard exec: the keeper becomes
     its child once the group's leader is gone. */
  KG_CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  char *argv[] = {"sh", "-c", "sleep 300 & echo $!; wait", NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true, .keeper = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  pid_t keeper = kg_child_keeper_pid(c);
  KG_CHECK(keeper > 0 && keeper != kg_child_pid(c));
  KG_CHECK_INT(getpgid(keeper), kg_child_pid(c));        /* in the child's group */
  KG_CHECK_INT(s_ppid(keeper), kg_child_pid(c));
  pid_t grandchild = s_read_pid(c);
  KG_CHECK(grandchild > 0 && grandchild != keeper);
  KG_CHECK(kg_child_group_alive(c));

  /* The keeper ignores every signal the group may get (exec forwards a
     scheduler's SIGUSR1): only SIGKILL ends it. */
  unsigned long long ign = 0, want = 0;
  for (int sig = 1; sig < 32; sig++)
    if (sig != SIGKILL && sig != SIGSTOP)
      want |= 1ULL << (sig - 1);
  long long until = s_now_ms() + 5000;
  while ((ign & want) != want && s_now_ms() < until) {
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/status", (int) keeper);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
      if (strncmp(line, "SigIgn:", 7) == 0)
        ign = strtoull(line + 7, NULL, 16);
    if (f)
      fclose(f);
    if ((ign & want) != want)
      poll(NULL, 0, 10);   /* the keeper sets them up as it starts */
  }
  KG_CHECK((ign & want) == want);

  /* The leader goes, its child stays: the group is alive. */
  KG_CHECK_INT(kg_child_kill(c, SIGKILL), 0);
  KG_CHECK_INT(s_wait_exit(c, 5000), 1);
  KG_CHECK(kg_child_group_alive(c));
  KG_CHECK_INT(s_ppid(keeper), getpid());                /* reparented here */

  /* The grandchild goes too: only the keeper is left, and that is gone,
     though kill(-pgid, 0) still finds the keeper. */
  KG_CHECK_INT(kill(grandchild, SIGKILL), 0);
  long long deadline = s_now_ms() + 5000;
  while (waitpid(grandchild, NULL, WNOHANG) != grandchild && s_now_ms() < deadline)
    poll(NULL, 0, 10);
  KG_CHECK(!kg_child_group_alive(c));
  KG_CHECK_INT(kill(-kg_child_pid(c), 0), 0);
  KG_CHECK(!kg_child_reap_keeper(c, grandchild));        /* not the keeper */
  KG_CHECK(!kg_child_reap_keeper(c, keeper));            /* the keeper, not ended */

  /* destroy ends the keeper at once (no grace) and reaps it here. */
  long long t0 = s_now_ms();
  kg_child_destroy(&c);
  KG_CHECK(s_now_ms() - t0 < 500);
  KG_CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);          /* nothing left to reap */
  KG_CHECK_INT(errno, ECHILD);
  KG_CHECK(kill(keeper, 0) != 0);
  KG_CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
}

KG_TEST(child_keeper_reaped_by_the_caller)
{
  /* A group SIGKILL takes the keeper too; a subreaper hands the ended
     process it sees to kg_child_reap_keeper. */
  KG_CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  char *argv[] = {"sleep", "300", NULL};
  kg_child_opts_t o = {.argv = argv, .keeper = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  pid_t keeper = kg_child_keeper_pid(c);
  KG_CHECK_INT(kg_child_kill_group(c, SIGKILL), 0);
  KG_CHECK_INT(s_wait_exit(c, 5000), 1);
  bool reaped = false;
  long long deadline = s_now_ms() + 5000;
  while (!reaped && s_now_ms() < deadline) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == keeper)
      reaped = kg_child_reap_keeper(c, si.si_pid);
    else
      poll(NULL, 0, 10);
  }
  KG_CHECK(reaped);
  KG_CHECK(!kg_child_group_alive(c));
  kg_child_destroy(&c);
  KG_CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);
  KG_CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);

  /* Without a keeper: the group is what kill(-pgid, 0) finds. */
  o.keeper = false;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  KG_CHECK_INT(kg_child_keeper_pid(c), 0);
  KG_CHECK(kg_child_group_alive(c));
  KG_CHECK_INT(kg_child_kill_group(c, SIGKILL), 0);
  KG_CHECK_INT(s_wait_exit(c, 5000), 1);
  KG_CHECK(!kg_child_group_alive(c));
  kg_child_destroy(&c);
}

KG_TEST(child_keeper_failed_spawn)
{
  /* exec fails after the keeper started: the error is exact, and the
     keeper is gone and reaped before spawn returns. */
  KG_CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  char *argv[] = {"/nonexistent/kg-command", NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true, .keeper = true};
  kg_child_t *c = NULL;
  long long t0 = s_now_ms();
  KG_CHECK_INT(kg_child_spawn(&o, &c), -ENOENT);
  KG_CHECK(c == NULL);
  char *argv2[] = {"true", NULL};
  o.argv = argv2;
  o.cwd = "/nonexistent-dir";
  KG_CHECK_INT(kg_child_spawn(&o, &c), -ENOENT);
  KG_CHECK(s_now_ms() - t0 < 500);                       /* no keeper grace */
  KG_CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);          /* nothing left to reap */
  KG_CHECK_INT(errno, ECHILD);
  KG_CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
}

/*  test (a subreaper) -> M ("kguard") -> child sh -> grandchild sh that
    touches mark on SIGTERM. SIGKILL M; returns whether the grandchild was
    reaped here within 5 s. */
static bool
s_kill_kguard(bool at_once, const char *mark)
{
  KG_CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  char script[512];
  snprintf(script, sizeof script,
           "sh -c 'trap \"touch %s; exit 0\" TERM; echo $$; "
           "while :; do sleep 0.05; done' & wait", mark);   /* its pid once trapped */
  int out[2];
  KG_CHECK_INT(pipe(out), 0);
  pid_t m = fork();
  if (m == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    char *argv[] = {"sh", "-c", script, NULL};
    kg_child_opts_t o = {.argv = argv, .keeper = true, .keeper_kill_at_once = at_once};
    kg_child_t *c = NULL;
    if (kg_child_spawn(&o, &c) != 0)
      _exit(2);
    pause();
    _exit(0);
  }
  close(out[1]);
  char buf[32] = "";
  size_t got = 0;
  long long deadline = s_now_ms() + 5000;
  while (!strchr(buf, '\n') && got < sizeof buf - 1 && s_now_ms() < deadline) {
    struct pollfd p = {out[0], POLLIN, 0};
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
  KG_CHECK_INT(waitpid(m, NULL, 0), m);
  bool reaped = false;
  deadline = s_now_ms() + 5000;
  while (grandchild > 0 && !reaped && s_now_ms() < deadline) {
    reaped = waitpid(grandchild, NULL, WNOHANG) == grandchild;
    if (!reaped)
      poll(NULL, 0, 10);
  }
  deadline = s_now_ms() + 5000;   /* the rest: the child, its keeper, a sleep */
  while (waitpid(-1, NULL, WNOHANG) != -1 && s_now_ms() < deadline)
    poll(NULL, 0, 10);
  KG_CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
  return reaped;
}

KG_TEST(child_keeper_kill_at_once)
{
  /* kguard SIGKILLed: with keeper_kill_at_once the orphaned group gets
     SIGKILL, no SIGTERM that would start its handlers (a pre-emption
     seal); the control, the default keeper, gives SIGTERM first. */
  char mark[64];
  snprintf(mark, sizeof mark, "/tmp/kg-test-child-%ld", (long) getpid());
  unlink(mark);
  KG_CHECK(s_kill_kguard(true, mark));
  KG_CHECK(access(mark, F_OK) != 0);
  KG_CHECK(s_kill_kguard(false, mark));
  KG_CHECK_INT(access(mark, F_OK), 0);
  unlink(mark);
}

KG_TEST(child_pipes)
{
  char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  KG_CHECK_INT(s_wait_exit(c, 5000), 1);
  char buf[64] = "";
  struct pollfd p = {kg_child_stdout_fd(c), POLLIN, 0};
  poll(&p, 1, 2000);
  KG_CHECK_INT(kg_child_read(c, 1, buf, sizeof buf - 1), 4);
  KG_CHECK_STR(buf, "out\n");
  memset(buf, 0, sizeof buf);
  KG_CHECK_INT(kg_child_read(c, 2, buf, sizeof buf - 1), 4);
  KG_CHECK_STR(buf, "err\n");
  KG_CHECK_INT(kg_child_read(c, 1, buf, sizeof buf), 0);   /* EOF closes it */
  KG_CHECK_INT(kg_child_stdout_fd(c), -1);
  KG_CHECK_INT(WEXITSTATUS(kg_child_status(c)), 3);
  kg_child_destroy(&c);
}

KG_TEST(child_describe)
{
  char buf[64];
  kg_child_describe(3 << 8, buf, sizeof buf);
  KG_CHECK_STR(buf, "exit code 3");
  kg_child_describe(SIGKILL, buf, sizeof buf);
  KG_CHECK_STR(buf, "signal 9 (SIGKILL)");
}

KG_TEST_MAIN(KG_CASE(child_true), KG_CASE(child_missing_command),
             KG_CASE(child_group_kill_grandchildren), KG_CASE(child_pipes),
             KG_CASE(child_describe), KG_CASE(child_keeper_is_not_the_group),
             KG_CASE(child_keeper_reaped_by_the_caller), KG_CASE(child_keeper_failed_spawn),
             KG_CASE(child_keeper_kill_at_once))
