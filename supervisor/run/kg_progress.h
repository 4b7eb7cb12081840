/*  kg_progress: what `kguard run` tells the terminal.

    kguard's own lines go to one stream (stderr). On a TTY the running cell
    is one live line, rewritten in place with its elapsed time; events
    (restarts, restores, errors) are printed as whole lines above it.
    Elsewhere (a log, CI) every line is plain: one when a cell starts, one
    when it ends, one per event. --quiet keeps only problems and the final
    summary.

    The cells' own output (what they print) goes, as it arrives, to a data
    stream (stdout) or to stderr, as running the code as a script would: the
    live line is taken down first and put back once the output ends a line,
    and a kguard line never lands in the middle of a cell's unfinished line
    on the same terminal.
*/
#ifndef KG_PROGRESS_H
#define KG_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct kg_progress_t kg_progress_t;

/*  New reporter writing kguard's lines to out and cells' standard output to
    data (both borrowed). The live line is used if out is a terminal. NULL
    on allocation failure. */
kg_progress_t *kg_progress_new(FILE *out, FILE *data, bool quiet);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_progress_destroy(kg_progress_t **self_p);

/*  A cell starts: its number (1-based among the code cells run, as Jupyter
    counts them: In [N]) of total, whether it is a re-run after a restart,
    and its first line of code (borrowed for the call). */
void kg_progress_cell_start(kg_progress_t *self, size_t number, size_t total, bool rerun,
                            const char *code);

/*  Refresh the live line's elapsed time (TTY only; call about once a
    second). */
void kg_progress_tick(kg_progress_t *self);

/*  The cell ended: status is "ok", "error", "restarted" ... */
void kg_progress_cell_end(kg_progress_t *self, const char *status);

/*  One event line (printf format), shown even with --quiet if important. */
void kg_progress_event(kg_progress_t *self, bool important, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/*  A block of text (e.g. a kguard notice), each line prefixed by prefix. */
void kg_progress_block(kg_progress_t *self, bool important, const char *prefix,
                       const char *text);

/*  A cell's own output text, as it arrived (no prefix, no newline added):
    to the data stream, or to out when to_out (the cell's stderr). Shown
    whatever quiet says: the caller decides whether cells' output is shown. */
void kg_progress_output(kg_progress_t *self, bool to_out, const char *text);

/*  Milliseconds the current (or last) cell has been running. */
int64_t kg_progress_cell_ms(const kg_progress_t *self);

#endif
