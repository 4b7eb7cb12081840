/*  kg_ckpt_inflight: wait for the checkpoint writers still running in a
    checkpoint directory before a restore chooses among its archives.

    A background seal (kguard.save(..., background=True)) runs in its own
    process and outlives a faulted kernel. Its state was captured, and the
    device synchronised, before the fault, so the rule is: a seal running
    at a fault is either finished and sealed, and then a candidate, or
    discarded, never half-present. A restore that chose while such a seal
    was still writing would miss the newest checkpoint. Every writer holds
    an exclusive flock(2) for as long as it writes (kg_ckpt_gc.h): seal on
    its ".<final>.tmp-XXXXXX" temporary, kguard.save and its background
    seal on the ".kguard-save-XXXXXX" staging directory (until the seal has
    renamed its archive into place and removed the directory). So the
    restore waits until it can take each of those locks: then the writer
    has either renamed a complete archive into place or died, leaving only
    dot-named leftovers that are never chosen.

    A writer that makes no progress (the bytes of every temporary in the
    directory and the number of writers unchanged) for stall_ms is not
    waited for any longer: it is excluded, and recorded as such. Should it
    finish later, its archive is complete and sealed (rename is atomic) and
    a later restore may choose it.

    Test hook: KGUARD_TEST_SEAL_HOLD=STAGE:PATH makes `kguard ckpt seal`
    stop at STAGE (kg_ckpt_inflight_test_hold).
*/
#ifndef KG_CKPT_INFLIGHT_H
#define KG_CKPT_INFLIGHT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define KG_CKPT_TEST_SEAL_HOLD_ENV "KGUARD_TEST_SEAL_HOLD"

/* How long resume-prepare waits for a seal in flight that makes no
   progress (--seal-wait-stall-ms), in ms. */
#define KG_CKPT_SEAL_WAIT_STALL_MS 60000

/*  Called about once a second while waiting: the bytes the writers'
    temporaries hold now and how many writers are still running. */
typedef void (*kg_ckpt_inflight_tick_fn)(void *arg, uint64_t bytes, size_t writers);

/*  Wait until no writer holds its lock in dir (top level), or until
    stall_ms pass without progress (stall_ms <= 0: do not wait at all).
    tick (may be NULL) is called about once a second while waiting.
    Appends to waited (a JSON array, may be NULL) one object per writer
    found running: {"writer": name, "outcome": "ended"|"excluded",
    "waited_ms": N}. Returns 0 when none is running any more, 1 when some
    were excluded, or -errno (dir unreadable; a missing dir has none). */
int kg_ckpt_inflight_wait(const char *dir, int64_t stall_ms, kg_ckpt_inflight_tick_fn tick,
                          void *arg, cJSON *waited);

/*  Test hook of `kguard ckpt seal`: when $KGUARD_TEST_SEAL_HOLD is
    "STAGE:PATH" and stage is STAGE, create PATH.STAGE (so a test knows the
    seal got there), then wait for a shared lock on PATH (the test holds an
    exclusive one until it lets the seal go on). Stages: "start" (before
    the temporary is created), "written" (archive written, before its fsync
    and rename), "synced" (fsync done, the temporary still open and locked,
    before the rename), "renamed" (archive in place, before the staging directory
    is removed). Does nothing otherwise. Never set it outside tests. */
void kg_ckpt_inflight_test_hold(const char *stage);

#endif
