/*  kg_heartbeat: the frontend's heartbeat answered in a thread of its own.

    A Jupyter frontend pings the heartbeat channel about once a second and
    takes a kernel that stops answering for dead. A relay whose loop is busy
    (a cell printing hundreds of MB, a long restore step) must not look dead:
    so, like ipykernel (zmq.device(QUEUE, sock, sock) in its Heartbeat
    thread), the echo runs in its own thread, in libzmq's own forwarding
    (zmq_proxy_steerable with the socket as both ends): every message comes
    back to its sender frame for frame, whatever the relay's loop is doing.

    The heartbeat socket is handed over at creation and belongs to the
    thread from then on; kg_heartbeat_destroy stops the thread through an
    inproc control socket (TERMINATE) and closes it. The thread blocks every
    signal, so they keep going to the caller's signalfd.
*/
#ifndef KG_HEARTBEAT_H
#define KG_HEARTBEAT_H

#include "kg_conninfo.h"

typedef struct kg_heartbeat_t kg_heartbeat_t;

/*  Start echoing on *socket_p, a bound ROUTER (or REP) socket of context
    ctx. On success self owns the socket and *socket_p is set to NULL; on
    failure (NULL returned, *err set to a negative code) *socket_p is left
    to the caller, untouched. Messages larger than 1 MiB disconnect their
    sender (ZMQ_MAXMSGSIZE; a ping is a few bytes). */
kg_heartbeat_t *kg_heartbeat_new(void *ctx, void **socket_p, int *err);

/*  Like ipykernel's Heartbeat: a ZeroMQ context of its own (so its own I/O
    thread, which a relay's 100 MB messages never occupy), the heartbeat
    socket bound there at info's hb endpoint, and the echo thread. Returns
    NULL with *err set (and a message naming the endpoint logged) if the
    endpoint cannot be bound. */
kg_heartbeat_t *kg_heartbeat_bind(const kg_conninfo_t *info, int *err);

/*  Stop the echo, join the thread, close the socket; set *self_p to NULL.
    Safe on NULL. Must be called before zmq_ctx_term on the caller's context
    (kg_heartbeat_new); a context of its own (kg_heartbeat_bind) is
    terminated here. */
void kg_heartbeat_destroy(kg_heartbeat_t **self_p);

/*  Number of heartbeat threads created and not yet joined by destroy, for
    tests that check start and stop. */
int kg_heartbeat_running(void);

#endif
