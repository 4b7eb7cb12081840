/*  kg_run_story: the lines `kguard run` writes on the terminal (through
    kg_progress) when a cell raises, the kernel restarts, kguard gives up,
    and the run ends. kg_runner decides; these only tell, from explicit
    arguments. Everything passed is borrowed.
*/
#ifndef KG_RUN_STORY_H
#define KG_RUN_STORY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "kg_progress.h"
#include "kg_run_record.h"

/*  A restart after code cell code[pos] (0-based notebook index): the
    family (from the last "sticky-restart"/"kernel-died" event in events)
    and the reply's ename; the cells held back (code[pos+1..ncode-1]); the
    restored step through kg_run_record_complete when the event already
    says it, else that kguard restores; the incident record's path; and
    "restart RESTARTS (of at most MAX_RESTARTS)". */
void kg_run_story_restart(kg_progress_t *pr, kg_run_record_t *record, const cJSON *events,
                          const cJSON *reply, const size_t *code, size_t ncode, size_t pos,
                          int restarts, int max_restarts);

/*  kguard stopped restarting (down) at cell index: the reply's ename and the
    first line of its evalue, and why it gave up. */
void kg_run_story_down(kg_progress_t *pr, size_t index, const cJSON *reply);

/*  Cell index raised: "cell N raised ENAME: EVALUE" from the reply. */
void kg_run_story_error(kg_progress_t *pr, size_t index, const cJSON *reply);

/*  The last lines: finished / finished WITHOUT the checkpoint (code
    KG_RUN_EXIT_NOT_RESTORED) / stopped, with the counts and the restored
    step, then each incident record's path and the kernel log (log_path,
    NULL: none). */
void kg_run_story_summary(kg_progress_t *pr, const kg_run_record_t *record, int code,
                          size_t cells_done, size_t ncode, int executions, int restarts,
                          const char *log_path);

/*  The last 8 KiB of the kernel's log at log_path (from a line start), as
    a quoted block; nothing when it is NULL or cannot be read. */
void kg_run_story_log_tail(kg_progress_t *pr, const char *log_path);

#endif
