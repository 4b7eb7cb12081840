/*  kg_sup_kenv: the inner kernel's argv (its connection file in place) and
    environment: kguard's own environment, PYTHONPATH prefixed with kguard's
    Python package, KGUARD_BIN/STATE_DIR/CKPT_DIR, JPY_PARENT_PID = kguard,
    the diagnostic variables of a diagnostic restart, the KGUARD_RESUME_* of
    a restore. Variables kguard sets are never inherited from its own
    environment (a nested kguard, a stale resume).
*/
#include "kg_sup_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_envp.h"

extern char **environ;

/* ------------------------------------------------------------------------
   Environment of the inner kernel. */

static bool
s_env_overridden(const char *entry)
{
  static const char *const names[] = {"PYTHONPATH", "KGUARD_BIN", "KGUARD_STATE_DIR",
                                "KGUARD_CKPT_DIR", "JPY_PARENT_PID", "KGUARD_RESUME_DIR",
                                "KGUARD_RESUME_STEP", "KGUARD_RESUME_ARCHIVE",
                                "KGUARD_RESUME_DIGEST", "KGUARD_RESUME_TIER",
                                "KGUARD_SNAPSHOT_DIR",
                                "KGUARD_INCIDENT", "KGUARD_DIAGNOSTIC",
                                /* the connection-file fix (s_env_frontend) */
                                "KGUARD_FRONTEND_CONNECTION_FILE", "KGUARD_USER_PYTHONSTARTUP",
                                "PYTHONSTARTUP", "KGUARD_STANDBY", "KGUARD_HANDOVER_FILE",
                                NULL};
  return kg_envp_names_one_of(entry, names);
}

/*  The kernel must report kguard's frontend connection file, never its own
    (python/kguard/connection.py). KGUARD_FRONTEND_CONNECTION_FILE names it
    (absolute); PYTHONSTARTUP runs kguard/ipython_startup.py, which applies
    it in IPython kernels and then runs the user's own PYTHONSTARTUP, passed
    on as KGUARD_USER_PYTHONSTARTUP (a nested kguard passes the original on,
    never its own startup file, which would run itself). Returns 0 or -1. */
static int
s_env_frontend(char ***env, size_t *n, size_t *alloc, kg_sup_t *S)
{
  int rc = 0;
  char abs[PATH_MAX];
  if (realpath(S->cfg->conn_path, abs))
    rc |= kg_envp_push(env, n, alloc, "KGUARD_FRONTEND_CONNECTION_FILE", abs);
  else if (S->cfg->conn_path[0] == '/')
    rc |= kg_envp_push(env, n, alloc, "KGUARD_FRONTEND_CONNECTION_FILE", S->cfg->conn_path);
  const char *user = getenv("PYTHONSTARTUP");
  const char *ours = "/kguard/ipython_startup.py";
  size_t ul = user ? strlen(user) : 0, ol = strlen(ours);
  if (user && ul >= ol && strcmp(user + ul - ol, ours) == 0)
    user = getenv("KGUARD_USER_PYTHONSTARTUP");
  if (user && *user)
    rc |= kg_envp_push(env, n, alloc, "KGUARD_USER_PYTHONSTARTUP", user);
  if (S->cfg->python_dir[0]) {
    char startup[PATH_MAX + 64];
    snprintf(startup, sizeof startup, "%s%s", S->cfg->python_dir, ours);
    rc |= kg_envp_push(env, n, alloc, "PYTHONSTARTUP", startup);
  } else if (user && *user)
    rc |= kg_envp_push(env, n, alloc, "PYTHONSTARTUP", user);
  return rc;
}

/*  The variables of a restore for the next kernel (KGUARD_RESUME_DIR,
    _STEP, _ARCHIVE, _DIGEST, and KGUARD_INCIDENT), appended to *env;
    nothing when no restore is pending. 0, or -1 on allocation failure. */
static int
s_push_resume(kg_sup_t *S, char ***env, size_t *n, size_t *alloc)
{
  if (!kg_restore_pending(S->restore))
    return 0;
  char step[32];
  snprintf(step, sizeof step, "%lld", kg_restore_step(S->restore));
  int rc = kg_envp_push(env, n, alloc, "KGUARD_RESUME_DIR", kg_restore_dir(S->restore));
  rc |= kg_envp_push(env, n, alloc, "KGUARD_RESUME_STEP", step);
  rc |= kg_envp_push(env, n, alloc, "KGUARD_RESUME_ARCHIVE", kg_restore_archive(S->restore));
  /*  The digest kguard verified: kguard.resume() refuses an archive that
      differs, and reads each chunk once instead of checking it again. */
  const char *dg = kg_restore_digest(S->restore);
  if (dg)
    rc |= kg_envp_push(env, n, alloc, "KGUARD_RESUME_DIGEST", dg);
  const char *tier = kg_restore_tier(S->restore);
  rc |= kg_envp_push(env, n, alloc, "KGUARD_RESUME_TIER", tier ? tier : "disk");
  if (kg__incident_id(&S->incidents))
    rc |= kg_envp_push(env, n, alloc, "KGUARD_INCIDENT", kg__incident_id(&S->incidents));
  return rc;
}

char **
kg__resume_envp(kg_sup_t *S)
{
  char **env = kg_envp_copy(NULL, 0);   /* an empty array, not NULL */
  size_t n = 0, alloc = 0;              /* the first push grows it */
  if (env && s_push_resume(S, &env, &n, &alloc) != 0)
    kg_envp_free(&env);
  return env;
}

/*  handover: NULL for the kernel about to run, else the standby's file. */
static void
s_env(kg_sup_t *S, const char *handover, char ***envp_p)
{
  char **env = NULL;
  size_t n = 0, alloc = 0;
  int rc = 0;
  for (char **e = environ; *e && rc == 0; e++) {
    if (s_env_overridden(*e))
      continue;
    char *eq = strchr(*e, '=');
    if (!eq)
      continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int) (eq - *e), *e);
    /* A diagnostic run adds these; other runs keep only what the user set. */
    rc = kg_envp_push(&env, &n, &alloc, name, eq + 1);
  }
  const char *pp = getenv("PYTHONPATH");
  char buf[PATH_MAX * 2];
  if (S->cfg->python_dir[0]) {
    snprintf(buf, sizeof buf, "%s%s%s", S->cfg->python_dir, pp && *pp ? ":" : "", pp ? pp : "");
    rc |= kg_envp_push(&env, &n, &alloc, "PYTHONPATH", buf);
  } else if (pp)
    rc |= kg_envp_push(&env, &n, &alloc, "PYTHONPATH", pp);
  rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_BIN", S->cfg->exe);
  rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_STATE_DIR", S->cfg->state_dir);
  rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_CKPT_DIR", S->cfg->ckpt_dir);
  if (S->snapdir)
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_SNAPSHOT_DIR", kg_snapdir_path(S->snapdir));
  snprintf(buf, sizeof buf, "%ld", (long) getpid());
  rc |= kg_envp_push(&env, &n, &alloc, "JPY_PARENT_PID", buf);
  rc |= s_env_frontend(&env, &n, &alloc, S);
  if (handover) {
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_STANDBY", "1");
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_HANDOVER_FILE", handover);
  }
  if (S->diagnostic && !handover) {
    rc |= kg_envp_push(&env, &n, &alloc, "KGUARD_DIAGNOSTIC", "1");
    if (S->backend != KG_BACKEND_ROCM && !getenv("CUDA_LAUNCH_BLOCKING"))
      rc |= kg_envp_push(&env, &n, &alloc, "CUDA_LAUNCH_BLOCKING", "1");
    if (S->backend != KG_BACKEND_CUDA) {
      if (!getenv("AMD_SERIALIZE_KERNEL"))
        rc |= kg_envp_push(&env, &n, &alloc, "AMD_SERIALIZE_KERNEL", "3");
      if (S->backend == KG_BACKEND_ROCM && !getenv("HIP_LAUNCH_BLOCKING"))
        rc |= kg_envp_push(&env, &n, &alloc, "HIP_LAUNCH_BLOCKING", "1");
    }
  }
  if (!handover)   /* the standby gets them at its promotion (kg_sup_standby.c) */
    rc |= s_push_resume(S, &env, &n, &alloc);
  if (rc)
    kg_envp_free(&env);
  *envp_p = env;
}

void
kg__guard_env(kg_sup_t *S, char ***envp_p)
{
  s_env(S, NULL, envp_p);
}

void
kg__guard_env_standby(kg_sup_t *S, const char *handover, char ***envp_p)
{
  s_env(S, handover, envp_p);
}

/* ------------------------------------------------------------------------
   The inner kernel's argv. */

/*  Replace every occurrence of pattern in a with repl (new string). */
static char *
s_replace(const char *a, const char *pattern, const char *repl)
{
  size_t pl = strlen(pattern), rl = strlen(repl), count = 0;
  for (const char *h = a; pl && (h = strstr(h, pattern)); h += pl)
    count++;
  char *out = malloc(strlen(a) + count * rl + 1);
  if (!out)
    return NULL;
  char *o = out;
  const char *h;
  while (pl && (h = strstr(a, pattern))) {
    memcpy(o, a, (size_t) (h - a));
    o += h - a;
    memcpy(o, repl, rl);
    o += rl;
    a = h + pl;
  }
  strcpy(o, a);
  return out;
}

/*  jupyter_client formats the WHOLE kernelspec argv, so the inner part
    arrives with the frontend's path already in place of {connection_file}:
    both forms are replaced (kg_sup_priv.h). */
char **
kg__kernel_argv(kg_sup_t *S, const char *conn_path)
{
  char **argv = calloc(S->cfg->inner_argc + 1, sizeof *argv);
  if (!argv)
    return NULL;
  for (size_t i = 0; i < S->cfg->inner_argc; i++) {
    char *a = s_replace(S->cfg->inner_argv[i], "{connection_file}", conn_path);
    argv[i] = a ? s_replace(a, S->cfg->conn_path, conn_path) : NULL;
    free(a);
    if (!argv[i]) {
      kg__free_envp(&argv);
      return NULL;
    }
  }
  return argv;
}
