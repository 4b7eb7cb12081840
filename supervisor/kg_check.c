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
    answer clears the suspicion; no answer within KG__CHECK_MS (10 s) is a
    hung device: confirmed. Meanwhile the
    relay holds every request (kg__check_pending), and the suspected cell's
    reply and idle, so that a confirmed fault is reported in that cell.

    Arrows: kg_relay.c, kg_relay_kernel.c -> kg_check.c -> kg_sup_util.c,
    the diagnosis; the verdict is returned, never passed up by a call.
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
  return S->check_id || (S->state == KG_ST_READY && kg_diagnosis_suspect(S->diag));
}

void
kg__check_start(kg_sup_t *S)
{
  if (S->check_id || S->state != KG_ST_READY || !kg_diagnosis_suspect(S->diag))
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
  int rc = m ? kg_msg_send(m, kg_kernel_socket(S->kernel, KG_CH_SHELL),
                           kg_kernel_signer(S->kernel), 0)
             : KG_ENOMEM;
  if (rc == 0)
    kg__set_str(&S->check_id, kg_msg_id(m));
  kg_msg_destroy(&m);
  if (rc || !S->check_id) {
    kg_warning("unable to send the device probe (%s): suspicion cleared, logged only",
               kg_strerror(rc ? rc : KG_ENOMEM));
    kg_diagnosis_clear_suspicion(S->diag);
    return;
  }
  S->check_started_ms = kg_clock_mono_ms();
  S->check_deadline_ms = S->check_started_ms + KG__CHECK_MS;
  kg_info("suspicion: device probe sent to the kernel");
}

bool
kg__check_iopub(kg_sup_t *S, kg_msg_t *msg)
{
  const char *parent = kg_msg_parent_id(msg);
  return S->check_id && parent && strcmp(parent, S->check_id) == 0;
}

bool
kg__check_reply(kg_sup_t *S, kg_msg_t *msg, bool *confirmed, kg_match_t *match)
{
  *confirmed = false;
  const char *parent = kg_msg_parent_id(msg);
  if (!S->check_id || !parent || strcmp(parent, S->check_id) != 0)
    return false;
  int64_t took = kg_clock_mono_ms() - S->check_started_ms;
  kg__set_str(&S->check_id, NULL);
  const cJSON *content = kg_msg_json(msg, KG_PART_CONTENT);
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(content, "status");
  const cJSON *ename = cJSON_GetObjectItemCaseSensitive(content, "ename");
  const cJSON *evalue = cJSON_GetObjectItemCaseSensitive(content, "evalue");
  if (cJSON_IsString(status) && strcmp(status->valuestring, "error") == 0) {
    const char *en = cJSON_IsString(ename) ? ename->valuestring : "";
    const char *ev = cJSON_IsString(evalue) ? evalue->valuestring : "";
    size_t len = strlen(en) + strlen(ev) + 3;
    char *text = malloc(len);
    kg_match_t m;
    bool sticky = false;
    if (text) {
      snprintf(text, len, "%s: %s", en, ev);
      sticky = kg_classifier_match(S->rules, KG_SRC_EXECUTE_REPLY, text, strlen(text), &m)
               && m.family && m.family->sticky;
      free(text);
    }
    if (sticky) {
      kg_error("device probe failed after %lld ms (%s): the suspicion is confirmed",
               (long long) took, m.family->id);
      *confirmed = true;   /* the caller tells the guard (kg__guard_confirm) */
      *match = m;
      return true;
    }
    kg_notice("device probe raised %s (not a GPU fault) after %lld ms: suspicion cleared", en,
              (long long) took);
  } else
    kg_notice("device probe passed after %lld ms: suspicion cleared, no restart",
              (long long) took);
  kg_diagnosis_clear_suspicion(S->diag);
  return true;
}

int64_t
kg__check_deadline(const kg_sup_t *S)
{
  return S->check_id ? S->check_deadline_ms : 0;
}

bool
kg__check_timers(kg_sup_t *S, int64_t now)
{
  if (!S->check_id || now < S->check_deadline_ms)
    return false;
  kg_error("the device probe did not answer within %d s: a hung device, the suspicion is "
           "confirmed", KG__CHECK_MS / 1000);
  kg__set_str(&S->check_id, NULL);
  return true;   /* the caller tells the guard (kg__guard_confirm(S, NULL)) */
}
