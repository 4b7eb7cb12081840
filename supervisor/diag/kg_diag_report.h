/*  kg_diag_report: how a diagnosis is reported, as pure functions of
    explicit fields: the failure signature kg_policy counts repeats with, and
    the JSON document incidents and notices are built from. kg_diagnosis
    fills a kg_diag_report_t from its state and calls them.
*/
#ifndef KG_DIAG_REPORT_H
#define KG_DIAG_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kg_classifier.h"
#include "kg_trail.h"

/*  What kg_diag_report_json reads; all borrowed, none kept. */
typedef struct {
  const kg_match_t *match;     /* the established family, or NULL            */
  bool sticky;
  kg_backend_t backend;
  int64_t fault_ms;            /* T; -1 none                                 */
  const char *parent;          /* failing request, or NULL                   */
  const char *assertion;       /* the device assertion line, or NULL         */
  const cJSON *first_error;    /* the first error's record, or NULL          */
  const kg_trail_t *trail;     /* what followed it (required)                */
  bool exited;
  int exit_code, signo;        /* exit_code < 0: killed by signo             */
  int64_t last_step;           /* -1 none                                    */
} kg_diag_report_t;

/*  "<family_id>:<16 hex of text normalised (kg_errtext_normalise)>:<16 hex
    of cell_code (NULL = "")>" into buf, truncated to size; the hashes are
    BLAKE2b-64, so equal inputs give equal signatures across runs.
    Returns 0. */
int kg_diag_report_signature(const char *family_id, const char *text, const char *cell_code,
                             char *buf, size_t size);

/*  r as a new cJSON object owned by the caller (NULL on allocation
    failure), in the layout kg_diagnosis_to_json documents. */
cJSON *kg_diag_report_json(const kg_diag_report_t *r);

#endif
