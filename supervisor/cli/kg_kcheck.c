/*  kg_kcheck: whether a kernelspec can start here (see kg_kcheck.h). */
#include "kg_kcheck.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_doctor_facts.h"
#include "kg_envp.h"
#include "kg_error.h"
#include "kg_file.h"

extern char **environ;

/*  How long a Python may take to say whether it can import a module. */
#define S_MODULE_TIMEOUT_MS 15000

static const char *
s_base(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static const char *
s_arg(const kg_kernelspec_t *spec, int i)
{
  const cJSON *a = cJSON_GetArrayItem(spec->argv, i);
  return a ? a->valuestring : NULL;
}

/*  0 when path is a file this user may execute, else -errno. */
static int
s_executable(const char *path)
{
  struct stat st;
  if (stat(path, &st) != 0)
    return -errno;
  if (S_ISDIR(st.st_mode))
    return -EISDIR;
  if (access(path, X_OK) != 0)
    return -errno;
  return 0;
}

int
kg_kcheck_program(const char *prog, const char *path_env, char *out, size_t len)
{
  if (strchr(prog, '/')) {
    snprintf(out, len, "%s", prog);
    return s_executable(prog);
  }
  if (!path_env)
    path_env = "/usr/local/bin:/usr/bin:/bin";
  int first = -ENOENT;
  for (const char *p = path_env;;) {
    const char *colon = strchr(p, ':');
    size_t n = colon ? (size_t) (colon - p) : strlen(p);
    char cand[PATH_MAX];
    if (snprintf(cand, sizeof cand, "%.*s%s%s", (int) n, p, n ? "/" : "", prog)
        < (int) sizeof cand) {
      int rc = s_executable(cand);
      if (rc == 0) {
        snprintf(out, len, "%s", cand);
        return 0;
      }
      if (rc != -ENOENT && rc != -ENOTDIR && first == -ENOENT)
        first = rc;   /* found but not runnable: say so, as execvp does */
    }
    if (!colon)
      break;
    p = colon + 1;
  }
  return first;
}

/*  The spec's env over ours (the environment the kernel will get). New
    NULL-terminated array, NULL on allocation failure. */
static char **
s_env(const kg_kernelspec_t *spec)
{
  char **env = NULL;
  size_t n = 0, alloc = 0;
  int rc = 0;
  for (char **e = environ; *e && rc == 0; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || (size_t) (eq - *e) >= 256)
      continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int) (eq - *e), *e);
    if (!cJSON_GetObjectItemCaseSensitive(spec->env, name))
      rc = kg_envp_push(&env, &n, &alloc, name, eq + 1);
  }
  const cJSON *v;
  cJSON_ArrayForEach(v, spec->env) if (rc == 0) rc = kg_envp_push(&env, &n, &alloc, v->string,
                                                                  v->valuestring);
  if (rc != 0 || !env)
    kg_envp_free(&env);
  return env;
}

/*  The PATH the kernel will search: the spec's, else ours. */
static const char *
s_path(const kg_kernelspec_t *spec)
{
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(spec->env, "PATH");
  return cJSON_IsString(p) ? p->valuestring : getenv("PATH");
}

/*  For `PYTHON [-opts] -m MODULE ...` starting at argv index from: MODULE
    must be importable by prog (resolved). Returns 0, or KG_ESPAWN with a
    message. */
static int
s_module(const kg_kernelspec_t *spec, int from, const char *prog, char *err, size_t errlen)
{
  if (strncmp(s_base(prog), "python", 6) != 0)
    return 0;
  const char *module = NULL;
  for (int i = from + 1; s_arg(spec, i) && s_arg(spec, i)[0] == '-'; i++)
    if (strcmp(s_arg(spec, i), "-m") == 0) {
      module = s_arg(spec, i + 1);
      break;
    }
  if (!module)
    return 0;
  static const char code[] =
    "import importlib.util, sys\n"
    "try:\n"
    "    found = importlib.util.find_spec(sys.argv[1]) is not None\n"
    "except Exception:\n"
    "    found = False\n"
    "sys.exit(0 if found else 3)\n";
  char *argv[] = {(char *) prog, "-c", (char *) code, (char *) module, NULL};
  char **argvs[] = {argv};
  char **env = s_env(spec);
  char **envs[] = {env};
  char *out = NULL;
  int code_rc = -3;
  int rc = kg_doctor_run_children_env(argvs, envs, 1, S_MODULE_TIMEOUT_MS, &out, &code_rc);
  free(out);
  kg_envp_free(&env);
  if (rc != 0)
    return 0;   /* the check itself failed: no verdict on the kernel */
  if (code_rc == 3) {
    kg_errf(err, errlen, "%s cannot import %s (the kernel's `-m %s`): install it for that "
            "Python, e.g. `%s -m pip install %s`", prog, module, module, prog,
            strcmp(module, "ipykernel_launcher") == 0 ? "ipykernel" : module);
    return KG_ESPAWN;
  }
  if (code_rc == -2) {
    kg_errf(err, errlen, "%s did not answer within %d s whether it can import %s", prog,
            S_MODULE_TIMEOUT_MS / 1000, module);
    return KG_ESPAWN;
  }
  if (code_rc != 0) {
    kg_errf(err, errlen, "%s does not run (%s while asked whether it can import %s)", prog,
            code_rc == -3 ? "could not be started" : "it failed", module);
    return KG_ESPAWN;
  }
  return 0;
}

/*  The program argv[from] starts, then its module: 0 or KG_ESPAWN. */
static int
s_program(const kg_kernelspec_t *spec, int from, const char *what, char *err, size_t errlen)
{
  kg_kernelspec_ns_t ns = {.resource_dir = spec->dir, .prefix = kg_kernelspec_sys_prefix()};
  char *prog = kg_kernelspec_format_arg(s_arg(spec, from), &ns);
  if (!prog)
    return KG_ENOMEM;
  char found[PATH_MAX];
  int rc = kg_kcheck_program(prog, s_path(spec), found, sizeof found);
  if (rc == -ENOENT && !strchr(prog, '/'))
    kg_errf(err, errlen, "%s program '%s' is not in PATH (%s)", what, prog,
            s_path(spec) ? s_path(spec) : "unset");
  else if (rc != 0)
    kg_errf(err, errlen, "%s program %s: %s", what, prog, kg_strerror(rc));
  else
    rc = s_module(spec, from, found, err, errlen);
  free(prog);
  return rc == 0 ? 0 : rc == KG_ENOMEM ? rc : KG_ESPAWN;
}

bool
kg_kcheck_guarded(const kg_kernelspec_t *spec)
{
  const char *a0 = s_arg(spec, 0), *a1 = s_arg(spec, 1);
  return a0 && strncmp(s_base(a0), "kguard", 6) == 0 && a1 && strcmp(a1, "kernel") == 0;
}

int
kg_kcheck_run(const kg_kernelspec_t *spec, const char *self, kg_kcheck_t *out, char *err,
              size_t errlen)
{
  memset(out, 0, sizeof *out);
  const char *a0 = s_arg(spec, 0);
  out->guarded = kg_kcheck_guarded(spec);
  if (!out->guarded)
    return s_program(spec, 0, "its", err, errlen);
  snprintf(out->kguard, sizeof out->kguard, "%s", a0);
  char found[PATH_MAX];
  int rc = kg_kcheck_program(a0, s_path(spec), found, sizeof found);
  if (rc != 0) {
    out->kguard_missing = true;
    kg_errf(err, errlen, "its kguard program %s: %s", a0, kg_strerror(rc));
    return KG_ESPAWN;
  }
  if (self) {
    char *a = realpath(found, NULL), *b = realpath(self, NULL);
    out->other_kguard = a && b && strcmp(a, b) != 0;
    free(a);
    free(b);
  }
  int n = cJSON_GetArraySize(spec->argv), dash = -1;
  for (int i = 2; i < n && dash < 0; i++)
    if (strcmp(s_arg(spec, i), "--") == 0)
      dash = i;
  if (dash < 0 || dash + 1 >= n) {
    kg_errf(err, errlen, "its argv has no inner kernel after `--`");
    return KG_ESPAWN;
  }
  return s_program(spec, dash + 1, "the wrapped kernel's", err, errlen);
}

int
kg_kcheck_load(const char *dir, const char *name, kg_kernelspec_t **spec_p, char *err,
               size_t errlen)
{
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/kernel.json", dir) >= (int) sizeof path)
    return KG_ETOOBIG;
  char *text = NULL;
  size_t size = 0;
  int rc = kg_file_read(path, 1024 * 1024, &text, &size);
  if (rc != 0) {
    kg_errf(err, errlen, "%s: %s", path, kg_strerror(rc));
    return rc;
  }
  rc = kg_kernelspec_parse(name, text, size, spec_p, err, errlen);
  free(text);
  if (rc == 0 && !((*spec_p)->dir = strdup(dir))) {
    kg_kernelspec_destroy(spec_p);
    rc = KG_ENOMEM;
  }
  return rc;
}

/* ---- the reinstall command ------------------------------------------------ */

typedef struct {
  char *buf;
  size_t len, used;
  bool full;
} s_cmd_t;

/*  Append one shell word, quoted when it needs it. */
static void
s_word(s_cmd_t *c, const char *w)
{
  bool plain = *w != '\0';
  for (const char *p = w; *p; p++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%",
                *p))
      plain = false;
  char q[4200];
  size_t n = 0;
  if (plain)
    n = (size_t) snprintf(q, sizeof q, "%s", w);
  else {
    q[n++] = '\'';
    for (const char *p = w; *p && n + 5 < sizeof q; p++) {
      if (*p == '\'') {
        memcpy(q + n, "'\\''", 4);
        n += 4;
      } else
        q[n++] = *p;
    }
    q[n++] = '\'';
    q[n] = '\0';
  }
  int k = snprintf(c->buf + c->used, c->len - c->used, "%s%s", c->used ? " " : "", q);
  if (k < 0 || (size_t) k >= c->len - c->used)
    c->full = true;
  else
    c->used += (size_t) k;
}

int
kg_kcheck_reinstall_cmd(const kg_kernelspec_t *spec, const char *self, char *buf, size_t len)
{
  const cJSON *kgm = cJSON_GetObjectItemCaseSensitive(spec->metadata, "kguard");
  const cJSON *wraps = cJSON_GetObjectItemCaseSensitive(kgm, "wraps");
  if (!cJSON_IsString(wraps) || !spec->dir || len == 0)
    return KG_EUSAGE;
  buf[0] = '\0';
  s_cmd_t c = {buf, len, 0, false};
  s_word(&c, self ? self : "kguard");
  s_word(&c, "install");
  s_word(&c, "--kernel");
  s_word(&c, wraps->valuestring);
  s_word(&c, "--name");
  s_word(&c, spec->name);
  /* where: the user's kernels directory, else PREFIX/share/jupyter/kernels */
  char user[PATH_MAX], parent[PATH_MAX];
  snprintf(parent, sizeof parent, "%s", spec->dir);
  char *slash = strrchr(parent, '/');
  if (slash)
    *slash = '\0';
  const char *tail = "/share/jupyter/kernels";
  size_t pl = strlen(parent), tl = strlen(tail);
  if (kg_kernelspec_user_dir(user, sizeof user) == 0 && strcmp(user, parent) == 0)
    s_word(&c, "--user");
  else if (pl > tl && strcmp(parent + pl - tl, tail) == 0) {
    parent[pl - tl] = '\0';
    s_word(&c, "--prefix");
    s_word(&c, parent);
  } else
    s_word(&c, "--user");   /* not a place install writes: the user's */
  s_word(&c, "--display-name");
  s_word(&c, spec->display_name);
  /* the options `kguard kernel` was given that install writes */
  static const char *const valued[] = {"--checkpoints", "--max-restarts", "--restart-window",
                                       "--backoff", "--backoff-max", "--stale-window", NULL};
  int n = cJSON_GetArraySize(spec->argv);
  for (int i = 2; i < n && strcmp(s_arg(spec, i), "--") != 0; i++) {
    const char *a = s_arg(spec, i);
    if (strcmp(a, "--standby") == 0 && !cJSON_GetObjectItemCaseSensitive(spec->env,
                                                                        "KGUARD_STANDBY_IMPORTS"))
      s_word(&c, a);
    for (size_t k = 0; valued[k]; k++)
      if (strcmp(a, valued[k]) == 0 && i + 1 < n) {
        s_word(&c, a);
        s_word(&c, s_arg(spec, ++i));
      }
  }
  static const char *const envs[][2] = {{"KGUARD_PREFLIGHT", "--preflight"},
                                        {"KGUARD_PREFLIGHT_TIMEOUT", "--preflight-timeout"},
                                        {"KGUARD_STANDBY_IMPORTS", "--standby-imports"}};
  for (size_t k = 0; k < 3; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec->env, envs[k][0]);
    if (cJSON_IsString(v)) {
      s_word(&c, envs[k][1]);
      s_word(&c, v->valuestring);
    }
  }
  return c.full ? KG_ETOOBIG : 0;
}
