/*  kg_incident: the incident record, one JSON file per incident.

    Layout of <incidents_dir>/<id>.json (keys absent until set):
    {
      "kguard_incident": 1,
      "id": "20261202T170304Z-3f9a1c",
      "created": "2026-12-02T17:03:04.512Z",
      "T": {"iso": "2026-12-02T17:03:04.123Z", "ms": 1796230984123},
      "family", "title", "sticky", "rule", "note", "backend", "error_code",
      "first_error": {...}, "following": [...], "following_dropped",
      "assertion_line", "raw_stderr_tail": [...], "matched": {...},
      "parent_msg_id"                       (all from kg_diagnosis_to_json),
      "cell": {"code": "...", "msg_id": "...", "execution_count": n},
      "notebook": "work/train.ipynb"       (Jupyter Server's JPY_SESSION_NAME),
      "last_step": n | null,
      "exit": {"code": n|null, "signal": n|null, "signal_name": "SIGABRT"},
      "versions": {...probe.py output...},
      "diagnostic_env": {"CUDA_LAUNCH_BLOCKING": "1", "PYTORCH_...": ...},
      "secret_env": ["HF_TOKEN", "WANDB_API_KEY", ...],
      "restart_count": n,
      "policy": {"decision": "restart"|"give-up", "reason": "...", "delay_ms": n},
      "checkpoint": {...filled by the supervisor after the restore...} | null
    }
    Any other key may be added through kg_incident_json. A record can be
    written again after an update: the same file is replaced atomically.

    Secrets never reach the file: every string of the record is written
    through kg_scrub_secrets, which replaces the values of the kernel's
    secret-looking variables (kg_incident_set_env registers them; their
    names, never their values, are listed in "secret_env") by
    "<env:NAME>", and credentials recognised by their shape (kg_tokens.h)
    by "<hf-token>", "<secret>", ... whatever their source: a token set
    inside the kernel (os.environ, a .env file) is only caught by its
    shape, since kguard never sees that environment. The record in memory
    keeps the text as it came; only what is written is masked.
*/
#ifndef KG_INCIDENT_H
#define KG_INCIDENT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "kg_diagnosis.h"

#define KG_INCIDENT_ID_MAX 40

typedef struct kg_incident_t kg_incident_t;

/*  Write a new id "YYYYMMDDTHHMMSSZ-xxxxxx" (UTC of now_ms + 24 random bits)
    into buf (KG_INCIDENT_ID_MAX). */
void kg_incident_make_id(int64_t now_ms, char *buf, size_t size);

/*  New record created at now_ms, with a fresh id. NULL on allocation failure. */
kg_incident_t *kg_incident_new(int64_t now_ms);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_incident_destroy(kg_incident_t **self_p);

/*  The record's id (borrowed). */
const char *kg_incident_id(const kg_incident_t *self);

/*  The record itself (borrowed, owned by self): add or change keys freely. */
cJSON *kg_incident_json(kg_incident_t *self);

/*  Copy every key of kg_diagnosis_to_json(diag) into the record and set T
    from its fault time. Returns 0 or KG_ENOMEM. */
int kg_incident_set_diagnosis(kg_incident_t *self, const kg_diagnosis_t *diag);

/*  Set "T" from ms (iso + ms). */
void kg_incident_set_fault_time(kg_incident_t *self, int64_t fault_ms);

/*  The failing cell: code (may be NULL), msg_id (may be NULL), execution
    count (< 0 = unknown → null). */
void kg_incident_set_cell(kg_incident_t *self, const char *code, const char *msg_id,
                          int execution_count);

/*  Last completed step (< 0 = unknown → null). */
void kg_incident_set_last_step(kg_incident_t *self, int64_t step);

/*  Exit status: exit_code >= 0, or -1 with signo. Both < 0 = still alive
    (killed by kguard later) → "exit": null. */
void kg_incident_set_exit(kg_incident_t *self, int exit_code, int signo);

/*  Kernel versions from probe.py (taken: *versions_p is set to NULL; NULL or
    a non-object records {"error": "probe unavailable"}). */
void kg_incident_take_versions(kg_incident_t *self, cJSON **versions_p);

/*  Record what matters of the kernel's environment envp (NULL-terminated
    "NAME=value" array, e.g. the inner kernel's): the diagnostic variables
    in force (CUDA_LAUNCH_BLOCKING, AMD_SERIALIZE_KERNEL,
    HIP_LAUNCH_BLOCKING, KGUARD_DIAGNOSTIC, KGUARD_EMULATE,
    TORCH_USE_CUDA_DSA, CUDA/HIP_VISIBLE_DEVICES and every PYTORCH_*) in
    "diagnostic_env", the notebook Jupyter Server names in
    JPY_SESSION_NAME in "notebook", and the names of its secret-looking variables
    (kg_tokens_secret_name, with a value worth masking) in "secret_env",
    whose values every later write masks. Returns 0 or KG_ENOMEM (then
    the record may lack them, and a write refuses: see kg_incident_write). */
int kg_incident_set_env(kg_incident_t *self, char *const *envp);

/*  Restart count and the policy decision ("restart" / "give-up"). */
void kg_incident_set_restarts(kg_incident_t *self, int restart_count);
void kg_incident_set_policy(kg_incident_t *self, const char *decision, const char *reason,
                            int64_t delay_ms);

/*  The checkpoint restored for this incident (taken; NULL records null, i.e.
    none was found and training starts over). Suggested keys: "step",
    "archive", "sealed" (iso), "digest", "restored_dir". */
void kg_incident_take_checkpoint(kg_incident_t *self, cJSON **checkpoint_p);

/*  Write the record, secrets masked (see above), atomically as
    <incidents_dir>/<id>.json, mode 0600: temp file in the same directory,
    fsync, rename, fsync of the directory. The directory must exist. A
    second call replaces the file. If path_out is not NULL, *path_out is a
    new malloc'd string with the path (caller frees). Returns 0 or -errno /
    KG_ENOMEM (nothing is written when masking cannot be done). */
int kg_incident_write(kg_incident_t *self, const char *incidents_dir, char **path_out);

#endif
