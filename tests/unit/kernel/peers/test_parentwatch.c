/*  Unit tests of kg_parentwatch: kguard notices its launcher's death (the
    target table, off without a target, the death signal that must be blocked,
    a stale target, a SIGKILLed parent, the false alarm of a forking thread's
    exit), on the one loop.

    The tests that kill a "parent" make this test process a child subreaper
    (PR_SET_CHILD_SUBREAPER), so orphans come to it instead of init: it can
    then reap them and know for certain when they are gone. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
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

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_loop.h"
#include "kg_parentwatch.h"
#include "kg_sigsrc.h"
#include "kg_test.h"
#include "reap_fixture.h"

KG_TEST(parentwatch_target_table)
{
  static const struct {
    const char *jpy;
    pid_t ppid;
    int rc;
    pid_t target;
  } rows[] = {
    {NULL, 4242, 0, 4242},          /* no JPY_PARENT_PID: the parent        */
    {"777", 4242, 0, 777},          /* the launcher jupyter_client names    */
    {"1", 4242, 0, 0},              /* init: never goes away, so no watch   */
    {"0", 4242, 0, 0},
    {NULL, 1, 0, 0},                /* started by init: nothing to watch    */
    {"", 4242, KG_EUSAGE, 4242},    /* malformed: fall back to the parent   */
    {"-5", 4242, KG_EUSAGE, 4242},
    {" 77", 4242, KG_EUSAGE, 4242},
    {"77x", 4242, KG_EUSAGE, 4242},
    {"99999999999", 4242, KG_EUSAGE, 4242},
    {"2147483648", 4242, KG_EUSAGE, 4242},
    {"abc", 1, KG_EUSAGE, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    pid_t t = -1;
    KG_CHECK_INT(kg_parentwatch_target(rows[i].jpy, rows[i].ppid, &t), rows[i].rc);
    KG_CHECK_INT(t, rows[i].target);
  }
}

/*  on_gone of the tests: counts, and stops the loop. */
static void
s_gone(kg_loop_t *loop, void *arg)
{
  (*(int *) arg)++;
  kg_loop_stop(loop);
}

/*  A timer of the tests' loops that bounds one iteration. */
static int
s_tick(kg_loop_t *loop, int id, void *arg)
{
  return KG_LOOP_OK;
}

KG_TEST(parentwatch_off_without_target)
{
  kg_loop_t *loop = kg_loop_new();
  kg_parentwatch_t *w = kg_parentwatch_new(0, 0, 100);
  KG_CHECK(w != NULL);
  int gone = 0;
  KG_CHECK_INT(kg_parentwatch_attach(w, loop, s_gone, &gone), 0);
  KG_CHECK(kg_loop_timeout(loop) == -1);   /* registered nothing */
  KG_CHECK(!kg_parentwatch_gone(w));
  KG_CHECK_STR(kg_parentwatch_how(w), "off");
  kg_parentwatch_destroy(&w);
  KG_CHECK(w == NULL);
  kg_parentwatch_destroy(&w);
  kg_loop_destroy(&loop);
}

KG_TEST(parentwatch_death_signal_must_be_blocked)
{
  /* Armed unblocked, the death signal would kill kguard instead of
     reaching the loop. */
  errno = 0;
  KG_CHECK(kg_parentwatch_new(getppid(), SIGUSR2, 100) == NULL);
  KG_CHECK_INT(errno, EINVAL);
}

KG_TEST(parentwatch_stale_target_falls_back_to_parent)
{
  /* A JPY_PARENT_PID that is not an ancestor (here: a child of ours, alive)
     is not watched: the parent is. */
  pid_t other = fork();
  if (other == 0) {
    pause();
    _exit(0);
  }
  kg_loop_t *loop = kg_loop_new();
  kg_parentwatch_t *w = kg_parentwatch_new(other, 0, 100);
  KG_CHECK(w != NULL);
  KG_CHECK_INT(kg_parentwatch_pid(w), getppid() > 1 ? getppid() : 0);
  int gone = 0;
  KG_CHECK_INT(kg_parentwatch_attach(w, loop, s_gone, &gone), 0);
  kill(other, SIGKILL);
  waitpid(other, NULL, 0);
  /* One iteration, bounded by a timer due now: an unrelated death is not
     the launcher's. */
  KG_CHECK(kg_loop_timer(loop, kg_loop_now(loop), s_tick, NULL) > 0);
  KG_CHECK_INT(kg_loop_once(loop), 0);
  KG_CHECK_INT(gone, 0);
  KG_CHECK(!kg_parentwatch_gone(w));
  kg_parentwatch_destroy(&w);
  kg_loop_destroy(&loop);
}

/*  Wait up to timeout_ms for one byte on fd; returns it, or -1. */
static int
s_read_byte(int fd, int timeout_ms)
{
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, timeout_ms) <= 0)
    return -1;
  unsigned char b;
  return read(fd, &b, 1) == 1 ? b : -1;
}

/*  The watcher's state: where it reports, and the watch. */
typedef struct {
  int report_w;
  kg_parentwatch_t *w;
} s_watcher_t;

/*  The watcher's signals: the death signal goes to the watch, which looks;
    a false alarm is reported as 'A' (parent alive). */
static int
s_watcher_signal(kg_loop_t *loop, int signo, void *arg)
{
  s_watcher_t *x = arg;
  if (kg_parentwatch_signal(x->w, signo) && !kg_parentwatch_gone(x->w)
      && write(x->report_w, "A", 1) != 1)
    _exit(5);
  return KG_LOOP_OK;
}

static void
s_watcher_gone(kg_loop_t *loop, void *arg)
{
  s_watcher_t *x = arg;
  if (write(x->report_w, "G", 1) != 1)
    _exit(5);
  _exit(0);
}

/*  Give up after 10 s. */
static int
s_watcher_timeout(kg_loop_t *loop, int id, void *arg)
{
  _exit(4);
}

/*  In the watcher: one loop, as kguard has, with the watch's sources and
    the death signal read through a kg_sigsrc; report 'R' once watching,
    'A' for each false alarm of the signal and 'G' when gone. */
static void
s_watcher(int report_w, int sig)
{
  const int signals[] = {sig, 0};
  kg_sigsrc_t *src = kg_sigsrc_new(signals);
  kg_loop_t *loop = kg_loop_new();
  s_watcher_t x = {.report_w = report_w};
  if (!src || !loop || !(x.w = kg_parentwatch_new(getppid(), sig, 100)))
    _exit(3);
  if (kg_parentwatch_attach(x.w, loop, s_watcher_gone, &x) != 0
      || kg_loop_signals(loop, src, s_watcher_signal, &x) < 0
      || kg_loop_timer(loop, kg_loop_now(loop) + 10000, s_watcher_timeout, NULL) < 0
      || write(report_w, "R", 1) != 1)
    _exit(3);
  kg_loop_run(loop);
  _exit(4);
}

KG_TEST(parentwatch_fires_when_parent_killed)
{
  /* test -> P -> W. W watches P (pidfd + death signal). SIGKILL P: W must
     answer "gone" within seconds. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int rep[2];
  KG_CHECK_INT(pipe(rep), 0);
  pid_t p = fork();
  if (p == 0) {
    pid_t w = fork();
    if (w == 0)
      s_watcher(rep[1], SIGUSR2);
    pause();
    _exit(0);
  }
  close(rep[1]);
  KG_CHECK_INT(s_read_byte(rep[0], 5000), 'R');
  kill(p, SIGKILL);
  KG_CHECK(s_reap_within(p, 5000));
  KG_CHECK_INT(s_read_byte(rep[0], 5000), 'G');
  close(rep[0]);
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

static int s_thread_pipe[2];

static void *
s_forking_thread(void *arg)
{
  int *rep_w = arg;
  pid_t w = fork();
  if (w == 0)
    s_watcher(*rep_w, SIGUSR2);
  /* Exit only once the watcher has armed its death signal: then the
     thread's exit sends it (a PDEATHSIG quirk), although P lives on. */
  unsigned char b;
  if (read(s_thread_pipe[0], &b, 1) != 1)
    return NULL;
  return NULL;
}

KG_TEST(parentwatch_ignores_death_of_forking_thread)
{
  /* PR_SET_PDEATHSIG fires when the parent *thread* exits. The getppid
     recheck must answer "alive" then, and "gone" once P itself dies. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int rep[2], go[2];
  KG_CHECK_INT(pipe(rep), 0);
  KG_CHECK_INT(pipe(go), 0);
  pid_t p = fork();
  if (p == 0) {
    close(rep[0]);
    KG_CHECK_INT(pipe(s_thread_pipe), 0);
    pthread_t t;
    pthread_create(&t, NULL, s_forking_thread, &rep[1]);
    unsigned char b;
    if (read(go[0], &b, 1) != 1)          /* 1: the thread may exit */
      _exit(1);
    if (write(s_thread_pipe[1], "x", 1) != 1)
      _exit(1);
    pthread_join(t, NULL);
    if (read(go[0], &b, 1) != 1)          /* 2: P exits */
      _exit(0);
    _exit(0);
  }
  close(rep[1]);
  KG_CHECK_INT(s_read_byte(rep[0], 5000), 'R');
  KG_CHECK_INT(write(go[1], "1", 1), 1);
  KG_CHECK_INT(s_read_byte(rep[0], 5000), 'A');    /* the thread's exit: a false alarm */
  KG_CHECK_INT(write(go[1], "2", 1), 1);
  KG_CHECK(s_reap_within(p, 5000));
  KG_CHECK_INT(s_read_byte(rep[0], 5000), 'G');
  close(rep[0]);
  close(go[0]);
  close(go[1]);
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

KG_TEST_MAIN(KG_CASE(parentwatch_target_table), KG_CASE(parentwatch_off_without_target),
             KG_CASE(parentwatch_death_signal_must_be_blocked),
             KG_CASE(parentwatch_stale_target_falls_back_to_parent),
             KG_CASE(parentwatch_fires_when_parent_killed),
             KG_CASE(parentwatch_ignores_death_of_forking_thread))
