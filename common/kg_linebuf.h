/*  kg_linebuf: reassemble lines from chunks of one byte stream.

    Output arrives in pieces that do not respect line ends (a pipe read, an
    iopub `stream` message). One linebuf per stream (raw stdout, raw stderr,
    iopub stdout/stderr per parent request) collects the pieces and hands out
    whole lines. A line longer than max_line is cut: its first max_line bytes
    are handed out flagged `truncated`, the rest up to the next newline is
    dropped. Each line carries the time its first byte arrived, so the fault
    time can be the start of a split assertion line.
*/
#ifndef KG_LINEBUF_H
#define KG_LINEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kg_linebuf_t kg_linebuf_t;

/*  Called once per complete line: line (len bytes, no '\n' and no trailing
    '\r', NUL-terminated for convenience; borrowed for the call), whether it
    was cut, and the arrival time of its first byte. */
typedef void(kg_linebuf_fn)(void *arg, const char *line, size_t len, bool truncated,
                            int64_t first_ms);

/*  New empty buffer holding at most max_line bytes of one line (0 = 4096).
    NULL on allocation failure. */
kg_linebuf_t *kg_linebuf_new(size_t max_line);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_linebuf_destroy(kg_linebuf_t **self_p);

/*  Append len bytes received at now_ms; call fn for every line completed. */
void kg_linebuf_feed(kg_linebuf_t *self, const char *data, size_t len, int64_t now_ms,
                     kg_linebuf_fn *fn, void *arg);

/*  Hand out the unterminated tail (if any) as a line, e.g. at EOF. */
void kg_linebuf_flush(kg_linebuf_t *self, kg_linebuf_fn *fn, void *arg);

/*  The unterminated tail currently held (borrowed) and its length. */
const char *kg_linebuf_pending(const kg_linebuf_t *self, size_t *len);

#endif
