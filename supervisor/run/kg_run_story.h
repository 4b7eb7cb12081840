/*  kg_run_story: the lines `kguard run` writes on the terminal (through
    kg_progress) when a cell raises, the kernel restarts, kguard gives up,
    and the run ends. kg_runner decides; these only tell, from explicit
    arguments. Everything passed is borrowed.
*/
#ifndef KG_RUN_STORY_H
#define KG_RUN_STORY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "kg_kernelspec.h"
#include "kg_progress.h"
#include "kg_run_record.h"

/*  A restart after cell number (1-based among the ncode code cells run):
    the family (from the last "sticky-restart"/"kernel-died" event in events)
    and the reply's ename; the cells held back (number+1..ncode); the
    restored step through kg_run_record_complete when the event already
    says it, else that kguard restores; the incident record's path; and
    "restart RESTARTS (of at most MAX_RESTARTS)". */
void kg_run_story_restart(kg_progress_t *pr, kg_run_record_t *record, const cJSON *events,
                          const cJSON *reply, size_t number, size_t ncode, int restarts,
                          int max_restarts);

/*  kguard stopped restarting (down) at cell number: kguard's reason (the
    "down" event's in events, else the reply's ename and evalue), without
    advice meant for notebooks, then what to do in an unattended run. The
    runner does not show the down notice itself: this is said once. */
void kg_run_story_down(kg_progress_t *pr, size_t number, const cJSON *events,
                       const cJSON *reply);

/*  Cell number raised: "cell N raised ENAME: EVALUE" from the reply. */
void kg_run_story_error(kg_progress_t *pr, size_t number, const cJSON *reply);

/*  The last lines: finished / finished WITHOUT the checkpoint (code
    KG_RUN_EXIT_NOT_RESTORED) / stopped, with the counts and the restored
    step, then each incident record's path and the kernel log (log_path,
    NULL: none). */
void kg_run_story_summary(kg_progress_t *pr, const kg_run_record_t *record, int code,
                          size_t cells_done, size_t ncode, int executions, int restarts,
                          const char *log_path);

/*  The kernel never answered and kguard gave up starting it: kguard's reason
    (without its advice for notebooks), the kernel's own last lines from the
    log at log_path (kguard's own log lines left out), and where its
    kernelspec is. spec is the kernelspec run asked for. */
void kg_run_story_start_failed(kg_progress_t *pr, const kg_kernelspec_t *spec,
                               const char *reason, const char *log_path);

/*  text without the sentences that advise `%kguard restart` (an in-notebook
    command that means nothing to `kguard run`), into buf. Returns buf. */
char *kg_run_story_strip_inband(const char *text, char *buf, size_t size);

/*  The last 8 KiB of the kernel's log at log_path (from a line start), as
    a quoted block; nothing when it is NULL or cannot be read. */
void kg_run_story_log_tail(kg_progress_t *pr, const char *log_path);

#endif
