/*  kg_ckpt_gc: remove what interrupted writers left in a checkpoint
    directory.

    Every writer holds an exclusive flock(2) on what it is writing for as
    long as it writes: `kguard ckpt seal` on its ".<final>.tmp-XXXXXX"
    temporary, `kguard.save` (python) on its ".kguard-save-XXXXXX" staging
    directory. The kernel drops a lock when its holder dies, however it
    dies, so a temporary whose lock can be taken has no writer any more and
    is removed; one still locked is left alone (the lock itself:
    kg_ckpt_writer_lock, kg_ckpt_util.h). Copies of zstd checkpoints
    (".restored-<incident>", and restore's ".<that>.restore-*" temporaries)
    are removed when their incident's fault time (from the marker
    ".incident-<incident>", kg_ckpt_retain.h; none: any time) is before
    copies_before_ms: a checkpoint sealed after the fault means the run has
    moved past them, while a background seal of a step captured before the
    fault, finishing during the restore, does not.
*/
#ifndef KG_CKPT_GC_H
#define KG_CKPT_GC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Prefix of kguard.save's staging directories (python/kguard/checkpoint.py). */
#define KG_CKPT_SAVE_PREFIX ".kguard-save-"

typedef struct {
  size_t removed;        /* temporaries and copies removed                 */
  size_t busy;           /* temporaries whose writer is still running      */
  unsigned long long bytes; /* bytes of the removed temporary files        */
} kg_ckpt_gc_stats_t;

/*  Remove the abandoned temporaries of dir (top level only; never looks
    into quarantine/ or anything else), and the copies whose incident's
    fault time is before copies_before_ms (INT64_MAX: all, INT64_MIN: none).
    stats may be NULL. Returns 0 (a missing dir is empty) or the first
    -errno met; the rest is still attempted. */
int kg_ckpt_gc(const char *dir, int64_t copies_before_ms, kg_ckpt_gc_stats_t *stats);

#endif
