/*  kg_check: the device probe that turns a suspicion into proof, or clears
    it (issue 16).

    A sticky GPU error in text that proves nothing by itself (a print, a log
    line, a subprocess's output, raw stderr) is a suspicion (kg_diagnosis).
    When the cell that showed it has ended (at once if the kernel is idle),
    kguard sends the kernel a SILENT execute_request of its own (silent,
    store_history false, stop_on_error false) running kguard.devprobe.check():
    synchronise and allocate on the device the kernel uses (torch, else the
    CUDA/HIP runtime already loaded, else nothing to probe; the labelled
    emulation answers as a poisoned device would). Its iopub output and reply
    never reach the frontend. A sticky error in its reply confirms the fault
    (returned: the relay tells the guard, kg__guard_confirm); any other
    answer clears the suspicion; no answer within KG_DEVCHECK_MS (10 s) is a
    hung device: confirmed. Meanwhile the
    relay holds every request (kg__check_pending), and the suspected cell's
    reply and idle, so that a confirmed fault is reported in that cell.

    The probe's state (its id and deadline, the suspicion's time, the held
    reply and idle) is the kg_devcheck object (S->devcheck), whose pure
    verdict and timing logic is tested by tables; this file sends the probe
    and logs what it decided.

    Arrows: kg_sup_relay.c, kg_sup_relay_kernel.c -> kg_sup_devcheck.c -> kg_sup_util.c,
    kg_devcheck, the diagnosis; the verdict is returned, never passed up by
    a call.
*/
#include "kg_sup_priv.h"
#include "kg_language.h"

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"

static const char s_probe_code[] = "__import__('kguard.devprobe').devprobe.check()";

bool
kg__check_pending(const kg_sup_t *S)
{
  return kg_devcheck_probing(S->devcheck)
         || (S->state == KG_ST_READY && kg_diagnosis_suspect(S->diag));
}

void
kg__check_start(kg_sup_t *S)
{
  if (kg_devcheck_probing(S->devcheck) || S->state != KG_ST_READY
      || !kg_diagnosis_suspect(S->diag))
    return;
  if (!kg_language_is_python(kg__language(S))) {
    kg_notice("suspicion not checked: the inner kernel is not Python (log only)");
    kg_diagnosis_clear_suspicion(S->diag);
    return;
  }
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "code", s_probe_code);
  cJSON_AddBoolToObject(content, "silent", true);
  cJSON_AddBoolToObject(content, "store_history", false);
  cJSON_AddItemToObject(content, "user_expressions", cJSON_CreateObject());
  cJSON_AddBoolToObject(content, "allow_stdin", false);
  cJSON_AddBoolToObject(content, "stop_on_error", false);
  kg_msg_t *m = kg_msg_new("execute_request", S->session, NULL, &content);
  int rc = m ? kg_kernel_send(S->kernel, KG_CH_SHELL, m, KG_OUTQ_REQUEST) : KG_ENOMEM;
  if (rc == 0)
    rc = kg_devcheck_sent(S->devcheck, kg_msg_id(m), kg_clock_mono_ms());
  kg_msg_destroy(&m);
  if (rc) {
    kg_warning("unable to send the device probe (%s): suspicion cleared, logged only",
               kg_strerror(rc));
    kg_diagnosis_clear_suspicion(S->diag);
    return;
  }
  kg_info("suspicion: device probe sent to the kernel");
}

bool
kg__check_iopub(kg_sup_t *S, kg_msg_t *msg)
{
  return kg_devcheck_is_probe(S->devcheck, kg_msg_parent_id(msg));
}

bool
kg__check_reply(kg_sup_t *S, kg_msg_t *msg, bool *confirmed, kg_match_t *match)
{
  *confirmed = false;
  if (!kg_devcheck_is_probe(S->devcheck, kg_msg_parent_id(msg)))
    return false;
  int64_t took = kg_devcheck_answered(S->devcheck, kg_clock_mono_ms());
  const cJSON *content = kg_msg_json(msg, KG_PART_CONTENT);
  kg_match_t m;
  kg_devcheck_verdict_t v = kg_devcheck_verdict(content, S->rules, &m);
  if (v == KG_DEVCHECK_CONFIRMED) {
    kg_error("device probe failed after %lld ms (%s): the suspicion is confirmed",
             (long long) took, m.family->id);
    *confirmed = true;   /* the caller tells the guard (kg__guard_confirm) */
    *match = m;
    return true;
  }
  if (v == KG_DEVCHECK_NOT_GPU) {
    const cJSON *ename = cJSON_GetObjectItemCaseSensitive(content, "ename");
    kg_notice("device probe raised %s (not a GPU fault) after %lld ms: suspicion cleared",
              cJSON_IsString(ename) ? ename->valuestring : "", (long long) took);
  } else
    kg_notice("device probe passed after %lld ms: suspicion cleared, no restart",
              (long long) took);
  kg_diagnosis_clear_suspicion(S->diag);
  return true;
}

int64_t
kg__check_deadline(const kg_sup_t *S)
{
  return kg_devcheck_deadline(S->devcheck);
}

bool
kg__check_timers(kg_sup_t *S, int64_t now)
{
  if (!kg_devcheck_expired(S->devcheck, now))
    return false;
  kg_error("the device probe did not answer within %d s: a hung device, the suspicion is "
           "confirmed", KG_DEVCHECK_MS / 1000);
  return true;   /* the caller tells the guard (kg__guard_confirm(S, NULL)) */
}
