/*  kg_stale: was a request sent before the user could have seen a failure?

    Through Jupyter Server, the later cells of a Run All can reach kguard
    after a sticky failure closed the gate (seen: a cell sent 116 ms before
    the failing cell's error arrived after "gate closed: 0 outstanding"), and
    kguard would deliver them to the fresh kernel. The request's header.date
    (set by the client when it sent it) tells whether it was sent before the
    failure was visible: such a request must be answered KernelRestarted
    like the ones already queued. Pure: no clock, no sockets; wall-clock
    milliseconds since the epoch come from the caller.

    Hook for the supervisor (not wired here): when an execute_request arrives
    while the gate is closed or the fresh kernel is not yet serving, after a
    sticky failure whose first evidence kguard relayed to the frontend at
    visible_ms (kg_clock_wall_ms()), call kg_stale_judge(header.date,
    visible_ms, slack_ms): KG_STALE_YES → doom it (KernelRestarted);
    KG_STALE_NO → hold and deliver it as today; KG_STALE_UNKNOWN (no or
    unparsable date) → the caller's arrival-time rule. */
#ifndef KG_STALE_H
#define KG_STALE_H

#include <stdint.h>

typedef enum { KG_STALE_NO = 0, KG_STALE_YES = 1, KG_STALE_UNKNOWN = 2 } kg_stale_t;

/*  Parse a Jupyter header date (ISO 8601: "2026-12-03T05:10:35.004Z",
    "...35.004123+00:00", "...35-05:00", no fraction, 'T' or ' ') into
    milliseconds since the epoch (UTC). A date without a zone is UTC, as
    jupyter_client reads it. Returns 0, or KG_EUSAGE for anything else. */
int kg_stale_parse_date(const char *text, int64_t *ms);

/*  YES if the request's date is before visible_ms + slack_ms (slack_ms >= 0
    covers clock skew between client and kguard and the time a person needs
    to react; 0 is exact for a client on kguard's machine), NO if not,
    UNKNOWN if date is NULL or does not parse. */
kg_stale_t kg_stale_judge(const char *date, int64_t visible_ms, int64_t slack_ms);

#endif
