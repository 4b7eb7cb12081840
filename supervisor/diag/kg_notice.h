/*  kg_notice: what the user is told in the notebook.

    Each builder returns the `data` dict of an iopub `display_data`,
    {"text/markdown": ..., "text/plain": ...}, and its `metadata`,
    {"kguard": {"event": ..., "family": ..., "incident": ...,
                "restored_step": ..., "restored_archive": ...}}
    (keys with no value are null). Notices name the family, the cell, the
    first check and the conclusion to avoid, and give the backend's hint for a
    *separate diagnostic run*; a ROCm notice never names an NVIDIA variable.
*/
#ifndef KG_NOTICE_H
#define KG_NOTICE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "kg_classifier.h"

typedef enum {
  KG_NOTICE_STICKY_RESTART = 0, /* poisoned context: kernel restarted         */
  KG_NOTICE_ADVICE,             /* non-sticky family: advice, no restart      */
  KG_NOTICE_DOWN,               /* automatic restarts stopped                 */
  KG_NOTICE_DIAGNOSTIC,         /* a diagnostic restart was done on request   */
  KG_NOTICE_KERNEL_DIED         /* the kernel died on its own                 */
} kg_notice_kind_t;

/*  Everything a notice may mention. Zero-initialise and fill what is known;
    all pointers are borrowed. */
typedef struct {
  const kg_family_t *family;   /* NULL: unknown family                        */
  const char *rule_id;
  const char *note;            /* rule note (e.g. ROCm 719 → likely assert)    */
  kg_backend_t backend;
  const char *matched_line;    /* the error line that matched                  */
  const char *assertion_line;  /* raw kernel-side assertion, if any            */
  int execution_count;         /* < 0 (or 0) = unknown                         */
  const char *cell_code;       /* the failing cell's code (first line shown)   */
  const char *incident_id;
  const char *incident_path;
  bool restarted;              /* a fresh kernel was started                   */
  bool diagnostic;             /* the (new) kernel runs in diagnostic mode     */
  bool checkpoint_restored;    /* a verified checkpoint was restored           */
  int64_t restored_step;
  const char *restored_archive;
  const char *restored_sealed; /* seal time, ISO                               */
  const char *restored_digest;
  const char *reason;          /* DOWN: why restarts stopped                   */
  int exit_code;               /* KERNEL_DIED: >= 0, else -1 and signo         */
  int signo;
  int restart_count;
} kg_notice_info_t;

/*  The "kguard" event name of kind: "sticky-restart", "advice", "down",
    "diagnostic", "kernel-died". */
const char *kg_notice_event(kg_notice_kind_t kind);

/*  Build a notice. *data_p and *metadata_p (metadata_p may be NULL) become new
    cJSON objects owned by the caller. Returns 0 or KG_ENOMEM. */
int kg_notice_build(kg_notice_kind_t kind, const kg_notice_info_t *info, cJSON **data_p,
                    cJSON **metadata_p);

/*  The "kguard" metadata object alone, e.g. to attach to the failing cell's
    relayed execute_reply: {"event":..., "family":..., ...}. New object. */
cJSON *kg_notice_metadata(kg_notice_kind_t kind, const kg_notice_info_t *info);

#endif
