/*  kg_ready: is a freshly started kernel ready? Pure bookkeeping, no
    sockets and no clock of its own (the caller passes now), so it is tested
    by tables.

    A kernel is ready when it has answered one of kguard's kernel_info
    "nudges" on shell AND an iopub message has arrived (the SUB socket's
    subscription has reached the kernel's PUB: before that, iopub output is
    lost, which is why a frontend waits for iopub too). Nudges go out with
    a growing interval (50 ms, doubling until it passes 1 s) while the kernel
    imports; once it has answered, only the subscription is missing, which
    takes milliseconds: the next nudge is then at most 20 ms away.

    The ids of kguard's last KG_READY_IDS kernel_info_requests are kept (the
    stop_on_error probe is one too), so their replies and iopub are never
    taken for a frontend's. Ids are kguard's own uuids (36 characters);
    longer ones are refused, not truncated.
*/
#ifndef KG_READY_H
#define KG_READY_H

#include <stdbool.h>
#include <stdint.h>

#define KG_READY_IDS 16          /*  own kernel_info ids remembered          */
#define KG_READY_FIRST_MS 50     /*  first interval between nudges           */
#define KG_READY_MAX_MS 1000     /*  the interval stops doubling here        */
#define KG_READY_ALIVE_MS 20     /*  once the kernel has answered            */

typedef struct kg_ready_t kg_ready_t;

/*  A tracker with nothing seen and a nudge due at once, or NULL. */
kg_ready_t *kg_ready_new(void);

/*  Free self; *self_p becomes NULL. Safe on NULL. */
void kg_ready_destroy(kg_ready_t **self_p);

/*  A kernel is starting (at now): nothing seen, a nudge due at once, the
    interval back to KG_READY_FIRST_MS. Remembered ids are kept (a late
    reply to an old nudge is still kguard's). */
void kg_ready_reset(kg_ready_t *self, int64_t now);

/*  True if a nudge should go out now (not ready yet, and its time has
    come). */
bool kg_ready_nudge_due(kg_ready_t *self, int64_t now);

/*  A nudge was sent at now: the next one is one interval later, and the
    interval doubles (up to KG_READY_MAX_MS). */
void kg_ready_nudge_scheduled(kg_ready_t *self, int64_t now);

/*  Remember msg_id as one of kguard's kernel_info_requests (the oldest of
    KG_READY_IDS is forgotten). Returns false (nothing remembered) for NULL
    or an id longer than 36 characters. */
bool kg_ready_remember(kg_ready_t *self, const char *msg_id);

/*  True if parent is one of the remembered ids. */
bool kg_ready_is_nudge(const kg_ready_t *self, const char *parent);

/*  The id remembered last ("" if none). Borrowed. */
const char *kg_ready_last(const kg_ready_t *self);

/*  The kernel answered a nudge with its kernel_info_reply. */
void kg_ready_saw_reply(kg_ready_t *self);

/*  An iopub message arrived from the kernel. */
void kg_ready_saw_iopub(kg_ready_t *self);

/*  True once both were seen: READY. */
bool kg_ready_done(const kg_ready_t *self);

/*  When the next nudge is due (monotonic ms), or 0 once ready. */
int64_t kg_ready_deadline(const kg_ready_t *self);

#endif
