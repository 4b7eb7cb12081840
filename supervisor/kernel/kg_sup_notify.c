/*  kg_notify: what kguard tells the user and writes down: the notices it
    publishes (display_data with kguard's metadata, including what the
    checkpoint restore did) and the incident records.

    Arrows: kg_sup_guard.c -> kg_sup_notify.c -> kg_sup_synth.c; kg_sup_helpers.c ->
    kg_sup_notify.c (kg__write_incident). Nothing here starts a child or fires
    an event.
*/
#include "kg_sup_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"
#include "kg_notice.h"

/* ------------------------------------------------------------------------
   Notices. */

/*  Fill a notice from diag (the running kernel's, or after a restart the
    previous kernel's) and what the supervisor knows. */
void
kg__notice_fill(kg_sup_t *S, const kg_diagnosis_t *diag, kg_notice_info_t *info)
{
  memset(info, 0, sizeof *info);
  const kg_match_t *m = kg_diagnosis_match(diag);
  if (m) {
    info->family = m->family;
    info->rule_id = m->rule_id;
    info->note = m->note;
    info->matched_line = m->line;
  }
  info->backend = S->backend != KG_BACKEND_UNKNOWN ? S->backend : kg_diagnosis_backend(diag);
  info->assertion_line = kg_diagnosis_assertion(diag);
  info->execution_count = -1;
  info->cell_code = kg_failing_code(S->failing);
  kg_incident_t *incident = kg_incident_slot_current(S->incidents);
  if (incident) {
    info->incident_id = kg_incident_id(incident);
    info->incident_path = kg_incident_slot_path(S->incidents);
    /* The notice names the cell by the execution count the record holds. */
    const cJSON *cell = cJSON_GetObjectItemCaseSensitive(kg_incident_json(incident), "cell");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(cell, "execution_count");
    if (cJSON_IsNumber(count))
      info->execution_count = count->valueint;
  }
  info->diagnostic = S->diagnostic;
  info->restart_count = kg_policy_restart_count(S->policy);
  info->exit_code = -1;
  info->restored_step = -1;
  const cJSON *r = kg_restore_result(S->restore);
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(r, "status");
  const cJSON *archive = cJSON_GetObjectItemCaseSensitive(r, "archive");
  if (cJSON_IsString(status) && strcmp(status->valuestring, "restored") == 0
      && cJSON_IsString(archive) && *archive->valuestring) {
    info->checkpoint_restored = true;
    info->restored_step = kg_restore_step_of(r);
    info->restored_archive = archive->valuestring;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "sealed_at");
    info->restored_sealed = cJSON_IsString(v) ? v->valuestring : NULL;
    info->restored_digest = kg_restore_digest(S->restore);
  }
}

void
kg__notice_fill_current(kg_sup_t *S, kg_notice_info_t *info)
{
  kg__notice_fill(S, S->diag, info);
}

/*  Publish a display_data notice with parent (may be NULL). extra (may be
    NULL) is appended to the plain and markdown texts. */
void
kg__notice_publish(kg_sup_t *S, kg_notice_kind_t kind, const kg_notice_info_t *info,
                 const cJSON *parent, const char *extra)
{
  cJSON *data = NULL, *meta = NULL;
  if (kg_notice_build(kind, info, &data, &meta) != 0)
    return;
  if (extra && *extra) {
    const char *keys[] = {"text/plain", "text/markdown"};
    for (int i = 0; i < 2; i++) {
      cJSON *t = cJSON_GetObjectItemCaseSensitive(data, keys[i]);
      if (!cJSON_IsString(t))
        continue;
      size_t len = strlen(t->valuestring) + strlen(extra) + 4;
      char *s = malloc(len);
      if (!s)
        continue;
      snprintf(s, len, "%s\n\n%s", t->valuestring, extra);
      cJSON_SetValuestring(t, s);
      free(s);
    }
  }
  if (kind == KG_NOTICE_STICKY_RESTART || kind == KG_NOTICE_DOWN) {
    /* what the restore did, for `kguard run` and other clients */
    cJSON *k = cJSON_GetObjectItemCaseSensitive(meta, "kguard");
    cJSON *c = kg_restore_meta_json(S->restore);
    if (cJSON_IsObject(k) && c)
      cJSON_AddItemToObject(k, "checkpoint", c);
    else
      cJSON_Delete(c);
  }
  cJSON *content = cJSON_CreateObject();
  cJSON_AddItemToObject(content, "data", data);
  cJSON_AddItemToObject(content, "metadata", meta ? meta : cJSON_CreateObject());
  cJSON_AddItemToObject(content, "transient", cJSON_CreateObject());
  kg__publish(S, "display_data", parent, &content, NULL);
  kg_notice("notice to the notebook: %s", kg_notice_event(kind));
}

/* ------------------------------------------------------------------------
   Incidents. */

void
kg__write_incident(kg_sup_t *S)
{
  if (!kg_incident_slot_current(S->incidents))
    return;
  char dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/incidents", S->cfg->state_dir);
  int rc = kg_incident_slot_write(S->incidents, dir);
  if (rc)
    kg_error("unable to write incident %s: %s", kg_incident_slot_id(S->incidents),
             kg_strerror(rc));
}

/*  The failing cell's execute_reply (parent) says its execution count: the
    incident's guess (the last count seen + 1) is right only when the error
    was seen before the reply, and the notice names the cell by it. */
void
kg__incident_cell_count(kg_sup_t *S, const char *parent, int count)
{
  kg_incident_t *incident = kg_incident_slot_current(S->incidents);
  const char *failing = kg_failing_id(S->failing);
  if (incident && parent && failing && strcmp(parent, failing) == 0)
    kg_incident_set_cell(incident, kg_failing_code(S->failing), failing, count);
}

void
kg__incident_open(kg_sup_t *S, bool sticky)
{
  kg_incident_t *incident = kg_incident_slot_open(S->incidents, kg_clock_wall_ms());
  if (!incident)
    return;
  kg_incident_set_diagnosis(incident, S->diag);
  kg_incident_set_cell(incident, kg_failing_code(S->failing), kg_failing_id(S->failing),
                       S->execution_count + 1);
  kg_incident_set_last_step(incident, kg_diagnosis_last_step(S->diag));
  kg_incident_set_env(incident, S->kernel_envp);
  kg_incident_set_restarts(incident, kg_policy_restart_count(S->policy));
  cJSON *j = kg_incident_json(incident);
  cJSON *pend = cJSON_AddArrayToObject(j, "pending_requests");
  for (size_t i = 0; i < kg_pending_count(S->pending); i++) {
    kg_pending_entry_t *e = kg_pending_at(S->pending, i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "msg_id", e->msg_id);
    cJSON_AddStringToObject(o, "msg_type", e->msg_type);
    cJSON_AddItemToArray(pend, o);
  }
  cJSON_AddStringToObject(j, "kernel_log", S->cfg->kernel_log_path);
  cJSON_AddNumberToObject(j, "kernel_pid", kg_kernel_pid(S->kernel));
  kg__write_incident(S);
  const char *path = kg_incident_slot_path(S->incidents);
  kg_notice("incident %s (%s): %s", kg_incident_id(incident), sticky ? "sticky" : "advice",
            path ? path : "(not written)");
  if (sticky)
    kg_gate_set_incident(S->gate, kg_incident_id(incident));
}

