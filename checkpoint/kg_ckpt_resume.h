/*  kg_ckpt_resume: what the supervisor runs after a sticky failure at time
    T: quarantine checkpoints sealed at or after T, then restore the newest
    one sealed strictly before T that verifies completely.
*/
#ifndef KG_CKPT_RESUME_H
#define KG_CKPT_RESUME_H

#include <cjson/cJSON.h>
#include <stdint.h>

/*  Prepare a resume. dir: checkpoint directory (missing = no checkpoints);
    before_ms: fault time T; incident: id for quarantine; dest: a new
    directory to restore into; pk: public key (NULL: nothing verifies).
    On success (0) *out is a new JSON object (caller deletes):
      {"status": "restored"|"none", "archive", "step", "run", "sealed_at",
       "sealed_at_ms", "digest", "digest_of": "manifest", "dir",
       "quarantined": [{"archive", "to", "reason"}],
       "skipped": [{"archive", "reason"}]}
    (archive..dir are null when status is "none"). Returns a negative code
    on bad arguments or a system failure (*out NULL, why filled). */
int kg_ckpt_resume_prepare(const char *dir, int64_t before_ms, const char *incident,
                           const char *dest, const unsigned char *pk, cJSON **out, char *why,
                           size_t whysize);

#endif
