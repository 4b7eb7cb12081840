/*  kg_evq: the state machine's event queue. Handlers post events; the
    queue applies them one at a time, in order, after the transition that
    is running has returned, so no transition ever runs inside another
    (an entry action that posts the next event does not recurse into it).

    Pure: no sockets, no clock; the caller's apply function does the work. */
#ifndef KG_EVQ_H
#define KG_EVQ_H

#include <stdbool.h>

#include "kg_state.h"

#define KG_EVQ_MAX 16   /*  events waiting at once (a transition posts 1-2) */

typedef struct kg_evq_t kg_evq_t;

/*  Called for each event, in order; it may post more (they wait). */
typedef void (kg_evq_apply_fn)(void *arg, kg_event_t event);

/*  An empty queue, or NULL on allocation failure. */
kg_evq_t *kg_evq_new(void);

/*  Free self; *self_p becomes NULL. Safe on NULL. */
void kg_evq_destroy(kg_evq_t **self_p);

/*  Post event, then, unless an apply is already running (the post came
    from inside one), apply everything queued through apply(arg, ev) until
    the queue is empty. Returns 0, or KG_ETOOBIG if KG_EVQ_MAX events were
    waiting (event is dropped; the caller logs it). */
int kg_evq_post(kg_evq_t *self, kg_event_t event, kg_evq_apply_fn *apply, void *arg);

/*  Bind the apply function that kg_evq_fire uses (the supervisor binds its
    state table once, at construction), so the files that post events need
    not know who applies them: their arrow points down, at the queue. */
void kg_evq_bind(kg_evq_t *self, kg_evq_apply_fn *apply, void *arg);

/*  kg_evq_post with the bound apply function. Returns as kg_evq_post, or
    KG_EINTERNAL if nothing was bound (the event is dropped). */
int kg_evq_fire(kg_evq_t *self, kg_event_t event);

/*  True if an event waits (posted during the running transition). */
bool kg_evq_pending(const kg_evq_t *self);

#endif
