/*  kg_inband_doctor: `%kguard doctor` in a notebook, answered by kguard in a
    separate process, never in the kernel.

    The cell's answer is `kguard doctor --format=markdown --python PY`, run
    as a bounded helper child (kg_helper) with the kernel's environment (the
    kernelspec's env: CUDA_VISIBLE_DEVICES ... are the kernel's) and the
    kernel's interpreter, so the report judges what the kernel will use. The
    doctor bounds its own children (--timeout KG_INBAND_DOCTOR_TOOL_S); this
    class kills it after KG_INBAND_DOCTOR_MS as a backstop.

    What the cell shows (kg_inband_doctor_display / _reply):
      exit 0 or 1   the Markdown report as display_data (text/markdown and
                    the same text as text/plain), execute_reply ok (exit 1
                    means the report lists problems: it is still the answer)
      otherwise     (usage 100, system 111, a signal, the backstop) one line
                    naming what happened, as display_data, and an
                    execute_reply error KguardDoctorFailed

    The supervisor's side (supervisor/kernel/kg_sup_gpu.c): match on
    the in-band line; start; keep the request pending (the cell is busy)
    while it runs; poll its fds, pump, timers; at the end publish the
    display_data and the reply under the request's header, then idle.

    Ownership: the object owns its helper child and output, and the id of
    the cell it answers; the cJSON
    objects the builders return are new and the caller's.
*/
#ifndef KG_INBAND_DOCTOR_H
#define KG_INBAND_DOCTOR_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KG_INBAND_DOCTOR_MS 90000     /*  kguard's bound on the whole answer  */
#define KG_INBAND_DOCTOR_TOOL_S 60    /*  the doctor's own --timeout          */

typedef struct kg_inband_doctor_t kg_inband_doctor_t;

/* ---- pure parts ---------------------------------------------------------- */

/*  True if line (a `%kguard` cell's first line) is `%kguard doctor`, with
    blanks around the words and nothing else. */
bool kg_inband_doctor_match(const char *line);

/*  The argv: {exe, "doctor", "--format=markdown", "--timeout", "60",
    "--python", python, NULL}, without the last two when python is NULL or
    "". New array of new strings (free with kg_inband_doctor_argv_free);
    NULL on allocation failure. */
char **kg_inband_doctor_argv(const char *exe, const char *python);
void kg_inband_doctor_argv_free(char ***argv_p);

/*  The display_data content for a finished doctor: wait status, whether the
    backstop killed it, its stdout (NULL = none), the bound in ms. *ok_p
    (may be NULL) says whether the cell succeeded. New object
    {"data": {"text/markdown", "text/plain"}, "metadata": {"kguard":
    {"event": "doctor", "exit": n|null, "ok": bool}}, "transient": {}}, or
    NULL on allocation failure. */
cJSON *kg_inband_doctor_render(int wait_status, bool backstop_killed, const char *out,
                               int64_t bound_ms, bool *ok_p);

/*  The execute_reply content: {"status": "ok", "execution_count",
    "user_expressions": {}, "payload": []} when ok, else {"status":
    "error", "execution_count", "ename": "KguardDoctorFailed", "evalue":
    why, "traceback": [why]}. New object or NULL. */
cJSON *kg_inband_doctor_reply_content(bool ok, const char *why, int execution_count);

/* ---- the helper child ---------------------------------------------------- */

/*  A runner killing the doctor after bound_ms without output (0: the
    default KG_INBAND_DOCTOR_MS; the doctor writes its report at its end,
    so this bounds the whole answer). NULL on allocation failure. */
kg_inband_doctor_t *kg_inband_doctor_new(int64_t bound_ms);
void kg_inband_doctor_destroy(kg_inband_doctor_t **self_p);

/*  Start the doctor (exe: kguard's own executable; python: the kernel's
    interpreter or NULL; envp: the kernel's environment, NULL = inherit) at
    now_ms, forgetting any earlier run. 0, or a negative code: then the
    result is known at once (kg_inband_doctor_done: a failure naming it). */
int kg_inband_doctor_start(kg_inband_doctor_t *self, const char *exe, const char *python,
                           char *const *envp, int64_t now_ms);

/*  The cell the doctor answers: msg_id (copied, any length; NULL: none),
    kept across kg_inband_doctor_start until taken. 0, or KG_ENOMEM (then
    the earlier id is kept). */
int kg_inband_doctor_set_request(kg_inband_doctor_t *self, const char *msg_id);

/*  The cell's msg_id, handed over (a new string the caller frees; NULL if
    none): the doctor answers it no more. */
char *kg_inband_doctor_take_request(kg_inband_doctor_t *self);

/*  True while the doctor runs. */
bool kg_inband_doctor_running(const kg_inband_doctor_t *self);

/*  True after a start once the answer is known (until the next start). */
bool kg_inband_doctor_done(const kg_inband_doctor_t *self);

/*  The child's stdout (1) and stderr (2) fds to poll, -1 if none. */
int kg_inband_doctor_fd(const kg_inband_doctor_t *self, int which);

/*  Read, reap at now_ms. True once, when the answer becomes known. */
bool kg_inband_doctor_pump(kg_inband_doctor_t *self, int64_t now_ms);

/*  The backstop deadline (monotonic ms), 0 when nothing runs. */
int64_t kg_inband_doctor_deadline(const kg_inband_doctor_t *self);

/*  At now_ms past the deadline: kill the doctor's group. True if killed. */
bool kg_inband_doctor_timers(kg_inband_doctor_t *self, int64_t now_ms);

/*  Kill and forget a running doctor (its request was answered otherwise:
    the kernel went away, kguard is shutting down). */
void kg_inband_doctor_cancel(kg_inband_doctor_t *self);

/*  After done: the display_data content (new object, the caller's) and the
    execute_reply content for execution_count (new object). NULL before
    done or on allocation failure. */
cJSON *kg_inband_doctor_display(const kg_inband_doctor_t *self);
cJSON *kg_inband_doctor_reply(const kg_inband_doctor_t *self, int execution_count);

#endif
