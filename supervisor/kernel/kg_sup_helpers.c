/*  kg_sup_helpers: the helper children kguard starts after a sticky error,
    never touching the poisoned process: the version probe (`python -m
    kguard.probe`: Python, torch, CUDA/HIP versions, device, for the
    incident record) and the checkpoint restore (`kguard ckpt
    resume-prepare`: select, quarantine and restore the last checkpoint
    sealed before the fault, JSON on stdout). Their stdout is collected
    (bounded), their stderr goes to the log, each has a STALL deadline
    (kg_helper: killed after KG__HELPER_STALL_MS without a byte, never for
    running long while it reports progress). What resume-prepare said, and
    what the next kernel gets, is the kg_restore object (S->restore): this
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
  if (S->incidents.current.incident) {
    cJSON *c = kg_restore_incident_json(R);
    kg_incident_take_checkpoint(S->incidents.current.incident, &c);
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
  const char *incident_id = kg__incident_id(&S->incidents);
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
  const char *mem = S->snapdir ? kg_snapdir_path(S->snapdir) : NULL;
  char *argv[] = {(char *) S->cfg->exe, "ckpt", "resume-prepare", "--dir",
                  (char *) S->cfg->ckpt_dir, "--before", before,
                  "--incident", (char *) incident_id, "--into", into, "--json",
                  "--progress=machine", mem ? "--memory" : NULL, (char *) mem, NULL};
  kg_notice("restoring the last state sealed before T=%s from %s%s", before,
            mem ? "kguard's memory (kguard.snapshot) or " : "", S->cfg->ckpt_dir);
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
  if (kg__state(S) == KG_ST_RESTORING)
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
  if (S->incidents.current.incident) {
    kg_incident_take_versions(S->incidents.current.incident, &j);
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
  kg__publish(S, "display_data", S->failing.header, &content, NULL);
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

/*  The helpers' pipes: what they write is collected, their end noticed. */
static int
s_helper_fd(void *arg)
{
  kg__src_t *src = arg;
  return kg_helper_fd(src->which < 2 ? src->S->ckpt : src->S->probe, 1 + src->which % 2);
}

static int
s_on_helper(kg_loop_t *loop, int id, int events, void *arg)
{
  kg__guard_helpers_poll(((kg__src_t *) arg)->S);
  return KG_LOOP_OK;
}

/*  A helper silent for too long is killed (its end comes as SIGCHLD). */
static int64_t
s_ckpt_when(void *arg)
{
  return kg_helper_deadline(((kg_sup_t *) arg)->ckpt);
}

static int64_t
s_probe_when(void *arg)
{
  return kg_helper_deadline(((kg_sup_t *) arg)->probe);
}

static int
s_helper_stall(kg_loop_t *loop, int id, void *arg)
{
  kg_sup_t *S = arg;
  int64_t now = kg_loop_now(loop);
  kg_helper_timers(S->ckpt, now);
  kg_helper_timers(S->probe, now);
  return KG_LOOP_OK;
}

/*  A restore that takes long gets its progress notice
    KG__RESTORE_NOTICE_MS after its start. */
static int64_t
s_notice_when(void *arg)
{
  kg_sup_t *S = arg;
  int64_t started = 0;
  if (kg_restore_noticed(S->restore) || !kg_helper_running(S->ckpt)
      || !kg_helper_progress(S->ckpt, NULL, NULL, &started, NULL))
    return 0;
  return started + KG__RESTORE_NOTICE_MS;
}

static int
s_notice(kg_loop_t *loop, int id, void *arg)
{
  s_restore_notice(arg, kg_loop_now(loop));
  return KG_LOOP_OK;
}

int
kg__helpers_attach(kg_sup_t *S)
{
  for (int i = 0; i < 4; i++) {   /* ckpt stdout, stderr, probe stdout, stderr */
    S->src.helper[i] = (kg__src_t){S, i};
    if (kg_loop_fd_of(S->loop, s_helper_fd, KG_LOOP_IN, s_on_helper, &S->src.helper[i]) < 0)
      return KG_ENOMEM;
  }
  if (kg_loop_timer_of(S->loop, s_ckpt_when, s_helper_stall, S) < 0
      || kg_loop_timer_of(S->loop, s_probe_when, s_helper_stall, S) < 0
      || kg_loop_timer_of(S->loop, s_notice_when, s_notice, S) < 0)
    return KG_ENOMEM;
  return 0;
}
