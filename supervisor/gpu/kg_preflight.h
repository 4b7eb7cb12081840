/*  kg_preflight: the pre-flight device probe that runs beside a fresh
    kernel's start (after a sticky restart, and at the first start when the
    kernelspec asks), so that a failing device stops kguard instead of
    making it restart a kernel that will fail again.

    The probe is `kguard doctor --preflight --json --timeout S` (its
    contract: docs/doctor-and-incidents.md), run as a bounded helper child
    (kg_helper) with the kernel's environment, so it sees the devices the
    kernel will see. This class owns that child, and turns its exit status
    and JSON into a verdict:

      OK           exit 0: every visible device allocated, launched,
                   synchronised and copied back, or no GPU is visible
      FAILING      exit 1: a device is failing (sticky / ECC / NVLink error
                   on a trivial kernel, a wrong result, a crash in the driver)
      TIMEOUT      exit 2 (the probe's own deadline), or killed by kguard's
                   backstop: the driver or the device does not answer
      UNAVAILABLE  the probe itself could not run or answered outside its
                   contract (usage 100, system 111, a signal, no JSON): not
                   a verdict on the device; the kernel is declared ready as
                   without a probe, and the reason is logged and recorded

    The supervisor's side (supervisor/kernel/kg_sup_gpu.c): start it
    with the kernel (kg_preflight_wanted), poll its fds, pump it, and declare
    the kernel ready only when both the kernel is ready and
    kg_preflight_blocks_ready is false; FAILING or TIMEOUT: kernel DOWN with
    kg_preflight_down_reason, incident field "preflight"
    (kg_preflight_record).

    Configuration comes from the kernelspec's environment (written by
    `kguard install --preflight MODE [--preflight-timeout SEC]`):
      KGUARD_PREFLIGHT          never | sticky (default) | first
      KGUARD_PREFLIGHT_TIMEOUT  the probe's --timeout in seconds (default 10)

    Ownership: the object owns its helper child, its report and its texts;
    getters return borrowed pointers valid until the next start or destroy.
*/
#ifndef KG_PREFLIGHT_H
#define KG_PREFLIGHT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KG_PREFLIGHT_TIMEOUT_S_DEFAULT 10.0
/*  kguard's backstop beyond the probe's own --timeout: the probe bounds
    itself, this only catches a probe that cannot. */
#define KG_PREFLIGHT_BACKSTOP_MS 5000
/*  A device this full after the restart is worth a line in the notice. */
#define KG_PREFLIGHT_FULL_PERCENT 90

typedef enum {
  KG_PREFLIGHT_NEVER = 0,       /*  no probe at all                          */
  KG_PREFLIGHT_STICKY,          /*  after a sticky restart (the default)     */
  KG_PREFLIGHT_FIRST            /*  also before the first ready              */
} kg_preflight_mode_t;

typedef enum {
  KG_PREFLIGHT_NONE = 0,        /*  not started, or still running            */
  KG_PREFLIGHT_OK,
  KG_PREFLIGHT_FAILING,
  KG_PREFLIGHT_TIMEOUT,
  KG_PREFLIGHT_UNAVAILABLE
} kg_preflight_verdict_t;

typedef struct {
  kg_preflight_mode_t mode;
  double timeout_s;             /*  the probe's --timeout, (0, 3600]          */
  int64_t backstop_ms;          /*  kguard's kill beyond it; 0: the default
                                    KG_PREFLIGHT_BACKSTOP_MS                 */
} kg_preflight_config_t;

typedef struct kg_preflight_t kg_preflight_t;

/* ---- pure parts ---------------------------------------------------------- */

/*  "never", "sticky", "first" -> *mode. 0, or KG_EUSAGE (mode untouched). */
int kg_preflight_mode_parse(const char *text, kg_preflight_mode_t *mode);

/*  "never", "sticky", "first". Static storage. */
const char *kg_preflight_mode_name(kg_preflight_mode_t mode);

/*  "ok", "failing", "timeout", "unavailable", "none". Static storage. */
const char *kg_preflight_verdict_name(kg_preflight_verdict_t verdict);

/*  The configuration from the two variables' values (NULL or "" = the
    default). 0, or KG_EUSAGE with a message naming the variable and the
    value in err (errlen bytes); *cfg then holds the defaults. */
int kg_preflight_config_parse(const char *mode, const char *timeout_s,
                              kg_preflight_config_t *cfg, char *err, size_t errlen);

/*  Whether a kernel start gets a probe: first_start is the supervisor's
    first kernel of this run; after_sticky a restart that follows a sticky
    GPU error (not a user restart, not a kernel that died on its own). */
bool kg_preflight_wanted(kg_preflight_mode_t mode, bool first_start, bool after_sticky);

/*  Judge one finished probe: its wait status, whether kguard's backstop
    killed it, its stdout (NULL = none), its --timeout. *report_p becomes a
    new object for the incident (the probe's JSON, or one kguard wrote
    saying what happened), always with "status", "summary" and "verdict"
    (kg_preflight_verdict_name) and "exit" (the exit code, or null when it
    was killed: then "signal"). */
kg_preflight_verdict_t kg_preflight_judge(int wait_status, bool backstop_killed,
                                          const char *out, double timeout_s,
                                          cJSON **report_p);

/*  The DOWN reason for a FAILING or TIMEOUT verdict, for the notice's
    "Automatic restarts stopped because ...": says that the device is
    failing (or does not answer), names `nvidia-smi -q` / Xid and `rocm-smi`,
    quotes the probe's summary. New string (caller frees), NULL on
    allocation failure or for another verdict. */
char *kg_preflight_down_reason(kg_preflight_verdict_t verdict, const cJSON *report);

/*  For an OK verdict: a line for the restart notice when a device's memory
    is still held after the restart (used >= KG_PREFLIGHT_FULL_PERCENT of
    total, or dead_pid in its "processes"), e.g. "cuda:0 (NAME): 15.2 GiB of
    16.0 GiB still in use, held by pid 4242 (the previous kernel)". Into
    buf (always terminated); false and "" when nothing is worth saying.
    dead_pid <= 0: unknown. */
bool kg_preflight_memory_note(const cJSON *report, long dead_pid, char *buf, size_t len);

/* ---- the helper child ---------------------------------------------------- */

/*  A probe with cfg (copied). NULL on allocation failure. */
kg_preflight_t *kg_preflight_new(const kg_preflight_config_t *cfg);

/*  Kill and reap the probe if it runs, free everything, *self_p = NULL. */
void kg_preflight_destroy(kg_preflight_t **self_p);

/*  Whether this kernel start gets a probe: kg_preflight_wanted on the
    configured mode, or, whatever the mode but never, the last verdict was
    FAILING or TIMEOUT (a `%kguard restart` after a failing device checks it
    again before the kernel is declared ready). */
bool kg_preflight_should_start(const kg_preflight_t *self, bool first_start, bool after_sticky);

/*  The configuration in force (borrowed). */
const kg_preflight_config_t *kg_preflight_config(const kg_preflight_t *self);

/*  The argv the probe runs: {exe, "doctor", "--preflight", "--json",
    "--timeout", "<S>", NULL}. New array of new strings; free it with
    kg_preflight_argv_free. NULL on allocation failure. */
char **kg_preflight_argv(const char *exe, double timeout_s);
void kg_preflight_argv_free(char ***argv_p);

/*  Start the probe (exe: kguard's own executable; envp: the kernel's
    environment, NULL = inherit) at now_ms, forgetting any earlier one.
    0, or a negative code (kg_error.h): then the verdict is UNAVAILABLE at
    once (the kernel is not held up by a probe that never ran). */
int kg_preflight_start(kg_preflight_t *self, const char *exe, char *const *envp, int64_t now_ms);

/*  Kill and forget a running probe (the kernel start it belonged to was
    abandoned): the verdict goes back to NONE. */
void kg_preflight_cancel(kg_preflight_t *self);

/*  True while the probe runs. */
bool kg_preflight_running(const kg_preflight_t *self);

/*  True from a start until its verdict: the kernel must not be declared
    ready yet. */
bool kg_preflight_blocks_ready(const kg_preflight_t *self);

/*  The child's stdout (which 1) and stderr (2) fds to poll, -1 if none. */
int kg_preflight_fd(const kg_preflight_t *self, int which);

/*  Read what the probe wrote at now_ms, reap it. True once, when the
    verdict becomes known (kg_preflight_verdict). */
bool kg_preflight_pump(kg_preflight_t *self, int64_t now_ms);

/*  The backstop deadline (monotonic ms): timeout + backstop_ms after the
    start (pushed back while the probe writes to stderr); 0 when nothing
    runs. */
int64_t kg_preflight_deadline(const kg_preflight_t *self);

/*  At now_ms past the deadline: SIGKILL to the probe's group (the pump then
    reports a TIMEOUT verdict). True if it killed. */
bool kg_preflight_timers(kg_preflight_t *self, int64_t now_ms);

/*  The verdict of the last run (NONE while it runs or before any). */
kg_preflight_verdict_t kg_preflight_verdict(const kg_preflight_t *self);

/*  The last run's report (kg_preflight_judge), NULL before a verdict. */
const cJSON *kg_preflight_report(const kg_preflight_t *self);

/*  How long the last run took (start to verdict), -1 before a verdict. */
int64_t kg_preflight_ms(const kg_preflight_t *self);

/*  Put a copy of the report into record (an incident's JSON) under
    "preflight", replacing an earlier one. 0, KG_ENOTFOUND without a
    verdict, KG_ENOMEM. */
int kg_preflight_record(const kg_preflight_t *self, cJSON *record);

#endif
