/*  kg_relay_stats: each outcome counts in its one kind, drops go through
    the rate-limited log, and the exit line sums it up. No sockets. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_relay_stats.h"
#include "kg_test.h"

/*  Each row: one event; the kind it must count in. */
KG_TEST(relay_stats_counts_by_kind)
{
  enum { RELAYED, UNROUTED, UNRECORDED, REJECTED, REJECTED_KERNEL, OVERSIZED, UNEXPECTED,
         UNSENT };
  static const struct {
    int event, rc;
    kg_relay_count_t kind;
  } rows[] = {
      {RELAYED, 0, KG_RELAY_RELAYED},
      {UNROUTED, 0, KG_RELAY_UNROUTED},
      {UNRECORDED, 0, KG_RELAY_MALFORMED},
      {REJECTED, KG_ENOSIG, KG_RELAY_FORGED},
      {REJECTED, KG_EBADSIG, KG_RELAY_FORGED},
      {REJECTED, KG_EREPLAY, KG_RELAY_FORGED},
      {REJECTED, KG_EEXPIRED, KG_RELAY_FORGED},
      {REJECTED, KG_EREFLECTED, KG_RELAY_FORGED},
      {REJECTED, KG_EBADJSON, KG_RELAY_MALFORMED},
      {REJECTED, KG_EBADHEADER, KG_RELAY_MALFORMED},
      {REJECTED, KG_ESHORTMSG, KG_RELAY_MALFORMED},
      {REJECTED_KERNEL, KG_EBADJSON, KG_RELAY_MALFORMED},
      {REJECTED_KERNEL, KG_EBADSIG, KG_RELAY_MALFORMED},   /* the kernel is never "forged" */
      {OVERSIZED, 0, KG_RELAY_OVERSIZED},
      {UNEXPECTED, 0, KG_RELAY_UNEXPECTED},
      {UNSENT, KG_EQFULL, KG_RELAY_UNSENT},
      {UNSENT, -EHOSTUNREACH, KG_RELAY_UNSENT},
  };
  for (size_t n = 0; n < sizeof rows / sizeof rows[0]; n++) {
    kg_relay_stats_t *s = kg_relay_stats_new(5, 10000);
    KG_CHECK(s != NULL);
    switch (rows[n].event) {
    case RELAYED: kg_relay_stats_relayed(s); break;
    case UNROUTED: kg_relay_stats_unrouted(s); break;
    case UNRECORDED: kg_relay_stats_unrecorded(s); break;
    case REJECTED:
      KG_CHECK_INT(kg_relay_stats_rejected(s, rows[n].rc, 100), KG_RATELOG_FULL);
      break;
    case REJECTED_KERNEL:
      KG_CHECK_INT(kg_relay_stats_rejected_kernel(s, rows[n].rc, 100), KG_RATELOG_FULL);
      break;
    case OVERSIZED: KG_CHECK_INT(kg_relay_stats_oversized(s, 100), KG_RATELOG_FULL); break;
    case UNEXPECTED: KG_CHECK_INT(kg_relay_stats_unexpected(s, 100), KG_RATELOG_FULL); break;
    case UNSENT:
      KG_CHECK_INT(kg_relay_stats_unsent(s, rows[n].rc, 100), KG_RATELOG_FULL);
      break;
    }
    for (int k = 0; k < KG_RELAY_KINDS; k++)
      KG_CHECK_INT((int) kg_relay_stats_count(s, (kg_relay_count_t) k),
                   k == (int) rows[n].kind ? 1 : 0);
    /* relayed, unrouted and unrecorded are never rate-logged */
    bool logged = rows[n].event >= REJECTED;
    KG_CHECK((kg_relay_stats_deadline(s) != 0) == logged);
    kg_relay_stats_destroy(&s);
    KG_CHECK(s == NULL);
  }
  kg_relay_stats_destroy(NULL);
}

/*  A flood of forged messages: the first burst are logged in full, the
    rest only counted and summed up when the interval ends. */
KG_TEST(relay_stats_drop_log_burst)
{
  kg_relay_stats_t *s = kg_relay_stats_new(2, 1000);
  KG_CHECK(s != NULL);
  KG_CHECK(kg_relay_stats_new(2, 0) == NULL);
  KG_CHECK_INT(kg_relay_stats_rejected(s, KG_EBADSIG, 10), KG_RATELOG_FULL);
  KG_CHECK_INT(kg_relay_stats_rejected(s, KG_EBADSIG, 20), KG_RATELOG_FULL);
  for (int i = 0; i < 7; i++)
    KG_CHECK_INT(kg_relay_stats_rejected(s, KG_EBADSIG, 30 + i), KG_RATELOG_QUIET);
  KG_CHECK_INT((int) kg_relay_stats_count(s, KG_RELAY_FORGED), 9);
  int64_t end = kg_relay_stats_deadline(s);
  KG_CHECK(end > 10);
  KG_CHECK(kg_relay_stats_drop_summary(s, end - 1, false) == NULL);
  char *line = kg_relay_stats_drop_summary(s, end, false);
  KG_CHECK(line != NULL);
  KG_CHECK(strstr(line, "9 forged (7 not shown)") != NULL);
  free(line);
  kg_relay_stats_destroy(&s);
}

/*  The exit line names every count in its place. */
KG_TEST(relay_stats_totals_text)
{
  kg_relay_stats_t *s = kg_relay_stats_new(5, 10000);
  KG_CHECK(s != NULL);
  char *line = kg_relay_stats_totals(s);
  KG_CHECK_STR(line, "0 relayed, 0 forged or unsigned, 0 malformed, 0 oversized, "
                     "0 unroutable, 0 unexpected, 0 unsent messages dropped");
  free(line);
  for (int i = 0; i < 12; i++)
    kg_relay_stats_relayed(s);
  kg_relay_stats_rejected(s, KG_ENOSIG, 1);
  kg_relay_stats_rejected(s, KG_EREPLAY, 2);
  kg_relay_stats_rejected(s, KG_EBADJSON, 3);
  kg_relay_stats_oversized(s, 4);
  kg_relay_stats_oversized(s, 5);
  kg_relay_stats_oversized(s, 6);
  for (int i = 0; i < 4; i++)
    kg_relay_stats_unrouted(s);
  kg_relay_stats_unexpected(s, 7);
  kg_relay_stats_unsent(s, KG_EQFULL, 8);
  kg_relay_stats_unsent(s, KG_EQFULL, 9);
  line = kg_relay_stats_totals(s);
  KG_CHECK_STR(line, "12 relayed, 2 forged or unsigned, 1 malformed, 3 oversized, "
                     "4 unroutable, 1 unexpected, 2 unsent messages dropped");
  free(line);
  kg_relay_stats_destroy(&s);
}

KG_TEST_MAIN(KG_CASE(relay_stats_counts_by_kind), KG_CASE(relay_stats_drop_log_burst),
             KG_CASE(relay_stats_totals_text))
