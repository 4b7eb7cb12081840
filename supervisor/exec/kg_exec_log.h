/*  kg_exec_log: the kept output of one `kguard exec` name,
    STATE/logs/exec-NAME.log.

    The file is private (0600, tightened when an older kguard left it
    looser) and opened without following a symbolic link: a link, a file of
    another user, a file with several hard links or anything but a regular
    file at that path is refused with a message naming it, before the
    command runs. Runs of the same name append; each run starts with a
    separator line holding its time and command, each restart with one
    naming the generation, and each ends with one holding kguard's exit
    code and what it stands for (the command's own code where kguard
    reported another). Separator lines start with "=====" or "-----" and
    "kguard exec NAME:", so a reader can split the file by run.

    Ownership: the log owns its file descriptor. Writes are best effort: a
    full disk never stops the supervision (the first failure is logged).
*/
#ifndef KG_EXEC_LOG_H
#define KG_EXEC_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef struct kg_exec_log_t kg_exec_log_t;

/*  Open (create 0600, append) the log at path for run name (borrowed; must
    outlive the log). Returns 0 with *self_p set, or KG_EUSAGE with a
    message naming the path and what is wrong with it in err (a link, not
    a regular file, another user's, linked elsewhere), or -errno. */
int kg_exec_log_open(const char *path, const char *name, kg_exec_log_t **self_p, char *err,
                     size_t errlen);

/*  Close the file; *self_p becomes NULL. Safe on NULL. */
void kg_exec_log_destroy(kg_exec_log_t **self_p);

/*  The run's separator: its wall-clock time (ms since the epoch) and its
    command (argv, NULL-terminated). */
void kg_exec_log_run_started(kg_exec_log_t *self, int64_t wall_ms, char *const *argv);

/*  A restart's separator: generation, its time, and the step it resumes
    (-1: from the start). */
void kg_exec_log_generation(kg_exec_log_t *self, int generation, int64_t wall_ms,
                            int64_t resume_step);

/*  The group's output, as it came. */
void kg_exec_log_output(kg_exec_log_t *self, const char *buf, size_t len);

/*  The run's last line: kguard's exit code and summary (the same words as
    its last notice). */
void kg_exec_log_run_ended(kg_exec_log_t *self, int64_t wall_ms, int exit_code,
                           const char *summary);

#endif
