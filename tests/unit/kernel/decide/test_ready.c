/*  kg_ready: when is a starting kernel ready, and when does the next
    kernel_info nudge go out. Pure, by tables, with an injected clock. */
#include <stdio.h>
#include <string.h>

#include "kg_ready.h"
#include "kg_test.h"

/*  Every order of the two signs (reply, iopub), with nothing, either, or
    both: ready exactly when both came, whatever the order. */
KG_TEST(ready_needs_reply_and_iopub_in_any_order)
{
  static const struct {
    const char *signs;          /*  r = kernel_info_reply, i = iopub         */
    bool ready;
  } rows[] = {
      {"", false}, {"r", false}, {"i", false}, {"rr", false}, {"ii", false},
      {"ri", true}, {"ir", true}, {"rri", true}, {"iir", true},
  };
  for (size_t n = 0; n < sizeof rows / sizeof rows[0]; n++) {
    kg_ready_t *r = kg_ready_new();
    KG_CHECK(r != NULL);
    kg_ready_reset(r, 1000);
    for (const char *c = rows[n].signs; *c; c++)
      *c == 'r' ? kg_ready_saw_reply(r) : kg_ready_saw_iopub(r);
    if (kg_ready_done(r) != rows[n].ready)
      fprintf(stderr, "row \"%s\"\n", rows[n].signs);
    KG_CHECK(kg_ready_done(r) == rows[n].ready);
    KG_CHECK((kg_ready_deadline(r) == 0) == rows[n].ready);   /* no nudge once ready */
    KG_CHECK(!rows[n].ready || !kg_ready_nudge_due(r, 100000));
    /* a new kernel starts from nothing */
    kg_ready_reset(r, 5000);
    KG_CHECK(!kg_ready_done(r));
    KG_CHECK(kg_ready_nudge_due(r, 5000));
    kg_ready_destroy(&r);
    KG_CHECK(r == NULL);
  }
}

/*  The nudge schedule while the kernel imports: at once, then 50, 100, 200,
    400, 800, 1600 ms apart (the doubling stops once the interval reached
    1 s); when the kernel has answered, the next one is at most 20 ms away. */
KG_TEST(ready_nudge_schedule)
{
  kg_ready_t *r = kg_ready_new();
  int64_t now = 0;
  kg_ready_reset(r, now);
  static const int64_t gaps[] = {50, 100, 200, 400, 800, 1600, 1600};
  KG_CHECK(kg_ready_nudge_due(r, now));
  for (size_t i = 0; i < sizeof gaps / sizeof gaps[0]; i++) {
    kg_ready_nudge_scheduled(r, now);
    KG_CHECK_INT(kg_ready_deadline(r), now + gaps[i]);
    KG_CHECK(!kg_ready_nudge_due(r, now + gaps[i] - 1));
    KG_CHECK(kg_ready_nudge_due(r, now + gaps[i]));
    now += gaps[i];
  }
  /* answered, iopub missing: the 1.6 s wait shrinks to 20 ms */
  kg_ready_nudge_scheduled(r, now);
  kg_ready_saw_reply(r);
  KG_CHECK(!kg_ready_nudge_due(r, now + 19));
  KG_CHECK_INT(kg_ready_deadline(r), now + 19 + 20);
  KG_CHECK(kg_ready_nudge_due(r, now + 39));
  kg_ready_saw_iopub(r);
  KG_CHECK(!kg_ready_nudge_due(r, now + 10000));
  kg_ready_destroy(&r);
  kg_ready_destroy(&r);   /* safe again */
}

/*  kguard's own ids: the last KG_READY_IDS are recognised, older ones and
    anything else are not; the last one is the stop_on_error probe's. */
KG_TEST(ready_remembers_own_ids)
{
  kg_ready_t *r = kg_ready_new();
  KG_CHECK_STR(kg_ready_last(r), "");
  KG_CHECK(!kg_ready_is_nudge(r, ""));
  KG_CHECK(!kg_ready_is_nudge(r, NULL));
  char id[40];
  for (int i = 0; i < KG_READY_IDS + 3; i++) {
    snprintf(id, sizeof id, "00000000-0000-4000-8000-%012d", i);
    KG_CHECK(kg_ready_remember(r, id));
    KG_CHECK_STR(kg_ready_last(r), id);
  }
  for (int i = 0; i < KG_READY_IDS + 3; i++) {
    snprintf(id, sizeof id, "00000000-0000-4000-8000-%012d", i);
    KG_CHECK(kg_ready_is_nudge(r, id) == (i >= 3));
  }
  KG_CHECK(!kg_ready_is_nudge(r, "a-frontend-request"));
  /* not a uuid of kguard's: refused, not truncated into a false match */
  char longid[100];
  memset(longid, 'x', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  KG_CHECK(!kg_ready_remember(r, longid));
  KG_CHECK(!kg_ready_remember(r, NULL));
  KG_CHECK(!kg_ready_is_nudge(r, longid));
  KG_CHECK_STR(kg_ready_last(r), id);
  /* a restart keeps them: a late reply to an old nudge is still kguard's */
  kg_ready_reset(r, 0);
  KG_CHECK(kg_ready_is_nudge(r, id));
  kg_ready_destroy(&r);
}

KG_TEST_MAIN(KG_CASE(ready_needs_reply_and_iopub_in_any_order), KG_CASE(ready_nudge_schedule),
             KG_CASE(ready_remembers_own_ids))
