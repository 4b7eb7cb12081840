/*  kg_fdq: output to a descriptor kguard writes but does not own (its own
    stdout or stderr: a terminal, a pipe, a file) that never stops the
    event loop.

    A reader that stops reading (a pager the user scrolls, a terminal paused
    with Ctrl-S, `| tee` on a slow disk) would block a plain write(2) for as
    long as it likes, and with it every deadline of the supervision. A queue
    writes what the descriptor takes without waiting, keeps the rest in
    order, and goes on when the loop says the descriptor is writable. What
    does not fit under its bound is dropped whole (never half a chunk) and
    counted, so the owner can say so. A descriptor that fails (EPIPE: the
    reader is gone; EIO: the terminal hung up) ends the queue's writing:
    what follows is counted as dropped; supervision goes on.

    The descriptor stays blocking (its open file is shared with the shell):
    a pipe, terminal or socket is written only after poll(2) says it is
    writable, at most PIPE_BUF bytes at a time, which such a descriptor
    then takes whole; a regular file or /dev/null is written directly.
    SIGPIPE must be ignored by the process (a closed pipe is then EPIPE).

    Ownership: the queue owns its buffer, never the descriptor.
*/
#ifndef KG_FDQ_H
#define KG_FDQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kg_fdq_t kg_fdq_t;

/*  A queue for fd (borrowed) holding at most max unwritten bytes. NULL on
    allocation failure or max 0. */
kg_fdq_t *kg_fdq_new(int fd, size_t max);

/*  Free the queue; what it still held is lost (kg_fdq_drain first).
    *self_p becomes NULL; safe on NULL. */
void kg_fdq_destroy(kg_fdq_t **self_p);

/*  Write buf: what fd takes now goes now (after anything queued), the rest
    is queued. A chunk that does not fit under the bound is dropped whole and
    counted. Never waits. */
void kg_fdq_write(kg_fdq_t *self, const void *buf, size_t len);

/*  The descriptor is writable (or may be): write what it takes now. */
void kg_fdq_flush(kg_fdq_t *self);

/*  True while bytes wait for the descriptor (so the loop should wait for
    it to be writable). */
bool kg_fdq_pending(const kg_fdq_t *self);

/*  The descriptor, for the loop. */
int kg_fdq_fd(const kg_fdq_t *self);

/*  True once the descriptor failed (the reader is gone). */
bool kg_fdq_failed(const kg_fdq_t *self);

/*  Bytes dropped since the last call, returned only once the queue is
    empty (so a note about them comes after what was shown), else 0. */
uint64_t kg_fdq_take_dropped(kg_fdq_t *self);

/*  At the end: write what is queued, waiting for the descriptor at most
    timeout_ms in all. Returns the bytes left unwritten (0: all out). */
size_t kg_fdq_drain(kg_fdq_t *self, int timeout_ms);

#endif
