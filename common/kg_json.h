/*  kg_json: the small cJSON idioms the diagnosis records share. */
#ifndef KG_JSON_H
#define KG_JSON_H

#include <cjson/cJSON.h>

/*  Add key to object o: s as a string, or a JSON null when s is NULL. */
void kg_json_add_string_or_null(cJSON *o, const char *key, const char *s);

/*  The string member key of object (borrowed), or NULL when it is missing
    or not a string. */
const char *kg_json_string(const cJSON *object, const char *key);

#endif
