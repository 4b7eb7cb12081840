/*  kg_helpers: the helper children kguard starts after a sticky error,
    never touching the poisoned process: the version probe (`python -m
    kguard.probe`: Python, torch, CUDA/HIP versions, device, for the
    incident record) and the checkpoint restore (`kguard ckpt
    resume-prepare`: select, quarantine and restore the last checkpoint
    sealed before the fault, JSON on stdout). Their stdout is collected
    (bounded), their stderr goes to the log, each has a deadline.
*/
#include "kg_sup_priv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"

#define S_HELPER_OUT_MAX (1024u * 1024u)

static const char *
s_interpreter(kg_sup_t *S)
{
  const char *a0 = S->inner_argv[0];
  const char *base = strrchr(a0, '/');
  base = base ? base + 1 : a0;
  return strncmp(base, "python", 6) == 0 ? a0 : NULL;
}

static void
s_start_helper(kg_sup_t *S, kg__helper_t *h, char *const *argv, const char *what)
{
  kg_child_destroy(&h->child);
  free(h->out);
  h->out = NULL;
  h->out_len = 0;
  kg_child_opts_t opts = {.argv = argv, .envp = S->kernel_envp, .capture = true};
  int rc = kg_child_spawn(&opts, &h->child);
  if (rc)
    kg_warning("unable to start the %s (%s): %s", what, argv[0], kg_strerror(rc));
  h->deadline_ms = kg_clock_mono_ms() + KG__HELPER_TIMEOUT_MS;
}

/*  Versions (Python, torch, CUDA/HIP, device) from a separate process:
    never from the poisoned one. */
void
kg__start_probe(kg_sup_t *S)
{
  const char *py = s_interpreter(S);
  if (!py || !S->python_dir[0])
    return;
  char *argv[] = {(char *) py, "-m", "kguard.probe", NULL};
  s_start_helper(S, &S->probe, argv, "version probe");
}

/* ------------------------------------------------------------------------
   Checkpoint restore (RESTORING) and the helpers' output. */

static void
s_restore_done(kg_sup_t *S)
{
  S->resume_pending = false;
  const cJSON *r = S->restore_result;
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(r, "status");
  if (cJSON_IsString(status) && strcmp(status->valuestring, "restored") == 0) {
    const cJSON *dir = cJSON_GetObjectItemCaseSensitive(r, "dir");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(r, "archive");
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(r, "step");
    snprintf(S->resume_dir, sizeof S->resume_dir, "%s", cJSON_IsString(dir) ? dir->valuestring
                                                                           : "");
    snprintf(S->resume_archive, sizeof S->resume_archive, "%s",
             cJSON_IsString(arch) ? arch->valuestring : "");
    S->resume_step = cJSON_IsNumber(step) ? (long long) step->valuedouble : -1;
    S->resume_pending = S->resume_dir[0] != '\0';
    kg_notice("checkpoint restored: step %lld from %s into %s", S->resume_step,
              S->resume_archive, S->resume_dir);
  } else
    kg_notice("no checkpoint restored%s%s", S->restore_error ? ": " : "",
              S->restore_error ? S->restore_error : "");
  if (S->incident) {
    cJSON *c = r ? cJSON_Duplicate(r, 1) : NULL;
    if (!c && S->restore_error) {
      c = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "status", "failed");
      cJSON_AddStringToObject(c, "error", S->restore_error);
    }
    kg_incident_take_checkpoint(S->incident, &c);
    cJSON_Delete(c);
    kg__write_incident(S);
  }
  kg__fire(S, KG_EV_RESTORED);
}

void
kg__guard_start_restore(kg_sup_t *S)
{
  cJSON_Delete(S->restore_result);
  S->restore_result = NULL;
  free(S->restore_error);
  S->restore_error = NULL;
  struct stat st;
  if (!S->incident || stat(S->ckpt_dir, &st) != 0 || !S->ckpt_dir[0]) {
    char buf[PATH_MAX + 64];
    snprintf(buf, sizeof buf, "no checkpoint directory %s", S->ckpt_dir);
    S->restore_error = strdup(buf);
    s_restore_done(S);
    return;
  }
  int64_t t = kg_diagnosis_fault_time(S->diag);
  if (t < 0)
    t = kg_clock_wall_ms();
  char before[32], into[PATH_MAX + 64];
  snprintf(before, sizeof before, "%lld", (long long) t);
  snprintf(into, sizeof into, "%s/restored/%s", S->state_dir, kg_incident_id(S->incident));
  char *argv[] = {S->exe, "ckpt", "resume-prepare", "--dir", S->ckpt_dir, "--before", before,
                  "--incident", (char *) kg_incident_id(S->incident), "--into", into, "--json",
                  NULL};
  kg_notice("restoring the last checkpoint sealed before T=%s from %s", before, S->ckpt_dir);
  s_start_helper(S, &S->ckpt, argv, "checkpoint restore");
  if (!S->ckpt.child) {
    S->restore_error = strdup("unable to start `kguard ckpt resume-prepare`");
    s_restore_done(S);
  }
}

static void
s_helper_read(kg__helper_t *h)
{
  char buf[8192];
  for (;;) {
    ssize_t n = kg_child_read(h->child, 1, buf, sizeof buf);
    if (n <= 0)
      break;
    if (h->out_len + (size_t) n > S_HELPER_OUT_MAX)
      continue;
    char *g = realloc(h->out, h->out_len + (size_t) n + 1);
    if (!g)
      continue;
    h->out = g;
    memcpy(h->out + h->out_len, buf, (size_t) n);
    h->out_len += (size_t) n;
    h->out[h->out_len] = '\0';
  }
  for (;;) {   /* stderr goes to the log only */
    ssize_t n = kg_child_read(h->child, 2, buf, sizeof buf - 1);
    if (n <= 0)
      break;
    buf[n] = '\0';
    kg_info("helper: %s", buf);
  }
}

static void
s_ckpt_finished(kg_sup_t *S)
{
  kg__helper_t *h = &S->ckpt;
  int st = kg_child_status(h->child);
  cJSON *j = h->out ? cJSON_Parse(h->out) : NULL;
  if (cJSON_IsObject(j))
    S->restore_result = j;
  else
    cJSON_Delete(j);
  if (!S->restore_result) {
    char how[64], buf[512];
    kg_child_describe(st, how, sizeof how);
    snprintf(buf, sizeof buf, "`kguard ckpt resume-prepare` failed (%s)", how);
    S->restore_error = strdup(buf);
  }
  kg_child_destroy(&h->child);
  free(h->out);
  h->out = NULL;
  h->out_len = 0;
  if (S->state == KG_ST_RESTORING)
    s_restore_done(S);
}

static void
s_probe_finished(kg_sup_t *S)
{
  kg__helper_t *h = &S->probe;
  cJSON *j = h->out ? cJSON_Parse(h->out) : NULL;
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
  if (S->incident) {
    kg_incident_take_versions(S->incident, &j);
    kg__write_incident(S);
  }
  cJSON_Delete(j);
  kg_child_destroy(&h->child);
  free(h->out);
  h->out = NULL;
  h->out_len = 0;
}

void
kg__guard_helpers_poll(kg_sup_t *S, int fd)
{
  kg__helper_t *hs[2] = {&S->ckpt, &S->probe};
  for (int i = 0; i < 2; i++) {
    kg__helper_t *h = hs[i];
    if (!h->child)
      continue;
    if (fd >= 0 && kg_child_stdout_fd(h->child) != fd)
      continue;
    s_helper_read(h);
    if (kg_child_reap(h->child) == 1) {
      s_helper_read(h);
      if (i == 0)
        s_ckpt_finished(S);
      else
        s_probe_finished(S);
    }
  }
}

void
kg__guard_helpers_timers(kg_sup_t *S, int64_t now)
{
  kg__relay_timers(S, now);   /* the loop's one timer hook for kguard's parts */
  kg__helper_t *hs[2] = {&S->ckpt, &S->probe};
  for (int i = 0; i < 2; i++) {
    if (hs[i]->child && now >= hs[i]->deadline_ms) {
      kg_warning("%s timed out: killed", i == 0 ? "checkpoint restore" : "version probe");
      kg_child_kill_group(hs[i]->child, SIGKILL);
      hs[i]->deadline_ms = now + 5000;
    }
  }
}
