/*  kg_run_prepare: `kguard run --resume` asks `kguard ckpt resume-prepare`
    for the run's last consistent checkpoint before the kernel starts, as
    the kernel supervisor does after a fault: sealed, verified, of this run,
    signed by a trusted key, not quarantined. The child runs on a loop of
    its own (kg_loop) with kg_helper's stall deadline; what it printed is
    decided by kg_run_resume.
*/
#ifndef KG_RUN_PREPARE_H
#define KG_RUN_PREPARE_H

#include <stddef.h>

typedef struct {
  const char *exe;              /*  the kguard binary                        */
  const char *dir;              /*  the checkpoint directory                 */
  const char *run_id;           /*  --run                                    */
  const char *into;             /*  where a zstd checkpoint is restored      */
  const char *incident;         /*  an id for this choice (its quarantine)   */
  long long before_ms;          /*  now: every checkpoint sealed so far      */
} kg_run_prepare_t;

/*  Run resume-prepare as described; its stdout (new string, the caller
    frees it) in *out_p. Returns 0, or a negative code with err filled (it
    could not start, or stalled and was killed). */
int kg_run_prepare(const kg_run_prepare_t *what, char **out_p, char *err, size_t errlen);

#endif
