/*  kg_run_resume: what `kguard run --resume` continues, decided without a
    process, a socket or a clock (tests/unit/run/test_run_resume.c).

    A run is the notebook plus its parameters. Its id, recorded by every
    checkpoint kguard.save seals in it (KGUARD_RUN_ID), is the notebook's file
    name followed by " NAME=VALUE" for each parameter in order (VALUE as
    JSON): readable in `kguard ckpt list` and in resume-prepare's reasons, and
    different for any other -p values. An id longer than KG_RUN_ID_MAX bytes
    is cut at a character boundary and ends with " #" and 16 hex digits of
    the BLAKE2b digest of the whole, so it stays unique.

    The choice reads `kguard ckpt resume-prepare --run ID --json`'s result:
    the checkpoint it restored, else none of this run (start fresh), unless
    only runs of the same notebook with other parameters have checkpoints
    there: then the run is refused, naming both, because continuing
    another's training under these parameters would mix two experiments.
*/
#ifndef KG_RUN_RESUME_H
#define KG_RUN_RESUME_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define KG_RUN_ID_MAX 128        /*  bytes, as the checkpoint format allows */

/*  The run id of notebook (a path: its file name is used) with parameters
    (a JSON object, or NULL for none) into out (KG_RUN_ID_MAX + 1 bytes).
    Returns 0, or KG_ENOMEM. */
int kg_run_resume_id(const char *notebook, const cJSON *parameters,
                     char out[KG_RUN_ID_MAX + 1]);

typedef enum {
  KG_RUN_RESUME_FROM = 0,       /*  a checkpoint of this run: resume from it */
  KG_RUN_RESUME_FRESH,          /*  none of this run: start fresh            */
  KG_RUN_RESUME_OTHER,          /*  none of this run, only of this notebook
                                    with other parameters: refused          */
  KG_RUN_RESUME_FAILED          /*  nothing could be chosen: refused        */
} kg_run_resume_kind_t;

typedef struct {
  kg_run_resume_kind_t kind;
  long long step;               /*  FROM: the step (-1 if unknown)          */
  char other[KG_RUN_ID_MAX + 1];/*  OTHER: the other run's id               */
  char line[2048];              /*  the one line said at the start          */
  char skipped[4096];           /*  "skipped ARCHIVE: REASON" lines of this
                                    run's checkpoints that were passed over
                                    (untrusted key, damaged ...), "\n"
                                    between them; "" if none                */
} kg_run_resume_choice_t;

/*  Decide from resume-prepare's stdout (may be NULL or not JSON: FAILED,
    naming why) for run run_id of notebook (its file name, as in the id)
    with checkpoint directory dir (for the lines). Fills *out. */
void kg_run_resume_decide(const char *run_id, const char *notebook, const char *dir,
                          const char *output, kg_run_resume_choice_t *out);

#endif
