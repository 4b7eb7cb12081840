/*  kg_relay_stats: what the relay did with the messages it was given.

    Every message is counted once by what became of it: relayed, dropped
    as forged or unsigned (a signature that fails, is missing, or is
    replayed, expired or reflected: kg_replay), malformed (unparsable, a bad
    header, unrecordable), oversized, unroutable (a reply or input request
    for no waiting request), unexpected (a frontend message nothing waits
    for: an input_reply with no input_request), or unsent (a peer that does
    not read: its send queue was full, or it was gone when its turn came).
    Drops that anyone reaching a port can cause also go through a
    kg_ratelog (the log gets the first few of each kind per interval in
    full, then a summary).
    The object builds the exit line that sums it all up. Pure: no sockets,
    no clock of its own, no I/O (tests/unit/kernel/decide/test_relay_stats.c).

    Ownership: the object owns its drop log; strings it returns are new,
    the caller frees them.
*/
#ifndef KG_RELAY_STATS_H
#define KG_RELAY_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "kg_ratelog.h"

typedef enum {
  KG_RELAY_RELAYED = 0,
  KG_RELAY_FORGED,              /*  forged, unsigned, replayed, expired or
                                    reflected                                */
  KG_RELAY_MALFORMED,
  KG_RELAY_OVERSIZED,
  KG_RELAY_UNROUTED,
  KG_RELAY_UNEXPECTED,          /*  nothing waits for it (an input_reply)    */
  KG_RELAY_UNSENT,              /*  the peer does not read, or is gone       */
  KG_RELAY_KINDS
} kg_relay_count_t;

typedef struct kg_relay_stats_t kg_relay_stats_t;

/*  All counts zero; drops logged in full burst times per kind per
    interval_ms (> 0). NULL on allocation failure or bad arguments. */
kg_relay_stats_t *kg_relay_stats_new(unsigned burst, int64_t interval_ms);

/*  Free self; *self_p becomes NULL. Safe on NULL. */
void kg_relay_stats_destroy(kg_relay_stats_t **self_p);

/*  One message forwarded (either way). */
void kg_relay_stats_relayed(kg_relay_stats_t *self);

/*  A reply or input request no waiting request takes: dropped, counted,
    not rate-logged (the kernel sends it, not a stranger). */
void kg_relay_stats_unrouted(kg_relay_stats_t *self);

/*  A request that passed every check but could not be recorded (out of
    memory): counted as malformed, not rate-logged. */
void kg_relay_stats_unrecorded(kg_relay_stats_t *self);

/*  A message the frontend side rejected with rc (kg_msg_parse,
    kg_msg_check_header or kg_replay's code): KG_ENOSIG, KG_EBADSIG,
    KG_EREPLAY, KG_EEXPIRED and KG_EREFLECTED count as forged, anything
    else as malformed. at now (monotonic ms). Returns KG_RATELOG_FULL if the
    caller should log it in full. */
kg_ratelog_verdict_t kg_relay_stats_rejected(kg_relay_stats_t *self, int rc, int64_t now);

/*  A message from the kernel rejected with rc (its signature is never
    checked): malformed whatever rc; rate-logged by rc's kind. */
kg_ratelog_verdict_t kg_relay_stats_rejected_kernel(kg_relay_stats_t *self, int rc,
                                                     int64_t now);

/*  A message over the size limit, skipped unread at now. */
kg_ratelog_verdict_t kg_relay_stats_oversized(kg_relay_stats_t *self, int64_t now);

/*  A well-signed frontend message nothing waits for (an input_reply while
    no input_request is out), dropped at now. */
kg_ratelog_verdict_t kg_relay_stats_unexpected(kg_relay_stats_t *self, int64_t now);

/*  A message that could not be sent at now: its peer's send queue was full
    (KG_EQFULL) or the peer was gone (-EHOSTUNREACH), or another send error
    (rc). Rate-logged as "unsent": a peer that stops reading cannot flood
    the log either. */
kg_ratelog_verdict_t kg_relay_stats_unsent(kg_relay_stats_t *self, int rc, int64_t now);

/*  The count of kind (0 for a kind out of range). */
unsigned long kg_relay_stats_count(const kg_relay_stats_t *self, kg_relay_count_t kind);

/*  When the drop log's interval ends (the caller wakes then), or 0. */
int64_t kg_relay_stats_deadline(const kg_relay_stats_t *self);

/*  The drop log's summary line if its interval ended at now (or at once if
    force), a new string; NULL if there is nothing to say or no memory. */
char *kg_relay_stats_drop_summary(kg_relay_stats_t *self, int64_t now, bool force);

/*  The totals as one line, a new string (NULL on allocation failure):
    "3 relayed, 1 forged or unsigned, 0 malformed, 0 oversized, 2
    unroutable, 0 unexpected, 0 unsent messages dropped". */
char *kg_relay_stats_totals(const kg_relay_stats_t *self);

#endif
