/*  kg_outq: the messages waiting to go out on one socket, so that a send
    from an event loop never blocks.

    A send is tried at once without blocking (ZMQ_DONTWAIT) when nothing is
    waiting; when the peer is not reading (its pipe is at its high-water
    mark: EAGAIN) the message is queued, and everything sent later on the
    same socket queues behind it, so the order is kept. The loop calls
    kg_outq_flush when the socket may take more (its fd woke up, or it was
    read): the queue is sent in order until the socket would block again.
    The queue is bounded in messages and bytes; a message that does not fit
    is dropped, counted and reported to the caller (KG_EQFULL), never
    waited for.

    A queued message is a shared copy (kg_msg_share: its frames are
    reference-counted, not copied) and is signed when it is flushed, by the
    signer given then (the socket's owner keeps both). Peers that fail for
    good (EHOSTUNREACH: a ROUTER's peer that is gone) are reported, not
    queued.

    As a writer of a reactor (kg_loop): flush on every wake-up of the
    socket (input or output), and arm KG_LOOP_OUT only while a flush makes
    progress. ZMQ_POLLOUT is level-triggered and, on a ROUTER that reports
    full pipes, true while ANY peer has room: a queue whose first message
    waits for one full peer would make an always-armed writer spin.

    Ownership: the queue owns its copies; the socket and signer are
    borrowed per call. One thread.
*/
#ifndef KG_OUTQ_H
#define KG_OUTQ_H

#include <stdbool.h>
#include <stddef.h>

#include "kg_msg.h"

/*  Defaults for a queue in front of one channel socket. */
#define KG_OUTQ_MAX_MSGS 1024
#define KG_OUTQ_MAX_BYTES (128u * 1024u * 1024u)

typedef struct kg_outq_t kg_outq_t;

/*  A queue holding at most max_msgs messages (> 0) and max_bytes bytes
    (kg_msg_size; a single message bigger than max_bytes is still taken when
    the queue is empty, so that no message is refused for its size alone).
    NULL on allocation failure or max_msgs 0. */
kg_outq_t *kg_outq_new(size_t max_msgs, size_t max_bytes);

/*  Drop everything queued, free self; *self_p becomes NULL. Safe on NULL. */
void kg_outq_destroy(kg_outq_t **self_p);

/*  What became of a message given to kg_outq_send. */
typedef enum {
  KG_OUTQ_SENT = 0,             /*  handed to zmq now                        */
  KG_OUTQ_QUEUED = 1            /*  waiting in the queue                     */
} kg_outq_result_t;

/*  How a message may wait. A burst of messages nobody answers (comm_msg
    from a widget, output) must not crowd out the requests behind it, so
    those fill at most three quarters of the queue; requests (and replies)
    may use all of it. A message that is only worth sending now (a
    repeated probe) never waits. */
typedef enum {
  KG_OUTQ_REQUEST = 0,          /*  may fill the whole queue                 */
  KG_OUTQ_BULK,                 /*  three quarters of it, in messages and bytes */
  KG_OUTQ_NOWAIT                /*  sent now or not at all (-EAGAIN)         */
} kg_outq_class_t;

/*  Send msg (borrowed; its identities set) on socket signed by signer
    (kg_msg_send), without blocking: KG_OUTQ_SENT, KG_OUTQ_QUEUED (the peer
    is not reading, or messages are waiting already), or a negative code:
    KG_EQFULL (the queue is full for msg's class: dropped and counted),
    -EAGAIN (KG_OUTQ_NOWAIT and it cannot go now: not counted), KG_ENOMEM,
    or the socket's -errno (-EHOSTUNREACH: no such peer; dropped). */
int kg_outq_send(kg_outq_t *self, void *socket, kg_signer_t *signer, kg_msg_t *msg,
                 kg_outq_class_t cls);

/*  Send what is queued, in order, until the socket would block or the queue
    is empty. A message the socket refuses for good (-EHOSTUNREACH...) is
    dropped and counted (kg_outq_failed) and the flush goes on. Returns the
    number of messages handed to zmq. */
size_t kg_outq_flush(kg_outq_t *self, void *socket, kg_signer_t *signer);

/*  Drop everything queued (the socket is being replaced), counting it as
    discarded. Returns how many were dropped. */
size_t kg_outq_clear(kg_outq_t *self);

/*  Messages and bytes waiting now; the most messages ever waiting at once. */
size_t kg_outq_length(const kg_outq_t *self);
size_t kg_outq_bytes(const kg_outq_t *self);
size_t kg_outq_peak(const kg_outq_t *self);

/*  Messages dropped because the queue was full; refused by the socket for
    good when flushed; thrown away by kg_outq_clear. */
unsigned long kg_outq_dropped(const kg_outq_t *self);
unsigned long kg_outq_failed(const kg_outq_t *self);
unsigned long kg_outq_discarded(const kg_outq_t *self);

#endif
