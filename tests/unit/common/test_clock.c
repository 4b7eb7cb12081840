/*  kg_clock: ISO times of recorded milliseconds, and the two clocks. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "kg_clock.h"
#include "kg_test.h"

/*  UTC with milliseconds, before the epoch too (the millisecond borrows
    from the second), and cut to a short buffer. */
KG_TEST(iso_ms_table)
{
  static const struct {
    int64_t ms;
    const char *want;
  } t[] = {
    {0, "1970-01-01T00:00:00.000Z"},
    {1767323045678LL, "2026-01-02T03:04:05.678Z"},
    {951782400000LL, "2000-02-29T00:00:00.000Z"},
    {-1, "1969-12-31T23:59:59.999Z"},
    {-1000, "1969-12-31T23:59:59.000Z"},
    {-86400001LL, "1969-12-30T23:59:59.999Z"},
  };
  char buf[32];
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    KG_CHECK_STR(kg_clock_iso_ms(t[i].ms, buf, sizeof buf), t[i].want);
  char small[11];
  KG_CHECK(kg_clock_iso_ms(0, small, sizeof small) == small);
  KG_CHECK_STR(small, "1970-01-01");
}

/*  The wall clock is the system's in milliseconds; the monotonic one never
    goes back. */
KG_TEST(clocks_agree_with_the_system)
{
  int64_t before = (int64_t) time(NULL) * 1000;
  int64_t wall = kg_clock_wall_ms();
  int64_t after = ((int64_t) time(NULL) + 1) * 1000;
  KG_CHECK(wall >= before && wall <= after);
  int64_t last = kg_clock_mono_ms();
  for (int i = 0; i < 1000; i++) {
    int64_t now = kg_clock_mono_ms();
    KG_CHECK(now >= last);
    last = now;
  }
}

KG_TEST_MAIN(KG_CASE(iso_ms_table), KG_CASE(clocks_agree_with_the_system))
