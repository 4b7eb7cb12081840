/*  kg_ckpt_retain: which sealed checkpoints `--keep N` / `--keep-every K`
    may remove, and the removal itself.

    The decision is pure (kg_ckpt_retain_plan, tested by tables). Rules,
    over a directory's checkpoints newest first:
      - nothing is removed unless a checkpoint verified completely (V, the
        newest that does); V and everything newer are kept;
      - of those older than V, the first N-1 authenticated ones are kept
        (with V that makes N), and any whose step is a multiple of K;
      - for every open incident (fault time T), the newest authenticated
        checkpoint sealed strictly before T is kept (it is what a restore
        for that incident chose or would choose), and so is any archive
        an incident marker names;
      - leftovers, archives whose manifest does not authenticate, and
        anything in quarantine/ are never removed (not ours to judge);
      - an archive being read (a shared flock held on it) is kept.
    Open incidents are the caller's --open-incident times plus the markers
    CKPT_DIR/.incident-<ID> that resume-prepare writes when it restores
    (one line: "<T_MS> <archive file name>"); `kguard ckpt prune --resolve
    ID` removes a marker once the incident is closed.
*/
#ifndef KG_CKPT_RETAIN_H
#define KG_CKPT_RETAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_ckpt_list.h"
#include "kg_ckpt_verify.h"

#define KG_CKPT_INCIDENT_PREFIX ".incident-"

typedef struct {
  bool authenticated;   /* manifest signed by our key and well-formed */
  bool verified;        /* verified completely and valid */
  bool named;           /* an incident marker names this archive */
  int64_t step;
  int64_t time_ms;      /* signed seal time */
} kg_ckpt_retain_item_t;

/*  Decide, for items[0..n) newest first, which to remove (remove[i]).
    keep >= 1; every 0 = no keep-every rule; open[0..nopen) are fault
    times of open incidents. Returns how many are marked. */
size_t kg_ckpt_retain_plan(const kg_ckpt_retain_item_t *items, size_t n, int keep,
                           int64_t every, const int64_t *open, size_t nopen, bool *remove);

/*  Apply the rules to dir: authenticate every archive, verify completely
    from the newest down until one is valid, remove what the plan marks,
    unless dry_run. run: only that run's archives are counted and removed
    (NULL: every run's). extra_open: caller's open incident times.
    An archive being read (its shared lock held: kg_ckpt_verify, restore,
    kguard.archive) is kept ("kept FILE: being read"). Prints one line per
    removal to out (a FILE *) when not NULL. watch (may be NULL): progress
    of the complete verifications. Returns the number removed (>= 0) or
    -errno / KG_ENOMEM. */
int kg_ckpt_retain_prune(const char *dir, const kg_keyring_t *keys, const char *run, int keep,
                         int64_t every, const int64_t *extra_open, size_t nextra,
                         bool dry_run, const kg_ckpt_sink_t *watch, void *out);

/*  Remove the archive at path unless a reader holds its shared flock:
    takes the lock exclusively without waiting and unlinks while holding
    it, so a reader that opens the file afterwards finds it gone (and one
    that opened it just before sees it unlinked once it has its lock).
    Returns 0, -EBUSY when being read, or -errno. */
int kg_ckpt_retain_remove(const char *path);

/*  Record an open incident for dir: T and the chosen archive's file name
    (NULL: none). Returns 0 or -errno. */
int kg_ckpt_retain_mark(const char *dir, const char *incident, int64_t before_ms,
                        const char *archive_name);

/*  The fault time recorded in incident's marker. Returns 0 and sets *t,
    or -ENOENT / KG_ECKPT_MALFORMED. */
int kg_ckpt_retain_marker_time(const char *dir, const char *incident, int64_t *t);

/*  Remove incident's marker. Returns 0 (also when absent) or -errno. */
int kg_ckpt_retain_resolve(const char *dir, const char *incident);

#endif
