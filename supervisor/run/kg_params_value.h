/*  kg_params_value: one parameter value's text read the way papermill's
    `-p NAME VALUE` and PyYAML read it, as pure functions: kg_params keeps
    the values, this decides what each text means.
*/
#ifndef KG_PARAMS_VALUE_H
#define KG_PARAMS_VALUE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/*  A plain scalar: bools, null, integers, floats, else a string. yaml:
    YAML 1.1's words (PyYAML: yes/no/on/off, null/~/"", floats need a dot);
    else papermill's -p (True/False/None, Python's int() and float()).
    *value: a new cJSON (caller owns). *literal: the exact Python text when
    it is known (integers without leading zeros, floats as written), else
    NULL (the caller renders value); caller frees. Returns 0; KG_EUSAGE for
    a float beyond a double's range (1e999: inf in Python, which JSON cannot
    record); or KG_ENOMEM; both NULL on an error. */
int kg_params_scalar(const char *text, bool yaml, cJSON **value, char **literal);

/*  The value text v of a flat YAML line (after "name:"), edited in place:
    a quoted string (then only blanks or a comment), a JSON flow list or
    map, or a plain scalar with its " #" comment and trailing blanks cut.
    Returns 0 with *value set (a new cJSON) and *plain false, or 0 with
    *plain true when v is a plain scalar for kg_params_scalar (*value NULL);
    KG_EUSAGE with *what naming the unsupported construct (block scalars,
    anchors, aliases, tags, nesting, an unterminated quote); KG_ENOMEM. */
int kg_params_yaml_value(char *v, cJSON **value, bool *plain, const char **what);

#endif
