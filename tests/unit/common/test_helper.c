/*  kg_helper: the generic bounded helper child (stall deadline, progress
    lines, stdout cap), driven by a small poll loop like kguard's. */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "kg_helper.h"
#include "kg_test.h"

static int64_t
s_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*  Run h until it ends, as kguard's loop does: poll its pipes until its
    deadline (looking again after at most cap_ms; 0: only what the helper's
    deadline says wakes us, no SIGCHLD, as kg_loop without one), pump, act
    on the deadline. Fails after limit_ms. */
static bool
s_run_capped(kg_helper_t *h, int64_t limit_ms, int64_t cap_ms)
{
  int64_t end = s_now() + limit_ms;
  while (s_now() < end) {
    struct pollfd p[2];
    int n = 0;
    for (int which = 1; which <= 2; which++)
      if (kg_helper_fd(h, which) >= 0)
        p[n++] = (struct pollfd){.fd = kg_helper_fd(h, which), .events = POLLIN};
    int64_t wait = kg_helper_deadline(h) - s_now();
    if (cap_ms && wait > cap_ms)
      wait = cap_ms;
    if (wait > end - s_now())
      wait = end - s_now();
    poll(p, (nfds_t) n, (int) (wait < 0 ? 0 : wait));
    if (kg_helper_pump(h, s_now()))
      return true;
    kg_helper_timers(h, s_now());
  }
  return false;
}

/*  As kguard's loops with SIGCHLD do: looking again at least every 50 ms. */
static bool
s_run(kg_helper_t *h, int64_t limit_ms)
{
  return s_run_capped(h, limit_ms, 50);
}

/*  A child that closes both pipes before it ends (here: then sleeps a
    little) is reported ended as soon as it can be reaped, by the deadline
    alone: a caller without SIGCHLD must not wait for the stall deadline
    and take the child for stalled. */
KG_TEST(helper_closed_pipes_then_exit_is_not_a_stall)
{
  kg_helper_t *h = kg_helper_new("test helper", 1 << 20, 3000);
  char *argv[] = {"sh", "-c", "echo '{\"ok\":1}'; exec >&- 2>&-; sleep 0.3", NULL};
  KG_CHECK_INT(kg_helper_start(h, argv, NULL, s_now()), 0);
  int64_t t0 = s_now();
  KG_CHECK(s_run_capped(h, 10000, 0));
  KG_CHECK(!kg_helper_stalled(h));
  KG_CHECK(s_now() - t0 < 2500);
  KG_CHECK_STR(kg_helper_out(h), "{\"ok\":1}\n");
  KG_CHECK(WIFEXITED(kg_helper_status(h)) && WEXITSTATUS(kg_helper_status(h)) == 0);
  kg_helper_destroy(&h);
}

KG_TEST(helper_progress_lines)
{
  int64_t d = -1, t = -1;
  KG_CHECK(kg_helper_parse_progress("kguard-progress 10 100", &d, &t));
  KG_CHECK(d == 10 && t == 100);
  KG_CHECK(kg_helper_parse_progress("kguard-progress 0 0", &d, &t));   /* total unknown */
  KG_CHECK(kg_helper_parse_progress("kguard-progress 5 5\r", &d, &t));
  static const char *bad[] = {"", "kguard-progress", "kguard-progress 1", "kguard-progress x 2",
                              "kguard-progress 3 2", "kguard-progress -1 2",
                              "kguard-progress 1 2 3", "progress 1 2",
                              "kguard-progress 99999999999999999999 1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    KG_CHECK(!kg_helper_parse_progress(bad[i], &d, &t));
}

KG_TEST(helper_output_and_progress)
{
  kg_helper_t *h = kg_helper_new("test helper", 1 << 20, 5000);
  char *argv[] = {"sh", "-c",
                  "printf 'kguard-progress 512 1024\\nnoise\\nkguard-progress 1024 1024\\n' >&2;"
                  " echo '{\"status\":\"restored\"}'",
                  NULL};
  KG_CHECK_INT(kg_helper_start(h, argv, NULL, s_now()), 0);
  KG_CHECK(kg_helper_running(h));
  KG_CHECK(s_run(h, 10000));
  KG_CHECK(!kg_helper_running(h));
  KG_CHECK(!kg_helper_stalled(h));
  KG_CHECK_STR(kg_helper_out(h), "{\"status\":\"restored\"}\n");
  KG_CHECK(WIFEXITED(kg_helper_status(h)) && WEXITSTATUS(kg_helper_status(h)) == 0);
  int64_t d = 0, t = 0;
  KG_CHECK(kg_helper_progress(h, &d, &t, NULL, NULL));
  KG_CHECK(d == 1024 && t == 1024);
  char text[160];
  KG_CHECK(kg_helper_progress_text(h, s_now(), text, sizeof text));
  KG_CHECK(strstr(text, "1.0 KiB of 1.0 KiB") != NULL);
  kg_helper_destroy(&h);
  KG_CHECK(h == NULL);
}

KG_TEST(helper_stdout_capped)
{
  kg_helper_t *h = kg_helper_new("test helper", 100, 5000);
  char *argv[] = {"sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x", NULL};
  KG_CHECK_INT(kg_helper_start(h, argv, NULL, s_now()), 0);
  KG_CHECK(s_run(h, 10000));
  KG_CHECK(strlen(kg_helper_out(h)) <= 100);
  kg_helper_destroy(&h);
}

/*  A helper that says nothing is killed at the stall deadline... */
KG_TEST(helper_stall_kills)
{
  kg_helper_t *h = kg_helper_new("test helper", 1 << 20, 300);
  char *argv[] = {"sh", "-c", "echo 'kguard-progress 1 10' >&2; exec sleep 30", NULL};
  KG_CHECK_INT(kg_helper_start(h, argv, NULL, s_now()), 0);
  KG_CHECK(s_run(h, 10000));
  KG_CHECK(kg_helper_stalled(h));
  KG_CHECK(WIFSIGNALED(kg_helper_status(h)));
  KG_CHECK(kg_helper_progress(h, NULL, NULL, NULL, NULL));   /* partial progress kept */
  kg_helper_destroy(&h);
}

/*  ...one that keeps reporting runs past it as long as it needs. */
KG_TEST(helper_progress_is_not_a_stall)
{
  kg_helper_t *h = kg_helper_new("test helper", 1 << 20, 300);
  char *argv[] = {"sh", "-c",
                  "i=0; while [ $i -lt 8 ]; do echo \"kguard-progress $i 8\" >&2;"
                  " sleep 0.1; i=$((i+1)); done; echo done",
                  NULL};
  int64_t t0 = s_now();
  KG_CHECK_INT(kg_helper_start(h, argv, NULL, t0), 0);
  KG_CHECK(s_run(h, 20000));
  KG_CHECK(!kg_helper_stalled(h));
  KG_CHECK_STR(kg_helper_out(h), "done\n");
  kg_helper_destroy(&h);
}

KG_TEST_MAIN(KG_CASE(helper_closed_pipes_then_exit_is_not_a_stall), KG_CASE(helper_progress_lines), KG_CASE(helper_output_and_progress),
             KG_CASE(helper_stdout_capped), KG_CASE(helper_stall_kills),
             KG_CASE(helper_progress_is_not_a_stall))
