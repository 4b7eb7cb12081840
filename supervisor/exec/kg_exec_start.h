/*  kg_exec_start: what `kguard exec` says and does at a run's start, from
    the answer of `kguard ckpt resume-prepare` (its JSON, see `kguard ckpt
    resume-prepare --help`): a pure function (no clock, no files), tested
    by tables.

    A run is its name and its checkpoint directory. Before the first start
    (without --fresh) kguard asks resume-prepare for the run's last
    consistent checkpoint, as after a fault with the start's time as T
    (nothing of this run is newer, so nothing is quarantined), and:
      - restored: the ranks start with KGUARD_RESUME_* for kguard.resume();
      - none of this run: the run starts at step 0;
      - checkpoints of this run exist but none verifies: the run stops with
        86 rather than start over and lose them in silence (--fresh is the
        explicit start over);
      - the helper failed: 200 (infrastructure).
    The line says which, when it was sealed, in words, and which newer
    checkpoints were skipped and why (another run's, a key you do not
    trust, corrupt). */
#ifndef KG_EXEC_START_H
#define KG_EXEC_START_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef enum {
  KG_EXEC_START_RESUME = 0,     /* a checkpoint of this run was restored     */
  KG_EXEC_START_FRESH,          /* no checkpoint of this run: from step 0    */
  KG_EXEC_START_UNVERIFIED,     /* this run's checkpoints exist, none verifies */
  KG_EXEC_START_FAILED          /* the helper failed or said nothing usable  */
} kg_exec_start_t;

/*  Judge resume-prepare's answer (resume, borrowed; NULL: no answer) for
    run `run` in directory dir, at now_ms (wall clock, for "sealed 2 min
    ago"). Writes the one line to say (without a "exec: " prefix) into
    line (len bytes, truncated) and returns the verdict. For RESUME,
    *step is the restored step (else -1). */
kg_exec_start_t kg_exec_start_judge(const cJSON *resume, const char *run, const char *dir,
                                    int64_t now_ms, int64_t *step, char *line, size_t len);

/*  A duration in words: "12 s", "5 min", "3 h", "2 days" (negative: "0 s").
    Writes into buf (len bytes); returns buf. */
char *kg_exec_start_ago(int64_t ms, char *buf, size_t len);

/*  The step in a checkpoint's file name ("step-<N>-...", any directory in
    front), or -1 when the name is not one. */
int64_t kg_exec_start_name_step(const char *path);

#endif
