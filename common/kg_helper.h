/*  kg_helper: one bounded helper child (the version probe, the checkpoint
    restore): its stdout collected up to a cap, its stderr read line by line
    (progress lines parsed, the others logged), a STALL deadline (the child
    is killed when it has written nothing on either pipe for stall_ms, never
    for running long while it makes progress), and the kill.

    Progress protocol (stderr, one line each, any number):
        kguard-progress <bytes_done> <bytes_total>\n
    The latest one is kept (kg_helper_progress).

    Ownership: the helper owns its child (kg_child) and buffers.
*/
#ifndef KG_HELPER_H
#define KG_HELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KG_HELPER_STALL_MS_DEFAULT 30000

typedef struct kg_helper_t kg_helper_t;

/*  A helper named name (for the logs; copied), keeping at most out_cap bytes
    of stdout, killed after stall_ms without output. NULL on allocation
    failure. */
kg_helper_t *kg_helper_new(const char *name, size_t out_cap, int64_t stall_ms);

/*  Kill and reap the child if any, free everything, set *self_p to NULL. */
void kg_helper_destroy(kg_helper_t **self_p);

/*  Start argv (envp NULL = inherit) at now_ms, forgetting any previous run.
    Returns 0 or a negative code (kg_error.h); nothing runs then. */
int kg_helper_start(kg_helper_t *self, char *const *argv, char *const *envp, int64_t now_ms);

/*  True while a child is running (started and not yet reaped). */
bool kg_helper_running(const kg_helper_t *self);

/*  The child's stdout and stderr fds to poll (-1 when closed or none). */
int kg_helper_fd(const kg_helper_t *self, int which);

/*  Read what the pipes hold at now_ms (bytes on either pipe push the stall
    deadline back), then reap. Returns true once, when the child has ended
    and everything it wrote has been read. */
bool kg_helper_pump(kg_helper_t *self, int64_t now_ms);

/*  The stall deadline (monotonic ms), 0 when nothing runs. */
int64_t kg_helper_deadline(const kg_helper_t *self);

/*  At now_ms past the deadline: SIGKILL to the child's group, remembered as
    stalled (the pump then reports its end). Returns true if it killed. */
bool kg_helper_timers(kg_helper_t *self, int64_t now_ms);

/*  After the end: stdout as a string ("" if none; borrowed), the wait
    status, and whether kguard killed it for stalling. */
const char *kg_helper_out(const kg_helper_t *self);
int kg_helper_status(const kg_helper_t *self);
bool kg_helper_stalled(const kg_helper_t *self);

/*  The latest progress: false if none was reported. *done and *total in
    bytes; *started_ms when the helper started, *at_ms when the line came.
    Any pointer may be NULL. */
bool kg_helper_progress(const kg_helper_t *self, int64_t *done, int64_t *total,
                        int64_t *started_ms, int64_t *at_ms);

/*  "1.5 GiB of 4.0 GiB, 120 MiB/s, about 21 s left" for the logs and
    `%kguard status`, into buf (always terminated). Returns false (buf "")
    without progress. */
bool kg_helper_progress_text(const kg_helper_t *self, int64_t now_ms, char *buf, size_t len);

/*  Parse one stderr line (without its newline) of the progress protocol:
    true and the two numbers if it is one (0 <= done, 0 <= total, and
    done <= total unless total is 0: unknown). Pure. */
bool kg_helper_parse_progress(const char *line, int64_t *done, int64_t *total);

#endif
