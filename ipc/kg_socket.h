/*  kg_socket: creating the channel sockets of each side.

    The frontend side (kguard as a kernel): shell, control and stdin are
    ROUTER, iopub is PUB, heartbeat is ROUTER (echo). The kernel side (kguard
    as a client of the inner kernel): shell, control and stdin are DEALER with
    one shared routing id (stdin must carry the same identity as shell), iopub
    is SUB subscribed to everything, heartbeat is REQ (optional: for pinging
    the inner kernel; jupyter_client's HBChannel is a REQ too).

    Every socket gets ZMQ_LINGER 0 so zmq_ctx_term never blocks on shutdown.
*/
#ifndef KG_SOCKET_H
#define KG_SOCKET_H

#include "kg_conninfo.h"

/*  Create and bind the frontend socket of channel, at the endpoint named by
    info. Returns the socket, or NULL with *err set to a negative code; a
    message naming the endpoint is logged. */
void *kg_socket_bind(void *ctx, const kg_conninfo_t *info, kg_channel_t channel, int *err);

/*  Create the kernel-side socket of channel and connect it to the endpoint
    named by info. routing_id (NUL-terminated, may be NULL) is set on DEALER
    sockets. Returns the socket or NULL with *err set. */
void *kg_socket_connect(void *ctx, const kg_conninfo_t *info, kg_channel_t channel,
                        const char *routing_id, int *err);

/*  Close socket (if not NULL) and set *socket_p to NULL. */
void kg_socket_close(void **socket_p);

/*  Watch socket's CURVE handshakes: a PAIR socket of ctx, connected to the
    monitor libzmq publishes at endpoint (an inproc:// name unique in ctx),
    that receives one event per failed handshake (a peer whose keys do not
    match). The caller owns it (kg_socket_close); NULL when libzmq cannot
    monitor (the failures then go unseen). */
void *kg_socket_handshake_monitor(void *ctx, void *socket, const char *endpoint);

/*  Read, without waiting, the events waiting on a handshake monitor: the
    number of failed handshakes among them (0 when none). */
int kg_socket_handshake_failures(void *monitor);

#endif
