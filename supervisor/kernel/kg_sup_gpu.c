/*  kg_sup_gpu: the supervisor's side of issue 13, the glue between the
    state machine and the two GPU helpers (kg_preflight: the pre-flight
    probe beside a fresh kernel; kg_inband_doctor: `%kguard doctor`). Each
    function is one hook the core calls (docs/GPU-HOOKS.md §1-2).

    Arrows: kg_supervisor.c, kg_sup_kernel.c, kg_sup_guard.c, kg_sup_helpers.c,
    kg_sup_inband.c, kg_sup_relay_kernel.c, kg_sup_loop.c -> kg_sup_gpu.c -> kg_sup_notify.c,
    kg_sup_synth.c, kg_sup_util.c (events posted, never applied here; the loop
    lets the next held cell go after a helper ended). */
#include "kg_sup_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_language.h"
#include "kg_log.h"

/* ---- set-up ---------------------------------------------------------------- */

int
kg__gpu_init(kg_sup_t *S)
{
  kg_preflight_config_t cfg;
  char err[256] = "";
  if (kg_preflight_config_parse(getenv("KGUARD_PREFLIGHT"), getenv("KGUARD_PREFLIGHT_TIMEOUT"),
                                &cfg, err, sizeof err) != 0)
    kg_warning("%s: the pre-flight uses its defaults (sticky, 10 s)", err);
  S->preflight = kg_preflight_new(&cfg);
  S->doctor = kg_inband_doctor_new(0);
  return S->preflight && S->doctor ? 0 : KG_ENOMEM;
}

void
kg__gpu_destroy(kg_sup_t *S)
{
  kg_preflight_destroy(&S->preflight);
  kg_inband_doctor_destroy(&S->doctor);   /* with the id of the cell it answered */
}

/* ---- the pre-flight ------------------------------------------------------------ */

void
kg__preflight_kernel_started(kg_sup_t *S, bool after_sticky)
{
  S->preflight_after_sticky = after_sticky;
  if (!kg_preflight_should_start(S->preflight, S->kernel_starts == 1, after_sticky)) {
    kg_preflight_cancel(S->preflight);
    return;
  }
  kg_info("pre-flight probe started beside kernel #%d", S->kernel_starts);
  kg_preflight_start(S->preflight, S->cfg->exe, S->kernel_envp, kg_clock_mono_ms());
}

bool
kg__preflight_holds_ready(const kg_sup_t *S)
{
  return kg_preflight_blocks_ready(S->preflight);
}

/*  The verdict came: record it, then ready (OK, UNAVAILABLE) or stop the
    fresh kernel and go DOWN (FAILING, TIMEOUT). */
static void
s_preflight_done(kg_sup_t *S)
{
  kg_preflight_verdict_t v = kg_preflight_verdict(S->preflight);
  const cJSON *report = kg_preflight_report(S->preflight);
  kg_incident_t *incident = kg_incident_slot_current(S->incidents);
  if (incident && S->preflight_after_sticky) {
    kg_preflight_record(S->preflight, kg_incident_json(incident));
    kg__write_incident(S);
  }
  if (S->state != KG_ST_STARTING)
    return;   /* the start was abandoned meanwhile */
  if (v == KG_PREFLIGHT_FAILING || v == KG_PREFLIGHT_TIMEOUT) {
    char *why = kg_preflight_down_reason(v, report);
    (void) kg_notice_due_set_down(S->due, why ? why : "the device is failing (pre-flight probe)");
    free(why);
    kg_error("%s", kg_notice_due_down_reason(S->due) ? kg_notice_due_down_reason(S->due) : "");
    S->stop_reason = KG__STOP_DEVICE;
    kg__fire(S, KG_EV_PREFLIGHT_FAILED);   /* STARTING → STOPPING, then DOWN */
    return;
  }
  char note[1024];
  if (kg_preflight_memory_note(report, S->prev_kernel_pid, note, sizeof note))
    kg_notice("pre-flight: %s", note);
  if (kg_ready_done(kg_kernel_ready(S->kernel)))
    kg__fire(S, KG_EV_KERNEL_READY);
}

/*  The DOWN notice of a failing device: the hardware family, not the
    fault's. */
void
kg__preflight_down_notice(kg_sup_t *S)
{
  kg_notice_info_t info;
  kg__notice_fill_current(S, &info);
  info.family = kg_classifier_family(S->rules, "ecc-hardware");
  info.checkpoint_restored = false;
  info.restarted = false;
  info.reason = kg_notice_due_down_reason(S->due);
  kg__notice_publish(S, KG_NOTICE_DOWN, &info, kg_failing_header(S->failing), NULL);
}

/* ---- %kguard doctor ------------------------------------------------------------ */

static void
s_doctor_done(kg_sup_t *S)
{
  char *request = kg_inband_doctor_take_request(S->doctor);
  kg_pending_entry_t *e = request ? kg_pending_find(S->pending, request) : NULL;
  free(request);
  if (!e)
    return;   /* answered otherwise meanwhile (a restart) */
  char *id = strdup(e->msg_id);
  cJSON *display = kg_inband_doctor_display(S->doctor);
  cJSON *reply = kg_inband_doctor_reply(S->doctor, S->execution_count);
  if (display)
    kg__publish(S, "display_data", e->header, &display, NULL);
  if (reply)
    kg__reply(S, e, "execute_reply", &reply);
  kg__status_idle(S, e->header);
  if (id)
    kg_pending_remove(S->pending, id);
  free(id);   /* the next cell's turn: the loop flushes the held ones */
}

void
kg__doctor_start(kg_sup_t *S, kg_pending_entry_t *e)
{
  kg__status_busy(S, e->header);
  (void) kg_inband_doctor_set_request(S->doctor, e->msg_id);
  e->forwarded = true;   /* holds the queue: one cell at a time */
  const char *py = kg_language_interpreter(kg__language(S), S->cfg->inner_argv);
  kg_inband_doctor_start(S->doctor, S->cfg->exe, py, S->kernel_envp, kg_clock_mono_ms());
  if (kg_inband_doctor_done(S->doctor))
    s_doctor_done(S);   /* it could not start: said at once */
}

/* ---- the loop's part ------------------------------------------------------------ */

int
kg__gpu_fds(const kg_sup_t *S, int *fds, int max)
{
  int n = 0;
  for (int which = 1; which <= 2 && n < max; which++) {
    int a = kg_preflight_fd(S->preflight, which), b = kg_inband_doctor_fd(S->doctor, which);
    if (a >= 0 && n < max)
      fds[n++] = a;
    if (b >= 0 && n < max)
      fds[n++] = b;
  }
  return n;
}

void
kg__gpu_poll(kg_sup_t *S)
{
  int64_t now = kg_clock_mono_ms();
  if (kg_preflight_pump(S->preflight, now))
    s_preflight_done(S);
  if (kg_inband_doctor_pump(S->doctor, now))
    s_doctor_done(S);
}

void
kg__gpu_timers(kg_sup_t *S, int64_t now)
{
  kg_preflight_timers(S->preflight, now);
  kg_inband_doctor_timers(S->doctor, now);
}

int64_t
kg__gpu_deadline(const kg_sup_t *S)
{
  return KG__EARLIEST(kg_preflight_deadline(S->preflight), kg_inband_doctor_deadline(S->doctor));
}
