/*  kg_pyrepr: a JSON value written as the Python literal that means the
    same: None, True/False, integers (exact up to 2^53; cJSON keeps no
    difference between 2 and 2.0, so an integral number is written as an
    integer), floats (the shortest text that reads back as the same double,
    always with a '.' or an exponent), string literals, [..] and {..}. Used for the parameters
    `kguard run` injects, as papermill's Python translator writes them.
*/
#ifndef KG_PYREPR_H
#define KG_PYREPR_H

#include <cjson/cJSON.h>

/*  value as Python source. New string owned by the caller; NULL on
    allocation failure. Pure. */
char *kg_pyrepr(const cJSON *value);

#endif
