/*  kg_ckpt_ratecap, the slow-disk test hook: without KGUARD_TEST_READ_BPS
    nothing is capped or waited for; with it, reads are cut into pieces of
    about an eighth of a second's bytes, and taking n bytes returns no
    sooner than they are due at that rate, ticking while it waits. */
#include <stdint.h>
#include <stdlib.h>

#include "kg_ckpt_ratecap.h"
#include "kg_ckpt_verify.h"
#include "kg_test.h"

static void
s_tick(void *arg)
{
  (*(int *) arg)++;
}

KG_TEST(ratecap_off_without_the_variable)
{
  unsetenv(KG_CKPT_TEST_READ_BPS_ENV);
  kg_ckpt_ratecap_t cap;
  kg_ckpt_ratecap_init(&cap);
  KG_CHECK_INT(cap.bps, 0);
  KG_CHECK_INT(kg_ckpt_ratecap_piece(&cap, 1 << 26), 1 << 26);
  int ticks = 0;
  int64_t t0 = kg_ckpt_now_ns();
  kg_ckpt_ratecap_take(&cap, 1ULL << 40, s_tick, &ticks);   /* a terabyte, at once */
  KG_CHECK(kg_ckpt_now_ns() - t0 < 100000000LL);
  KG_CHECK_INT(ticks, 0);
  kg_ckpt_ratecap_fini(&cap);
  /* not a positive integer: no cap either */
  const char *bad[] = {"0", "fast", "12kb", "", "-1", " 5", "+5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv(KG_CKPT_TEST_READ_BPS_ENV, bad[i], 1);
    kg_ckpt_ratecap_init(&cap);
    KG_CHECK_INT(cap.bps, 0);
    kg_ckpt_ratecap_fini(&cap);
  }
  unsetenv(KG_CKPT_TEST_READ_BPS_ENV);
}

KG_TEST(ratecap_waits_until_the_bytes_are_due)
{
  const uint64_t bps = 1000000;   /* 1 MB/s */
  setenv(KG_CKPT_TEST_READ_BPS_ENV, "1000000", 1);
  kg_ckpt_ratecap_t cap;
  kg_ckpt_ratecap_init(&cap);
  KG_CHECK_INT(cap.bps, bps);
  /* pieces: small reads as asked, large ones cut near bps / 8 */
  KG_CHECK_INT(kg_ckpt_ratecap_piece(&cap, 1000), 1000);
  size_t piece = kg_ckpt_ratecap_piece(&cap, 1 << 26);
  KG_CHECK(piece >= bps / 8 && piece <= bps / 8 + 4096);
  /* 250 kB at 1 MB/s: due 250 ms after init, with a tick at least every
     200 ms of the wait */
  int ticks = 0;
  kg_ckpt_ratecap_take(&cap, bps / 4, s_tick, &ticks);
  int64_t waited = kg_ckpt_now_ns() - cap.start_ns;
  KG_CHECK(waited >= 250000000LL);
  KG_CHECK(waited < 900000000LL);
  KG_CHECK(ticks >= 1);
  kg_ckpt_ratecap_fini(&cap);
  unsetenv(KG_CKPT_TEST_READ_BPS_ENV);
}

KG_TEST_MAIN(KG_CASE(ratecap_off_without_the_variable),
             KG_CASE(ratecap_waits_until_the_bytes_are_due))
