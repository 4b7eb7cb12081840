/*  kg_log: one line per event, to stderr (which Jupyter shows in its server
    log) and optionally to a log file.

    Format: "2026-12-02T17:03:04.123Z kguard[pid] W: message". Levels are
    E(rror) W(arning) N(otice) I(nfo) D(ebug). A message below the threshold is
    skipped before it is formatted. Never call from a signal handler.
*/
#ifndef KG_LOG_H
#define KG_LOG_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
  KG_LOG_ERROR = 0,
  KG_LOG_WARNING,
  KG_LOG_NOTICE,
  KG_LOG_INFO,
  KG_LOG_DEBUG
} kg_log_level_t;

/*  Set the threshold; messages above it (less important) are dropped.
    Default KG_LOG_NOTICE, or the KGUARD_LOG_LEVEL environment variable
    (error|warning|notice|info|debug) read by kg_log_init. */
void kg_log_set_level(kg_log_level_t level);
kg_log_level_t kg_log_get_level(void);

/*  Read KGUARD_LOG_LEVEL and set the identity printed after the time
    ("kguard" if ident is NULL). ident is borrowed and must outlive logging. */
void kg_log_init(const char *ident);

/*  Plain lines on stderr for one-shot commands (install, doctor, ckpt ...):
    "kguard CMD: message", "kguard CMD: warning: message", the prefix being
    kg_opt_prog() (kg_opt.h), so that a library's message reads like the
    command's own. The log file, if any, keeps the timestamped format. */
void kg_log_set_plain(int plain);

/*  Also append every line to file (borrowed; NULL stops). Lines are flushed. */
void kg_log_set_file(FILE *file);

/*  Where stderr's lines go instead: sink(arg, line, len) gets each whole
    line, newline included (a process whose stderr may stop being read
    passes a queue that never blocks, kg_fdq). NULL: stderr again. The file
    of kg_log_set_file is written as before. */
typedef void (kg_log_sink_fn)(void *arg, const char *line, size_t len);
void kg_log_set_sink(kg_log_sink_fn *sink, void *arg);

/*  Log one line at level. The format is printf-style; a trailing newline is
    added. */
void kg_log(kg_log_level_t level, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

#define kg_error(...)   kg_log(KG_LOG_ERROR, __VA_ARGS__)
#define kg_warning(...) kg_log(KG_LOG_WARNING, __VA_ARGS__)
#define kg_notice(...)  kg_log(KG_LOG_NOTICE, __VA_ARGS__)
#define kg_info(...)    kg_log(KG_LOG_INFO, __VA_ARGS__)
#define kg_debug(...)   kg_log(KG_LOG_DEBUG, __VA_ARGS__)

#endif
