/*  kg_clock: the two clocks kguard reads, and the one time format it writes.

    Deadlines and durations use the monotonic clock (immune to clock
    changes); times that are recorded or compared across processes (fault
    time T, checkpoint seal times, incident records) use the wall clock.
*/
#ifndef KG_CLOCK_H
#define KG_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/*  Milliseconds of CLOCK_MONOTONIC: for deadlines and elapsed times. */
int64_t kg_clock_mono_ms(void);

/*  Milliseconds since the epoch (CLOCK_REALTIME): for recorded times. */
int64_t kg_clock_wall_ms(void);

/*  Format ms since the epoch as "2026-12-02T17:03:04.123Z" (UTC) into buf
    (>= 32 bytes; shorter buffers get a truncated string). Returns buf.
    Times before the epoch are formatted correctly too. */
char *kg_clock_iso_ms(int64_t ms, char *buf, size_t size);

/*  Format ms since the epoch as the local time a person reads beside a
    clock, "2026-12-02 18:03:04.123 CET" (the zone's abbreviation, from TZ),
    into buf (>= 40 bytes; shorter buffers get a truncated string).
    Returns buf. */
char *kg_clock_local_ms(int64_t ms, char *buf, size_t size);

#endif
