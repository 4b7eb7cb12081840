/*  kg_rules_json: pure readers of the rules file (supervisor/rules/, JSON):
    fields, string lists and families, each validated with a message that
    names where the problem is (e.g. `families[2]: missing field "title"`).
    kg_classifier loads its table with them; nothing here keeps state.
*/
#ifndef KG_RULES_JSON_H
#define KG_RULES_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "kg_classifier.h"

/*  obj[field] as a fresh copy in *out (caller frees): it must be a
    non-empty string of at most 8192 bytes. Absent: *out = NULL and 0 when
    not required, else KG_ERULES. Returns 0, KG_ERULES (err names where and
    field) or KG_ENOMEM. */
int kg_rules_json_string(const cJSON *obj, const char *field, bool required, const char *where,
                         char **out, char *err, size_t errlen);

/*  arr, a non-empty array of non-empty strings (the rule's "match.FIELD"),
    as a fresh NULL-terminated vector in *out (free with
    kg_rules_json_strv_free). Returns 0, KG_ERULES (err names where, field
    and the index) or KG_ENOMEM; *out NULL on failure. */
int kg_rules_json_strv(const cJSON *arr, const char *where, const char *field, char ***out,
                       char *err, size_t errlen);

/*  Free a vector from kg_rules_json_strv; NULL is fine. */
void kg_rules_json_strv_free(char **v);

/*  Fill *f (zeroed by the caller) from families[index]: required "id",
    "title", "first_check", "avoid" and boolean "sticky"; optional "hints"
    {cuda, rocm, any}. A ROCm hint naming CUDA_LAUNCH_BLOCKING is refused.
    Returns 0, KG_ERULES with err naming the family and field, or
    KG_ENOMEM; on failure *f may hold some fields: kg_rules_json_family_clear
    frees them. */
int kg_rules_json_family(const cJSON *obj, size_t index, kg_family_t *f, char *err,
                         size_t errlen);

/*  Free the strings of *f (the struct itself is the caller's). */
void kg_rules_json_family_clear(kg_family_t *f);

#endif
