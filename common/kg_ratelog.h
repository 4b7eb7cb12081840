/*  kg_ratelog: how often a kind of event (a dropped message: forged,
    replayed, malformed...) is logged, so that anyone who can reach a port
    cannot fill the disk through kguard's log.

    Events are counted per kind. In each interval (a window opened by the
    first event after the last one closed) the first `burst` events of a
    kind are logged in full (KG_RATELOG_FULL) and the rest only counted
    (KG_RATELOG_QUIET); when the window ends, one summary line tells how
    many were dropped and how many of them were not shown. A kind that
    overflowed stays hushed (summary only) in the following windows until a
    window closes with none of it, or no window opened for a whole
    interval: a sustained flood costs one line per interval, a new one
    after a quiet spell shows its first events again.

    Pure: no clock of its own (every call takes now, in milliseconds, from
    one monotonic clock), no I/O. The caller waits for kg_ratelog_deadline
    and then writes kg_ratelog_summary's line.
*/
#ifndef KG_RATELOG_H
#define KG_RATELOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { KG_RATELOG_FULL = 1, KG_RATELOG_QUIET = 0 } kg_ratelog_verdict_t;

typedef struct kg_ratelog_t kg_ratelog_t;

/*  Create a rate limiter for nkinds kinds named names[0..nkinds) (borrowed:
    they must outlive self; string literals), logging the first burst
    events of a kind per window of interval_ms (> 0). Returns NULL on
    allocation failure or bad arguments (nkinds 0, interval_ms <= 0). */
kg_ratelog_t *kg_ratelog_new(size_t nkinds, const char *const *names, unsigned burst,
                             int64_t interval_ms);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_ratelog_destroy(kg_ratelog_t **self_p);

/*  One event of kind (< nkinds; others are ignored and return QUIET) at
    now: FULL if the caller should log it in full, QUIET if only counted. */
kg_ratelog_verdict_t kg_ratelog_note(kg_ratelog_t *self, size_t kind, int64_t now);

/*  When the open window ends (the caller's next wake-up), or 0 if none is
    open. */
int64_t kg_ratelog_deadline(const kg_ratelog_t *self);

/*  Close the window if it has ended at now (or at once if force: at exit)
    and return the summary line to log, a new string the caller frees, such
    as "dropped in the last 10 s: 9995 forged (9992 not shown), 3 replayed;
    10003 in all since start". NULL if no window ended or nothing in it
    went unshown (every event was logged in full already); NULL also on
    allocation failure. */
char *kg_ratelog_summary(kg_ratelog_t *self, int64_t now, bool force);

/*  Events of kind since self was created. */
unsigned long kg_ratelog_total(const kg_ratelog_t *self, size_t kind);

#endif
