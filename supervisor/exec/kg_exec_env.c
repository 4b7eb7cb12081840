/*  kg_exec_env: the command's environment and the incident record of
    `kguard exec`. */
#include "kg_exec_priv.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_envp.h"
#include "kg_file.h"
#include "kg_log.h"

extern char **environ;

/*  Variables kguard sets itself: never inherited (a nested kguard, a stale
    resume from an outer run). */
static bool
s_overridden(const char *entry, bool agent)
{
  static const char *const names[] = {"PYTHONPATH", "KGUARD_BIN", "KGUARD_STATE_DIR",
                                "KGUARD_CKPT_DIR", "KGUARD_RESUME_DIR", "KGUARD_RESUME_STEP",
                                "KGUARD_RESUME_ARCHIVE", "KGUARD_INCIDENT",
                                "KGUARD_EXEC_GENERATION", "KGUARD_RUN_ID", KG_EXEC_STEP_ENV,
                                "KGUARD_CKPT_LAYOUT", "TORCHELASTIC_ERROR_FILE",
                                "KGUARD_SNAPSHOT_DIR", "KGUARD_RESUME_TIER",
                                "KGUARD_RESUME_DIGEST", NULL};
  /* torchrun's contract, which kguard sets itself when it starts the ranks
     (an outer launcher's must not leak into them). */
  static const char *const ranks[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
                                "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT",
                                "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
                                "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
                                "TORCHELASTIC_ERROR_FILE", NULL};
  return kg_envp_names_one_of(entry, names) || (agent && kg_envp_names_one_of(entry, ranks));
}

void
kg_ex_free_env(char ***envp_p)
{
  if (!*envp_p)
    return;
  for (char **e = *envp_p; *e; e++)
    free(*e);
  free(*envp_p);
  *envp_p = NULL;
}

/*  torchrun's environment contract for local rank r (agent mode), so a
    script runs the same under either launcher. */
static int
s_rank_env(kg_exec_s *E, int r, char ***env, size_t *n, size_t *alloc)
{
  int nodes = E->cfg.nnodes, nproc = E->nranks, rank = E->cfg.node_rank * nproc + r;
  char buf[64];
  int rc = 0;
#define S_INT(name, v)                                                   \
  do {                                                                   \
    snprintf(buf, sizeof buf, "%d", (int) (v));                          \
    rc |= kg_envp_push(env, n, alloc, name, buf);                        \
  } while (0)
  S_INT("RANK", rank);
  S_INT("LOCAL_RANK", r);
  S_INT("WORLD_SIZE", nodes * nproc);
  S_INT("LOCAL_WORLD_SIZE", nproc);
  S_INT("GROUP_RANK", E->cfg.node_rank);
  S_INT("GROUP_WORLD_SIZE", nodes);
  S_INT("ROLE_RANK", rank);
  S_INT("ROLE_WORLD_SIZE", nodes * nproc);
  rc |= kg_envp_push(env, n, alloc, "ROLE_NAME", "default");
  rc |= kg_envp_push(env, n, alloc, "MASTER_ADDR", E->master_addr);
  S_INT("MASTER_PORT", E->master_port);
  S_INT("TORCHELASTIC_RESTART_COUNT", E->generation);
  S_INT("TORCHELASTIC_MAX_RESTARTS", E->cfg.max_restarts);
  rc |= kg_envp_push(env, n, alloc, "TORCHELASTIC_RUN_ID", E->cfg.name);
  /* The store kguard keeps across restarts (each generation's keys under
     its own prefix, by TORCHELASTIC_RESTART_COUNT), or, until it serves,
     one rank 0 brings up on a fresh port (torchrun's c10d way). */
  rc |= kg_envp_push(env, n, alloc, "TORCHELASTIC_USE_AGENT_STORE",
                     E->agent_store ? "True" : "False");
#undef S_INT
  /* As torchrun: one OpenMP thread per rank unless the user said, and
     NCCL's asynchronous error handling on (a rank's device error ends its
     collectives instead of hanging them). */
  if (nproc > 1 && !getenv("OMP_NUM_THREADS"))
    rc |= kg_envp_push(env, n, alloc, "OMP_NUM_THREADS", "1");
  if (!getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING"))
    rc |= kg_envp_push(env, n, alloc, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
  if (!getenv("NCCL_ASYNC_ERROR_HANDLING"))
    rc |= kg_envp_push(env, n, alloc, "NCCL_ASYNC_ERROR_HANDLING", "1");
  return rc;
}

char **
kg_ex_build_env(kg_exec_s *E, int rank)
{
  char **env = NULL;
  size_t n = 0, alloc = 0;
  int rc = 0;
  bool agent = E->mode == KG_EXEC_MODE_AGENT;
  for (char **e = environ; *e && rc == 0; e++) {
    char *eq = strchr(*e, '=');
    if (s_overridden(*e, agent) || !eq)
      continue;
    if (E->cfg.keep > 0 && strncmp(*e, "KGUARD_KEEP=", 12) == 0)
      continue;   /* --keep wins over the environment's */
    if (E->cfg.persist_every > 0 && strncmp(*e, "KGUARD_PERSIST_EVERY=", 21) == 0)
      continue;
    char *name = strndup(*e, (size_t) (eq - *e));
    rc = name ? kg_envp_push(&env, &n, &alloc, name, eq + 1) : -1;
    free(name);
  }
  const char *pp = getenv("PYTHONPATH");
  char buf[PATH_MAX * 2 + 8];
  if (E->python_dir[0]) {
    snprintf(buf, sizeof buf, "%s%s%s", E->python_dir, pp && *pp ? ":" : "", pp ? pp : "");
    rc |= kg_envp_push(&env, &n, &alloc, "PYTHONPATH", buf);
  } else if (pp) {
    rc |= kg_envp_push(&env, &n, &alloc, "PYTHONPATH", pp);
  }
  rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_BIN", E->exe);
  rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_STATE_DIR", E->state_dir);
  if (E->cfg.ckpt_dir)
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_CKPT_DIR", E->cfg.ckpt_dir);
  rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_RUN_ID", E->cfg.name);
  if (E->cfg.keep > 0) {
    snprintf(buf, sizeof buf, "%d", E->cfg.keep);
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_KEEP", buf);
  }
  if (E->cfg.persist_every > 0) {
    snprintf(buf, sizeof buf, "%d", E->cfg.persist_every);
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_PERSIST_EVERY", buf);
  }
  if (E->snapdir)
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_SNAPSHOT_DIR", kg_snapdir_path(E->snapdir));
  /* Multi-node: rank r seals into KGUARD_CKPT_DIR/rank-r and finds its
     restore in KGUARD_RESUME_DIR/rank-r (kguard.save/resume join it). */
  if (E->multi)
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_CKPT_LAYOUT", "rank-dirs");
  snprintf(buf, sizeof buf, "%d", E->generation);
  rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_EXEC_GENERATION", buf);
  if (E->steps)
    rc |= kg_envp_push(&env, &n, &alloc, KG_EXEC_STEP_ENV, kg_exec_stepsock_env(E->steps));
  /* torchrun's agent, or the rank's @record, writes its failure here. */
  rc |= kg_envp_push(&env, &n, &alloc, "TORCHELASTIC_ERROR_FILE", E->ranks[rank].error_file);
  if (agent)
    rc |= s_rank_env(E, rank, &env, &n, &alloc);
  if (E->resume_step >= 0 && E->resume_dir) {
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_RESUME_DIR", E->resume_dir);
    snprintf(buf, sizeof buf, "%lld", (long long) E->resume_step);
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_RESUME_STEP", buf);
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_RESUME_ARCHIVE", E->resume_archive);
    if (E->resume_tier[0])
      rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_RESUME_TIER", E->resume_tier);
    if (E->incident)
      rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_INCIDENT", kg_incident_id(E->incident));
  }
  if (rc)
    kg_ex_free_env(&env);
  return env;
}

/*  The faulting rank's index (the first local one when unknown). */
static int
s_fault_rank(const kg_exec_s *E)
{
  return E->fault_rank >= 0 && E->fault_rank < E->nranks ? E->fault_rank : 0;
}

/*  The error file of this start (torchrun's agent's, or the faulting
    rank's @record), if one was written. */
static cJSON *
s_error_file(kg_exec_s *E)
{
  char *text = NULL;
  size_t len = 0;
  if (kg_file_read(E->ranks[s_fault_rank(E)].error_file, 1 << 20, &text, &len) != 0)
    return NULL;
  cJSON *j = cJSON_ParseWithLength(text, len);
  free(text);
  return j;
}

void
kg_ex_incident_begin(kg_exec_s *E, const char *decision, const char *reason)
{
  kg_incident_destroy(&E->incident);
  E->incident = kg_incident_new(kg_clock_wall_ms());
  if (!E->incident)
    return;
  E->incident_open = true;
  E->incident_said = false;
  kg_incident_set_diagnosis(E->incident, E->diag);
  kg_incident_set_last_step(E->incident, E->pace.last_step);
  if (E->leader_reaped) {
    int st = E->leader_status;
    kg_incident_set_exit(E->incident, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                         WIFSIGNALED(st) ? WTERMSIG(st) : -1);
  } else {
    kg_incident_set_exit(E->incident, -1, -1);
  }
  kg_incident_set_env(E->incident, E->ranks[s_fault_rank(E)].envp);
  kg_incident_set_restarts(E->incident, kg_policy_restart_count(E->policy));
  kg_incident_set_policy(E->incident, decision, reason, E->delay_ms);
  cJSON *j = kg_incident_json(E->incident);
  cJSON *x = cJSON_AddObjectToObject(j, "exec");
  cJSON *argv = cJSON_AddArrayToObject(x, "command");
  for (char **a = E->cfg.argv; *a; a++)
    cJSON_AddItemToArray(argv, cJSON_CreateString(*a));
  cJSON_AddStringToObject(x, "name", E->cfg.name);
  cJSON_AddNumberToObject(x, "generation", E->generation - 1);
  cJSON_AddNumberToObject(x, "pgid", E->ranks[s_fault_rank(E)].pgid);
  if (E->mode == KG_EXEC_MODE_AGENT)
    cJSON_AddNumberToObject(x, "rank", E->cfg.node_rank * E->nranks + s_fault_rank(E));
  cJSON_AddStringToObject(x, "signature", E->signature);
  cJSON_AddItemToObject(x, "exits", cJSON_Duplicate(E->exits, true));
  cJSON *ef = s_error_file(E);
  cJSON_AddItemToObject(x, "torchelastic_error_file", ef ? ef : cJSON_CreateNull());
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  cJSON_AddStringToObject(x, "host", host);
}

void
kg_ex_incident_refresh(kg_exec_s *E)
{
  if (!E->incident || !E->incident_open)
    return;
  cJSON *x = cJSON_GetObjectItemCaseSensitive(kg_incident_json(E->incident), "exec");
  if (!x)
    return;
  cJSON_ReplaceItemInObject(x, "exits", cJSON_Duplicate(E->exits, true));
  cJSON *ef = s_error_file(E);
  cJSON_ReplaceItemInObject(x, "torchelastic_error_file", ef ? ef : cJSON_CreateNull());
  if (E->leader_reaped) {
    int st = E->leader_status;
    kg_incident_set_exit(E->incident, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                         WIFSIGNALED(st) ? WTERMSIG(st) : -1);
  }
  kg_ex_incident_write(E);
}

void
kg_ex_incident_write(kg_exec_s *E)
{
  if (!E->incident)
    return;
  char dir[PATH_MAX + 16], *path = NULL;
  snprintf(dir, sizeof dir, "%s/incidents", E->state_dir);
  int rc = kg_incident_write(E->incident, dir, &path);
  if (rc == 0 && !E->incident_said)
    kg_notice("exec: incident %s", path);
  if (rc == 0)
    E->incident_said = true;
  else
    kg_error("exec: cannot write the incident into %s", dir);
  free(path);
}
