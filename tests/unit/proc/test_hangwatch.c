/*  kg_hangwatch: one pinger per kernel process, replaced when the process
    changes, and the reason a hang is declared with. The endpoint has no
    peer (nothing answers: every ping is a missed beat); the clock is
    injected and stepped to each deadline, so no waits at all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_hangwatch.h"
#include "kg_test.h"

KG_TEST(hangwatch_reason_table)
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
    char *text = kg_hangwatch_describe(&cfg, rows[n].proc_state);
    KG_CHECK_STR(text, rows[n].want);
    free(text);
  }
}

/*  Step the clock to each deadline until the watch declares a hang; the
    time it did, or -1 if it did not within max_steps. */
static int64_t
s_until_hung(kg_hangwatch_t *w, int64_t now, int max_steps)
{
  if (kg_hangwatch_tick(w, now))
    return now;
  for (int i = 0; i < max_steps; i++) {
    now = kg_hangwatch_deadline(w);
    KG_CHECK(now > 0);
    if (kg_hangwatch_tick(w, now))
      return now;
  }
  return -1;
}

KG_TEST(hangwatch_pinger_per_pid)
{
  void *ctx = zmq_ctx_new();
  KG_CHECK(ctx != NULL);
  kg_kernel_hb_config_t cfg = {.period_ms = 100, .max_missed = 2};
  kg_hangwatch_t *w = kg_hangwatch_new(ctx, &cfg);
  KG_CHECK(w != NULL);
  KG_CHECK(kg_hangwatch_config(w)->period_ms == 100);
  char ep1[128], ep2[128];
  snprintf(ep1, sizeof ep1, "ipc:///tmp/kg-test-hangwatch-a-%ld", (long) getpid());
  snprintf(ep2, sizeof ep2, "ipc:///tmp/kg-test-hangwatch-b-%ld", (long) getpid());

  /* nothing watched: no tick, no deadline, no reason */
  KG_CHECK(!kg_hangwatch_watches(w, getpid()));
  KG_CHECK(!kg_hangwatch_tick(w, 1000));
  KG_CHECK(kg_hangwatch_deadline(w) == 0);
  KG_CHECK(kg_hangwatch_reason(w) == NULL);
  KG_CHECK_INT(kg_hangwatch_watch(w, 0, ep1), KG_EUSAGE);
  KG_CHECK_INT(kg_hangwatch_watch(w, getpid(), ""), KG_EUSAGE);
  KG_CHECK(!kg_hangwatch_watches(w, getpid()));

  /* one process (this test's own: /proc says running, not stopped) */
  pid_t first = getpid();
  KG_CHECK_INT(kg_hangwatch_watch(w, first, ep1), 0);
  KG_CHECK(kg_hangwatch_watches(w, first));
  KG_CHECK(kg_hangwatch_deadline(w) == 0);   /* not armed until a tick */
  int64_t t = 1000;
  int64_t hung_at = s_until_hung(w, t, 10);
  /* HUNG comes max_missed periods after the first ping, which is one
     period after arming */
  KG_CHECK_INT((int) (hung_at - t), (int) (cfg.period_ms * (cfg.max_missed + 1)));
  KG_CHECK_STR(kg_hangwatch_reason(w), "it stopped answering its heartbeat for 0.2 s");
  KG_CHECK(kg_hangwatch_tick(w, hung_at));   /* still hung until disarmed */

  /* idle: disarmed; armed again, the count of misses starts over */
  kg_hangwatch_idle(w, hung_at + 1);
  KG_CHECK(kg_hangwatch_deadline(w) == 0);
  int64_t again = s_until_hung(w, hung_at + 1, 10);
  KG_CHECK_INT((int) (again - (hung_at + 1)), (int) (cfg.period_ms * (cfg.max_missed + 1)));

  /* another process: a new pinger replaces the old one, not armed, and the
     old reason is kept until a new hang replaces it */
  pid_t second = first + 1;
  KG_CHECK_INT(kg_hangwatch_watch(w, second, ep2), 0);
  KG_CHECK(kg_hangwatch_watches(w, second) && !kg_hangwatch_watches(w, first));
  KG_CHECK(kg_hangwatch_deadline(w) == 0);
  KG_CHECK(kg_hangwatch_reason(w) != NULL);

  /* the process is gone: nothing watched */
  kg_hangwatch_forget(w);
  KG_CHECK(!kg_hangwatch_watches(w, second));
  KG_CHECK(!kg_hangwatch_tick(w, again + 10000));
  KG_CHECK(kg_hangwatch_deadline(w) == 0);
  kg_hangwatch_idle(w, again);   /* harmless with nothing watched */

  kg_hangwatch_destroy(&w);
  KG_CHECK(w == NULL);
  kg_hangwatch_destroy(NULL);
  zmq_ctx_term(ctx);
}

KG_TEST_MAIN(KG_CASE(hangwatch_reason_table), KG_CASE(hangwatch_pinger_per_pid))
