/*  kguard install: write a kernelspec that wraps an existing one. */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_safepath.h"
#include "kg_cli.h"
#include "kg_kcheck.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_kernelspec.h"
#include "kg_paths.h"
#include "kg_preflight.h"

enum { O_KERNEL = 1, O_NAME, O_DISPLAY, O_USER, O_SYSPREFIX, O_PREFIX, O_CKPT, O_PREFLIGHT,
       O_PREFLIGHT_TIMEOUT, O_STANDBY, O_STANDBY_IMPORTS, O_NO_CHECK, O_KEEP, O_POLICY };

static const kg_opt_t s_opts[] = {
  {O_KERNEL, 0, "kernel", "NAME", "kernelspec to wrap (default python3)", 0},
  {O_NAME, 0, "name", "N",
   "name of the new kernelspec (default NAME-kguard): ASCII letters, digits, - . _ (as "
   "Jupyter requires), at most 255 characters; lowercased, as jupyter kernelspec install "
   "does", 0},
  {O_DISPLAY, 0, "display-name", "D",
   "default: the wrapped display name with its trailing \"(...)\" replaced by \"(kguard)\", "
   "or \" (kguard)\" appended: \"Python 3 (ipykernel)\" becomes \"Python 3 (kguard)\"", 0},
  {O_USER, 0, "user", NULL,
   "install in $JUPYTER_DATA_DIR/kernels or ~/.local/share/jupyter/kernels (the default)", 0},
  {O_SYSPREFIX, 0, "sys-prefix", NULL,
   "install in the Python environment's share/jupyter/kernels, as `python -m ipykernel "
   "install --sys-prefix` does: the venv or conda env this kguard was pip-installed in, "
   "else $VIRTUAL_ENV, else $CONDA_PREFIX, else /usr (Debian's sys.prefix)", 0},
  {O_PREFIX, 0, "prefix", "P", "install in P/share/jupyter/kernels", 0},
  {O_CKPT, 0, "checkpoints", "DIR",
   "checkpoint directory for the guarded kernel (default ./kguard-checkpoints in the "
   "kernel's working directory)", 0},
  {O_KEEP, 0, "keep", "N",
   "kguard.save in the kernel keeps the newest N checkpoints of its run, removing older "
   "ones after each seal (kernelspec env KGUARD_KEEP; default: all are kept)", 0},
  {O_NO_CHECK, 0, "no-check", NULL,
   "write the kernelspec even when the wrapped kernel cannot start here (its program or "
   "its Python module is missing), e.g. for a kernel that exists only on other machines", 0},
  {0, 0, NULL, NULL,
   "restart policy (written into the kernelspec's argv as `kguard kernel` options of the "
   "same names; omitted ones keep kguard's defaults)", 0},
  {O_POLICY + 0, 0, "max-restarts", "N",
   "restarts allowed within --restart-window (default 3; 0: never restart, report only); "
   "beyond it kguard stops restarting (\"down\")", 0},
  {O_POLICY + 1, 0, "restart-window", "SEC",
   "the window the budget counts restarts in (default 600)", 0},
  {O_POLICY + 2, 0, "backoff", "SEC",
   "the first restart of a window is immediate; the second waits SEC (default 1), each "
   "further one twice as long", 0},
  {O_POLICY + 3, 0, "backoff-max", "SEC", "the longest wait between restarts (default 30)", 0},
  {O_POLICY + 4, 0, "stale-window", "SEC",
   "how long after a failure requests that were queued before the user saw it are still "
   "dropped as stale instead of run in the fresh kernel (default: `kguard kernel`'s)", 0},
  {0, 0, NULL, NULL,
   "device pre-flight (written into the kernelspec's env as KGUARD_PREFLIGHT and "
   "KGUARD_PREFLIGHT_TIMEOUT; omitted: kguard's defaults)", 0},
  {O_PREFLIGHT, 0, "preflight", "never|sticky|first",
   "when `kguard doctor --preflight` checks the devices the kernel will see (allocate, "
   "launch, synchronise), beside the kernel's start and before it is declared ready: "
   "sticky (default) after a restart for a sticky GPU error; first: also at the first "
   "start; never. A failing or hung device stops kguard (down) instead of looping", 0},
  {O_PREFLIGHT_TIMEOUT, 0, "preflight-timeout", "SEC",
   "the probe's deadline (default 10, at most 3600)", 0},
  {0, 0, NULL, NULL, "warm standby", 0},
  {O_STANDBY, 0, "standby", NULL,
   "keep a warm standby kernel: a second kernel process, started while the first runs, "
   "takes over at a restart (no Python start, no imports), with the checkpoint restore "
   "handed to it; costs one idle kernel's memory", 0},
  {O_STANDBY_IMPORTS, 0, "standby-imports", "MODULES",
   "comma-separated modules the standby imports ahead (e.g. torch,numpy; no GPU is "
   "touched); implies --standby (kernelspec env KGUARD_STANDBY_IMPORTS)", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"0", "installed"},
  {"100", "usage error: a bad name or value, no such kernelspec, or one that cannot start "
          "here; nothing written"},
  {"111", "I/O error"},
  {NULL, NULL},
};

const kg_cmd_t kg_cli_install_cmd = {
  .name = "install",
  .summary = "install a kernelspec that wraps an existing kernel",
  .usage = "[--kernel NAME] [--name N] [--user | --sys-prefix | --prefix P] [options]",
  .about = "Write a kernelspec whose argv runs `kguard kernel ... -- <the wrapped argv>`, "
           "keeping the wrapped kernelspec's language, env, interrupt_mode and metadata, and "
           "copying every resource file of its directory (logos, kernel.js, scripts its argv "
           "names through {resource_dir}, ...), so that {resource_dir}, {connection_file} and "
           "{prefix} in the wrapped argv still mean what they did. Jupyter then lists it as "
           "e.g. \"Python 3 (kguard)\". Any kernel works, not only Python ones.\n\n"
           "The wrapped kernel must be able to start here: its program must exist and, for "
           "`python -m MODULE`, MODULE must be importable by that Python. The kernelspec "
           "names this kguard program by its full path; `kguard uninstall` removes it.",
  .opts = s_opts,
  .more = "SEC: a positive number of seconds (e.g. 0.5, 600); N: an integer 0..1000.",
  .exits = s_exits,
};

/*  "Python 3 (ipykernel)" -> "Python 3 (kguard)"; else " (kguard)"
    appended. New string (NULL on allocation failure). */
static char *
s_display_name(const char *wrapped)
{
  size_t n = strlen(wrapped);
  const char *open = strrchr(wrapped, '(');
  char *out = NULL;
  int rc;
  if (n > 0 && wrapped[n - 1] == ')' && open && open > wrapped && open[-1] == ' ')
    rc = asprintf(&out, "%.*s(kguard)", (int) (open - wrapped), wrapped);
  else
    rc = asprintf(&out, "%s (kguard)", wrapped);
  return rc < 0 ? NULL : out;
}

static int
s_copy_file(const char *from, const char *to)
{
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return -errno;
  int out = kg_safepath_open(to, O_TRUNC, 0644);
  if (out < 0) {
    close(in);
    return out;
  }
  char buf[65536];
  ssize_t r;
  int rc = 0;
  while ((r = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t) r) != r) {
      rc = -EIO;
      break;
    }
  if (r < 0)
    rc = -errno;
  close(in);
  if (close(out) != 0 && rc == 0)
    rc = -errno;
  return rc;
}

/*  Copy every entry of from_dir into to_dir (created), directories
    recursively, except the top level's kernel.json (written anew). A
    kernelspec's resource files are whatever its directory holds: logos,
    kernel.js, a launcher script its argv reaches through {resource_dir}.
    Returns 0 or the first error (with a message printed). */
static int
s_copy_resources(const char *from_dir, const char *to_dir, bool top)
{
  DIR *d = opendir(from_dir);
  if (!d) {
    int e = -errno;
    kg_opt_error("unable to read %s: %s", from_dir, kg_strerror(e));
    return e;
  }
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0
        || (top && strcmp(e->d_name, "kernel.json") == 0))
      continue;
    char a[PATH_MAX], b[PATH_MAX];
    int na = snprintf(a, sizeof a, "%s/%s", from_dir, e->d_name);
    int nb = snprintf(b, sizeof b, "%s/%s", to_dir, e->d_name);
    if (na < 0 || nb < 0 || (size_t) na >= sizeof a || (size_t) nb >= sizeof b) {
      kg_opt_error("path too long: %s/%s", from_dir, e->d_name);
      rc = KG_ETOOBIG;
      break;
    }
    struct stat st;
    if (stat(a, &st) != 0) {
      rc = -errno;
      kg_opt_error("unable to read %s: %s", a, kg_strerror(rc));
    }
    else if (S_ISDIR(st.st_mode)) {
      if (mkdir(b, 0755) != 0 && errno != EEXIST) {
        rc = -errno;
        kg_opt_error("unable to create %s: %s", b, kg_strerror(rc));
      }
      else
        rc = s_copy_resources(a, b, false);
    }
    else if (S_ISREG(st.st_mode)) {
      rc = s_copy_file(a, b);
      if (rc == 0)
        chmod(b, st.st_mode & 0777);
      else
        kg_opt_error("unable to copy %s: %s", a, kg_strerror(rc));
    }
  }
  closedir(d);
  return rc;
}

/*  A restart-policy option of `kguard kernel`, as written into the argv. */
typedef struct {
  const char *flag;             /*  "--max-restarts" ...                   */
  bool integer;                 /*  N (0..1000) rather than SEC (> 0)      */
  const char *value;            /*  as given, NULL when not given          */
  double number;                /*  parsed                                 */
} s_policy_opt_t;

/*  Parse opt->value into opt->number. 0, or KG_EUSAGE with a message. */
static int
s_policy_parse(kg_opt_parser_t *p, s_policy_opt_t *opt)
{
  char *end = NULL;
  errno = 0;
  const char *v = opt->value;
  while (isspace((unsigned char) *v))
    v++;
  double x;
  bool ok;
  if (opt->integer) {
    long n = strtol(v, &end, 10);
    ok = errno == 0 && end != v && *end == '\0' && n >= 0 && n <= 1000;
    x = (double) n;
  }
  else {
    x = strtod(v, &end);
    ok = errno == 0 && end != v && *end == '\0' && isfinite(x) && x > 0 && x <= 1e6;
  }
  if (!ok) {
    kg_opt_usage(p, "%s: expected %s, got '%s'", opt->flag,
                 opt->integer ? "a whole number of restarts from 0 to 1000"
                              : "a positive number of seconds, at most 1000000",
                 opt->value);
    return KG_EUSAGE;
  }
  opt->number = x;
  return 0;
}

/*  "torch,numpy.linalg": dotted Python identifiers separated by commas. */
static bool
s_module_list_ok(const char *s)
{
  bool start = true;   /* at the start of a name or of a dotted part */
  if (!*s)
    return false;
  for (; *s; s++) {
    unsigned char ch = (unsigned char) *s;
    if (ch == ',' || ch == '.') {
      if (start)
        return false;
      start = true;
    } else if (isalpha(ch) || ch == '_' || (!start && isdigit(ch))) {
      start = false;
    } else
      return false;
  }
  return !start;
}

/*  In the environment this kguard was pip-installed in, an ipykernel spec
    found outside it (the system's python3, naming /usr/bin/python3) runs
    the environment's own Python instead: Jupyter started from the
    environment runs its native kernel with that Python, and the packages
    the user installed there (torch) are only importable by it. Changes
    spec's argv[0]; a spec that is not `PYTHON -m ipykernel...`, or one in
    the environment itself, is left as it is. */
static void
s_env_python(kg_kernelspec_t *spec, const char *env)
{
  size_t n = strlen(env);
  if (spec->dir && strncmp(spec->dir, env, n) == 0 && spec->dir[n] == '/')
    return;
  const cJSON *m = cJSON_GetArrayItem(spec->argv, 1);
  const cJSON *mod = cJSON_GetArrayItem(spec->argv, 2);
  if (!cJSON_IsString(m) || strcmp(m->valuestring, "-m") != 0 || !cJSON_IsString(mod)
      || strncmp(mod->valuestring, "ipykernel", 9) != 0)
    return;
  char py[PATH_MAX];
  if (snprintf(py, sizeof py, "%s/bin/python", env) >= (int) sizeof py || access(py, X_OK) != 0)
    return;
  cJSON_ReplaceItemInArray((cJSON *) spec->argv, 0, cJSON_CreateString(py));
}

int
kg_cli_install_main(int argc, char **argv)
{
  s_policy_opt_t policy[] = {
    {"--max-restarts", true, NULL, 0}, {"--restart-window", false, NULL, 0},
    {"--backoff", false, NULL, 0}, {"--backoff-max", false, NULL, 0},
    {"--stale-window", false, NULL, 0}};
  const size_t npolicy = sizeof policy / sizeof policy[0];
  const char *kernel = "python3", *name = NULL, *display = NULL, *prefix = NULL, *ckpt = NULL;
  const char *preflight = NULL, *preflight_timeout = NULL, *keep = NULL;
  const char *standby_imports = NULL;
  bool standby = false, check = true;
  int where = 0;   /* 0 user, 1 sys-prefix, 2 prefix */
  int places = 0;
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_cli_install_cmd, argc, argv);
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case KG_OPT_OPERAND: return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
    case O_KERNEL: kernel = p.value; break;
    case O_NAME: name = p.value; break;
    case O_DISPLAY: display = p.value; break;
    case O_USER: where = 0; places++; break;
    case O_SYSPREFIX: where = 1; places++; break;
    case O_PREFIX: where = 2; prefix = p.value; places++; break;
    case O_CKPT: ckpt = p.value; break;
    case O_NO_CHECK: check = false; break;
    case O_KEEP: {
      char *end = NULL;
      long v = strtol(p.value, &end, 10);
      if (!*p.value || *end || v < 1 || v > 1000000)
        return kg_opt_usage(&p, "--keep needs a count of checkpoints from 1 to 1000000, "
                            "not '%s'", p.value);
      keep = p.value;
      break;
    }
    case O_PREFLIGHT: preflight = p.value; break;
    case O_PREFLIGHT_TIMEOUT: preflight_timeout = p.value; break;
    case O_STANDBY: standby = true; break;
    case O_STANDBY_IMPORTS:
      if (!s_module_list_ok(p.value))
        return kg_opt_usage(&p, "--standby-imports takes Python module names separated by "
                            "commas (e.g. torch,numpy), not '%s'", p.value);
      standby_imports = p.value;
      standby = true;
      break;
    default:
      policy[id - O_POLICY].value = p.value;
      if (s_policy_parse(&p, &policy[id - O_POLICY]) != 0)
        return KG_EXIT_USAGE;
      break;
    }
  }
  if (places > 1)
    return kg_opt_usage(&p, "give at most one of --user, --sys-prefix, --prefix");
  if (policy[2].value && policy[3].value && policy[2].number > policy[3].number)
    return kg_opt_usage(&p, "--backoff %s is longer than --backoff-max %s", policy[2].value,
                        policy[3].value);
  /* the values kguard kernel will read back: checked by the same parser */
  if (preflight || preflight_timeout) {
    kg_preflight_config_t pf;
    char perr[256];
    if (kg_preflight_config_parse(preflight, preflight_timeout, &pf, perr, sizeof perr) != 0)
      return kg_opt_usage(&p, "%s: %s",
                          strstr(perr, "TIMEOUT") ? "--preflight-timeout" : "--preflight", perr);
  }
  if (where == 1)
    prefix = kg_kernelspec_sys_prefix();
  char env_prefix[PATH_MAX];
  bool in_env = prefix && kg_paths_env_prefix(env_prefix, sizeof env_prefix) == 0
                && strcmp(prefix, env_prefix) == 0;
  /*  The new name first, as jupyter_client's install_kernel_spec checks it
      (lowercased, then _kernel_name_pat): a name Jupyter would refuse, or
      one that is a directory reference, is an error, never cut or
      rewritten. */
  char err[2048] = "";
  if (kg_kernelspec_check_name(kernel, err, sizeof err) != 0) {
    kg_opt_error("--kernel: %s", err);
    return KG_EXIT_USAGE;
  }
  char *newname = NULL;
  if (name)
    newname = strdup(name);
  else if (asprintf(&newname, "%s-kguard", kernel) < 0)
    newname = NULL;
  if (!newname) {
    kg_opt_error("out of memory");
    return KG_EXIT_SYSTEM;
  }
  for (char *c = newname; *c; c++)
    *c = (char) tolower((unsigned char) *c);
  if (kg_kernelspec_check_name(newname, err, sizeof err) != 0) {
    kg_opt_error("%s%s", name ? "--name: " : "", err);
    if (!name)
      kg_opt_error("the default name is --kernel's with -kguard appended; give one with "
                   "--name");
    free(newname);
    return KG_EXIT_USAGE;
  }
  if (name && strcmp(name, newname) != 0)
    printf("kguard install: the name is lowercased as Jupyter does: %s\n", newname);
  kg_kernelspec_t *spec = NULL;
  int rc = kg_kernelspec_find(kernel, prefix, &spec, err, sizeof err);
  if (rc) {
    kg_opt_error("%s", *err ? err : kg_strerror(rc));
    free(newname);
    return rc == KG_ENOKERNEL || rc == KG_EKERNELSPEC || rc == KG_EUSAGE ? KG_EXIT_USAGE
                                                                         : KG_EXIT_SYSTEM;
  }
  const char *a0 = cJSON_GetArrayItem(spec->argv, 0)->valuestring;
  const cJSON *a1 = cJSON_GetArrayItem(spec->argv, 1);
  if (strstr(a0, "kguard") && cJSON_IsString(a1) && strcmp(a1->valuestring, "kernel") == 0) {
    kg_opt_error("'%s' is already a kguard kernelspec; wrap the kernel it wraps instead",
                 kernel);
    free(newname);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  if (in_env)
    s_env_python(spec, env_prefix);
  /*  A kernelspec that cannot start here makes a guarded one that cannot
      either: refused, with the reason, unless asked for. */
  kg_kcheck_t kc;
  if (check && kg_kcheck_run(spec, NULL, &kc, err, sizeof err) != 0) {
    kg_opt_error("kernelspec '%s' (%s) cannot start here: %s; fix it, or give --no-check to "
                 "wrap it anyway", kernel, spec->dir ? spec->dir : "?", err);
    free(newname);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  char *dname = display ? strdup(display) : s_display_name(spec->display_name);
  if (!dname) {
    kg_opt_error("out of memory");
    free(newname);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_SYSTEM;
  }
  char exe[PATH_MAX], kdir[PATH_MAX], dest[PATH_MAX];
  if (kg_paths_exe(exe, sizeof exe) != 0) {
    kg_opt_error("unable to find kguard's own path");
    free(newname);
    free(dname);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_SYSTEM;
  }
  /*  Never cut: a path that does not fit is an error. */
  int nk = where == 0 ? (kg_kernelspec_user_dir(kdir, sizeof kdir) == 0 ? 0 : -1)
                      : snprintf(kdir, sizeof kdir, "%s/share/jupyter/kernels", prefix);
  int nd = nk < 0 || (size_t) nk >= sizeof kdir ? -1
           : snprintf(dest, sizeof dest, "%s/%s", kdir, newname);
  if (nd < 0 || (size_t) nd >= sizeof dest) {
    kg_opt_error("the destination path is too long (at most %d bytes): "
                 "%s/share/jupyter/kernels/%s", PATH_MAX - 1,
                 where == 0 ? "the user data dir" : prefix, newname);
    free(newname);
    free(dname);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }

  cJSON *out = cJSON_CreateObject();
  cJSON *av = cJSON_AddArrayToObject(out, "argv");
  const char *head[] = {exe, "kernel", "-f", "{connection_file}", "--name", newname};
  for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
    cJSON_AddItemToArray(av, cJSON_CreateString(head[i]));
  if (strcmp(spec->interrupt_mode, "signal") != 0) {
    cJSON_AddItemToArray(av, cJSON_CreateString("--interrupt-mode"));
    cJSON_AddItemToArray(av, cJSON_CreateString(spec->interrupt_mode));
  }
  /* The kernel's language decides which helpers run against it (the
     version and device probes are Python): known before its first reply. */
  if (spec->language && *spec->language) {
    cJSON_AddItemToArray(av, cJSON_CreateString("--language"));
    cJSON_AddItemToArray(av, cJSON_CreateString(spec->language));
  }
  if (ckpt) {
    cJSON_AddItemToArray(av, cJSON_CreateString("--checkpoints"));
    cJSON_AddItemToArray(av, cJSON_CreateString(ckpt));
  }
  for (size_t i = 0; i < npolicy; i++) {
    if (!policy[i].value)
      continue;
    char num[64];
    snprintf(num, sizeof num, "%.15g", policy[i].number);
    cJSON_AddItemToArray(av, cJSON_CreateString(policy[i].flag));
    cJSON_AddItemToArray(av, cJSON_CreateString(num));
  }
  if (standby)
    cJSON_AddItemToArray(av, cJSON_CreateString("--standby"));
  cJSON_AddItemToArray(av, cJSON_CreateString("--"));
  const cJSON *a;
  cJSON_ArrayForEach(a, spec->argv) cJSON_AddItemToArray(av, cJSON_CreateString(a->valuestring));
  cJSON_AddStringToObject(out, "display_name", dname);
  cJSON_AddStringToObject(out, "language", spec->language);
  if (cJSON_GetObjectItemCaseSensitive(spec->json, "interrupt_mode"))
    cJSON_AddStringToObject(out, "interrupt_mode", spec->interrupt_mode);
  cJSON *env = spec->env ? cJSON_Duplicate(spec->env, 1) : NULL;
  if ((preflight || preflight_timeout || keep) && !env)
    env = cJSON_CreateObject();
  const char *pf_vars[][2] = {{"KGUARD_PREFLIGHT", preflight},
                              {"KGUARD_PREFLIGHT_TIMEOUT", preflight_timeout},
                              {"KGUARD_KEEP", keep}};
  for (size_t i = 0; i < 3; i++)
    if (pf_vars[i][1]) {
      cJSON_DeleteItemFromObjectCaseSensitive(env, pf_vars[i][0]);
      cJSON_AddStringToObject(env, pf_vars[i][0], pf_vars[i][1]);
    }
  if (standby_imports) {
    if (!env)
      env = cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(env, "KGUARD_STANDBY_IMPORTS");
    cJSON_AddStringToObject(env, "KGUARD_STANDBY_IMPORTS", standby_imports);
  }
  if (env)
    cJSON_AddItemToObject(out, "env", env);
  cJSON *md = spec->metadata ? cJSON_Duplicate(spec->metadata, 1) : cJSON_CreateObject();
  cJSON *kgm = cJSON_AddObjectToObject(md, "kguard");
  cJSON_AddStringToObject(kgm, "wraps", kernel);
  cJSON_AddItemToObject(out, "metadata", md);
  char *text = cJSON_Print(out);
  cJSON_Delete(out);

  int code = KG_EXIT_OK;
  char file[PATH_MAX + 16];
  snprintf(file, sizeof file, "%s/kernel.json", dest);
  if ((rc = kg_paths_mkdirs(dest, 0755)) != 0) {
    kg_opt_error("unable to create %s: %s", dest, kg_strerror(rc));
    code = KG_EXIT_SYSTEM;
  } else if ((rc = kg_file_write_atomic(file, text, strlen(text), 0644)) != 0) {
    kg_opt_error("unable to write %s: %s", file, kg_strerror(rc));
    code = KG_EXIT_SYSTEM;
  }
  if (code == KG_EXIT_OK && spec->dir && s_copy_resources(spec->dir, dest, true) != 0)
    code = KG_EXIT_SYSTEM;
  if (code == KG_EXIT_OK) {
    printf("installed kernelspec %s (\"%s\", wraps %s) in %s\n", newname, dname, kernel, dest);
    printf("remove it with: kguard uninstall --name %s%s%s\n", newname,
           where == 0 ? "" : " --prefix ", where == 0 ? "" : prefix);
    if (where == 2 && !kg_kernelspec_dir_searched(kdir))
      kg_opt_error("warning: %s is not in Jupyter's kernelspec search path, so Jupyter will "
                   "not list this kernel: set JUPYTER_PATH=%s/share/jupyter in the "
                   "environment Jupyter starts from, or install with --user or --sys-prefix",
                   kdir, prefix);
    if (!kg_paths_installed())
      kg_opt_error("warning: it runs %s, a kguard that is not installed (a build tree): it "
                   "stops working when that tree is moved, removed or rebuilt elsewhere, and "
                   "`kguard doctor` then says how to fix it; an installed kguard (scripts/"
                   "package.sh, or cmake --install) writes a lasting one", exe);
  }
  free(text);
  free(newname);
  free(dname);
  kg_kernelspec_destroy(&spec);
  return code;
}
