/*  kg_foreign: text on the kernel's raw output that is not the kernel's,
    taken out of one stream as it is read.

    ipykernel listens on TCP 127.0.0.1 (a random port) for the output of
    the kernel's forked subprocesses, whatever transport the connection
    file names, and accepts a connection from any local user; a message
    without its random token is printed to the kernel's real stderr:

        Bad pipe message: %s [b'<the frames, as Python writes bytes>']

    one physical line (Python's repr escapes every newline), of any length.
    So anyone on the machine can put any text, "CUDA error" included, on
    the stream kguard reads for evidence and keeps in the kernel's log.
    Those lines are not the kernel's code's: from the marker to the end of
    its line, the text is dropped here, before the ring, the log, the
    pass-through and the diagnosis see it (what came before the marker on
    the same line is kept, with its newline).

    Streaming: a chunk may end anywhere, even inside the marker; at most
    the marker's length minus one byte is held back until the next chunk
    says whether it is the marker. Memory does not grow with a line's
    length. Pure: no I/O, no clock.
*/
#ifndef KG_FOREIGN_H
#define KG_FOREIGN_H

#include <stddef.h>

/*  What a stranger's message becomes on ipykernel's stderr. */
#define KG_FOREIGN_MARKER "Bad pipe message: %s ["
/*  The most bytes held back between chunks. */
#define KG_FOREIGN_HOLD (sizeof KG_FOREIGN_MARKER - 2)
/*  How much of the first foreign line is kept for the log. */
#define KG_FOREIGN_SAMPLE 160

typedef struct kg_foreign_t kg_foreign_t;

/*  A filter for one stream, or NULL (allocation failure). */
kg_foreign_t *kg_foreign_new(void);

/*  Free self; *self_p becomes NULL. Safe on NULL. */
void kg_foreign_destroy(kg_foreign_t **self_p);

/*  Filter len bytes of the stream into out, which has room for len +
    KG_FOREIGN_HOLD bytes (bytes held back from the previous chunk come out
    first). Returns the number of bytes written to out. */
size_t kg_foreign_filter(kg_foreign_t *self, const char *in, size_t len, char *out);

/*  Foreign lines seen so far (a line counts when its marker is complete). */
unsigned long kg_foreign_lines(const kg_foreign_t *self);

/*  The start of the first foreign line (up to KG_FOREIGN_SAMPLE bytes,
    NUL-terminated; "" if none yet), for a log line. Borrowed. */
const char *kg_foreign_sample(const kg_foreign_t *self);

#endif
