/*  kg_ckpt_util: time arguments and archive member names. */
#include <limits.h>
#include <stdint.h>

#include "kg_clock.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"
#include "kg_test.h"

KG_TEST(time_parse_and_format)
{
  int64_t ms;
  char buf[32];
  KG_CHECK_INT(kg_ckpt_parse_time("1767323045678", &ms), 0);
  KG_CHECK_INT(ms, 1767323045678LL);
  KG_CHECK_STR(kg_clock_iso_ms(ms, buf, sizeof buf), "2026-01-02T03:04:05.678Z");
  KG_CHECK_INT(kg_ckpt_parse_time("2026-01-02T03:04:05.678Z", &ms), 0);
  KG_CHECK_INT(ms, 1767323045678LL);
  KG_CHECK_INT(kg_ckpt_parse_time("2026-01-02T05:04:05.678+02:00", &ms), 0);
  KG_CHECK_INT(ms, 1767323045678LL);
  KG_CHECK_INT(kg_ckpt_parse_time("2026-01-02 03:04:05", &ms), 0);
  KG_CHECK_INT(ms, 1767323045000LL);
  KG_CHECK_INT(kg_ckpt_parse_time("yesterday", &ms), KG_EUSAGE);
  KG_CHECK_INT(kg_ckpt_parse_time("2026-13-02T03:04:05Z", &ms), KG_EUSAGE);
}

KG_TEST(member_names)
{
  KG_CHECK(kg_ckpt_path_problem("state.pt") == NULL);
  KG_CHECK(kg_ckpt_path_problem("a/b/c.bin") == NULL);
  KG_CHECK(kg_ckpt_path_problem("caf\xc3\xa9.pt") == NULL);
  KG_CHECK(kg_ckpt_path_problem("../x") != NULL);
  KG_CHECK(kg_ckpt_path_problem("a/../../x") != NULL);
  KG_CHECK(kg_ckpt_path_problem("/etc/passwd") != NULL);
  KG_CHECK(kg_ckpt_path_problem("a//b") != NULL);
  KG_CHECK(kg_ckpt_path_problem("./a") != NULL);
  KG_CHECK(kg_ckpt_path_problem("a/") != NULL);
  KG_CHECK(kg_ckpt_path_problem("") != NULL);
  KG_CHECK(kg_ckpt_path_problem("bad\xff.pt") != NULL);
  KG_CHECK(kg_ckpt_path_problem("over\xc0\xaflong") != NULL);
  KG_CHECK(kg_ckpt_path_problem("line\nbreak") != NULL);
  KG_CHECK(!kg_ckpt_utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
  KG_CHECK(!kg_ckpt_utf8_valid("\xe2\x82", 2));     /* cut short */
}

KG_TEST_MAIN(KG_CASE(time_parse_and_format), KG_CASE(member_names))
