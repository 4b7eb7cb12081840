/*  kg_doctor_facts: kernelspecs, paths and bounded helper children. */
#include "kg_doctor_facts.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_child.h"
#include "kg_clock.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_kernelspec.h"

#define S_OUT_MAX (1024u * 1024u)

static void
s_add_dir(cJSON *arr, const char *base)
{
  if (!base || !*base)
    return;
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%.4000s/kernels", base);
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) if (strcmp(e->valuestring, buf) == 0) return;
  cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
}

cJSON *
kg_doctor_kernel_dirs(void)
{
  cJSON *arr = cJSON_CreateArray();
  const char *jp = getenv("JUPYTER_PATH");
  if (jp && *jp) {
    char *copy = strdup(jp), *save = NULL;
    for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save))
      s_add_dir(arr, p);
    free(copy);
  }
  char user[PATH_MAX];
  if (kg_kernelspec_user_dir(user, sizeof user) == 0)
    cJSON_AddItemToArray(arr, cJSON_CreateString(user));
  char env[PATH_MAX];
  const char *prefix = kg_kernelspec_sys_prefix();
  if (strcmp(prefix, "/usr") != 0) {   /* /usr/share/jupyter comes last anyway */
    snprintf(env, sizeof env, "%.4000s/share/jupyter", prefix);
    s_add_dir(arr, env);
  }
  s_add_dir(arr, "/usr/local/share/jupyter");
  s_add_dir(arr, "/usr/share/jupyter");
  return arr;
}

/*  The value of --opt in argv[from..to), or NULL. */
static const char *
s_opt(const cJSON *argv, int from, int to, const char *opt)
{
  for (int i = from; i + 1 < to; i++) {
    const cJSON *a = cJSON_GetArrayItem(argv, i);
    if (strcmp(a->valuestring, opt) == 0)
      return cJSON_GetArrayItem(argv, i + 1)->valuestring;
  }
  return NULL;
}

/*  A variable as the kernel sees it: the spec's env wins over ours. */
static const char *
s_env(const cJSON *spec_env, const char *name)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec_env, name);
  if (cJSON_IsString(v))
    return v->valuestring;
  const char *e = getenv(name);
  return e && *e ? e : NULL;
}

static void
s_describe(cJSON *o, const kg_kernelspec_t *spec)
{
  const cJSON *argv = spec->argv;
  int n = cJSON_GetArraySize(argv);
  const char *a0 = cJSON_GetArrayItem(argv, 0)->valuestring;
  const char *base = strrchr(a0, '/');
  base = base ? base + 1 : a0;
  const cJSON *a1 = cJSON_GetArrayItem(argv, 1);
  bool guarded = strncmp(base, "kguard", 6) == 0 && cJSON_IsString(a1)
                 && strcmp(a1->valuestring, "kernel") == 0;
  cJSON_AddBoolToObject(o, "guarded", guarded);
  int dash = n;
  for (int i = 0; guarded && i < n; i++)
    if (strcmp(cJSON_GetArrayItem(argv, i)->valuestring, "--") == 0) {
      dash = i;
      break;
    }
  const char *interp = guarded ? (dash + 1 < n ? cJSON_GetArrayItem(argv, dash + 1)->valuestring
                                               : NULL)
                               : a0;
  const char *ib = interp ? strrchr(interp, '/') : NULL;
  ib = ib ? ib + 1 : interp;
  if (interp && strncmp(ib, "python", 6) == 0)
    cJSON_AddStringToObject(o, "interpreter", interp);
  else
    cJSON_AddNullToObject(o, "interpreter");
  const cJSON *kgm = cJSON_GetObjectItemCaseSensitive(spec->metadata, "kguard");
  const cJSON *wraps = cJSON_GetObjectItemCaseSensitive(kgm, "wraps");
  if (guarded && cJSON_IsString(wraps))
    cJSON_AddStringToObject(o, "wraps", wraps->valuestring);
  else
    cJSON_AddNullToObject(o, "wraps");
  if (!guarded)
    return;
  const char *ck = s_opt(argv, 2, dash, "--checkpoints");
  cJSON_AddStringToObject(o, "checkpoints",
                          ck ? ck : "./kguard-checkpoints (in the kernel's working directory)");
  char buf[PATH_MAX];
  const char *keys = s_env(spec->env, "KGUARD_KEY_DIR"), *x;
  if (!keys && (x = s_env(spec->env, "XDG_CONFIG_HOME")))
    snprintf(buf, sizeof buf, "%.4000s/kguard", x), keys = buf;
  else if (!keys && (x = s_env(spec->env, "HOME")))
    snprintf(buf, sizeof buf, "%.4000s/.config/kguard", x), keys = buf;
  cJSON_AddStringToObject(o, "keys", keys ? keys : "(no HOME: unknown)");
  char sbuf[PATH_MAX];
  const char *st = s_opt(argv, 2, dash, "--state-dir");
  if (!st)
    st = s_env(spec->env, "KGUARD_STATE_DIR");
  if (!st && (x = s_env(spec->env, "XDG_STATE_HOME")))
    snprintf(sbuf, sizeof sbuf, "%.4000s/kguard", x), st = sbuf;
  else if (!st && (x = s_env(spec->env, "HOME")))
    snprintf(sbuf, sizeof sbuf, "%.4000s/.local/state/kguard", x), st = sbuf;
  cJSON_AddStringToObject(o, "state_dir", st ? st : "(no HOME: unknown)");
}

static int
s_by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *) a, *(char *const *) b);
}

cJSON *
kg_doctor_kernelspecs(const cJSON *dirs)
{
  cJSON *out = cJSON_CreateArray();
  const cJSON *d;
  cJSON_ArrayForEach(d, dirs)
  {
    DIR *dir = opendir(d->valuestring);
    if (!dir)
      continue;
    char **names = NULL;
    size_t nn = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
      if (e->d_name[0] == '.')
        continue;
      char **grown = realloc(names, (nn + 1) * sizeof *names);
      if (!grown)
        break;
      names = grown;
      if ((names[nn] = strdup(e->d_name)))
        nn++;
    }
    closedir(dir);
    qsort(names, nn, sizeof *names, s_by_name);
    for (size_t i = 0; i < nn; i++) {
      bool seen = false;
      const cJSON *k;
      cJSON_ArrayForEach(k, out) seen |= strcmp(cJSON_GetObjectItem(k, "name")->valuestring,
                                                names[i]) == 0;
      char path[PATH_MAX];
      snprintf(path, sizeof path, "%.3800s/%.255s/kernel.json", d->valuestring, names[i]);
      char *text = NULL;
      size_t size = 0;
      if (seen || kg_file_read(path, 1024 * 1024, &text, &size) != 0) {
        free(names[i]);
        continue;   /* shadowed, or a directory without kernel.json */
      }
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "name", names[i]);
      path[strlen(path) - strlen("/kernel.json")] = '\0';
      cJSON_AddStringToObject(o, "dir", path);
      char err[512] = "";
      kg_kernelspec_t *spec = NULL;
      if (kg_kernelspec_parse(names[i], text, size, &spec, err, sizeof err) != 0) {
        cJSON_AddStringToObject(o, "error", err);
      } else {
        cJSON_AddStringToObject(o, "display_name", spec->display_name);
        s_describe(o, spec);
        cJSON_AddItemToObject(o, "env", spec->env ? cJSON_Duplicate(spec->env, true)
                                                  : cJSON_CreateNull());
        kg_kernelspec_destroy(&spec);
      }
      cJSON_AddItemToArray(out, o);
      free(text);
      free(names[i]);
    }
    free(names);
  }
  return out;
}

typedef struct {
  kg_child_t *child;
  int pidfd;   /* readable when the child exits (-1: not available) */
  char *out;
  size_t len;
  bool done;
} s_run_t;

static void
s_drain(s_run_t *r)
{
  char buf[8192];
  for (;;) {
    ssize_t n = kg_child_read(r->child, 1, buf, sizeof buf);
    if (n <= 0)
      return;
    if (r->len + (size_t) n <= S_OUT_MAX) {
      char *grown = realloc(r->out, r->len + (size_t) n + 1);
      if (!grown)
        return;
      r->out = grown;
      memcpy(r->out + r->len, buf, (size_t) n);
      r->len += (size_t) n;
      r->out[r->len] = '\0';
    }
  }
}

int
kg_doctor_run_children(char **const *argvs, int n, int64_t timeout_ms, char **outs, int *codes)
{
  return kg_doctor_run_children_env(argvs, NULL, n, timeout_ms, outs, codes);
}

int
kg_doctor_run_children_env(char **const *argvs, char **const *envps, int n,
                           int64_t timeout_ms, char **outs, int *codes)
{
  s_run_t *runs = calloc((size_t) n, sizeof *runs);
  if (!runs)
    return KG_ENOMEM;
  for (int i = 0; i < n; i++) {
    kg_child_opts_t opts = {.argv = argvs[i], .envp = envps ? envps[i] : NULL,
                            .capture = true};
    codes[i] = -3;
    runs[i].pidfd = -1;
    if (kg_child_spawn(&opts, &runs[i].child) != 0)
      runs[i].done = true;
    else
      runs[i].pidfd = (int) syscall(SYS_pidfd_open, kg_child_pid(runs[i].child), 0);
  }
  int64_t deadline = kg_clock_mono_ms() + timeout_ms;
  for (;;) {
    struct pollfd pfd[32];
    int np = 0;
    bool pending = false, blind = false;
    for (int i = 0; i < n && np < 30; i++) {
      if (runs[i].done)
        continue;
      int fd = kg_child_stdout_fd(runs[i].child);
      if (fd < 0 && kg_child_reap(runs[i].child) != 0) {
        int st = kg_child_status(runs[i].child);
        codes[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        runs[i].done = true;
        continue;
      }
      pending = true;
      if (fd >= 0)
        pfd[np++] = (struct pollfd){.fd = fd, .events = POLLIN};
      else if (runs[i].pidfd >= 0)
        pfd[np++] = (struct pollfd){.fd = runs[i].pidfd, .events = POLLIN};
      else
        blind = true;   /* no pidfd (old kernel): look again shortly */
    }
    if (!pending)
      break;
    int64_t left = deadline - kg_clock_mono_ms();
    if (left <= 0) {
      for (int i = 0; i < n; i++)
        if (!runs[i].done) {
          kg_child_kill_group(runs[i].child, SIGKILL);
          codes[i] = -2;
          runs[i].done = true;
        }
      break;
    }
    int wait = blind && left > 10 ? 10 : (int) (left < INT_MAX ? left : INT_MAX);
    if (poll(pfd, (nfds_t) np, wait) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < n; i++)
      if (!runs[i].done)
        s_drain(&runs[i]);
  }
  for (int i = 0; i < n; i++) {
    if (runs[i].pidfd >= 0)
      close(runs[i].pidfd);
    kg_child_destroy(&runs[i].child);
    outs[i] = runs[i].out ? runs[i].out : strdup("");
  }
  free(runs);
  return 0;
}
