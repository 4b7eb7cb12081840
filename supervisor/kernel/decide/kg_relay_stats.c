/*  kg_relay_stats: counts of relayed and dropped messages, the drop log
    and the exit line (kg_relay_stats.h). */
#include "kg_relay_stats.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "kg_error.h"
#include "kg_msg.h"

/*  The drop log's kinds: kg_msg's reasons for refusing a message, then the
    relay's own. */
enum { S_UNEXPECTED = KG_DROP_COUNT, S_UNSENT, S_KINDS };
static const char *const s_kind_names[S_KINDS] = {
  [KG_DROP_UNSIGNED] = "unsigned", [KG_DROP_FORGED] = "forged",
  [KG_DROP_REPLAYED] = "replayed", [KG_DROP_EXPIRED] = "expired",
  [KG_DROP_REFLECTED] = "reflected", [KG_DROP_MALFORMED] = "malformed",
  [KG_DROP_OVERSIZED] = "oversized", [S_UNEXPECTED] = "unexpected", [S_UNSENT] = "unsent"};

struct kg_relay_stats_t {
  unsigned long count[KG_RELAY_KINDS];
  kg_ratelog_t *droplog;        /*  owned                                    */
};

kg_relay_stats_t *
kg_relay_stats_new(unsigned burst, int64_t interval_ms)
{
  kg_relay_stats_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->droplog = kg_ratelog_new(S_KINDS, s_kind_names, burst, interval_ms);
  if (!self->droplog)
    kg_relay_stats_destroy(&self);
  return self;
}

void
kg_relay_stats_destroy(kg_relay_stats_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_ratelog_destroy(&(*self_p)->droplog);
  free(*self_p);
  *self_p = NULL;
}

void
kg_relay_stats_relayed(kg_relay_stats_t *self)
{
  assert(self);
  self->count[KG_RELAY_RELAYED]++;
}

void
kg_relay_stats_unrouted(kg_relay_stats_t *self)
{
  assert(self);
  self->count[KG_RELAY_UNROUTED]++;
}

void
kg_relay_stats_unrecorded(kg_relay_stats_t *self)
{
  assert(self);
  self->count[KG_RELAY_MALFORMED]++;
}

kg_ratelog_verdict_t
kg_relay_stats_rejected(kg_relay_stats_t *self, int rc, int64_t now)
{
  assert(self);
  bool forged = rc == KG_ENOSIG || rc == KG_EBADSIG || rc == KG_EREPLAY || rc == KG_EEXPIRED
                || rc == KG_EREFLECTED;
  self->count[forged ? KG_RELAY_FORGED : KG_RELAY_MALFORMED]++;
  return kg_ratelog_note(self->droplog, kg_msg_drop_kind(rc), now);
}

kg_ratelog_verdict_t
kg_relay_stats_rejected_kernel(kg_relay_stats_t *self, int rc, int64_t now)
{
  assert(self);
  self->count[KG_RELAY_MALFORMED]++;
  return kg_ratelog_note(self->droplog, kg_msg_drop_kind(rc), now);
}

kg_ratelog_verdict_t
kg_relay_stats_oversized(kg_relay_stats_t *self, int64_t now)
{
  assert(self);
  self->count[KG_RELAY_OVERSIZED]++;
  return kg_ratelog_note(self->droplog, KG_DROP_OVERSIZED, now);
}

kg_ratelog_verdict_t
kg_relay_stats_unexpected(kg_relay_stats_t *self, int64_t now)
{
  self->count[KG_RELAY_UNEXPECTED]++;
  return kg_ratelog_note(self->droplog, S_UNEXPECTED, now);
}

kg_ratelog_verdict_t
kg_relay_stats_unsent(kg_relay_stats_t *self, int rc, int64_t now)
{
  (void) rc;   /* every reason counts alike; the caller's log line names it */
  self->count[KG_RELAY_UNSENT]++;
  return kg_ratelog_note(self->droplog, S_UNSENT, now);
}

unsigned long
kg_relay_stats_count(const kg_relay_stats_t *self, kg_relay_count_t kind)
{
  assert(self);
  return (unsigned) kind < KG_RELAY_KINDS ? self->count[kind] : 0;
}

int64_t
kg_relay_stats_deadline(const kg_relay_stats_t *self)
{
  assert(self);
  return kg_ratelog_deadline(self->droplog);
}

char *
kg_relay_stats_drop_summary(kg_relay_stats_t *self, int64_t now, bool force)
{
  assert(self);
  return kg_ratelog_summary(self->droplog, now, force);
}

/*  A literal, so that the compiler checks the arguments against it. */
#define S_TOTALS "%lu relayed, %lu forged or unsigned, %lu malformed, %lu oversized, " \
                 "%lu unroutable, %lu unexpected, %lu unsent messages dropped"

char *
kg_relay_stats_totals(const kg_relay_stats_t *self)
{
  assert(self);
  const unsigned long *c = self->count;
  int n = snprintf(NULL, 0, S_TOTALS, c[KG_RELAY_RELAYED], c[KG_RELAY_FORGED],
                   c[KG_RELAY_MALFORMED], c[KG_RELAY_OVERSIZED], c[KG_RELAY_UNROUTED],
                   c[KG_RELAY_UNEXPECTED], c[KG_RELAY_UNSENT]);
  char *line = n >= 0 ? malloc((size_t) n + 1) : NULL;
  if (line)
    snprintf(line, (size_t) n + 1, S_TOTALS, c[KG_RELAY_RELAYED], c[KG_RELAY_FORGED],
             c[KG_RELAY_MALFORMED], c[KG_RELAY_OVERSIZED], c[KG_RELAY_UNROUTED],
             c[KG_RELAY_UNEXPECTED], c[KG_RELAY_UNSENT]);
  return line;
}
