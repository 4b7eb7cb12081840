/*  kg_date: the `date` of a Jupyter message header, as Unix milliseconds.

    The protocol writes ISO 8601 ("2026-12-03T04:55:00.123456Z", with
    "+HH:MM", "-HHMM" or no zone: UTC, as the protocol says; ' ' for 'T'
    and 1-9 fraction digits as clients write them). Anything else is not a
    date: the frontend wrote it, so it is rejected, never trusted. The
    stale-request rule (kg_gate.h) reads it. Pure.
*/
#ifndef KG_DATE_H
#define KG_DATE_H

#include <stdint.h>

#include <cjson/cJSON.h>

/*  iso in Unix ms; 0 for NULL or anything that is not such a date (a
    day that does not exist included: 2026-02-31). */
int64_t kg_date_ms(const char *iso);

/*  The `date` member of a header (borrowed; may be NULL) in Unix ms, 0 if
    absent or unreadable. */
int64_t kg_date_header_ms(const cJSON *header);

#endif
