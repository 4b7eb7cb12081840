/*  kg_streamset: the line buffers of iopub `stream` output, one per
    (parent request, stream name), bounded.

    A kernel interleaves stream messages of several requests (a background
    thread printing for an old cell, a new cell's output); each request's
    stdout and stderr is reassembled into lines on its own. The set holds at
    most KG_STREAMSET_MAX buffers: when a new one is needed and all are in
    use, the least recently fed is handed to the caller's evict function
    (to classify its unterminated tail) and reused. Pure: no I/O, no clock.
*/
#ifndef KG_STREAMSET_H
#define KG_STREAMSET_H

#include <stddef.h>

#include "kg_linebuf.h"

#define KG_STREAMSET_MAX 8

typedef struct kg_streamset_t kg_streamset_t;

/*  Called with a buffer about to be reused or dropped: parent (borrowed, may
    be NULL) and the buffer, whose tail the callee may flush. */
typedef void(kg_streamset_evict_fn)(void *arg, const char *parent, kg_linebuf_t *lb);

/*  New empty set whose buffers hold lines up to max_line bytes. NULL on
    allocation failure. */
kg_streamset_t *kg_streamset_new(size_t max_line);

/*  Free self and every buffer; set *self_p to NULL. Safe on NULL. */
void kg_streamset_destroy(kg_streamset_t **self_p);

/*  Forget every buffer (their tails are dropped, not handed out). */
void kg_streamset_clear(kg_streamset_t *self);

/*  The buffer for (name, parent): name "stderr", anything else is "stdout";
    parent may be NULL (any length, copied). Evicts the least recently used
    buffer through evict when the set is full. Borrowed; NULL on allocation
    failure. */
kg_linebuf_t *kg_streamset_get(kg_streamset_t *self, const char *name, const char *parent,
                               kg_streamset_evict_fn *evict, void *arg);

/*  Hand every buffer to fn (e.g. to flush all tails at the process's end). */
void kg_streamset_each(kg_streamset_t *self, kg_streamset_evict_fn *fn, void *arg);

#endif
