/*  kg_signs: the earlier GPU signs of one kernel process that may move the
    fault time T back once a sticky fault is proven.

    A cuBLAS error, an OOM or a printed assertion seen before the proof is
    often the same fault surfacing early: T is the earliest sign of the same
    request (or, for raw pipe text, which has no request, any sign younger
    than KG_SIGNS_RAW_TTL_MS). At most KG_SIGNS_MAX are kept, oldest out.
    Pure: no I/O, no clock (times are passed in).
*/
#ifndef KG_SIGNS_H
#define KG_SIGNS_H

#include <stdint.h>

#define KG_SIGNS_MAX        16
#define KG_SIGNS_RAW_TTL_MS 60000   /* raw signs older than this do not move T */

typedef struct kg_signs_t kg_signs_t;

/*  New empty list; NULL on allocation failure. */
kg_signs_t *kg_signs_new(void);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_signs_destroy(kg_signs_t **self_p);

/*  Forget every sign. */
void kg_signs_clear(kg_signs_t *self);

/*  Drop the signs that cannot belong to a fault of request parent seen at
    now: another request's, and raw ones older than the TTL. parent may be
    NULL (raw evidence: only the TTL applies). */
void kg_signs_prune(kg_signs_t *self, const char *parent, int64_t now);

/*  Remember a sign of request parent (NULL: raw text; any length, copied)
    at t. Out of memory: the sign is not kept (T is then only later). */
void kg_signs_add(kg_signs_t *self, const char *parent, int64_t t);

/*  The earliest of t and the times of the signs that belong to request
    parent (raw signs belong to every request; NULL parent takes all). */
int64_t kg_signs_earliest(const kg_signs_t *self, const char *parent, int64_t t);

#endif
