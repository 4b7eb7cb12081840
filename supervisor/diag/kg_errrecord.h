/*  kg_errrecord: a Jupyter error (ename, evalue, traceback) as the diagnosis
    keeps it and as the classifier reads it. Pure functions.
*/
#ifndef KG_ERRRECORD_H
#define KG_ERRRECORD_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_classifier.h"

/*  The record {source, ename, evalue, traceback (ANSI codes removed),
    time_ms, parent_msg_id (or null)}; tb is borrowed, non-string lines are
    skipped. New object, or NULL on allocation failure. */
cJSON *kg_errrecord_new(kg_source_t source, const char *ename, const char *evalue,
                        const cJSON *tb, const char *parent, int64_t t);

/*  The text to classify: "ename: evalue\n" then each traceback line and a
    newline, cut at cap bytes, ANSI codes removed. New string (free it), or
    NULL on allocation failure. */
char *kg_errrecord_text(const char *ename, const char *evalue, const cJSON *tb, size_t cap);

#endif
