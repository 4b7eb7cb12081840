/*  kg_sup_util: small helpers every supervisor file uses, in a file that
    calls no other supervisor file (only the objects: kg_fsm, kg_pending,
    kg_state, kg_language), so using them draws no arrow back up. Posting
    an event is one of them: kg__fire hands it to the state engine, which
    applies it with the rows kg_sup_states.c defined. */
#include "kg_sup_priv.h"

#include "kg_envp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_language.h"
#include "kg_log.h"

void
kg__set_str(char **field, const char *value)
{
  char *copy = value && *value ? strdup(value) : NULL;
  if (value && *value && !copy)
    return;   /* out of memory: keep the old value rather than none */
  free(*field);
  *field = copy;
}

void
kg__fire(kg_sup_t *S, kg_event_t event)
{
  if (kg_fsm_post(S->fsm, event, 0, kg_loop_now(S->loop)) != 0)
    kg_error("event queue full: %s dropped", kg_event_name(event));
}

void
kg__unsent(kg_relay_stats_t *stats, const char *to, const char *type, int rc)
{
  if (kg_relay_stats_unsent(stats, rc, kg_clock_mono_ms()) == KG_RATELOG_FULL)
    kg_warning("unable to send %s to the %s: %s", type ? type : "a message", to,
               kg_strerror(rc));
}

bool
kg__events_pending(const kg_sup_t *S)
{
  return kg_fsm_pending(S->fsm);
}

const char *
kg__diag_label(kg_sup_t *S)
{
  if (!S->diagnostic)
    return "";
  if (S->backend == KG_BACKEND_CUDA)
    return "diagnostic, not for timing: CUDA_LAUNCH_BLOCKING=1";
  if (S->backend == KG_BACKEND_ROCM)
    return "diagnostic, not for timing: AMD_SERIALIZE_KERNEL=3 HIP_LAUNCH_BLOCKING=1";
  return "diagnostic, not for timing: backend unknown, so both CUDA_LAUNCH_BLOCKING=1 and "
         "AMD_SERIALIZE_KERNEL=3 are set";
}

/*  The kernel is being stopped with requests queued behind the running
    cell (sticky sign, death, out-of-band restart): they were meant for this
    kernel, after that cell; kguard answers them (KernelRestarted, KernelDied)
    and they never reach a kernel. What is not a request (comm_msg) is
    dropped. */
void
kg__doom_queue(kg_sup_t *S)
{
  size_t doomed = 0;
  for (size_t i = 0; i < kg_pending_count(S->pending); i++) {
    kg_pending_entry_t *e = kg_pending_at(S->pending, i);
    if (e->forwarded || e->doomed
        || kg__shutdown_is(&S->shutdown, e->msg_id))
      continue;
    e->doomed = true;
    doomed++;
  }
  size_t dropped = kg_pending_drop_held(S->pending, true);
  if (dropped || doomed)
    kg_info("kguard's queue emptied: %zu message(s), %zu request(s) to answer", dropped,
            doomed);
}

void
kg__free_envp(char ***envp_p)
{
  kg_envp_free(envp_p);
}

const char *
kg__language(const kg_sup_t *S)
{
  return kg_language_of(S->info_cache, S->cfg->spec_language, S->cfg->inner_argv);
}

void
kg__failing_clear(kg__failing_t *f)
{
  free(f->msg_id);
  free(f->code);
  cJSON_Delete(f->header);
  *f = (kg__failing_t){0};
}

void
kg__failing_set(kg__failing_t *f, const char *msg_id, const char *code, const cJSON *header,
                bool guessed)
{
  kg__failing_clear(f);
  f->msg_id = msg_id ? strdup(msg_id) : NULL;
  f->code = code ? strdup(code) : NULL;
  f->header = header ? cJSON_Duplicate(header, 1) : NULL;
  f->guessed = guessed;
}

bool
kg__failing_is(const kg__failing_t *f, const char *msg_id)
{
  return f->msg_id && msg_id && strcmp(msg_id, f->msg_id) == 0;
}

void
kg__due_set(kg__due_t *due, kg__due_kind_t kind, const cJSON *parent)
{
  cJSON_Delete(due->parent);
  due->parent = kind != KG__DUE_NONE && parent ? cJSON_Duplicate(parent, 1) : NULL;
  due->kind = kind;
}

void
kg__due_set_down(kg__due_t *due, const char *reason)
{
  free(due->down_reason);
  due->down_reason = reason ? strdup(reason) : NULL;
}

/*  Said after a give-up, in the DOWN notice and every KernelDown. */
#define S_BY_HAND " Run `%kguard restart` in a cell (or `kguard restart -f " \
                  "CONNECTION_FILE`) to start a fresh kernel."

void
kg__due_set_gave_up(kg__due_t *due, const char *reason)
{
  free(due->down_reason);
  if (asprintf(&due->down_reason, "%s%s", reason ? reason : "", S_BY_HAND) < 0)
    due->down_reason = NULL;
}

const char *
kg__incident_id(const kg__incidents_t *incidents)
{
  kg_incident_t *incident = incidents->current.incident;
  return incident ? kg_incident_id(incident) : NULL;
}

bool
kg__shutdown_is(const kg__shutdown_t *shutdown, const char *msg_id)
{
  return shutdown->request_id && msg_id && strcmp(msg_id, shutdown->request_id) == 0;
}
