/*  kg_regex_lit: the literal text every match of a regular expression must
    contain, for the classifier's prefilter.

    For each top-level alternative of a POSIX extended regex, the longest run
    of plain characters that every match of that alternative contains. It is
    conservative: anything not understood (classes, groups, \w, anchors,
    non-ASCII bytes) ends a run, and a character under a quantifier that
    allows zero or repeats it leaves the run. So a text without the run
    cannot match the alternative; the converse need not hold.
*/
#ifndef KG_REGEX_LIT_H
#define KG_REGEX_LIT_H

#include <stddef.h>

/*  Called once per top-level alternative, in order, with its run (len may be
    0: the alternative has none; lit is not NUL-terminated and only valid
    during the call). Return 0 to go on, or a negative code to stop. */
typedef int (kg_regex_lit_fn)(const char *lit, size_t len, void *arg);

/*  Walk re's top-level alternatives. Returns 0, KG_ENOMEM, or the first
    negative code each returned. */
int kg_regex_literals(const char *re, kg_regex_lit_fn *each, void *arg);

#endif
