/*  kg_eg_conns: the connections open on the communication port, served
    concurrently with a bound.

    The gateway opens one connection per request (connect, send a few bytes
    of JSON, close) every few seconds and never waits for an answer. Each
    connection gets a slot, a deadline and a small buffer; a request is
    acted on as soon as its bytes form a whole JSON object (or at EOF). When
    every slot is taken, the oldest connection gives its slot to the new one:
    idle connections held open by someone else delay the gateway's next
    request by nothing, and a live request is only lost to a flood that
    opens `max` connections between the gateway's connect and its send.

    Pure: file descriptors are numbers here (the caller accepts, reads and
    closes them), time is passed in (milliseconds, one monotonic clock).
    Ownership: self owns its slots and buffers, never the descriptors.
*/
#ifndef KG_EG_CONNS_H
#define KG_EG_CONNS_H

#include <stddef.h>
#include <stdint.h>

#include "kg_eg_args.h"

#define KG_EG_REQUEST_MAX 1024   /* the gateway's requests are ~15 bytes */

typedef struct kg_eg_conns_t kg_eg_conns_t;

typedef enum {
  KG_EG_CONN_MORE = 0,   /*  not a whole request yet: keep reading          */
  KG_EG_CONN_REQUEST,    /*  a whole request in *req: act on it, close      */
  KG_EG_CONN_EMPTY,      /*  closed with nothing sent: close                */
  KG_EG_CONN_BAD,        /*  not a request the launcher obeys (err): close  */
} kg_eg_conn_verdict_t;

/*  At most max (>= 1) connections at once, each given timeout_ms to send
    its request. NULL on allocation failure or bad arguments. */
kg_eg_conns_t *kg_eg_conns_new(size_t max, int64_t timeout_ms);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_eg_conns_destroy(kg_eg_conns_t **self_p);

/*  Take fd at now. Returns the fd the caller must close to make room (the
    oldest connection) when every slot was taken, else -1. */
int kg_eg_conns_admit(kg_eg_conns_t *self, int fd, int64_t now);

/*  len bytes arrived on fd (admitted). A request longer than
    KG_EG_REQUEST_MAX is BAD. With REQUEST the request is in *req; with BAD
    err says why. After anything but MORE the slot is freed (the caller
    closes fd). */
kg_eg_conn_verdict_t kg_eg_conns_feed(kg_eg_conns_t *self, int fd, const char *data,
                                      size_t len, kg_eg_request_t *req, char *err,
                                      size_t errlen);

/*  fd's peer closed its side: whatever came is the request (REQUEST, BAD or
    EMPTY). The slot is freed. */
kg_eg_conn_verdict_t kg_eg_conns_eof(kg_eg_conns_t *self, int fd, kg_eg_request_t *req,
                                     char *err, size_t errlen);

/*  Forget fd (closed by the caller for another reason). */
void kg_eg_conns_remove(kg_eg_conns_t *self, int fd);

/*  The next connection whose deadline has passed at now (its slot freed:
    the caller closes it), or -1 if none. */
int kg_eg_conns_expired(kg_eg_conns_t *self, int64_t now);

/*  The earliest deadline of an open connection, or 0 when none is open. */
int64_t kg_eg_conns_deadline(const kg_eg_conns_t *self);

/*  The open connections' fds into out (at most n); returns how many. */
size_t kg_eg_conns_fds(const kg_eg_conns_t *self, int *out, size_t n);

/*  How many connections are open. */
size_t kg_eg_conns_count(const kg_eg_conns_t *self);

/*  The fd in slot i (0 <= i < the max given to new), or -1 when the slot is
    free or i is out of range: a slot is a reader of the owner's loop. */
int kg_eg_conns_fd_at(const kg_eg_conns_t *self, size_t i);

#endif
