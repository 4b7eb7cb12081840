/*  kg_sup_util: small helpers every supervisor file uses, in a file that
    calls no other supervisor file (only the objects: kg_evq, kg_pending,
    kg_state, kg_language), so using them draws no arrow back up. Posting
    an event is one of them: kg__fire hands it to the queue, which applies
    it with the table the supervisor bound (kg_evq_bind). */
#include "kg_sup_priv.h"

#include "kg_envp.h"

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
  if (kg_evq_fire(S->evq, event) != 0)
    kg_error("event queue full: %s dropped", kg_event_name(event));
}

void
kg__unsent(kg_sup_t *S, const char *to, const char *type, int rc)
{
  if (kg_relay_stats_unsent(S->stats, rc, kg_clock_mono_ms()) == KG_RATELOG_FULL)
    kg_warning("unable to send %s to the %s: %s", type ? type : "a message", to,
               kg_strerror(rc));
}

bool
kg__events_pending(const kg_sup_t *S)
{
  return kg_evq_pending(S->evq);
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
        || kg_shutdown_is_request(S->shutdown, e->msg_id))
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

int64_t
kg__earliest(const int64_t *deadlines, size_t n)
{
  int64_t next = 0;
  for (size_t i = 0; i < n; i++)
    if (deadlines[i] > 0 && (!next || deadlines[i] < next))
      next = deadlines[i];
  return next;
}
