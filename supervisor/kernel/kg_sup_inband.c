/*  kg_inband: `%kguard status`, `%kguard restart [--diagnostic]` cells,
    answered by kguard itself (busy, a stream, execute_reply, idle); they
    never reach the inner kernel. On shell they are handled when their turn
    in kguard's queue comes (kg_sup_relay.c); on control (`kguard restart`) at
    once. */
#include "kg_sup_priv.h"

#include "kg_inband_cmd.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_log.h"

/* ------------------------------------------------------------------------
   In-band commands: `%kguard restart [--diagnostic]`, `%kguard status`. */

static void
s_status_text(kg_sup_t *S, char *buf, size_t len)
{
  int n = snprintf(buf, len,
                   "kguard: state %s, kernel #%d%s, pid %ld\n"
                   "restarts: %d since the last manual restart; %d of %d allowed in "
                   "the last %.3g s\n"
                   "back-off: %.3g s doubling up to %.3g s (the first restart at once)\n"
                   "stale window: %.3g s after a failure's notice\n"
                   "diagnostic mode: %s\n"
                   "state dir: %s\ncheckpoints: %s\nkernel log: %s\n",
                   kg_state_name(S->state), S->kernel_starts,
                   S->diagnostic ? " (diagnostic, not for timing)" : "",
                   (long) kg_kernel_pid(S->kernel),
                   kg_policy_restart_count(S->policy),
                   kg_policy_restarts_in_window(S->policy, kg_clock_mono_ms()),
                   S->cfg->policy_config.max_restarts,
                   (double) S->cfg->policy_config.window_ms / 1000.0,
                   (double) S->cfg->policy_config.backoff_initial_ms / 1000.0,
                   (double) S->cfg->policy_config.backoff_max_ms / 1000.0,
                   (double) kg_gate_window_ms(S->gate) / 1000.0,
                   S->diagnostic ? kg__diag_label(S) : "off", S->cfg->state_dir, S->cfg->ckpt_dir,
                   S->cfg->kernel_log_path);
  char progress[160] = "";
  kg__restore_progress_text(S, progress, sizeof progress);
  if (n > 0 && (size_t) n < len && *progress)
    n += snprintf(buf + n, len - (size_t) n, "checkpoint restore: %s\n", progress);
  const char *incident_path = kg_incident_slot_path(S->incidents);
  if (n > 0 && (size_t) n < len && kg_incident_slot_current(S->incidents))
    n += snprintf(buf + n, len - (size_t) n, "last incident: %s (%s)\n",
                  kg_incident_slot_id(S->incidents), incident_path ? incident_path : "");
  unsigned long foreign = kg_kernel_foreign_lines(S->kernel);
  if (n > 0 && (size_t) n < len && foreign)
    n += snprintf(buf + n, len - (size_t) n,
                  "foreign lines: %lu on the kernel's output were written by others (through "
                  "ipykernel's subprocess-output port, TCP 127.0.0.1), kept out of the log and "
                  "of the evidence\n", foreign);
  if (n > 0 && (size_t) n < len && S->state == KG_ST_DOWN)
    snprintf(buf + n, len - (size_t) n, "down: %s\n",
             kg_notice_due_down_reason(S->due) ? kg_notice_due_down_reason(S->due) : "");
}

/*  The cell's code if msg is a `%kguard` cell (kg_inband_cmd.h), else NULL. */
static const char *
s_inband_code(kg_msg_t *msg)
{
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(kg_msg_json(msg, KG_PART_CONTENT),
                                                       "code");
  return cJSON_IsString(code) && kg_inband_cmd_match(code->valuestring) ? code->valuestring
                                                                        : NULL;
}

bool
kg__inband_match(kg_msg_t *msg)
{
  return s_inband_code(msg) != NULL;
}

static void s_inband_run(kg_sup_t *S, kg_pending_entry_t *e, const kg_inband_cmd_t *c);

bool
kg__guard_inband(kg_sup_t *S, kg_msg_t *msg, kg_channel_t ch)
{
  const char *code = s_inband_code(msg);
  if (!code)
    return false;
  kg_inband_cmd_t c;
  kg_inband_cmd_parse(code, &c);   /* any length; a USAGE answer names the problem */
  kg_pending_entry_t *e = kg_pending_add(S->pending, msg, ch, kg_clock_mono_ms());
  if (e)
    s_inband_run(S, e, &c);
  kg_inband_cmd_clear(&c);
  return true;
}

static void
s_inband_run(kg_sup_t *S, kg_pending_entry_t *e, const kg_inband_cmd_t *c)
{
  if (c->kind == KG_INBAND_STATUS) {
    char text[4096];
    s_status_text(S, text, sizeof text);
    kg__answer_stream(S, e, text, true);
    return;
  }
  if (c->kind == KG_INBAND_DOCTOR) {
    kg__doctor_start(S, e);   /* answered when `kguard doctor` ends */
    return;
  }
  if (c->kind != KG_INBAND_RESTART) {
    char *text = NULL;
    if (asprintf(&text, "kguard: %s\n%s\n", c->error ? c->error : "not a command",
                 kg_inband_cmd_usage()) < 0)
      text = NULL;
    kg__answer_stream(S, e, text ? text : kg_inband_cmd_usage(), false);
    free(text);
    return;
  }
  bool diagnostic = c->diagnostic;
  if (S->state == KG_ST_CLOSING || S->state == KG_ST_STOPPING || S->state == KG_ST_KILLING
      || S->state == KG_ST_RESTORING || kg_state_exiting(S->state)) {
    kg__answer_stream(S, e, "kguard: a restart is already in progress\n", true);
    return;
  }
  S->want_diagnostic = diagnostic;
  char text[512];
  snprintf(text, sizeof text, "kguard: restarting the kernel%s\n",
           diagnostic ? " in diagnostic mode (diagnostic, not for timing)" : "");
  (void) kg_notice_due_set(S->due, diagnostic ? KG_DUE_DIAGNOSTIC : KG_DUE_NONE, e->header);
  kg__answer_stream(S, e, text, true);
  kg_notice("restart requested in-band%s", diagnostic ? " (diagnostic)" : "");
  S->stop_reason = KG__STOP_USER;
  kg_gate_clear(S->gate);   /* what follows is meant for the new kernel */
  if (S->state == KG_ST_DOWN || S->state == KG_ST_BACKOFF) {
    kg_policy_reset(S->policy);
    (void) kg_notice_due_set_down(S->due, NULL);
    S->diagnostic = diagnostic;
  }
  kg__fire(S, KG_EV_USER_RESTART);
}
