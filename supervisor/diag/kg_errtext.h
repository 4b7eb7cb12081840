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

#endif
