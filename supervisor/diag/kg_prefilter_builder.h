/*  kg_prefilter_builder: collects, rule by rule, the literals one of which
    every line a rule matches must contain, and makes the kg_prefilter.

    Per rule: "any" of some strings needs each of them; "all" of some
    strings needs the longest; a regex needs, per top-level alternative, the
    longest run of plain characters that alternative always contains
    (kg_regex_lit). A text with none of the literals cannot match any rule.
    A rule that yields no literal of at least KG_PREFILTER_MIN_LITERAL bytes
    makes the whole prefilter unusable (there is then none: every text may
    match).
*/
#ifndef KG_PREFILTER_BUILDER_H
#define KG_PREFILTER_BUILDER_H

#include "kg_prefilter.h"

#define KG_PREFILTER_MIN_LITERAL 3   /* shorter literals make it useless */

typedef struct kg_prefilter_builder_t kg_prefilter_builder_t;

/*  New empty builder; NULL on allocation failure. */
kg_prefilter_builder_t *kg_prefilter_builder_new(void);

/*  Free self (and the literals) and set *self_p to NULL. Safe on NULL. */
void kg_prefilter_builder_destroy(kg_prefilter_builder_t **self_p);

/*  A rule matching lines with any of the NULL-terminated strings any. */
int kg_prefilter_builder_any(kg_prefilter_builder_t *self, char *const *any);

/*  A rule matching lines with all of the NULL-terminated strings all. */
int kg_prefilter_builder_all(kg_prefilter_builder_t *self, char *const *all);

/*  A rule matching lines by the regex re. */
int kg_prefilter_builder_regex(kg_prefilter_builder_t *self, const char *re);

/*  A rule with nothing to go by: no prefilter. */
void kg_prefilter_builder_unusable(kg_prefilter_builder_t *self);

/*  The prefilter of every rule added, in *out (owned by the caller), or NULL
    in *out when it is unusable or no rule was added. 0, or KG_ENOMEM. */
int kg_prefilter_builder_finish(kg_prefilter_builder_t *self, kg_prefilter_t **out);

#endif
