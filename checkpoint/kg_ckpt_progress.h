/*  kg_ckpt_progress: what the `kguard ckpt` commands show on stderr while
    they read or write a checkpoint.

    `--progress[=WHEN]` (every command that reads or writes archives):
      auto (the default)  on a terminal, one line updated in place once the
                          operation has run a second, erased at its end (or
                          once the archive was read to its end):
                            "verifying c.kgckpt.tar: 412.0 MiB of 1.0 GiB,
                             230.1 MiB/s, about 3 s left"
                          anywhere else (a pipe, a file, a log) nothing;
      (bare --progress)   the same line on a terminal, the machine lines
                          anywhere else (what --progress always wrote);
      machine             "kguard-progress DONE TOTAL" lines for programs:
                          at the start of each archive (DONE 0), at least
                          once a second while it is read, at its end; the
                          kernel supervisor reads them to push back its
                          stall deadline (FORMAT.md, "Progress");
      none                nothing.

        kg_ckpt_progress_t p;
        kg_ckpt_progress_init(&p, when, STDERR_FILENO);
        kg_ckpt_progress_begin(&p, "verifying %s", file);
        sink.progress = kg_ckpt_progress_update; sink.arg = &p;   (or call it)
        kg_ckpt_progress_end(&p);      before printing the result

    Plain struct owned by the caller; one thread.
*/
#ifndef KG_CKPT_PROGRESS_H
#define KG_CKPT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
  KG_CKPT_PROGRESS_AUTO = 0,
  KG_CKPT_PROGRESS_ON,
  KG_CKPT_PROGRESS_MACHINE,
  KG_CKPT_PROGRESS_NONE,
} kg_ckpt_progress_when_t;

/*  Test hook (FORMAT.md): KGUARD_TEST_PROGRESS_AFTER_MS=<ms> shows the
    terminal line after that long instead of a second, so that tests can
    see the line of an operation that ends sooner. */
#define KG_CKPT_TEST_PROGRESS_AFTER_ENV "KGUARD_TEST_PROGRESS_AFTER_MS"

typedef struct {
  int fd;                 /* where it goes (stderr)                        */
  int64_t after_ns;       /* an operation shows a line once it ran this long */
  int how;                /* resolved: 0 nothing, 1 terminal line, 2 machine */
  char what[256];         /* "verifying FILE": the line's label              */
  int64_t start_ns;       /* begin()                                        */
  int64_t last_ns;        /* last line or machine line written              */
  uint64_t last_done;
  uint64_t seen_done, seen_total;  /* the latest update, written or not     */
  bool seen;
  bool shown;             /* a terminal line is on the screen               */
} kg_ckpt_progress_t;

/*  The help text's line for the option, shared by every command. */
#define KG_CKPT_PROGRESS_HELP                                                   \
  "--progress[=WHEN]: on a terminal (WHEN auto, the default) one line with\n"  \
  "bytes done, rate and time left while it runs over a second; machine:\n"    \
  "'kguard-progress DONE TOTAL' lines for programs (bare --progress: these\n"  \
  "when stderr is not a terminal); none: nothing.\n"

/*  The value of --progress (NULL: the bare option, KG_CKPT_PROGRESS_ON)
    into *when: 0, or KG_EUSAGE for an unknown WHEN. */
int kg_ckpt_progress_value(const char *value, kg_ckpt_progress_when_t *when);


/*  Resolve when against fd (a terminal or not). */
void kg_ckpt_progress_init(kg_ckpt_progress_t *p, kg_ckpt_progress_when_t when, int fd);

/*  True when machine lines are written. */
bool kg_ckpt_progress_machine(const kg_ckpt_progress_t *p);

/*  A new operation named by fmt (printf): clocks restart. */
void kg_ckpt_progress_begin(kg_ckpt_progress_t *p, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

/*  done of total bytes (total 0: unknown). arg is the kg_ckpt_progress_t
    (a kg_ckpt_sink_t progress callback). Cheap to call often: lines are
    written at most a few times a second (machine: once a second, and at
    the start and end). */
void kg_ckpt_progress_update(void *arg, uint64_t done, uint64_t total);

/*  The operation ended: a terminal line is erased (the command prints
    its result next); machine lines end with the latest figures. */
void kg_ckpt_progress_end(kg_ckpt_progress_t *p);

#endif
