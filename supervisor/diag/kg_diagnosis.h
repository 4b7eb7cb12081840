/*  kg_diagnosis: what went wrong in one kernel process, from all evidence.

    The supervisor feeds everything the inner kernel says, as it arrives: iopub
    `error` and error `execute_reply` contents, iopub `stream` text, the raw
    stdout/stderr pipes, and finally the process's death. Text is reassembled
    into lines (kg_linebuf) per stream, each line is classified, and the state
    keeps the first failure and its context:

    - fault time T: the earliest GPU-related sign from ANY source. GPU errors
      surface asynchronously, so a raw `Assertion ... failed.` line that
      arrived before the traceback makes T earlier; a cuBLAS error or an OOM
      seen for the same request before the sticky sign counts too.
    - the first error in full (ename, evalue, traceback without ANSI codes),
      the messages that followed (bounded), the raw assertion line, the raw
      stderr tail, family + rule, backend, the failing parent msg_id.
    - a failure signature for kg_policy: family + assertion normalised (block
      and thread coordinates, addresses stripped) + hash of the cell code.

    A cuBLAS/cuDNN status error is not sticky by itself; it joins the sticky
    family when one was already established in this process, or when an
    `Assertion`, 700 or 719 line was already seen.

    Proof and suspicion: a sticky family establishes the fault
    only from PROOF: the cell's uncaught error (iopub `error`, error
    `execute_reply`) or the process's death (a rule for the exit, or any
    death by a signal while a suspicion stands: SIGABRT after a device
    assertion). The same text anywhere else (iopub `stream`, raw
    stdout/stderr: a print, a log viewer, a subprocess) is a SUSPICION:
    KG_DIAG_SUSPECT once; the supervisor then probes the device and calls
    kg_diagnosis_confirm or kg_diagnosis_clear_suspicion. T stays the time
    of the first evidence, suspicion included. Non-sticky families give
    ADVICE only as the cell's uncaught error, never for a printed mention.

    Each feed returns what changed: KG_DIAG_STICKY exactly once per process
    (the first time a sticky family is established: close the gate, restart);
    KG_DIAG_ADVICE the first time a non-sticky family is seen for a request;
    else KG_DIAG_NONE. After STICKY everything is recorded as following
    messages. Pure logic: no I/O, no clock (times are passed in).

    Last completed step: a line `kguard: completed step N` on any stream
    (printed by the Python helper), or kg_diagnosis_set_last_step.
*/
#ifndef KG_DIAGNOSIS_H
#define KG_DIAGNOSIS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "kg_classifier.h"
#include "kg_trail.h"

typedef enum {
  KG_DIAG_NONE = 0, /* nothing new                                             */
  KG_DIAG_ADVICE,   /* a non-sticky family, first seen for this request         */
  KG_DIAG_SUSPECT,  /* a sticky family in text that proves nothing by itself
                       (printed, raw pipes): check the device (once per
                       suspicion, until confirmed or cleared)                   */
  KG_DIAG_STICKY    /* a sticky family is now established (once per process)   */
} kg_diag_event_t;

/*  Bounds on what is kept. */
#define KG_DIAG_MAX_FOLLOWING KG_TRAIL_MAX_FOLLOWING /* kept after the first error */
#define KG_DIAG_STDERR_TAIL   KG_TRAIL_STDERR_TAIL   /* raw stderr lines kept      */
#define KG_DIAG_MAX_LINE      8192  /* longest line before it is cut           */
#define KG_DIAG_SIGNATURE_MAX 80    /* buffer size for kg_diagnosis_signature  */

typedef struct kg_diagnosis_t kg_diagnosis_t;

/*  New state for one kernel process. rules is borrowed and must outlive it.
    NULL on allocation failure. */
kg_diagnosis_t *kg_diagnosis_new(const kg_classifier_t *rules);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_diagnosis_destroy(kg_diagnosis_t **self_p);

/*  Forget everything (a fresh kernel process). The classifier is kept. */
void kg_diagnosis_reset(kg_diagnosis_t *self);

/*  Feed a chunk of text. source is KG_SRC_STREAM (stream_name "stdout" or
    "stderr"; parent_msg_id the stream message's parent), KG_SRC_RAW_STDOUT or
    KG_SRC_RAW_STDERR (stream_name and parent NULL). Chunks may split lines;
    complete lines are classified. text need not be NUL-terminated. */
kg_diag_event_t kg_diagnosis_feed(kg_diagnosis_t *self, kg_source_t source,
                                  const char *stream_name, const char *parent_msg_id,
                                  const char *text, size_t len, int64_t now_ms);

/*  Whole lines of a stream message's text that kg_diagnosis_feed would
    skip unread, judged on their raw JSON text (raw, len bytes: each line
    ends with a newline escape, every escape a short one; see
    kg_jsonscan_skip_fn): true when none holds the step marker and the rules
    say none can match (kg_classifier_may_match_json). Feeding the text
    around them then leaves the diagnosis as feeding all of it would: the
    decoding of most output is spared. */
bool kg_diagnosis_may_skip_json(const kg_diagnosis_t *self, const char *raw, size_t len);

/*  Feed the content of an iopub `error` (source KG_SRC_IOPUB_ERROR) or of an
    `execute_reply` (KG_SRC_EXECUTE_REPLY; ignored unless status is "error").
    content is borrowed. ename, evalue and traceback are read; the traceback's
    ANSI colour codes are stripped. An execute_reply repeating the iopub error
    already recorded is not counted twice. */
kg_diag_event_t kg_diagnosis_feed_error(kg_diagnosis_t *self, kg_source_t source,
                                        const cJSON *content, const char *parent_msg_id,
                                        int64_t now_ms);

/*  The process ended: exit_code >= 0 for a normal exit, else -1 and signo the
    terminating signal. Pending partial lines are flushed and classified first.
    SIGABRT after an HSA_STATUS_ERROR_EXCEPTION / "aborting" / Memory access
    fault line establishes that line's sticky family (STICKY if not yet). */
kg_diag_event_t kg_diagnosis_feed_exit(kg_diagnosis_t *self, int exit_code, int signo,
                                       int64_t now_ms);

/*  True for the sources that prove a fault (uncaught error, death); false
    for the ones that only raise a suspicion. Pure. */
bool kg_diagnosis_source_is_proof(kg_source_t source);

/*  True while a suspicion stands (neither confirmed nor cleared). */
bool kg_diagnosis_suspect(const kg_diagnosis_t *self);

/*  The suspicion's match and parent msg_id (NULL if none; borrowed). */
const kg_match_t *kg_diagnosis_suspicion(const kg_diagnosis_t *self);
const char *kg_diagnosis_suspect_parent(const kg_diagnosis_t *self);

/*  The device probe confirmed the suspicion (probe: the probe's error as
    matched, or NULL for a probe that never answered) at now_ms: the sticky
    family of the suspicion is established with T = the first evidence.
    Returns KG_DIAG_STICKY, or KG_DIAG_NONE without a suspicion or when a
    fault is already established. */
kg_diag_event_t kg_diagnosis_confirm(kg_diagnosis_t *self, const kg_match_t *probe,
                                     int64_t now_ms);

/*  The device probe passed: the suspicion is forgotten (T with it). */
void kg_diagnosis_clear_suspicion(kg_diagnosis_t *self);

/*  The backend learnt elsewhere (probe.py); used when the text does not say. */
void kg_diagnosis_set_backend(kg_diagnosis_t *self, kg_backend_t backend);

/*  The last completed training step, when the supervisor knows it. */
void kg_diagnosis_set_last_step(kg_diagnosis_t *self, int64_t step);

/*  True once a sticky family is established. */
bool kg_diagnosis_sticky(const kg_diagnosis_t *self);

/*  The established family's match: the sticky one if any, else the latest
    non-sticky one; NULL if none. Borrowed. After ADVICE this is the advice. */
const kg_match_t *kg_diagnosis_match(const kg_diagnosis_t *self);

/*  Fault time T in ms (same clock as the feeds); -1 if no GPU sign yet. */
int64_t kg_diagnosis_fault_time(const kg_diagnosis_t *self);

/*  The parent msg_id of the failing request, or NULL if no evidence carried
    one (raw-only evidence: the supervisor knows what was executing). */
const char *kg_diagnosis_parent(const kg_diagnosis_t *self);

/*  The backend: from the matched text, else set_backend, else UNKNOWN. */
kg_backend_t kg_diagnosis_backend(const kg_diagnosis_t *self);

/*  The raw kernel-side assertion line, or NULL. */
const char *kg_diagnosis_assertion(const kg_diagnosis_t *self);

/*  The last completed step, or -1. */
int64_t kg_diagnosis_last_step(const kg_diagnosis_t *self);

/*  Failure signature: "<family>:<16 hex of the normalised assertion, or of the
    matched line>:<16 hex of cell_code>" into buf (KG_DIAG_SIGNATURE_MAX).
    cell_code is the code of the failing request (NULL = ""). Returns 0, or
    KG_ENOTFOUND (buf "") when no family is established. */
int kg_diagnosis_signature(const kg_diagnosis_t *self, const char *cell_code, char *buf,
                           size_t size);

/*  Everything known, as a new cJSON object owned by the caller (NULL on
    allocation failure):
    { "family": id|null, "title", "sticky", "rule", "note", "backend",
      "error_code", "fault_time_ms" (or null), "parent_msg_id",
      "matched": {"source", "line"}, "assertion_line",
      "first_error": {"source", "ename", "evalue", "traceback": [..],
                      "time_ms", "parent_msg_id"} | null,
      "following": [ {"source", "time_ms", "text"} | {.. "ename","evalue"} ],
      "following_dropped": n, "raw_stderr_tail": [lines],
      "exit": {"code", "signal"} | null, "last_step": n | null } */
cJSON *kg_diagnosis_to_json(const kg_diagnosis_t *self);

#endif
