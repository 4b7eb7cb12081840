/*  kg_trail: what followed a kernel's first failure, bounded: the messages
    and lines recorded after it (at most KG_TRAIL_MAX_FOLLOWING, the rest
    counted), and the last KG_TRAIL_STDERR_TAIL raw stderr lines. Part of the
    incident record (kg_diagnosis_to_json). Pure: no I/O, no clock.
*/
#ifndef KG_TRAIL_H
#define KG_TRAIL_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "kg_classifier.h"

#define KG_TRAIL_MAX_FOLLOWING 32    /* messages kept after the first error     */
#define KG_TRAIL_STDERR_TAIL   100   /* raw stderr lines kept                   */

typedef struct kg_trail_t kg_trail_t;

/*  New empty trail; NULL on allocation failure. */
kg_trail_t *kg_trail_new(void);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_trail_destroy(kg_trail_t **self_p);

/*  Forget everything. */
void kg_trail_clear(kg_trail_t *self);

/*  Record a following item (taken; freed when the trail is full). */
void kg_trail_follow(kg_trail_t *self, cJSON *item);

/*  Record a following line {source, time_ms, text} (text copied). */
void kg_trail_follow_line(kg_trail_t *self, kg_source_t source, const char *text, int64_t t);

/*  Remember one raw stderr line (copied), dropping the oldest past the tail. */
void kg_trail_tail_add(kg_trail_t *self, const char *line);

/*  Add "following", "following_dropped" and "raw_stderr_tail" to o. */
void kg_trail_add_to_json(const kg_trail_t *self, cJSON *o);

#endif
