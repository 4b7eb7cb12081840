/*  kg_pending: the requests kguard has accepted and not yet answered, and
    the queue of messages held while no kernel can take them.

    An entry remembers what is needed to answer the request without the
    kernel: the frontend's routing identities, the channel, msg_type, a copy
    of the request header (parent of every reply), the code of an execute
    request and when it arrived. Entries are kept in arrival order.
*/
#ifndef KG_PENDING_H
#define KG_PENDING_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_conninfo.h"
#include "kg_msg.h"

typedef struct {
  char *msg_id;                 /*  owned                                     */
  char *msg_type;               /*  owned, e.g. "execute_request"             */
  kg_channel_t channel;         /*  where it came from and the reply goes     */
  cJSON *header;                /*  owned copy of the request header          */
  kg_frame_t *idents;           /*  owned copies of the routing identities    */
  size_t ident_count;
  char *code;                   /*  owned; execute_request only, else NULL    */
  int64_t arrival_ms;           /*  monotonic ms                              */
  bool forwarded;               /*  sent to the current kernel                */
  bool doomed;                  /*  outstanding at a sticky sign: kguard
                                    answers it with KernelRestarted           */
} kg_pending_entry_t;

typedef struct kg_pending_t kg_pending_t;

/*  Create an empty table with a held queue of at most held_max messages.
    NULL on allocation failure. */
kg_pending_t *kg_pending_new(size_t held_max);

/*  Free every entry and held message; set *self_p to NULL. */
void kg_pending_destroy(kg_pending_t **self_p);

/*  Record request msg (already parsed and verified) that arrived on channel
    at now_ms. Returns the new entry (owned by the table) or NULL on
    allocation failure or a header without msg_id. A second request with the
    same msg_id replaces the first entry. */
kg_pending_entry_t *kg_pending_add(kg_pending_t *self, kg_msg_t *msg,
                                   kg_channel_t channel, int64_t now_ms);

/*  The entry for msg_id, or NULL (borrowed). */
kg_pending_entry_t *kg_pending_find(kg_pending_t *self, const char *msg_id);

/*  Remove and free the entry for msg_id. Returns true if there was one. */
bool kg_pending_remove(kg_pending_t *self, const char *msg_id);

/*  Number of entries and the entry at index (arrival order). */
size_t kg_pending_count(const kg_pending_t *self);
kg_pending_entry_t *kg_pending_at(kg_pending_t *self, size_t index);

/*  The oldest forwarded execute_request (the one the kernel runs), or NULL. */
kg_pending_entry_t *kg_pending_running(kg_pending_t *self);

/*  Append msg to the held queue, taking ownership (*msg_p becomes NULL).
    Returns 0, or KG_ETOOBIG if the queue is full (msg is left with the
    caller). */
int kg_pending_hold(kg_pending_t *self, kg_msg_t **msg_p, kg_channel_t channel);

/*  Remove the oldest held message: returns it (owned by the caller) and its
    channel, or NULL if the queue is empty. */
kg_msg_t *kg_pending_unhold(kg_pending_t *self, kg_channel_t *channel);

/*  Number of held messages. */
size_t kg_pending_held(const kg_pending_t *self);

#endif
