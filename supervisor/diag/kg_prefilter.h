/*  kg_prefilter: does a text contain any of a set of literals?

    A quick "no" for the classifier: almost all of a notebook's output
    contains none of the words the GPU rules need, and a multi-literal scan
    (Wu-Manber: a shift table over q-grams of the literals' prefixes, so most
    windows are skipped without looking at every byte) is far cheaper than
    running every rule on every line. The comparison ignores ASCII case and
    may answer "yes" for a text that has none of the literals (a superset),
    never "no" for one that has one.
*/
#ifndef KG_PREFILTER_H
#define KG_PREFILTER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kg_prefilter_t kg_prefilter_t;

/*  A prefilter for n literals (each non-empty, NUL-terminated; copied).
    Returns NULL on allocation failure or if a literal is empty. */
kg_prefilter_t *kg_prefilter_new(const char *const *literals, size_t n);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_prefilter_destroy(kg_prefilter_t **self_p);

/*  True when no literal holds a quote, a backslash or a control
    character (a byte below 0x20): each then occurs in a JSON string's raw
    text exactly where it occurs in the decoded text, wherever the encoder
    used only the short escapes (kg_jsonscan_skip_fn), so a search of the
    raw text answers for the decoded one. */
bool kg_prefilter_plain(const kg_prefilter_t *self);

/*  True if text (len bytes, need not be NUL-terminated; NULs are ordinary
    bytes) may contain one of the literals, ignoring ASCII case. False means
    none of them occurs. */
bool kg_prefilter_search(const kg_prefilter_t *self, const char *text, size_t len);

#endif
