/*  kg_pending: the requests kguard has accepted and not yet answered, the
    queues of messages kguard holds back, and the busy/idle ledger.

    An entry remembers what is needed to answer the request without the
    kernel: the frontend's routing identities, the channel, msg_type, a copy
    of the request header (parent of every reply), the code and flags of an
    execute request and when it arrived. Entries are kept in arrival order.

    Two queues of held messages (both bounded together): the shell queue,
    kept in arrival order and delivered one execute_request at a time, and
    the queue of the other channels (control), held only while no kernel can
    take them.

    Entries the kernel will evidently never answer (it went idle without a
    reply, or a non-execute request waited too long) are expired: moved to a
    small ring where a late reply still finds its routing identities.

    The ledger records every request for which a `busy` status was published
    to the frontend and no `idle` yet, with the session it was published
    under, so that each busy gets exactly one idle.
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
  bool silent;                  /*  execute_request: content.silent (truthy)  */
  bool stop_on_error;           /*  execute_request: content.stop_on_error,
                                    Python truthiness, default true           */
  bool well_formed;             /*  execute_request: has code and silent, so
                                    ipykernel will reply to it                */
  int64_t arrival_ms;           /*  monotonic ms                              */
  int64_t idle_ms;              /*  when the kernel said idle for it without
                                    having replied (0: not seen)              */
  bool forwarded;               /*  sent to the current kernel                */
  bool doomed;                  /*  outstanding at a sticky sign: kguard
                                    answers it with KernelRestarted           */
} kg_pending_entry_t;

typedef struct kg_pending_t kg_pending_t;

/*  Create an empty table whose two held queues hold at most held_max
    messages together. NULL on allocation failure. */
kg_pending_t *kg_pending_new(size_t held_max);

/*  Free every entry, expired entry, held message and ledger record; set
    *self_p to NULL. */
void kg_pending_destroy(kg_pending_t **self_p);

/*  Record request msg (already parsed and verified) that arrived on channel
    at now_ms. Returns the new entry (owned by the table) or NULL on
    allocation failure or a header without msg_id. A second request with the
    same msg_id replaces the first entry. Also expires what kg_pending_expire
    would, at most once a second. */
kg_pending_entry_t *kg_pending_add(kg_pending_t *self, kg_msg_t *msg,
                                   kg_channel_t channel, int64_t now_ms);

/*  The live entry for msg_id, or NULL (borrowed). */
kg_pending_entry_t *kg_pending_find(kg_pending_t *self, const char *msg_id);

/*  The expired entry for msg_id, or NULL (borrowed): only for routing a late
    reply; it is never answered by kguard. */
kg_pending_entry_t *kg_pending_find_expired(kg_pending_t *self, const char *msg_id);

/*  Remove and free the live or expired entry for msg_id. Returns true if
    there was one. */
bool kg_pending_remove(kg_pending_t *self, const char *msg_id);

/*  Number of live entries and the entry at index (arrival order). */
size_t kg_pending_count(const kg_pending_t *self);
kg_pending_entry_t *kg_pending_at(kg_pending_t *self, size_t index);

/*  The oldest forwarded execute_request (the one the kernel runs), or NULL. */
kg_pending_entry_t *kg_pending_running(kg_pending_t *self);

/*  Limits for kg_pending_expire (defaults: 2 s after idle, 10 min, 1024). */
void kg_pending_set_limits(kg_pending_t *self, int64_t idle_grace_ms, int64_t max_age_ms,
                           size_t max_forwarded);

/*  Expire the forwarded entries the kernel will not answer: those it went
    idle for more than idle_grace_ms ago without replying (any type), the
    non-execute ones older than max_age_ms, and the oldest non-execute ones
    beyond max_forwarded. Each is logged. Returns how many were expired. */
size_t kg_pending_expire(kg_pending_t *self, int64_t now_ms);

/*  When kg_pending_expire will expire e because the kernel went idle for it
    without replying (idle_ms + the idle grace), or 0 while it has not: the
    deadline an event loop waits for when e holds the queue. */
int64_t kg_pending_idle_expiry(const kg_pending_t *self, const kg_pending_entry_t *e);

/*  Append msg to the shell queue (channel KG_CH_SHELL) or the other queue,
    taking ownership (*msg_p becomes NULL). Returns 0, or KG_ETOOBIG if the
    queues hold held_max messages (msg is left with the caller). */
int kg_pending_hold(kg_pending_t *self, kg_msg_t **msg_p, kg_channel_t channel);

/*  Remove the oldest message of the shell queue (shell true) or of the other
    queue: returns it (owned by the caller) and its channel, or NULL if that
    queue is empty. */
kg_msg_t *kg_pending_unhold(kg_pending_t *self, bool shell, kg_channel_t *channel);

/*  Number of held messages in both queues, and in the shell queue. */
size_t kg_pending_held(const kg_pending_t *self);
size_t kg_pending_held_shell(const kg_pending_t *self);

/*  Destroy every message of the shell queue (shell true) or the other
    queue. Returns how many there were. */
size_t kg_pending_drop_held(kg_pending_t *self, bool shell);

/*  Ledger. Record that `busy` was published for the request whose header is
    given, under session. Returns 0, 1 if it was already recorded (nothing
    changes), KG_EUSAGE for a header without msg_id, KG_ENOMEM. */
int kg_pending_busy_open(kg_pending_t *self, const cJSON *header, const char *session);

/*  True if busy was published for msg_id and idle not yet. */
bool kg_pending_busy_is_open(const kg_pending_t *self, const char *msg_id);

/*  The session busy was published under for msg_id (borrowed, valid until
    its record closes), or NULL if no busy is open for it: every message
    kguard writes for that request goes out under it, so a frontend that
    drops messages of an older session (JupyterLab: "Canceling handling of
    old message") sees the request's busy, outputs and idle as one kernel. */
const char *kg_pending_busy_session(const kg_pending_t *self, const char *msg_id);

/*  Record that idle was published for msg_id. Returns true if busy was. */
bool kg_pending_busy_close(kg_pending_t *self, const char *msg_id);

/*  Number of open records and the one at index (oldest first): its header
    and session are borrowed. Returns false if index is out of range. */
size_t kg_pending_busy_count(const kg_pending_t *self);
bool kg_pending_busy_at(const kg_pending_t *self, size_t index, const cJSON **header,
                        const char **session);

#endif
