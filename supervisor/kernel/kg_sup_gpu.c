/*  kg_sup_gpu: the supervisor's side of the two GPU helpers: kg_preflight
    (`kguard doctor --preflight` beside a fresh kernel: a failing device
    stops it and sends kguard DOWN) and kg_inband_doctor (`%kguard doctor`,
    answered in its cell). Their pipes and backstop deadlines are sources of
    the loop; events are posted, never applied here. And the NVML health
    reading (kg_nvml): a baseline at the first start, a second reading
    before a restart; NVML is loaded for each reading and unloaded after it,
    so the long-lived process does not carry it.
*/
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
  kg_gpuwatch_destroy(&S->gpuwatch);
}

/* ---- the NVML health reading ------------------------------------------------ */

/*  The kernel's CUDA_VISIBLE_DEVICES (NULL: unset, every device). */
static const char *
s_visible(const kg_sup_t *S)
{
  static const char name[] = "CUDA_VISIBLE_DEVICES=";
  if (!S->kernel_envp)
    return getenv("CUDA_VISIBLE_DEVICES");
  for (char **e = S->kernel_envp; *e; e++)
    if (strncmp(*e, name, sizeof name - 1) == 0)
      return *e + sizeof name - 1;
  return NULL;
}

static void
s_baseline(kg_sup_t *S)
{
  if (S->gpuwatch || !(S->gpuwatch = kg_gpuwatch_new(s_visible(S))))
    return;
  if (kg_gpuwatch_baseline(S->gpuwatch))
    kg_info("GPU health baseline read through NVML");
}

bool
kg__gpuhealth_needs_reset(kg_sup_t *S, const char *family, const char *text, char **why)
{
  *why = NULL;
  if (!S->gpuwatch)
    return false;   /* no reading: the policy decides, as without NVML */
  kg_gpuhealth_result_t res;
  cJSON *rec = NULL;
  char line[512];
  kg_gpuhealth_verdict_t v = kg_gpuwatch_check(S->gpuwatch, family, text, &res, &rec, line,
                                               sizeof line);
  kg_incident_t *incident = S->incidents.current.incident;
  if (incident && rec) {
    cJSON_DeleteItemFromObject(kg_incident_json(incident), "gpu_health");
    cJSON_AddItemToObject(kg_incident_json(incident), "gpu_health", rec);
  } else
    cJSON_Delete(rec);
  if (v != KG_GPUHEALTH_NEEDS_RESET) {
    kg_info("GPU health before the restart: %s", line);
    return false;
  }
  char buf[1024];
  snprintf(buf, sizeof buf,
           "%s. Drain this node: nothing more runs on this GPU until it is reset "
           "(`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER` shows why; the node's "
           "administrator resets it); run the notebook on another GPU or machine.", line);
  *why = strdup(buf);
  return *why != NULL;
}

/* ---- the pre-flight ------------------------------------------------------------ */

void
kg__preflight_kernel_started(kg_sup_t *S, bool after_sticky)
{
  S->preflight_after_sticky = after_sticky;
  s_baseline(S);   /* once, before the first kernel touches a device */
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
  kg_incident_t *incident = S->incidents.current.incident;
  if (incident && S->preflight_after_sticky) {
    kg_preflight_record(S->preflight, kg_incident_json(incident));
    kg__write_incident(S);
  }
  if (kg__state(S) != KG_ST_STARTING)
    return;   /* the start was abandoned meanwhile */
  if (v == KG_PREFLIGHT_FAILING || v == KG_PREFLIGHT_TIMEOUT) {
    char *why = kg_preflight_down_reason(v, report);
    kg__due_set_down(&S->due, why ? why : "the device is failing (pre-flight probe)");
    free(why);
    kg_error("%s", S->due.down_reason ? S->due.down_reason : "");
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
  info.reason = S->due.down_reason;
  kg__notice_publish(S, KG_NOTICE_DOWN, &info, S->failing.header, NULL);
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

void
kg__gpu_poll(kg_sup_t *S)
{
  int64_t now = kg_clock_mono_ms();
  if (kg_preflight_pump(S->preflight, now))
    s_preflight_done(S);
  if (kg_inband_doctor_pump(S->doctor, now))
    s_doctor_done(S);
}

/*  The two children's pipes: the pre-flight's (0, 1) and the doctor's (2, 3). */
static int
s_gpu_fd(void *arg)
{
  kg__src_t *src = arg;
  int which = 1 + src->which % 2;
  return src->which < 2 ? kg_preflight_fd(src->S->preflight, which)
                        : kg_inband_doctor_fd(src->S->doctor, which);
}

static int
s_on_gpu(kg_loop_t *loop, int id, int events, void *arg)
{
  kg__gpu_poll(((kg__src_t *) arg)->S);
  return KG_LOOP_OK;
}

/*  Their backstop deadlines: a child past it is killed. */
static int64_t
s_preflight_when(void *arg)
{
  return kg_preflight_deadline(((kg_sup_t *) arg)->preflight);
}

static int
s_preflight_expired(kg_loop_t *loop, int id, void *arg)
{
  kg_preflight_timers(((kg_sup_t *) arg)->preflight, kg_loop_now(loop));
  return KG_LOOP_OK;
}

static int64_t
s_doctor_when(void *arg)
{
  return kg_inband_doctor_deadline(((kg_sup_t *) arg)->doctor);
}

static int
s_doctor_expired(kg_loop_t *loop, int id, void *arg)
{
  kg_inband_doctor_timers(((kg_sup_t *) arg)->doctor, kg_loop_now(loop));
  return KG_LOOP_OK;
}

int
kg__gpu_attach(kg_sup_t *S)
{
  for (int i = 0; i < 4; i++) {
    S->src.gpu[i] = (kg__src_t){S, i};
    if (kg_loop_fd_of(S->loop, s_gpu_fd, KG_LOOP_IN, s_on_gpu, &S->src.gpu[i]) < 0)
      return KG_ENOMEM;
  }
  if (kg_loop_timer_of(S->loop, s_preflight_when, s_preflight_expired, S) < 0
      || kg_loop_timer_of(S->loop, s_doctor_when, s_doctor_expired, S) < 0)
    return KG_ENOMEM;
  return 0;
}
