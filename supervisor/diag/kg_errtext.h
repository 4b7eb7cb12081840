/*  kg_errtext: the text of GPU errors, cleaned for incident records and
    failure signatures. Pure functions on strings; no state. */
#ifndef KG_ERRTEXT_H
#define KG_ERRTEXT_H

#include <stdbool.h>
#include <stddef.h>

/*  Remove ANSI CSI sequences (ESC [ ... final byte) and other ESC pairs
    from s, in place: IPython colours its tracebacks. */
void kg_errtext_strip_ansi(char *s);

/*  True for a device-side assertion line: CUDA's "Assertion `...` failed"
    or ROCm's "Device-side assertion `...`". */
bool kg_errtext_is_assertion(const char *line);

/*  Normalise an assertion/error line for signatures: block/thread
    coordinates and hex addresses removed, whitespace squeezed. Writes at
    most size bytes (NUL included) into buf; line NULL counts as "". */
void kg_errtext_normalise(const char *line, char *buf, size_t size);

/*  True for a frame line of a Python traceback (`  File "PATH", line N`,
    anything after it), len bytes of line (no NUL needed). The indented
    line after a frame line is the program's source code, quoted: an error
    text in it (`raise RuntimeError("CUDA error: ...")`) is no evidence,
    and never the line to quote; the error's own line follows. */
bool kg_errtext_is_frame(const char *line, size_t len);

/*  True for a line a traceback quotes as source code: after_frame (the
    line before it on the same stream was a frame line) and line starts
    with white space, as Python indents the code it quotes; an error line
    (`RuntimeError: CUDA error: ...`) never does. */
bool kg_errtext_is_quoted_code(bool after_frame, const char *line);

#endif
