/*  kg_sigsrc: signals as events, through a signalfd (skalibs' selfpipe).

    The signals of a list are blocked with sigprocmask and read from a
    signalfd in the event loop (kg_loop_signals), never in a handler. Create
    it BEFORE zmq_ctx_new, so libzmq's I/O threads inherit the mask and no
    signal of the list is delivered to them. SIGPIPE is ignored (a closed
    pipe is a write error).

    Several sources may coexist (each its own list); destroy them in the
    reverse order of their creation, since each restores the mask it found.
*/
#ifndef KG_SIGSRC_H
#define KG_SIGSRC_H

typedef struct kg_sigsrc_t kg_sigsrc_t;

/*  Block the signals of the 0-terminated list signals (at least one) and
    open their signalfd (non-blocking, close-on-exec). Returns NULL with
    errno set on failure (EINVAL: an empty list or a bad signal number). */
kg_sigsrc_t *kg_sigsrc_new(const int *signals);

/*  Close the fd and restore the signal mask found by kg_sigsrc_new. Sets
    *self_p to NULL; safe on NULL. */
void kg_sigsrc_destroy(kg_sigsrc_t **self_p);

/*  The fd to poll for input. */
int kg_sigsrc_fd(const kg_sigsrc_t *self);

/*  Read one pending signal. Returns its number, 0 if none is pending, or
    -errno. */
int kg_sigsrc_read(kg_sigsrc_t *self);

#endif
