/*  kg_exec_restart: the run's checkpoint at its start (one node: the same
    resume-prepare as after a fault, the start's time as T; several: the
    coordinator's start decision, taken as after a fault), and what
    follows a proven fault in `kguard exec`: choosing
    and restoring the checkpoint (one node: resume-prepare, overlapped with
    the teardown; several: the coordinator's decision, then this node's
    quarantine and restores), the decisions that end a job, and the check
    that the devices are free before the ranks start again. Called from
    the decisions (kg_exec.c). */
#include "kg_exec_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_exit.h"
#include "kg_exec_start.h"
#include "kg_log.h"
#include "kg_throughput.h"

#define S_DEVMEM_POLL_MS 20   /* asking the driver again while memory is held */

static void s_multi_restore_step(kg_exec_s *E);

/*  The start's "incident" for resume-prepare: one per run name, so that
    its marker (which keeps the resumed checkpoint from being pruned while
    the ranks may read it) is replaced at the next start, never piled up.
    resume-prepare takes [A-Za-z0-9._:-]; other bytes of the name become _. */
static void
s_start_id(const kg_exec_s *E, char *buf, size_t len)
{
  int n = snprintf(buf, len, "exec-start-%s", E->cfg.name);
  for (int i = 11; i < n && (size_t) i < len; i++) {
    char c = buf[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
              || c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok)
      buf[i] = '_';
  }
}

void
kg_ex_start_choose(kg_exec_s *E)
{
  char before[32], id[160], into[PATH_MAX + 192];
  snprintf(before, sizeof before, "%" PRId64, E->started_wall_ms);
  s_start_id(E, id, sizeof id);
  snprintf(into, sizeof into, "%s/restored/%s", E->state_dir, id);
  char *argv[] = {E->exe, "ckpt", "resume-prepare", "--dir", (char *) E->cfg.ckpt_dir,
                  "--before", before, "--incident", id, "--into", into,
                  "--run", (char *) E->cfg.name, "--json", NULL};
  E->starting = true;
  kg_ex_enter(E, KG_EX_RESTORING);
  if (kg_ex_start_helper(E, argv) != 0) {
    kg_error("exec: cannot start `kguard ckpt resume-prepare` to find run %s's last "
             "checkpoint: exit %d (retryable)", E->cfg.name, KG_EXEC_EXIT_RETRYABLE);
    E->starting = false;
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
  }
}

/*  The start-time choice answered: say it in one line, and start the ranks
    from it, or from step 0, or stop (kg_exec_start.h). */
static void
s_start_done(kg_exec_s *E)
{
  E->starting = false;
  int st = kg_child_status(E->helper);
  kg_child_destroy(&E->helper);
  cJSON *j = E->helper_out ? cJSON_Parse(E->helper_out) : NULL;
  free(E->helper_out);
  E->helper_out = NULL;
  E->helper_len = 0;
  char line[2048];
  int64_t step = -1;
  kg_exec_start_t v = kg_exec_start_judge(j, E->cfg.name, E->cfg.ckpt_dir, kg_clock_wall_ms(),
                                          &step, line, sizeof line);
  if (v == KG_EXEC_START_RESUME) {
    const cJSON *dir = cJSON_GetObjectItemCaseSensitive(j, "dir");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(j, "archive");
    E->resume_dir = strdup(cJSON_IsString(dir) ? dir->valuestring : "");
    E->resume_archive = strdup(arch->valuestring);
    E->resume_step = step;
  }
  cJSON_Delete(j);
  if (v == KG_EXEC_START_FAILED) {
    char how[64];
    kg_child_describe(st, how, sizeof how);
    kg_error("exec: %s (%s): exit %d (retryable)", line, how, KG_EXEC_EXIT_RETRYABLE);
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
    return;
  }
  if (v == KG_EXEC_START_UNVERIFIED) {
    kg_error("exec: %s; exit %d (permanent)", line, KG_EXEC_EXIT_GAVE_UP);
    kg_ex_done(E, KG_EXEC_OUT_GAVE_UP, 0);
    return;
  }
  kg_notice("exec: %s", line);
  if (E->preempted) {
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
    return;
  }
  int rc = kg_ex_start_command(E);
  if (rc == -ENOENT || rc == -EACCES)
    kg_ex_done(E, KG_EXEC_OUT_COMMAND_FAILED, 127 << 8);   /* COMMAND cannot be run: 127 */
  else if (rc != 0)
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
  else
    kg_ex_enter(E, KG_EX_RUNNING);
}

void
kg_ex_restore(kg_exec_s *E)
{
  free(E->resume_dir);
  free(E->resume_archive);
  E->resume_dir = E->resume_archive = NULL;
  E->resume_tier[0] = '\0';
  E->resume_step = -1;
  E->restored = false;
  if (!E->cfg.ckpt_dir) {
    kg_notice("exec: no --checkpoints: the command starts over");
    E->restored = true;
    if (kg_ex_state(E) != KG_EX_STOPPING)
      kg_ex_enter(E, KG_EX_BACKOFF);
    return;
  }
  char before[32], into[PATH_MAX + 96];
  snprintf(before, sizeof before, "%lld", (long long) E->fault_wall_ms);
  snprintf(into, sizeof into, "%s/restored/%s", E->state_dir, kg_incident_id(E->incident));
  /* Only this run's checkpoints: the run id its command seals with
     (KGUARD_RUN_ID, kg_exec_env.c). */
  char *argv[] = {E->exe, "ckpt", "resume-prepare", "--dir", (char *) E->cfg.ckpt_dir,
                  "--before", before, "--incident", (char *) kg_incident_id(E->incident),
                  "--into", into, "--run", (char *) E->cfg.name, "--json",
                  E->snapdir ? "--memory" : NULL,
                  E->snapdir ? (char *) kg_snapdir_path(E->snapdir) : NULL, NULL};
  char when[48];
  kg_notice("exec: restoring the last state sealed before the fault's first sign (%s) "
            "from %s%s", kg_clock_local_ms(E->fault_wall_ms, when, sizeof when),
            E->snapdir ? "kguard's memory (kguard.snapshot) or " : "", E->cfg.ckpt_dir);
  if (kg_ex_start_helper(E, argv) != 0) {
    kg_error("exec: cannot start `kguard ckpt resume-prepare`");
    kg_ex_finish(E, KG_EXEC_OUT_RETRYABLE);
    return;
  }
  if (kg_ex_state(E) != KG_EX_STOPPING)
    kg_ex_enter(E, KG_EX_RESTORING);
}

/*  Snapshots in memory passed over (tampered, sealed after the fault's
    first sign): named, because the restore then comes from older state. */
static void
s_say_memory_skips(const cJSON *j)
{
  const cJSON *s, *skipped = cJSON_GetObjectItemCaseSensitive(j, "skipped");
  cJSON_ArrayForEach(s, skipped) {
    const cJSON *tier = cJSON_GetObjectItemCaseSensitive(s, "tier");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(s, "archive");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(s, "reason");
    if (cJSON_IsString(tier) && strcmp(tier->valuestring, "memory") == 0 && cJSON_IsString(arch))
      kg_notice("exec: skipped the snapshot %s in memory: %s", arch->valuestring,
                cJSON_IsString(why) ? why->valuestring : "not usable");
  }
}

/*  resume-prepare restored a checkpoint (its JSON answer j): the ranks
    start from it, unless this is a --fresh run and it was sealed before the
    run began. */
static void
s_take_restored(kg_exec_s *E, const cJSON *j)
{
  const cJSON *dir = cJSON_GetObjectItemCaseSensitive(j, "dir");
  const cJSON *arch = cJSON_GetObjectItemCaseSensitive(j, "archive");
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
  const cJSON *at = cJSON_GetObjectItemCaseSensitive(j, "sealed_at_ms");
  if (E->cfg.fresh && cJSON_IsNumber(at) && at->valuedouble < (double) E->started_wall_ms) {
    /* A run started over with --fresh never goes back to what was sealed
       before it. */
    kg_notice("exec: the last checkpoint before the fault (step %lld) was sealed before "
              "this --fresh run began: the command starts over",
              cJSON_IsNumber(step) ? (long long) step->valuedouble : -1LL);
  } else if (cJSON_IsString(dir) && cJSON_IsString(arch) && cJSON_IsNumber(step)) {
    E->resume_dir = strdup(dir->valuestring);
    E->resume_archive = strdup(arch->valuestring);
    E->resume_step = (int64_t) step->valuedouble;
    const cJSON *tier = cJSON_GetObjectItemCaseSensitive(j, "tier");
    snprintf(E->resume_tier, sizeof E->resume_tier, "%s",
             cJSON_IsString(tier) ? tier->valuestring : "disk");
    s_say_memory_skips(j);
    kg_notice("exec: restored step %lld from %s%s", (long long) E->resume_step,
              strcmp(E->resume_tier, "memory") == 0 ? "memory, " : "", arch->valuestring);
  }
}

/*  resume-prepare restored nothing (its JSON answer j): true when the
    command may start over (nothing was sealed before the fault); false,
    said, when checkpoints exist that none verifies, which a start over
    would drop without a word. */
static bool
s_nothing_restored(kg_exec_s *E, const cJSON *j)
{
  char why[1024];
  int unverified = kg_exec_unverified(j, why, sizeof why);
  if (unverified > 0) {
    kg_error("exec: %d checkpoint(s) sealed before the fault exist in %s, but none verifies "
             "(first: %s): kguard does not start the training over and lose them; make them "
             "verify (the signing key), or move them away to start over; exit %d "
             "(permanent)", unverified, E->cfg.ckpt_dir, why, KG_EXEC_EXIT_GAVE_UP);
    return false;
  }
  kg_notice("exec: no checkpoint was sealed before the fault: the command starts over");
  return true;
}

void
kg_ex_helper_done(kg_exec_s *E)
{
  if (E->starting) {
    s_start_done(E);
    return;
  }
  int st = kg_child_status(E->helper);
  if (E->multi) {
    kg_child_destroy(&E->helper);
    free(E->helper_out);
    E->helper_out = NULL;
    E->helper_len = 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      kg_error("exec: the agreed checkpoint does not restore on this node: exit %d "
               "(retryable)", KG_EXEC_EXIT_RETRYABLE);
      kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
      return;
    }
    s_multi_restore_step(E);
    return;
  }
  kg_child_destroy(&E->helper);
  cJSON *j = E->helper_out ? cJSON_Parse(E->helper_out) : NULL;
  free(E->helper_out);
  E->helper_out = NULL;
  E->helper_len = 0;
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(j, "status");
  if (!cJSON_IsString(status) || strcmp(status->valuestring, "error") == 0) {
    char how[64];
    kg_child_describe(st, how, sizeof how);
    kg_error("exec: `kguard ckpt resume-prepare` failed (%s): infrastructure failure, "
             "exit %d (retryable)", how, KG_EXEC_EXIT_RETRYABLE);
    cJSON_Delete(j);
    kg_ex_finish(E, KG_EXEC_OUT_RETRYABLE);
    return;
  }
  if (strcmp(status->valuestring, "restored") == 0) {
    s_take_restored(E, j);
  } else if (!s_nothing_restored(E, j)) {
    kg_incident_take_checkpoint(E->incident, &j);
    kg_ex_incident_write(E);
    kg_ex_finish(E, KG_EXEC_OUT_GAVE_UP);
    return;
  }
  kg_incident_take_checkpoint(E->incident, &j);
  kg_ex_incident_write(E);
  E->restored = true;
  if (E->preempted) {
    kg_ex_finish(E, KG_EXEC_OUT_RETRYABLE);
    return;
  }
  /* Still stopping: the start waits for the tree to be gone. */
  if (kg_ex_state(E) != KG_EX_STOPPING)
    kg_ex_enter(E, KG_EX_BACKOFF);
}

/*  Restore this node's ranks one after the other, then start. */
static void
s_multi_restore_step(kg_exec_s *E)
{
  int rc = kg_ex_node_restore_next(E);
  if (rc > 0) {
    kg_ex_enter(E, KG_EX_RESTORING);
  } else if (rc < 0) {
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
  } else if (E->preempted) {
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
  } else {
    if (E->resume_archive) {
      E->resume_dir = strdup(E->restored_base);
      int memory = 0;
      const cJSON *t;
      cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(E->decision, "tiers")) {
        int r = atoi(t->string);
        if (cJSON_IsString(t) && strcmp(t->valuestring, "memory") == 0
            && r / E->nranks == E->cfg.node_rank)
          memory++;
      }
      /* The tier of the node's ranks (each rank's own is in its pointer). */
      snprintf(E->resume_tier, sizeof E->resume_tier, "%s", memory ? "memory" : "disk");
      kg_notice("exec: this node's ranks restored at step %lld (%d of %d from memory)",
                (long long) E->resume_step, memory, E->nranks);
    }
    kg_ex_enter(E, KG_EX_BACKOFF);
  }
}

/*  The job ends with the decision's code c; a decision that names a node
    to drain (a GPU there needs a reset) ends it for other hardware, and
    the exit summary repeats its words on every node. */
static void
s_done_decided(kg_exec_s *E, int c)
{
  const cJSON *why = cJSON_GetObjectItemCaseSensitive(E->decision, "reason");
  if (c == KG_EXEC_EXIT_RETRYABLE && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
                                         E->decision, "drain"))) {
    snprintf(E->hw_line, sizeof E->hw_line, "%s",
             cJSON_IsString(why) ? why->valuestring : "a GPU of the job needs a reset");
    kg_ex_done(E, KG_EXEC_OUT_HARDWARE, 0);
  } else {
    kg_ex_done_code(E, c);
  }
}

/*  The coordinator ends the job while this node still runs (a node lost):
    stop the tree, then exit with the job's code. */
void
kg_ex_end_early(kg_exec_s *E)
{
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(E->decision, "code");
  const cJSON *why = cJSON_GetObjectItemCaseSensitive(E->decision, "reason");
  int c = cJSON_IsNumber(code) ? code->valueint : KG_EXEC_EXIT_RETRYABLE;
  kg_notice("exec: the coordinator ends the job (%s): exit %d",
            cJSON_IsString(why) ? why->valuestring : "no reason given", c);
  s_done_decided(E, c);                /* records the outcome and the code  */
  kg_ex_kill_tree(E, SIGTERM);
  E->stop_grace_ms = E->cfg.kill_grace_ms;
  kg_ex_enter(E, KG_EX_STOPPING);
  kg_ex_plan(E, KG_EX_AFTER_EV_STOP_EXIT);
  E->killed = false;
  E->preempted = false;
  E->outcome_status = E->outcome == KG_EXEC_OUT_COMMAND_FAILED ? ((c & 0xff) << 8) : 0;
  if (kg_ex_group_gone(E))
    kg_ex_fire(E, KG_EXE_GROUP_GONE, 0);
}

/*  The coordinator's decision, after this node's tree stopped. */
void
kg_ex_decision(kg_exec_s *E)
{
  const cJSON *d = E->decision;
  const cJSON *action = cJSON_GetObjectItemCaseSensitive(d, "action");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(d, "code");
  const cJSON *gen = cJSON_GetObjectItemCaseSensitive(d, "gen");
  const cJSON *root = cJSON_GetObjectItemCaseSensitive(d, "root");
  char *rtext = root ? cJSON_PrintUnformatted(root) : NULL;
  const cJSON *why = cJSON_GetObjectItemCaseSensitive(d, "reason");
  bool start = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "start"));
  if (start && cJSON_IsString(why))   /* the start's choice, in one line */
    kg_notice("exec: %s", why->valuestring);
  else
    kg_notice("exec: coordinator decided %s%s%s%s%s",
              cJSON_IsString(action) ? action->valuestring : "?",
              rtext ? ", root cause " : "", rtext ? rtext : "", cJSON_IsString(why) ? ": " : "",
              cJSON_IsString(why) ? why->valuestring : "");
  free(rtext);
  if (!cJSON_IsString(action) || strcmp(action->valuestring, "restart") != 0) {
    s_done_decided(E, cJSON_IsNumber(code) ? code->valueint : KG_EXEC_EXIT_RETRYABLE);
    return;
  }
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(d, "step");
  const cJSON *inc = cJSON_GetObjectItemCaseSensitive(d, "incident");
  const cJSON *delay = cJSON_GetObjectItemCaseSensitive(d, "delay_ms");
  free(E->resume_dir);
  free(E->resume_archive);
  E->resume_dir = E->resume_archive = NULL;
  E->resume_tier[0] = '\0';
  E->resume_step = cJSON_IsNumber(step) ? (int64_t) step->valuedouble : -1;
  E->delay_ms = cJSON_IsNumber(delay) ? (int64_t) delay->valuedouble : 0;
  const cJSON *port = cJSON_GetObjectItemCaseSensitive(d, "master_port");
  const cJSON *store = cJSON_GetObjectItemCaseSensitive(d, "store_port");
  if (cJSON_IsNumber(port))
    E->master_port = port->valueint;
  E->store_port = cJSON_IsNumber(store) ? store->valueint : 0;
  if (cJSON_IsNumber(gen))
    E->generation = gen->valueint;
  E->sticky_report = false;
  snprintf(E->restored_base, sizeof E->restored_base, "%s/restored/%s-gen%d", E->state_dir,
           cJSON_IsString(inc) ? inc->valuestring : "job", E->generation);
  E->restore_rank = 0;
  s_multi_restore_step(E);
}

/*  Before the ranks start again on the same devices: has every process of
    the last generation let go of its device memory? When not yet, the
    deadline is re-armed (a bounded wait: KG_EXEC_DEVMEM_WAIT_MS, then a
    warning and the start). Without a driver to ask, a no-op that says so
    once. */
bool
kg_ex_devices_free(kg_exec_s *E)
{
  int64_t now = kg_ex_now(E);
  pid_t pids[256];
  int n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, E->exits) {
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(e, "pid");
    if (cJSON_IsNumber(pid) && n < 256)
      pids[n++] = (pid_t) pid->valueint;
  }
  int held = kg_exec_devmem_held(E->devmem, pids, n);
  if (held < 0) {
    if (!E->devmem_said)
      kg_notice("exec: no GPU driver to ask here (NVML): the check that the last "
                "generation's device memory was released is a no-op");
    E->devmem_said = true;
    return true;
  }
  if (held == 0) {
    E->devmem_until = 0;
    return true;
  }
  if (E->devmem_until == 0) {
    E->devmem_until = now + KG_EXEC_DEVMEM_WAIT_MS;
    kg_notice("exec: %d process(es) of the last generation still hold device memory: "
              "waiting for the driver to release it (at most %d s)", held,
              KG_EXEC_DEVMEM_WAIT_MS / 1000);
  }
  if (now >= E->devmem_until) {
    kg_warning("exec: device memory of %d ended process(es) still not released after %d s: "
               "starting anyway", held, KG_EXEC_DEVMEM_WAIT_MS / 1000);
    E->devmem_until = 0;
    return true;
  }
  kg_fsm_set_deadline(E->fsm, now + S_DEVMEM_POLL_MS);
  return false;
}

