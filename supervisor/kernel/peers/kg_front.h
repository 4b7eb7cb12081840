/*  kg_front: the frontend's side of kguard. Owns the sockets bound from the
    frontend's connection file (ROUTER shell, control, stdin; PUB iopub),
    the heartbeat echo thread (kg_heartbeat), and the signer with the
    frontend's key; writes the messages kguard makes itself.

    What it writes (kg_front_publish, kg_front_reply) always gets a fresh
    msg_id (jupyter_client rejects a signature it has seen), the parent
    header it is given, the session it is given (the caller chooses: the
    session of the request's busy, kg_pending_busy_session, or the inner
    kernel's as last seen) and a signature with the frontend's key.

    No send blocks: shell, control and stdin are ROUTERs that report a
    peer whose pipe is full (ZMQ_ROUTER_MANDATORY), and what such a peer
    cannot take yet waits in a bounded queue per channel (kg_outq), sent in
    order by kg_front_flush when the loop sees the socket wake up; iopub is
    a PUB, which never blocks (a subscriber that does not read loses
    messages at its high-water mark, as with ipykernel's own iopub).

    It knows no kernel, no state and no supervisor: callers hand it what to
    send and read what it received from its sockets. */
#ifndef KG_FRONT_H
#define KG_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kg_conninfo.h"
#include "kg_loop.h"
#include "kg_msg.h"
#include "kg_signer.h"

typedef struct kg_front_t kg_front_t;

/*  Bind the channels of info (borrowed; read only here) in ctx and start
    the heartbeat thread. NULL on failure with *err a negative code; the
    message naming the channel is logged. */
kg_front_t *kg_front_bind(void *ctx, const kg_conninfo_t *info, int *err);

/*  A front over sockets the caller bound (tests: inproc pairs), taking
    ownership of each sockets[ch] (set to NULL; KG_CH_HB is ignored, no
    heartbeat thread) and signing with key (copied; key_len 0: no signing).
    Its ROUTERs are set to report full pipes, as kg_front_bind's are. NULL
    on failure: before the sockets were taken (allocation) they are left
    with the caller, after (a socket option refused) they are closed. */
kg_front_t *kg_front_adopt(void *sockets[KG_CH_COUNT], const void *key, size_t key_len);

/*  Close the sockets (linger 0), stop the heartbeat, free self; *self_p
    becomes NULL. Safe on NULL. Before the zmq context is terminated. */
void kg_front_destroy(kg_front_t **self_p);

/*  The loop that polls the sockets (borrowed; outlives self; NULL: none):
    it is told of each send (kg_loop_sent). */
void kg_front_set_loop(kg_front_t *self, kg_loop_t *loop);

/*  The bound socket of channel ch (borrowed), NULL for KG_CH_HB (its own
    thread) or an unbound channel. */
void *kg_front_socket(const kg_front_t *self, kg_channel_t ch);

/*  The signer with the frontend's key (borrowed): checks what the frontend
    sends, signs what kguard sends it. */
kg_signer_t *kg_front_signer(const kg_front_t *self);

/*  Check a message received on a frontend channel, cheapest and least
    trusting first: its signature with the frontend's key before any JSON
    is parsed (kg_msg_parse), its header (kg_msg_check_header), then, with
    a key, that it is not a replay, too old, or the kernel's own message
    sent back (kg_replay: by the header's date and session; now_wall_ms is
    kguard's wall clock). 0, or the first check's code (KG_EBADSIG,
    KG_EREPLAY, KG_EEXPIRED, KG_EREFLECTED, KG_ENODATE...). */
int kg_front_check(kg_front_t *self, kg_msg_t *msg, int64_t now_wall_ms);

/*  The inner kernel signs with session (the relay tells each one it
    sees): a frontend message under it is the kernel's own, reflected. */
void kg_front_kernel_session(kg_front_t *self, const char *session);

/*  session's clock as measured from its accepted messages: add *offset_ms
    to its header dates for kguard's wall clock; *count messages measured
    it (kg_replay_clock). False for a session never accepted or without a
    key. */
bool kg_front_clock(const kg_front_t *self, const char *session, int64_t *offset_ms,
                    unsigned long *count);

/*  Send msg (borrowed; its identities set by the caller) on channel ch,
    signed with the frontend's key (a message relayed with its own valid
    signature keeps it: kg_msg_send), without blocking; the loop is told
    (kg_loop_sent). 0 (sent, or queued
    behind a peer that is not reading), or a negative code: KG_EQFULL (the
    channel's queue is full: dropped), -EHOSTUNREACH (the peer it is
    addressed to is gone: dropped), another -errno. */
int kg_front_send(kg_front_t *self, kg_channel_t ch, kg_msg_t *msg);

/*  Send what waits in channel ch's queue, in order, until the socket would
    block (the loop is told when anything went). Returns the number of
    messages sent. */
size_t kg_front_flush(kg_front_t *self, kg_channel_t ch);

/*  Messages waiting in channel ch's queue (0 for iopub and heartbeat). */
size_t kg_front_queued(const kg_front_t *self, kg_channel_t ch);

/*  Messages dropped so far, over all channels, because a peer was not
    reading (its queue was full) or was gone by the time its turn came. */
unsigned long kg_front_unsent(const kg_front_t *self);

/*  Publish on iopub a message of type under session, with parent (a
    header, borrowed; NULL: none), taking *content_p and, if given,
    *metadata_p (both set to NULL, also on failure). Topic = type.
    0 or a negative code. */
int kg_front_publish(kg_front_t *self, const char *session, const char *type,
                     const cJSON *parent, cJSON **content_p, cJSON **metadata_p);

/*  Reply on channel ch to the request whose header is parent and whose
    routing identities are idents[0..count) (borrowed), under session,
    taking *content_p (set to NULL); metadata is borrowed (NULL: {}).
    0 or a negative code. */
int kg_front_reply(kg_front_t *self, kg_channel_t ch, const kg_frame_t *idents, size_t count,
                   const char *session, const char *type, const cJSON *parent,
                   cJSON **content_p, const cJSON *metadata);

#endif
