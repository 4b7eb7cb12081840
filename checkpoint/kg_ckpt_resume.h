/*  kg_ckpt_resume: what the supervisor runs after a sticky failure at time
    T: quarantine checkpoints sealed at or after T, then restore the newest
    one sealed strictly before T that verifies completely.
*/
#ifndef KG_CKPT_RESUME_H
#define KG_CKPT_RESUME_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "kg_ckpt_verify.h"

/* Where a zstd checkpoint is restored: CKPT_DIR/.restored-<incident>
   (beside the archives, same filesystem; never the home state directory).
   Dot-named, so never taken for a checkpoint. */
#define KG_CKPT_COPY_PREFIX ".restored-"

/*  Prepare a resume. dir: checkpoint directory (missing = no checkpoints);
    before_ms: fault time T; incident: id for quarantine; run: the run being
    resumed (only its archives and sets are candidates and quarantined;
    every other run's is skipped, saying so); dest: where a zstd candidate
    is decompressed when dir is not private (the caller's private state
    directory); watch: its progress callback, if any, sees the bytes read
    of each candidate; keys: the keys accepted as signers (NULL: nothing
    verifies).
    An uncompressed candidate is verified completely in place and not
    copied ("dir": "", "in_place": true): the kernel reads its members from
    the archive. A zstd candidate is restored, read-only, into
    dir/.restored-<incident> when nobody but the user can change dir, else
    into dest ("dir" names it): never where someone else could swap it
    before the kernel reads it. Copies left by earlier incidents are
    removed first.
    On success (0) *out is a new JSON object (caller deletes):
      {"status": "restored"|"none"|"failed", "archive", "archive_abs",
       "step", "run", "sealed_at", "sealed_at_ms", "digest",
       "digest_of": "manifest", "dir", "in_place", "compression", "bytes",
       "error" (only when failed), "resumed_run",
       "quarantine_error" (only when the quarantine failed: those archives
       then stay where they are and are skipped),
       "quarantined": [{"archive", "to", "reason"}],
       "skipped": [{"archive", "reason"}]}
    (archive..dir are null unless status is "restored"; "failed": a
    candidate could not be read or copied for a system reason, and nothing
    partial remains). Returns a negative code on bad arguments or when the
    directory cannot be scanned (*out NULL, why filled). */
int kg_ckpt_resume_prepare(const char *dir, int64_t before_ms, const char *incident,
                           const char *run, const char *dest, const kg_ckpt_sink_t *watch,
                           const kg_keyring_t *keys, cJSON **out, char *why, size_t whysize);

/*  resume-prepare's and latest's inputs with a memory tier of snapshots
    (see kg_ckpt_resume_prepare_tiers, kg_ckpt_resume_choose_tiers);
    borrowed, none owned. */
typedef struct {
  const char *dir;              /* the checkpoint directory on disk */
  const char *memory;           /* seal --snapshot's memory directory, or NULL */
  int64_t before_ms;
  const char *incident, *run, *dest;  /* incident, dest: prepare only */
  const kg_ckpt_sink_t *watch;
  const kg_keyring_t *keys;
} kg_ckpt_resume_opts_t;

/*  kg_ckpt_resume_prepare with a memory tier: first o->memory's snapshots
    of the run sealed at or after T (manifest authenticated; anything else
    stays, as kg_ckpt_snapkeep leaves it) are quarantined into
    o->memory/quarantine/<incident>/ (which the next snapshot's seal
    deletes): left there, one would be the newest before a second fault
    that comes before the restarted run's first snapshot. Then the choice
    there, made as kg_ckpt_resume_choose makes it (nothing else in memory
    is marked, moved or copied; a missing directory holds no snapshots and
    nothing is made there; a zstd archive there is skipped: snapshots are
    read in place) giving candidate M sealed at tM; then the disk's prepare
    as kg_ckpt_resume_prepare does, except that disk candidates sealed at
    or before tM are not verified (they cannot win; verifying tens of GB
    that lose is what the memory tier saves). The newer wins. A system
    error reading a snapshot ends the memory search as on disk: only disk
    checkpoints newer than it are tried, else the result is "failed".
    The JSON is kg_ckpt_resume_prepare's plus "tier": "memory"|"disk"
    (null when none is restored) and "memory_dir" (o->memory or null);
    each "quarantined" and "skipped" object gains "tier", the memory
    tier's listed first; "quarantine_error" holds both tiers' reasons when
    both failed. kg_ckpt_resume_prepare is this with memory NULL. Returns
    as it does. */
int kg_ckpt_resume_prepare_tiers(const kg_ckpt_resume_opts_t *o, cJSON **out, char *why,
                                 size_t whysize);

/*  The choice alone, as resume-prepare makes it for run with fault time
    before_ms (INT64_MAX: the newest): sets and archives of run, sealed
    strictly before before_ms, authenticated by a key in keys, verified
    completely where they lie (zstd too), newest first. Nothing is
    quarantined, marked or copied. On success (0) *out is a new JSON object
    (caller deletes) with resume-prepare's fields "status" ("restored":
    chosen, "none", "failed"), "archive" .. "bytes", "error", "resumed_run",
    "tier" ("disk", or null when none is chosen), "memory_dir" (null) and
    "skipped" ("dir" is always "": nothing is copied). Returns a
    negative code when dir cannot be scanned (*out NULL, why filled). */
int kg_ckpt_resume_choose(const char *dir, int64_t before_ms, const char *run,
                          const kg_ckpt_sink_t *watch, const kg_keyring_t *keys, cJSON **out,
                          char *why, size_t whysize);

/*  kg_ckpt_resume_choose across the two tiers, as
    kg_ckpt_resume_prepare_tiers chooses (disk candidates not newer than
    the memory tier's choice are not verified) but with no side effect:
    nothing is quarantined, marked or copied (o->incident and o->dest are
    unused). The JSON is kg_ckpt_resume_choose's plus "tier" and
    "memory_dir", each "skipped" object with its "tier", as
    kg_ckpt_resume_prepare_tiers gives them. kg_ckpt_resume_choose is this
    with memory NULL. Returns as it does. */
int kg_ckpt_resume_choose_tiers(const kg_ckpt_resume_opts_t *o, cJSON **out, char *why,
                                size_t whysize);

/*  Remove dir/.restored-* copies, except dir/.restored-<keep> when keep is
    not NULL. Returns 0 or the first -errno. */
int kg_ckpt_resume_copies_remove(const char *dir, const char *keep);

#endif
