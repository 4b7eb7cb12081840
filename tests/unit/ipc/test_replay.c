/*  kg_replay by tables, on an injected clock: a signature is accepted once
    however many others follow; a known session's message dated before the
    window is refused, judged on that session's own clock (ahead or behind
    kguard's); the bound on entries raises a floor that refuses old dates
    and never honest ones; the kernel's sessions are refused as reflected;
    sessions are forgotten least recently seen first. And what it costs. */
#include <stdio.h>
#include <string.h>

#include "kg_error.h"
#include "kg_replay.h"
#include "kg_test.h"

#define W KG_REPLAY_WINDOW_MS
static const int64_t T0 = 1796274635000;   /* 2026-12-03T05:10:35Z */

/*  A distinct MAC for n (what an HMAC would be: any 32 bytes). */
static void
s_mac(unsigned long n, unsigned char mac[32])
{
  memset(mac, 0, 32);
  for (int i = 0; i < 8; i++)   /* spread over the hash bytes */
    mac[i] = (unsigned char) ((n * 0x9E3779B97F4A7C15ull) >> (8 * i));
  memcpy(mac + 8, &n, sizeof n);
}

static int
s_check(kg_replay_t *r, unsigned long n, const char *session, int64_t date, int64_t now)
{
  unsigned char mac[32];
  s_mac(n, mac);
  return kg_replay_check(r, mac, session, date, now);
}

/*  The replay: a captured request passes kguard after 65,540
    other messages if only the last 65,536 are remembered. */
KG_TEST(replay_after_many_others)
{
  kg_replay_t *r = kg_replay_new(W, KG_REPLAY_MAX_MACS, KG_REPLAY_MAX_SESSIONS);
  KG_CHECK(r != NULL);
  KG_CHECK_INT(s_check(r, 1, "browser", T0, T0 + 5), 0);             /* the request */
  KG_CHECK_INT(s_check(r, 1, "browser", T0, T0 + 6), KG_EREPLAY);    /* at once */
  for (unsigned long n = 2; n < 2 + 65540; n++)
    KG_CHECK_INT(s_check(r, n, "browser", T0 + (int64_t) n / 100, T0 + 5 + (int64_t) n / 100),
                 0);
  int64_t later = T0 + 5 + 65542 / 100;
  KG_CHECK_INT(s_check(r, 1, "browser", T0, later), KG_EREPLAY);     /* still */
  /* once its date has left the window it is refused for its date alone,
     and its signature is forgotten */
  KG_CHECK_INT(s_check(r, 1, "browser", T0, T0 + W + 10), KG_EEXPIRED);
  KG_CHECK(kg_replay_macs(r) < 65541);
  kg_replay_destroy(&r);
  KG_CHECK(r == NULL);
  kg_replay_destroy(&r);
}

/*  Each row: a session whose clock is `skew` ms off kguard's (its dates =
    kguard's time + skew) sends one message at kguard time T0, then a
    message dated `age` ms before its own now, arriving at T0 + 1000. */
KG_TEST(replay_window_on_the_senders_clock)
{
  static const struct {
    int64_t skew, age;
    int rc;
  } rows[] = {
    {0, 0, 0},
    {0, W - 5000, 0},                /* inside the window */
    {0, W + 5000, KG_EEXPIRED},      /* a capture from 10 min ago */
    {10000, W - 5000, 0},            /* a clock 10 s ahead */
    {10000, W + 5000, KG_EEXPIRED},
    {-10000, W - 5000, 0},           /* 10 s behind: not refused for that */
    {-10000, W + 5000, KG_EEXPIRED},
    {3600000, W + 5000, KG_EEXPIRED},   /* an hour off, either way */
    {-3600000, W - 5000, 0},
    {-3600000, W + 5000, KG_EEXPIRED},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_replay_t *r = kg_replay_new(W, 1024, 64);
    /* the first message sets the session's clock, whatever its date */
    KG_CHECK_INT(s_check(r, 1, "s", T0 + rows[i].skew - 20, T0), 0);
    int64_t offset;
    unsigned long count;
    KG_CHECK(kg_replay_clock(r, "s", &offset, &count));
    KG_CHECK_INT(offset, 20 - rows[i].skew);   /* the real offset plus the delivery */
    KG_CHECK_INT(count, 1);
    int rc = s_check(r, 2, "s", T0 + 1000 + rows[i].skew - rows[i].age, T0 + 1000);
    if (rc != rows[i].rc)
      fprintf(stderr, "row %zu: %d, expected %d\n", i, rc, rows[i].rc);
    KG_CHECK_INT(rc, rows[i].rc);
    kg_replay_destroy(&r);
  }
  /* the clock estimate is the smallest (arrival - date) seen */
  kg_replay_t *r = kg_replay_new(W, 1024, 64);
  KG_CHECK_INT(s_check(r, 1, "s", T0, T0 + 300), 0);
  KG_CHECK_INT(s_check(r, 2, "s", T0 + 1000, T0 + 1040), 0);
  KG_CHECK_INT(s_check(r, 3, "s", T0 + 2000, T0 + 2500), 0);
  int64_t offset;
  unsigned long count;
  KG_CHECK(kg_replay_clock(r, "s", &offset, &count));
  KG_CHECK_INT(offset, 40);
  KG_CHECK_INT(count, 3);
  KG_CHECK(!kg_replay_clock(r, "other", &offset, &count));
  /* a message with no date cannot be bounded */
  KG_CHECK_INT(s_check(r, 4, "s", 0, T0 + 3000), KG_ENODATE);
  kg_replay_destroy(&r);
}

/*  A flood of signed messages past the bound: the oldest are dropped, the
    floor rises to their dates, honest messages (dated now) pass, a replay
    of a dropped one is refused for its date. */
KG_TEST(replay_bound_raises_a_floor)
{
  kg_replay_t *r = kg_replay_new(W, 8, 64);
  KG_CHECK_INT(s_check(r, 1, "victim", T0, T0), 0);
  for (unsigned long n = 2; n <= 40; n++)
    KG_CHECK_INT(s_check(r, n, "flood", T0 + (int64_t) n, T0 + (int64_t) n), 0);
  KG_CHECK_INT(kg_replay_macs(r), 8);
  KG_CHECK(kg_replay_floor(r) >= T0 + 32);
  KG_CHECK_INT(s_check(r, 1, "victim", T0, T0 + 50), KG_EEXPIRED);   /* forgotten, refused */
  KG_CHECK_INT(s_check(r, 99, "victim", T0 + 50, T0 + 51), 0);        /* honest: passes */
  KG_CHECK_INT(s_check(r, 100, "newcomer", T0 + 999999, T0 + 52), 0); /* a new session */
  kg_replay_destroy(&r);
}

KG_TEST(replay_reflected_kernel_sessions)
{
  kg_replay_t *r = kg_replay_new(W, 1024, 64);
  KG_CHECK_INT(s_check(r, 1, "browser", T0, T0), 0);
  kg_replay_kernel_session(r, "kernel-gen-1");
  kg_replay_kernel_session(r, "kernel-gen-1");   /* idempotent */
  kg_replay_kernel_session(r, "kernel-gen-2");
  kg_replay_kernel_session(r, NULL);
  kg_replay_kernel_session(r, "");
  KG_CHECK_INT(s_check(r, 2, "kernel-gen-1", T0, T0 + 1), KG_EREFLECTED);
  KG_CHECK_INT(s_check(r, 3, "kernel-gen-2", T0, T0 + 1), KG_EREFLECTED);
  KG_CHECK_INT(s_check(r, 4, "kernel-gen-2", 0, T0 + 1), KG_EREFLECTED);   /* before the date */
  KG_CHECK_INT(s_check(r, 5, "browser", T0 + 2, T0 + 2), 0);
  /* a frontend session the kernel later uses (never in practice) */
  kg_replay_kernel_session(r, "browser");
  KG_CHECK_INT(s_check(r, 6, "browser", T0 + 3, T0 + 3), KG_EREFLECTED);
  kg_replay_destroy(&r);
}

KG_TEST(replay_sessions_forgotten_least_recent_first)
{
  kg_replay_t *r = kg_replay_new(W, 1024, 4);
  char id[16];
  for (int i = 0; i < 4; i++) {
    snprintf(id, sizeof id, "s%d", i);
    KG_CHECK_INT(s_check(r, (unsigned long) i + 1, id, T0 + i, T0 + i), 0);
  }
  KG_CHECK_INT(s_check(r, 10, "s0", T0 + 10, T0 + 10), 0);   /* s0 seen again */
  KG_CHECK_INT(s_check(r, 11, "s4", T0 + 11, T0 + 11), 0);   /* s1 leaves */
  KG_CHECK_INT(kg_replay_sessions(r), 4);
  int64_t off;
  unsigned long count;
  KG_CHECK(!kg_replay_clock(r, "s1", &off, &count));
  KG_CHECK(kg_replay_clock(r, "s0", &off, &count) && count == 2);
  for (int i = 2; i <= 4; i++) {
    snprintf(id, sizeof id, "s%d", i);
    KG_CHECK(kg_replay_clock(r, id, &off, &count));
  }
  /* many more: the table stays at its bound and every lookup still works */
  for (int i = 5; i < 2000; i++) {
    snprintf(id, sizeof id, "s%d", i);
    KG_CHECK_INT(s_check(r, (unsigned long) i + 100, id, T0 + i, T0 + i), 0);
  }
  KG_CHECK_INT(kg_replay_sessions(r), 4);
  for (int i = 1996; i < 2000; i++) {
    snprintf(id, sizeof id, "s%d", i);
    KG_CHECK(kg_replay_clock(r, id, &off, &count));
  }
  KG_CHECK(kg_replay_new(0, 1, 1) == NULL);
  KG_CHECK(kg_replay_new(W, 0, 1) == NULL);
  KG_CHECK(kg_replay_new(W, 1, 0) == NULL);
  kg_replay_destroy(&r);
}

/*  What the history costs: an idle one, one with a session's traffic, and
    one filled to its bound (the figures docs/SECURITY.md gives). */
KG_TEST(replay_memory_is_bounded)
{
  kg_replay_t *r = kg_replay_new(W, KG_REPLAY_MAX_MACS, KG_REPLAY_MAX_SESSIONS);
  size_t idle = kg_replay_memory(r);
  for (unsigned long n = 1; n <= 1000; n++)
    KG_CHECK_INT(s_check(r, n, "browser", T0 + (int64_t) n, T0 + (int64_t) n), 0);
  size_t typical = kg_replay_memory(r);
  for (unsigned long n = 1001; n <= KG_REPLAY_MAX_MACS + 1000; n++)
    KG_CHECK_INT(s_check(r, n, "flood", T0 + 2000, T0 + 2000), 0);
  size_t full = kg_replay_memory(r);
  KG_CHECK_INT(kg_replay_macs(r), KG_REPLAY_MAX_MACS);
  fprintf(stderr, "kg_replay memory: idle %zu B, 1000 messages %zu B, full (%u) %zu B\n",
          idle, typical, KG_REPLAY_MAX_MACS, full);
  KG_CHECK(idle < 1024);
  KG_CHECK(typical < 128 * 1024);
  KG_CHECK(full < 13u * 1024 * 1024);
  kg_replay_destroy(&r);
}

KG_TEST_MAIN(KG_CASE(replay_after_many_others), KG_CASE(replay_window_on_the_senders_clock),
             KG_CASE(replay_bound_raises_a_floor), KG_CASE(replay_reflected_kernel_sessions),
             KG_CASE(replay_sessions_forgotten_least_recent_first),
             KG_CASE(replay_memory_is_bounded))
