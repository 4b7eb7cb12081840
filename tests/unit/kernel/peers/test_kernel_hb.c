/*  kg_kernel_hb against a fake kernel heartbeat: a child process that
    echoes like ipykernel's (a ROUTER socket proxied onto itself), paused
    with SIGSTOP and resumed with SIGCONT as a user or a wedged driver
    would. The pinger's clock is injected; the only waits are for an echo
    to arrive (zmq_poll on a deadline), never sleeps. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_child.h"
#include "kg_error.h"
#include "kg_kernel_hb.h"
#include "kg_test.h"

/*  Start the fake heartbeat at endpoint in a child; returns its pid once it
    is bound. */
static pid_t
s_fake_hb(const char *endpoint)
{
  int ready[2];
  KG_CHECK_INT(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    void *ctx = zmq_ctx_new();
    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    if (!router || zmq_bind(router, endpoint) != 0)
      _exit(1);
    if (write(ready[1], "r", 1) != 1)
      _exit(1);
    zmq_proxy(router, router, NULL);   /* ipykernel's heartbeat: echo all */
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  KG_CHECK(read(ready[0], &c, 1) == 1 && c == 'r');
  close(ready[0]);
  return pid;
}

static void
s_end(pid_t pid)
{
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/*  Wait (up to 5 s, real time) until the pinger has counted one more echo
    of its current arming: the socket is polled and the pinger drained at
    the same fake time (no deadline crossed), so the fake clock does not
    move. Echoes of an earlier arming (a resumed peer answering the pings
    it got while stopped) do not satisfy it. */
static bool
s_beat(kg_kernel_hb_t *hb, int64_t now)
{
  uint64_t before = kg_kernel_hb_beats(hb);
  for (int i = 0; i < 50; i++) {
    zmq_pollitem_t it = {kg_kernel_hb_socket(hb), 0, ZMQ_POLLIN, 0};
    zmq_poll(&it, 1, 100);
    kg_kernel_hb_read(hb);
    KG_CHECK_INT(kg_kernel_hb_deadline(hb) > now, 1);   /* no deadline crossed */
    if (kg_kernel_hb_beats(hb) > before)
      return true;
  }
  return false;
}

static void
s_endpoint(char *buf, size_t len, const char *tag)
{
  snprintf(buf, len, "ipc:///tmp/kg-test-khb-%s-%ld", tag, (long) getpid());
}

KG_TEST(kernel_hb_alive_then_stopped_then_resumed)
{
  char ep[128];
  s_endpoint(ep, sizeof ep, "a");
  pid_t peer = s_fake_hb(ep);
  void *ctx = zmq_ctx_new();
  kg_kernel_hb_config_t cfg = {.period_ms = 1000, .max_missed = 3};
  kg_kernel_hb_t *hb = kg_kernel_hb_new(ctx, ep, &cfg);
  KG_CHECK(hb != NULL);
  int64_t now = 5000;
  KG_CHECK_INT(kg_kernel_hb_status(hb), KG_KHB_IDLE);
  KG_CHECK_INT(kg_kernel_hb_deadline(hb), 0);
  kg_kernel_hb_arm(hb, true, now);   /* a request went to the kernel */
  KG_CHECK_INT(kg_kernel_hb_deadline(hb), now + 1000);
  /* nothing is sent at arming nor within the first period (a cell that
     ends by then costs no ping); the first deadline sends the first ping
     and counts no miss */
  KG_CHECK_INT(kg_kernel_hb_pings(hb), 0);
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now + 999), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_pings(hb), 0);
  now += 1000;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_pings(hb), 1);
  KG_CHECK_INT(kg_kernel_hb_missed(hb), 0);
  /* its echo waits on the socket: a tick before the next deadline does not
     read it (no system call between deadlines), a read does */
  zmq_pollitem_t echo = {kg_kernel_hb_socket(hb), 0, ZMQ_POLLIN, 0};
  KG_CHECK_INT(zmq_poll(&echo, 1, 5000), 1);
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now + 1), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_beats(hb), 0);
  kg_kernel_hb_read(hb);
  KG_CHECK_INT(kg_kernel_hb_beats(hb), 1);
  now += 1000;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);   /* ping 2 */
  /* alive: each ping is echoed before its deadline */
  for (int i = 0; i < 10; i++) {
    KG_CHECK(s_beat(hb, now));
    now += 1000;
    KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
    KG_CHECK_INT(kg_kernel_hb_missed(hb), 0);
  }
  KG_CHECK_INT(kg_child_proc_state(peer) == 'T', 0);
  /* stopped mid-request: misses 1, 2, then HUNG at the 3rd, reported once */
  KG_CHECK(s_beat(hb, now));   /* the ping before the stop was answered */
  KG_CHECK_INT(kill(peer, SIGSTOP), 0);
  int st;
  KG_CHECK(waitpid(peer, &st, WUNTRACED) == peer && WIFSTOPPED(st));
  KG_CHECK_INT(kg_child_proc_state(peer), 'T');
  now += 1000;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);   /* answered before the stop */
  now += 1000;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_missed(hb), 1);
  now += 500;   /* between deadlines: nothing new */
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_missed(hb), 1);
  now += 500;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_missed(hb), 2);
  now += 1000;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_HUNG);    /* the transition */
  now += 1000;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_HUNG);    /* status, latched */
  /* resumed: the queued pings are echoed; a new arming starts clean */
  KG_CHECK_INT(kill(peer, SIGCONT), 0);
  kg_kernel_hb_arm(hb, false, now);   /* the request was answered */
  KG_CHECK_INT(kg_kernel_hb_status(hb), KG_KHB_IDLE);
  kg_kernel_hb_arm(hb, true, now);
  /* The first ping may meet the queue still full of those sent while
     stopped (then it is dropped, never blocking): a missed beat, not a
     hang; the next period's ping is answered. */
  bool beat = false;
  for (int i = 0; i < 2 && !beat; i++) {
    now += 1000;
    KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
    beat = s_beat(hb, now);
  }
  KG_CHECK(beat);
  for (int i = 0; i < 5; i++) {
    now += 1000;
    KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
    KG_CHECK_INT(kg_kernel_hb_missed(hb), 0);
    KG_CHECK(s_beat(hb, now));
  }
  kg_kernel_hb_destroy(&hb);
  KG_CHECK(hb == NULL);
  zmq_ctx_term(ctx);
  s_end(peer);
}

/*  A stop shorter than max_missed beats is not a hang: the late echoes
    reset the count. */
KG_TEST(kernel_hb_short_stop_is_not_a_hang)
{
  char ep[128];
  s_endpoint(ep, sizeof ep, "b");
  pid_t peer = s_fake_hb(ep);
  void *ctx = zmq_ctx_new();
  kg_kernel_hb_config_t cfg = {.period_ms = 200, .max_missed = 3};
  kg_kernel_hb_t *hb = kg_kernel_hb_new(ctx, ep, &cfg);
  KG_CHECK(hb != NULL);
  int64_t now = 0;
  kg_kernel_hb_arm(hb, true, now);
  now += 200;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);   /* ping 1 */
  KG_CHECK(s_beat(hb, now));
  now += 200;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
  KG_CHECK(s_beat(hb, now));   /* ping 2 answered: then the stop */
  kill(peer, SIGSTOP);
  int st;
  KG_CHECK(waitpid(peer, &st, WUNTRACED) == peer && WIFSTOPPED(st));
  now += 200;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
  now += 200;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
  now += 200;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_missed(hb), 2);
  kill(peer, SIGCONT);
  KG_CHECK(s_beat(hb, now));   /* the pings sent while stopped come back */
  now += 100;
  KG_CHECK_INT(kg_kernel_hb_tick(hb, now), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_missed(hb), 0);
  kg_kernel_hb_destroy(&hb);
  zmq_ctx_term(ctx);
  s_end(peer);
}

/*  No peer at all (the kernel never bound, or is gone): HUNG after
    max_missed, and sends never block. Bad configuration is refused. */
KG_TEST(kernel_hb_no_peer_and_config)
{
  char ep[128];
  s_endpoint(ep, sizeof ep, "none");
  void *ctx = zmq_ctx_new();
  kg_kernel_hb_config_t cfg = {.period_ms = 100, .max_missed = 2};
  kg_kernel_hb_t *hb = kg_kernel_hb_new(ctx, ep, &cfg);
  KG_CHECK(hb != NULL);
  kg_kernel_hb_arm(hb, true, 0);
  KG_CHECK_INT(kg_kernel_hb_tick(hb, 50), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_tick(hb, 100), KG_KHB_ALIVE);   /* the first ping */
  KG_CHECK_INT(kg_kernel_hb_tick(hb, 200), KG_KHB_ALIVE);
  KG_CHECK_INT(kg_kernel_hb_tick(hb, 300), KG_KHB_HUNG);    /* (2 + 1) periods */
  for (int64_t t = 400; t < 3000; t += 100)   /* far past the HWM: no block */
    KG_CHECK_INT(kg_kernel_hb_tick(hb, t), KG_KHB_HUNG);
  kg_kernel_hb_destroy(&hb);
  kg_kernel_hb_config_t bad = {.period_ms = 10, .max_missed = 2};
  KG_CHECK(kg_kernel_hb_new(ctx, ep, &bad) == NULL);
  bad.period_ms = 1000;
  bad.max_missed = 0;
  KG_CHECK(kg_kernel_hb_new(ctx, ep, &bad) == NULL);
  zmq_ctx_term(ctx);

  kg_kernel_hb_config_t c;
  char err[160] = "";
  unsetenv("KGUARD_KERNEL_HB_PERIOD");
  unsetenv("KGUARD_KERNEL_HB_MISSES");
  KG_CHECK_INT(kg_kernel_hb_config_env(&c, err, sizeof err), 0);
  KG_CHECK_INT(c.period_ms, KG_KHB_PERIOD_MS_DEFAULT);
  KG_CHECK_INT(c.max_missed, KG_KHB_MISSES_DEFAULT);
  setenv("KGUARD_KERNEL_HB_PERIOD", "0.5", 1);
  setenv("KGUARD_KERNEL_HB_MISSES", "8", 1);
  KG_CHECK_INT(kg_kernel_hb_config_env(&c, err, sizeof err), 0);
  KG_CHECK_INT(c.period_ms, 500);
  KG_CHECK_INT(c.max_missed, 8);
  setenv("KGUARD_KERNEL_HB_MISSES", "2.5", 1);
  KG_CHECK_INT(kg_kernel_hb_config_env(&c, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "KGUARD_KERNEL_HB_MISSES") != NULL);
  setenv("KGUARD_KERNEL_HB_MISSES", "3", 1);
  setenv("KGUARD_KERNEL_HB_PERIOD", "nan", 1);
  KG_CHECK_INT(kg_kernel_hb_config_env(&c, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "KGUARD_KERNEL_HB_PERIOD") != NULL);
  unsetenv("KGUARD_KERNEL_HB_PERIOD");
  unsetenv("KGUARD_KERNEL_HB_MISSES");
  KG_CHECK_INT(kg_child_proc_state(getpid()), 'R');
}

/*  Why a hang is declared, as the notice says it. */
KG_TEST(kernel_hb_hang_reason_table)
{
  static const struct {
    int64_t period_ms;
    int max_missed;
    char proc_state;
    const char *want;
  } rows[] = {
      {1000, 5, 'S', "it stopped answering its heartbeat for 5 s"},
      {1000, 5, 'T', "it stopped answering its heartbeat for 5 s (the process is stopped: SIGSTOP)"},
      {100, 3, 0, "it stopped answering its heartbeat for 0.3 s"},
      {250, 1, 'D', "it stopped answering its heartbeat for 0.25 s"},
      {60000, 1000, 't', "it stopped answering its heartbeat for 6e+04 s"},
  };
  for (size_t n = 0; n < sizeof rows / sizeof rows[0]; n++) {
    kg_kernel_hb_config_t cfg = {.period_ms = rows[n].period_ms, .max_missed = rows[n].max_missed};
    char *text = kg_kernel_hb_describe(&cfg, rows[n].proc_state);
    KG_CHECK_STR(text, rows[n].want);
    free(text);
  }
}

KG_TEST_MAIN(KG_CASE(kernel_hb_alive_then_stopped_then_resumed), KG_CASE(kernel_hb_hang_reason_table),
             KG_CASE(kernel_hb_short_stop_is_not_a_hang), KG_CASE(kernel_hb_no_peer_and_config))
