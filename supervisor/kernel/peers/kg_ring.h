/*  kg_ring: a bounded ring of the bytes a child wrote to one stream.

    The notebook never shows the kernel's raw stdout/stderr (device-side
    assertion lines often appear only there), so kguard keeps the most recent
    bytes in memory for incident records and appends everything to a log file.
*/
#ifndef KG_RING_H
#define KG_RING_H

#include <stddef.h>

#include "kg_rotlog.h"

typedef struct kg_ring_t kg_ring_t;

/*  Create a ring holding the last capacity bytes (capacity > 0). log
    (borrowed, NULL for none; bounded in size, kg_rotlog) receives every
    appended byte. NULL on allocation failure. */
kg_ring_t *kg_ring_new(size_t capacity, kg_rotlog_t *log);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_ring_destroy(kg_ring_t **self_p);

/*  Append len bytes (older bytes fall out when full), and write them to the
    log fd. */
void kg_ring_append(kg_ring_t *self, const void *data, size_t len);

/*  Bytes currently held (at most capacity). */
size_t kg_ring_size(const kg_ring_t *self);

/*  Total bytes ever appended. */
unsigned long long kg_ring_total(const kg_ring_t *self);

/*  The last max bytes held (or fewer), as a new NUL-terminated string owned
    by the caller. NULL on allocation failure. */
char *kg_ring_tail(const kg_ring_t *self, size_t max);

/*  Forget the contents (the log file is kept). */
void kg_ring_clear(kg_ring_t *self);

#endif
