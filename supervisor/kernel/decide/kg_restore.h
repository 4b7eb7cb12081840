/*  kg_restore: what the checkpoint restore said, and what the next kernel
    gets.

    After a sticky error kg_sup_helpers.c runs `kguard ckpt resume-prepare
    --json`; its stdout is one JSON object: {"status": "restored" | "none" |
    "failed", "archive", "dir", "step", "digest", "sealed_at", "error",
    ...}. This object keeps that result (or why there is none), decides
    whether a checkpoint was restored, and holds what the next kernel is
    given (KGUARD_RESUME_DIR/_STEP/_ARCHIVE/_DIGEST) until it is handed
    over. It runs no process, reads no clock and calls no supervisor file;
    resume-prepare's output is outside input: anything malformed becomes a
    clear error text, never an assert (tests/unit/kernel/decide/test_restore.c).

    Ownership: the object owns the parsed result, the error text and the
    resume paths; accessors return borrowed pointers, valid until the next
    kg_restore_begin, kg_restore_take_output, kg_restore_decide or destroy.
*/
#ifndef KG_RESTORE_H
#define KG_RESTORE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

typedef struct kg_restore_t kg_restore_t;

/*  Nothing attempted, nothing to hand over (step -1), or NULL. */
kg_restore_t *kg_restore_new(void);

/*  Free self and what it holds; *self_p becomes NULL. Safe on NULL. */
void kg_restore_destroy(kg_restore_t **self_p);

/*  A restore begins: the last result and error are forgotten and its
    progress notice is not out yet. What the next kernel gets is kept until
    kg_restore_decide. */
void kg_restore_begin(kg_restore_t *self);

/*  Why no checkpoint was restored (copied; replaces an earlier reason;
    NULL clears it). Out of memory keeps the old text. */
void kg_restore_set_error(kg_restore_t *self, const char *text);

/*  resume-prepare's stdout (NUL-terminated, may be NULL or ""): kept as the
    result when it parses as a JSON object (true), else nothing is kept
    (false; the caller says why in kg_restore_set_error). */
bool kg_restore_take_output(kg_restore_t *self, const char *out);

/*  Decide from the result: true when it says "restored" and names an
    archive (its dir may be "": restored in place); then dir, archive and
    step (-1 unless a number in 0..2^53; truncated) are what the next kernel
    gets (kg_restore_pending). Otherwise nothing is pending, and unless an
    error is already set one is named: a "failed" result's own error, a
    "restored" result without an archive, an unknown or missing status. A
    result of "none" (no checkpoint sealed before the fault) sets no error. */
bool kg_restore_decide(kg_restore_t *self);

/*  The last result (borrowed), NULL if none. */
const cJSON *kg_restore_result(const kg_restore_t *self);

/*  Why no checkpoint was restored (borrowed), NULL if no reason is known. */
const char *kg_restore_error(const kg_restore_t *self);

/*  True while a restored checkpoint waits to be given to a kernel. */
bool kg_restore_pending(const kg_restore_t *self);

/*  A kernel got it (or it will not be given): nothing is pending. */
void kg_restore_handed_over(kg_restore_t *self);

/*  What the next kernel gets (borrowed; "" when nothing was decided). */
const char *kg_restore_dir(const kg_restore_t *self);
const char *kg_restore_archive(const kg_restore_t *self);
long long kg_restore_step(const kg_restore_t *self);     /* -1: unknown */
/*  Pure: the "step" of a result (any JSON, NULL allowed): -1 unless it is
    a number in 0..2^53 (truncated). */
long long kg_restore_step_of(const cJSON *result);
/*  The digest kguard verified (borrowed), NULL if the result named none. */
const char *kg_restore_digest(const kg_restore_t *self);

/*  Where the restored state lies: "memory" (a snapshot in kguard's memory
    directory), "disk" (the checkpoint directory), or NULL when
    resume-prepare did not say (an older kguard-ckpt: disk). */
const char *kg_restore_tier(const kg_restore_t *self);

/*  The long-restore progress notice: out yet? / it is out now. */
bool kg_restore_noticed(const kg_restore_t *self);
void kg_restore_set_noticed(kg_restore_t *self);

/*  For the incident record (new object, the caller owns it), NULL when
    neither a result nor an error is known: the result as given, with
    "kguard_error" added when kguard knows why it was not restored; or
    {"status": "failed", "error": ...} when only the error is known. */
cJSON *kg_restore_incident_json(const kg_restore_t *self);

/*  For notices' metadata (new object, the caller owns it), NULL if no
    restore was attempted: {status, step, archive, error}; status is the
    result's ("failed" when there is none, "none" when there was no
    checkpoint directory), step a number or null, error kguard's reason,
    else the result's, else null. */
cJSON *kg_restore_meta_json(const kg_restore_t *self);

#endif
