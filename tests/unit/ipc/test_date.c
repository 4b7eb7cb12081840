/*  kg_date: every form of a header date a Jupyter client writes, and what
    is not a date (the frontend wrote it: rejected as 0, never trusted). */
#include <stdint.h>
#include <stdio.h>

#include "kg_date.h"
#include "kg_test.h"

KG_TEST(header_dates)
{
  /* 2026-12-03T05:10:35.120Z: every form a Jupyter client writes. */
  static const struct {
    const char *text;
    int64_t ms;
  } good[] = {
    {"1970-01-01T00:00:01Z", 1000},
    {"2023-11-14T22:13:20.250Z", 1700000000250},
    {"2023-11-14T22:13:20.250123+00:00", 1700000000250},
    {"2023-11-15T00:13:20.5+02:00", 1700000000500},
    {"2023-11-14T22:13:20", 1700000000000},                   /* no zone: UTC */
    {"2026-12-03T05:10:35.120Z", 1796274635120},
    {"2026-12-03T05:10:35.120427Z", 1796274635120},           /* microseconds */
    {"2026-12-03T05:10:35.120427+00:00", 1796274635120},
    {"2026-12-03T06:10:35.12+01:00", 1796274635120},          /* .12: 120 ms, not 119 */
    {"2026-12-03T00:10:35.120-05:00", 1796274635120},
    {"2026-12-03T00:10:35.120-0500", 1796274635120},          /* offset without colon */
    {"2026-12-03 05:10:35.120", 1796274635120},               /* ' ' for 'T' */
    {"2026-12-03 05:10:35.120Z", 1796274635120},
    {"2026-12-03T05:10:35Z", 1796274635000},                  /* no fraction */
    {"2026-12-03T00:10:35-05:00", 1796274635000},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int64_t ms = kg_date_ms(good[i].text);
    if (ms != good[i].ms)
      fprintf(stderr, "date %s: %lld\n", good[i].text, (long long) ms);
    KG_CHECK(ms == good[i].ms);
  }
  static const char *bad[] = {NULL, "", "yesterday", "2023-13-01T00:00:00Z",
                              "2023-11-14T22:13:20Zjunk", "2023-11-14 22:13", "2023-11-14T25:00:00Z",
                              "2026-02-31T00:00:00Z", "2026-12-03T05:10:35.Z", "2026-12-03",
                              "2026-12-03T05:10:35+0", "2026-12-03T05:10:nan", "2026-12-03T05:10: 35Z",
                              "2026-12-03T05:10:+35Z", "2026-12-03T05:10:35.1234567890Z"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (kg_date_ms(bad[i]) != 0)
      fprintf(stderr, "date %s accepted\n", bad[i] ? bad[i] : "(null)");
    KG_CHECK(kg_date_ms(bad[i]) == 0);
  }
}

KG_TEST(header_member)
{
  cJSON *h = cJSON_Parse("{\"date\": \"2026-12-03T05:10:35.120Z\", \"msg_id\": \"x\"}");
  KG_CHECK(kg_date_header_ms(h) == 1796274635120);
  cJSON_ReplaceItemInObject(h, "date", cJSON_CreateNumber(1796274635120.0));
  KG_CHECK(kg_date_header_ms(h) == 0);   /* not a string */
  cJSON_DeleteItemFromObject(h, "date");
  KG_CHECK(kg_date_header_ms(h) == 0);
  KG_CHECK(kg_date_header_ms(NULL) == 0);
  cJSON_Delete(h);
}

KG_TEST_MAIN(KG_CASE(header_dates), KG_CASE(header_member))
