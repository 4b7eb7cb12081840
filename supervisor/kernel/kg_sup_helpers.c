/*  kg_helpers: the helper children kguard starts after a sticky error,
    never touching the poisoned process: the version probe (`python -m
    kguard.probe`: Python, torch, CUDA/HIP versions, device, for the
    incident record) and the checkpoint restore (`kguard ckpt
    resume-prepare`: select, quarantine and restore the last checkpoint
    sealed before the fault, JSON on stdout). Their stdout is collected
    (bounded), their stderr goes to the log, each has a STALL deadline
    (kg_helper: killed after 30 s without a byte, never for running long
    while it reports progress). What resume-prepare said, and what the next
    kernel gets, is the kg_restore object (S->restore, kg_restore.h): this
    file runs the child and logs, kg_restore parses and decides.
*/
#include "kg_sup_priv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kg_clock.h"
#include "kg_language.h"
#include "kg_error.h"
#include "kg_log.h"


/*  Versions (Python, torch, CUDA/HIP, device) from a separate process:
    never from the poisoned one. */
void
kg__start_probe(kg_sup_t *S)
{
  /* by the kernel's language (its kernel_info_reply, cached, or the
     kernelspec's), not by argv[0]'s name: kg_language.h */
  const char *py = kg_language_interpreter(kg__language(S), S->cfg->inner_argv);
  if (!py || !S->cfg->python_dir[0])
    return;
  char *argv[] = {(char *) py, "-m", "kguard.probe", NULL};
  kg_helper_start(S->probe, argv, S->kernel_envp, kg_clock_mono_ms());
}

/* ------------------------------------------------------------------------
   Checkpoint restore (RESTORING) and the helpers' output. */

/*  What resume-prepare said (or why it said nothing), decided by
    kg_restore: a restore counts as restored when it names an archive (its
    `dir` may be "": restored in place); a failed restore says so
    (kg_restore_error), never "none found". */
static void
s_restore_done(kg_sup_t *S)
{
  kg_restore_t *R = S->restore;
  if (kg_restore_decide(R))
    kg_notice("checkpoint restored: step %lld from %s into %s", kg_restore_step(R),
              kg_restore_archive(R), *kg_restore_dir(R) ? kg_restore_dir(R) : "(in place)");
  else
    kg_notice("no checkpoint restored%s%s", kg_restore_error(R) ? ": " : "",
              kg_restore_error(R) ? kg_restore_error(R) : "");
  if (kg_incident_slot_current(S->incidents)) {
    cJSON *c = kg_restore_incident_json(R);
    kg_incident_take_checkpoint(kg_incident_slot_current(S->incidents), &c);
    cJSON_Delete(c);
    kg__write_incident(S);
  }
  kg__fire(S, KG_EV_RESTORED);
}

void
kg__guard_start_restore(kg_sup_t *S)
{
  kg_restore_begin(S->restore);
  struct stat st;
  const char *incident_id = kg_incident_slot_id(S->incidents);
  if (!incident_id || stat(S->cfg->ckpt_dir, &st) != 0 || !S->cfg->ckpt_dir[0]) {
    char buf[PATH_MAX + 64];
    snprintf(buf, sizeof buf, "no checkpoint directory %s", S->cfg->ckpt_dir);
    kg_restore_set_error(S->restore, buf);
    s_restore_done(S);
    return;
  }
  int64_t t = kg_diagnosis_fault_time(S->diag);
  if (t < 0)
    t = kg_clock_wall_ms();
  char before[32], into[PATH_MAX + 64];
  snprintf(before, sizeof before, "%lld", (long long) t);
  snprintf(into, sizeof into, "%s/restored/%s", S->cfg->state_dir, incident_id);
  /* execve's argv is char *const[]: the strings are not written */
  /* --progress=machine: the kguard-progress lines kg_helper reads to push
     back its stall deadline (they are off by default off a terminal). */
  char *argv[] = {(char *) S->cfg->exe, "ckpt", "resume-prepare", "--dir",
                  (char *) S->cfg->ckpt_dir, "--before", before,
                  "--incident", (char *) incident_id, "--into", into, "--json",
                  "--progress=machine", NULL};
  kg_notice("restoring the last checkpoint sealed before T=%s from %s", before, S->cfg->ckpt_dir);
  if (kg_helper_start(S->ckpt, argv, S->kernel_envp, kg_clock_mono_ms()) != 0) {
    kg_restore_set_error(S->restore, "unable to start `kguard ckpt resume-prepare`");
    s_restore_done(S);
  }
}

/*  The restore's latest progress, "" if none: for the log and %kguard status. */
void
kg__restore_progress_text(kg_sup_t *S, char *buf, size_t len)
{
  kg_helper_progress_text(S->ckpt, kg_clock_mono_ms(), buf, len);
}

static void
s_ckpt_finished(kg_sup_t *S)
{
  int st = kg_helper_status(S->ckpt);
  bool result = !kg_helper_stalled(S->ckpt)
                && kg_restore_take_output(S->restore, kg_helper_out(S->ckpt));
  char progress[160] = "";
  kg__restore_progress_text(S, progress, sizeof progress);
  if (kg_helper_stalled(S->ckpt)) {
    char buf[512];
    snprintf(buf, sizeof buf, "the checkpoint restore stalled (no output for %d s%s%s) and "
             "was killed", KG__HELPER_STALL_MS / 1000, *progress ? " after " : "", progress);
    kg_restore_set_error(S->restore, buf);
  } else if (!result) {
    char how[64], buf[512];
    kg_child_describe(st, how, sizeof how);
    snprintf(buf, sizeof buf, "the checkpoint restore failed: `kguard ckpt resume-prepare` "
             "ended (%s) without a result", how);
    kg_restore_set_error(S->restore, buf);
  }
  if (*progress)
    kg_info("checkpoint restore: %s", progress);
  if (S->state == KG_ST_RESTORING)
    s_restore_done(S);
}

static void
s_probe_finished(kg_sup_t *S)
{
  const char *out = kg_helper_out(S->probe);
  cJSON *j = *out ? cJSON_Parse(out) : NULL;
  if (cJSON_IsObject(j)) {
    const cJSON *hip = cJSON_GetObjectItemCaseSensitive(j, "hip");
    const cJSON *torch_hip = cJSON_GetObjectItemCaseSensitive(j, "torch_hip");
    const cJSON *backend = cJSON_GetObjectItemCaseSensitive(j, "backend");
    if (S->backend == KG_BACKEND_UNKNOWN) {
      if ((cJSON_IsString(hip) && *hip->valuestring)
          || (cJSON_IsString(torch_hip) && *torch_hip->valuestring)
          || (cJSON_IsString(backend) && strcmp(backend->valuestring, "rocm") == 0))
        S->backend = KG_BACKEND_ROCM;
      else if (cJSON_IsString(backend) && strcmp(backend->valuestring, "cuda") == 0)
        S->backend = KG_BACKEND_CUDA;
    }
  }
  if (kg_incident_slot_current(S->incidents)) {
    kg_incident_take_versions(kg_incident_slot_current(S->incidents), &j);
    kg__write_incident(S);
  }
  cJSON_Delete(j);
}

/*  A restore that takes long gets one notice with its progress, in the
    failing cell (whose idle waits for the final notice anyway). */
static void
s_restore_notice(kg_sup_t *S, int64_t now)
{
  int64_t started = 0;
  if (kg_restore_noticed(S->restore) || !kg_helper_running(S->ckpt)
      || !kg_helper_progress(S->ckpt, NULL, NULL, &started, NULL)
      || now - started < KG__RESTORE_NOTICE_MS)
    return;
  kg_restore_set_noticed(S->restore);
  char progress[160], text[256];
  kg__restore_progress_text(S, progress, sizeof progress);
  snprintf(text, sizeof text, "kguard: restoring the last good checkpoint: %s", progress);
  kg_notice("%s", text);
  cJSON *content = cJSON_CreateObject();
  cJSON *data = cJSON_AddObjectToObject(content, "data");
  cJSON_AddStringToObject(data, "text/plain", text);
  cJSON *meta = cJSON_AddObjectToObject(content, "metadata");
  cJSON *k = cJSON_AddObjectToObject(meta, "kguard");
  cJSON_AddStringToObject(k, "event", "restore-progress");
  cJSON_AddItemToObject(content, "transient", cJSON_CreateObject());
  kg__publish(S, "display_data", kg_failing_header(S->failing), &content, NULL);
}

void
kg__guard_helpers_poll(kg_sup_t *S)
{
  int64_t now = kg_clock_mono_ms();
  if (kg_helper_pump(S->ckpt, now))
    s_ckpt_finished(S);
  else
    s_restore_notice(S, now);
  if (kg_helper_pump(S->probe, now))
    s_probe_finished(S);
  kg__gpu_poll(S);
}

int64_t
kg__helpers_deadline(const kg_sup_t *S)
{
  int64_t a = kg_helper_deadline(S->ckpt), b = kg_helper_deadline(S->probe);
  int64_t c = 0;
  /* the progress notice is due KG__RESTORE_NOTICE_MS after the start */
  int64_t started = 0;
  if (!kg_restore_noticed(S->restore) && kg_helper_running(S->ckpt)
      && kg_helper_progress(S->ckpt, NULL, NULL, &started, NULL))
    c = started + KG__RESTORE_NOTICE_MS;
  return KG__EARLIEST(a, b, c, kg__gpu_deadline(S), kg__standby_deadline(S),
                      kg__hang_deadline(S));
}

void
kg__guard_helpers_timers(kg_sup_t *S, int64_t now)
{
  kg_helper_timers(S->ckpt, now);
  kg_helper_timers(S->probe, now);
  kg__gpu_timers(S, now);
  kg__standby_timers(S, now);
  kg__hang_timers(S, now);
  s_restore_notice(S, now);
}
