/*  Tables for kg_stale: header dates and the stale-request judgement. */
#include "kg_error.h"
#include "kg_stale.h"
#include "kg_test.h"

/* 2026-12-03T05:10:35.120Z */
#define T_ERR 1796274635120LL

KG_TEST(parse_dates)
{
  static const struct {
    const char *text;
    int rc;
    long long ms;
  } t[] = {
    {"2026-12-03T05:10:35.120Z", 0, T_ERR},
    {"2026-12-03T05:10:35.120427Z", 0, T_ERR},          /* jupyter_client: microseconds */
    {"2026-12-03T05:10:35.120427+00:00", 0, T_ERR},
    {"2026-12-03T06:10:35.12+01:00", 0, T_ERR},
    {"2026-12-03T00:10:35.120-0500", 0, T_ERR},
    {"2026-12-03 05:10:35.120", 0, T_ERR},               /* no zone: UTC */
    {"2026-12-03T05:10:35Z", 0, T_ERR - 120},
    {"1970-01-01T00:00:00Z", 0, 0},
    {"2026-02-31T00:00:00Z", KG_EUSAGE, 0},
    {"2026-12-03T25:10:35Z", KG_EUSAGE, 0},
    {"2026-12-03T05:10:35.Z", KG_EUSAGE, 0},
    {"2026-12-03T05:10:35.120Zjunk", KG_EUSAGE, 0},
    {"2026-12-03", KG_EUSAGE, 0},
    {"", KG_EUSAGE, 0},
    {"yesterday", KG_EUSAGE, 0},
    {"2026-12-03T05:10:35+0", KG_EUSAGE, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    int64_t ms = -1;
    int rc = kg_stale_parse_date(t[i].text, &ms);
    if (rc != t[i].rc)
      fprintf(stderr, "case %zu: %s\n", i, t[i].text);
    KG_CHECK_INT(rc, t[i].rc);
    if (t[i].rc == 0)
      KG_CHECK_INT(ms, t[i].ms);
  }
}

KG_TEST(judge)
{
  /* The run seen under Jupyter Server: queued cell sent 116 ms before the error. */
  KG_CHECK_INT(kg_stale_judge("2026-12-03T05:10:35.004Z", T_ERR, 0), KG_STALE_YES);
  KG_CHECK_INT(kg_stale_judge("2026-12-03T05:10:35.120Z", T_ERR, 0), KG_STALE_NO);
  KG_CHECK_INT(kg_stale_judge("2026-12-03T05:10:35.300Z", T_ERR, 250), KG_STALE_YES);
  KG_CHECK_INT(kg_stale_judge("2026-12-03T05:10:36.000Z", T_ERR, 250), KG_STALE_NO);
  KG_CHECK_INT(kg_stale_judge("2026-12-03T05:10:35.004Z", T_ERR, -5), KG_STALE_YES);
  KG_CHECK_INT(kg_stale_judge(NULL, T_ERR, 0), KG_STALE_UNKNOWN);
  KG_CHECK_INT(kg_stale_judge("soon", T_ERR, 0), KG_STALE_UNKNOWN);
}

KG_TEST_MAIN(KG_CASE(parse_dates), KG_CASE(judge))
