/*  kg_throughput by a table: bytes done, total, seconds since the start and
    since the figures were measured, and the words a person reads. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_throughput.h"
#include "kg_test.h"

typedef struct {
  uint64_t done, total;
  double secs, stale;
  const char *want;
} s_row_t;

static const s_row_t s_rows[] = {
  {0, 0, 0, 0, "0 B of ?"},                                       /* nothing known */
  {512, 1024, 0, 0, "512 B of 1.0 KiB"},                          /* no time: no rate */
  {1 << 20, 4 << 20, 1, 0, "1.0 MiB of 4.0 MiB, 1.0 MiB/s, about 3 s left"},
  {1 << 20, 4 << 20, 1, 1, "1.0 MiB of 4.0 MiB, 1.0 MiB/s, about 2 s left"}, /* counts down */
  {1 << 20, 4 << 20, 1, 9, "1.0 MiB of 4.0 MiB, 1.0 MiB/s, about 0 s left"}, /* never < 0 */
  {3ULL << 30, 3ULL << 30, 2, 0, "3.0 GiB of 3.0 GiB, 1.5 GiB/s"},           /* done */
  {440401920, 1073741824, 6.5, 0, "420.0 MiB of 1.0 GiB, 64.6 MiB/s, about 9 s left"},
  {5, 0, 1, 0, "5 B of ?, 5 B/s"},                                /* total unknown */
  {0, 1 << 20, 3, 0, "0 B of 1.0 MiB"},                           /* nothing read yet */
};

/*  Durations as a person reads them, and local times with the zone. */
KG_TEST(duration_and_local_time_words)
{
  static const struct {
    int64_t ms;
    const char *want;
  } rows[] = {
    {-5, "0 ms"}, {0, "0 ms"}, {350, "350 ms"}, {999, "999 ms"}, {1000, "1.0 s"},
    {1500, "1.5 s"}, {2099, "2.0 s"}, {9999, "9.9 s"}, {10000, "10 s"}, {60000, "60 s"},
    {119999, "119 s"}, {120000, "2 min 0 s"}, {185500, "3 min 5 s"},
  };
  char buf[32];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    KG_CHECK_STR(kg_throughput_duration(rows[i].ms, buf, sizeof buf), rows[i].want);
  setenv("TZ", "UTC", 1);
  tzset();
  char t[48];
  KG_CHECK_STR(kg_clock_local_ms(1796417200625LL, t, sizeof t), "2026-12-04 20:46:40.625 UTC");
  setenv("TZ", "CET-1", 1);
  tzset();
  KG_CHECK_STR(kg_clock_local_ms(1796417200625LL, t, sizeof t), "2026-12-04 21:46:40.625 CET");
}

KG_TEST(text_table)
{
  char buf[128];
  for (size_t i = 0; i < sizeof s_rows / sizeof s_rows[0]; i++) {
    const s_row_t *r = &s_rows[i];
    kg_throughput_text(r->done, r->total, r->secs, r->stale, buf, sizeof buf);
    KG_CHECK_STR(buf, r->want);
  }
  /* Cut to the buffer, always terminated. */
  char small[8];
  kg_throughput_text(1 << 20, 4 << 20, 1, 0, small, sizeof small);
  KG_CHECK(strlen(small) == sizeof small - 1);
}

KG_TEST_MAIN(KG_CASE(text_table), KG_CASE(duration_and_local_time_words))
