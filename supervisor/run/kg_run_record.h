/*  kg_run_record: what `kguard run` learns about kguard's incidents.

    kguard tells a client about an incident in metadata.kguard of the failing
    cell's execute_reply and of its notice (a display_data that may arrive
    after the re-run has begun). This class keeps what the run must report
    from them: the records written into the notebook's
    metadata.kguard.incidents, the incident files seen, the failures already
    acted on (so a late notice only completes its record), the checkpoints
    kguard verified but could not restore, and the step last restored. It
    tells checkpoint outcomes to the terminal through kg_progress.
    No sockets, no clock: it is fed the metadata the runner received.
*/
#ifndef KG_RUN_RECORD_H
#define KG_RUN_RECORD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_progress.h"

typedef struct kg_run_record_t kg_run_record_t;

/*  incidents: the notebook's metadata.kguard.incidents array, borrowed (the
    notebook owns it and outlives the record); progress borrowed; state_dir
    (borrowed, may be NULL) locates incident files by id. NULL if incidents
    is NULL or out of memory. */
kg_run_record_t *kg_run_record_new(cJSON *incidents, const char *state_dir,
                                   kg_progress_t *progress);
void kg_run_record_destroy(kg_run_record_t **self_p);

/*  A reply's or notice's metadata.kguard.checkpoint {status, step, archive,
    error}: status "failed" means a verified checkpoint sealed before the
    fault existed but could not be restored, so the fresh kernel starts over
    while the user expects it to resume. Recorded (and told) once per
    incident; the run then cannot end as a plain success. */
void kg_run_record_checkpoint(kg_run_record_t *self, const cJSON *kg);

/*  True if the incident id or the request msg_id parent was acted on. */
bool kg_run_record_is_handled(const kg_run_record_t *self, const char *incident,
                              const char *parent);

/*  The failure of the request msg_id, with its events (array of metadata
    objects), has been acted on: notices arriving later only complete it. */
void kg_run_record_acted_on(kg_run_record_t *self, const char *msg_id, const cJSON *events);

/*  A notice (metadata kg, its text or NULL) for an incident already acted
    on: completes its records with the restored checkpoint and tells the
    terminal whether training resumes from it. */
void kg_run_record_complete(kg_run_record_t *self, const cJSON *kg, const char *text);

/*  Append a record to metadata.kguard.incidents for each of events: the
    cell's number (1-based among the code cells run, as In [N] and kguard's
    notice count them) as "cell", its 0-based position in the notebook's
    cells as "cell_index", execution: the execute_requests sent so far,
    reply: the execute_reply content or NULL. A restart superseded by "down"
    for the same incident is recorded as the down only. */
void kg_run_record_incidents(kg_run_record_t *self, size_t number, size_t index, int execution,
                             const cJSON *events, const cJSON *reply);

/*  The incident file of kg (its incident_path, else state_dir/incidents/
    ID.json written into buf of len), or NULL. */
const char *kg_run_record_incident_path(const kg_run_record_t *self, const cJSON *kg,
                                        char *buf, size_t len);

/*  The step last restored (-1: none); the incident files seen (array of
    strings); the checkpoints not restored ([{incident, step, archive,
    error}]). Borrowed. */
int64_t kg_run_record_restored_step(const kg_run_record_t *self);
const cJSON *kg_run_record_paths(const kg_run_record_t *self);
const cJSON *kg_run_record_not_restored(const kg_run_record_t *self);

/*  Cell events (a cJSON array of metadata.kguard objects): add kg (with the
    notice text, or NULL) once per event and incident, merging what a later
    message knows into the earlier one. */
void kg_run_events_note(cJSON *events, const cJSON *kg, const char *text);

/*  The strongest event of a cell, from its events and its execute_reply
    content (NULL if none): "down" > "sticky-restart"/"kernel-died" > the
    rest; NULL if nothing happened. Borrowed. */
const char *kg_run_events_strongest(const cJSON *events, const cJSON *reply);

#endif
