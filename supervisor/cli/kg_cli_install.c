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
#include "kg_cli_install.h"
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

/*  Parse opt->value into opt->number. 0, or KG_EUSAGE with a message. */
static int
s_policy_parse(kg_opt_parser_t *p, kg_cli_install_policy_t *opt)
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

/*  The parse and check step: argv into *o. Returns -1 when the command
    should go on, else the exit code, its usage error said. */
static int
s_install_parse(int argc, char **argv, kg_cli_install_opts_t *o)
{
  *o = (kg_cli_install_opts_t){
    .kernel = "python3", .check = true,
    .policy = {{"--max-restarts", true, NULL, 0}, {"--restart-window", false, NULL, 0},
               {"--backoff", false, NULL, 0}, {"--backoff-max", false, NULL, 0},
               {"--stale-window", false, NULL, 0}}};
  kg_cli_install_policy_t *policy = o->policy;
  int places = 0;
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_cli_install_cmd, argc, argv);
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case KG_OPT_OPERAND: return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
    case O_KERNEL: o->kernel = p.value; break;
    case O_NAME: o->name = p.value; break;
    case O_DISPLAY: o->display = p.value; break;
    case O_USER: o->where = 0; places++; break;
    case O_SYSPREFIX: o->where = 1; places++; break;
    case O_PREFIX: o->where = 2; o->prefix = p.value; places++; break;
    case O_CKPT: o->ckpt = p.value; break;
    case O_NO_CHECK: o->check = false; break;
    case O_KEEP: {
      char *end = NULL;
      long v = strtol(p.value, &end, 10);
      if (!*p.value || *end || v < 1 || v > 1000000)
        return kg_opt_usage(&p, "--keep needs a count of checkpoints from 1 to 1000000, "
                            "not '%s'", p.value);
      o->keep = p.value;
      break;
    }
    case O_PREFLIGHT: o->preflight = p.value; break;
    case O_PREFLIGHT_TIMEOUT: o->preflight_timeout = p.value; break;
    case O_STANDBY: o->standby = true; break;
    case O_STANDBY_IMPORTS:
      if (!s_module_list_ok(p.value))
        return kg_opt_usage(&p, "--standby-imports takes Python module names separated by "
                            "commas (e.g. torch,numpy), not '%s'", p.value);
      o->standby_imports = p.value;
      o->standby = true;
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
  if (o->preflight || o->preflight_timeout) {
    kg_preflight_config_t pf;
    char perr[256];
    if (kg_preflight_config_parse(o->preflight, o->preflight_timeout, &pf, perr, sizeof perr)
        != 0)
      return kg_opt_usage(&p, "%s: %s",
                          strstr(perr, "TIMEOUT") ? "--preflight-timeout" : "--preflight", perr);
  }
  return -1;
}

/*  The new name first, as jupyter_client's install_kernel_spec checks it
    (lowercased, then _kernel_name_pat): a name Jupyter would refuse, or one
    that is a directory reference, is an error, never cut or rewritten. Sets
    *newname_p (the caller frees it). Returns -1 when the command should go
    on, else the exit code, the error said. */
static int
s_install_newname(const kg_cli_install_opts_t *o, char **newname_p)
{
  char err[2048] = "";
  if (kg_kernelspec_check_name(o->kernel, err, sizeof err) != 0) {
    kg_opt_error("--kernel: %s", err);
    return KG_EXIT_USAGE;
  }
  char *newname = NULL;
  if (o->name)
    newname = strdup(o->name);
  else if (asprintf(&newname, "%s-kguard", o->kernel) < 0)
    newname = NULL;
  if (!newname) {
    kg_opt_error("out of memory");
    return KG_EXIT_SYSTEM;
  }
  for (char *c = newname; *c; c++)
    *c = (char) tolower((unsigned char) *c);
  if (kg_kernelspec_check_name(newname, err, sizeof err) != 0) {
    kg_opt_error("%s%s", o->name ? "--name: " : "", err);
    if (!o->name)
      kg_opt_error("the default name is --kernel's with -kguard appended; give one with "
                   "--name");
    free(newname);
    return KG_EXIT_USAGE;
  }
  if (o->name && strcmp(o->name, newname) != 0)
    printf("kguard install: the name is lowercased as Jupyter does: %s\n", newname);
  *newname_p = newname;
  return -1;
}

/*  The wrapped kernelspec, found under prefix: not itself a kguard one, run
    by the environment's Python when kguard is installed in one (in_env,
    env_prefix), and able to start here unless --no-check. Sets *spec_p (the
    caller destroys it). Returns -1 when the command should go on, else the
    exit code, the error said. */
static int
s_install_wrapped(const kg_cli_install_opts_t *o, const char *prefix, bool in_env,
                  const char *env_prefix, kg_kernelspec_t **spec_p)
{
  char err[2048] = "";
  kg_kernelspec_t *spec = NULL;
  int rc = kg_kernelspec_find(o->kernel, prefix, &spec, err, sizeof err);
  if (rc) {
    kg_opt_error("%s", *err ? err : kg_strerror(rc));
    return rc == KG_ENOKERNEL || rc == KG_EKERNELSPEC || rc == KG_EUSAGE ? KG_EXIT_USAGE
                                                                         : KG_EXIT_SYSTEM;
  }
  const char *a0 = cJSON_GetArrayItem(spec->argv, 0)->valuestring;
  const cJSON *a1 = cJSON_GetArrayItem(spec->argv, 1);
  if (strstr(a0, "kguard") && cJSON_IsString(a1) && strcmp(a1->valuestring, "kernel") == 0) {
    kg_opt_error("'%s' is already a kguard kernelspec; wrap the kernel it wraps instead",
                 o->kernel);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  if (in_env)
    s_env_python(spec, env_prefix);
  /*  A kernelspec that cannot start here makes a guarded one that cannot
      either: refused, with the reason, unless asked for. */
  kg_kcheck_t kc;
  if (o->check && kg_kcheck_run(spec, NULL, &kc, err, sizeof err) != 0) {
    kg_opt_error("kernelspec '%s' (%s) cannot start here: %s; fix it, or give --no-check to "
                 "wrap it anyway", o->kernel, spec->dir ? spec->dir : "?", err);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  *spec_p = spec;
  return -1;
}

/*  Add the argv's "FLAG VALUE" pair. */
static void
s_argv_pair(cJSON *av, const char *flag, const char *value)
{
  cJSON_AddItemToArray(av, cJSON_CreateString(flag));
  cJSON_AddItemToArray(av, cJSON_CreateString(value));
}

/*  The env of the guarded kernelspec: a copy of the wrapped one with the
    KGUARD_* variables the options set (NULL when neither has any). */
static cJSON *
s_install_env(const kg_cli_install_opts_t *o, const kg_kernelspec_t *wrapped)
{
  cJSON *env = wrapped->env ? cJSON_Duplicate(wrapped->env, 1) : NULL;
  const char *vars[][2] = {{"KGUARD_PREFLIGHT", o->preflight},
                           {"KGUARD_PREFLIGHT_TIMEOUT", o->preflight_timeout},
                           {"KGUARD_KEEP", o->keep},
                           {"KGUARD_STANDBY_IMPORTS", o->standby_imports}};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    if (!vars[i][1])
      continue;
    if (!env)
      env = cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(env, vars[i][0]);
    cJSON_AddStringToObject(env, vars[i][0], vars[i][1]);
  }
  return env;
}

char *
kg_cli_install_json(const kg_cli_install_opts_t *o, const kg_kernelspec_t *wrapped,
                    const char *exe, const char *name, const char *display)
{
  cJSON *out = cJSON_CreateObject();
  cJSON *av = cJSON_AddArrayToObject(out, "argv");
  const char *head[] = {exe, "kernel", "-f", "{connection_file}", "--name", name};
  for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
    cJSON_AddItemToArray(av, cJSON_CreateString(head[i]));
  if (strcmp(wrapped->interrupt_mode, "signal") != 0)
    s_argv_pair(av, "--interrupt-mode", wrapped->interrupt_mode);
  /* The kernel's language decides which helpers run against it (the
     version and device probes are Python): known before its first reply. */
  if (wrapped->language && *wrapped->language)
    s_argv_pair(av, "--language", wrapped->language);
  if (o->ckpt)
    s_argv_pair(av, "--checkpoints", o->ckpt);
  for (size_t i = 0; i < KG_CLI_INSTALL_POLICY_COUNT; i++) {
    if (!o->policy[i].value)
      continue;
    char num[64];
    snprintf(num, sizeof num, "%.15g", o->policy[i].number);
    s_argv_pair(av, o->policy[i].flag, num);
  }
  if (o->standby)
    cJSON_AddItemToArray(av, cJSON_CreateString("--standby"));
  cJSON_AddItemToArray(av, cJSON_CreateString("--"));
  const cJSON *a;
  cJSON_ArrayForEach(a, wrapped->argv)
    cJSON_AddItemToArray(av, cJSON_CreateString(a->valuestring));
  cJSON_AddStringToObject(out, "display_name", display);
  cJSON_AddStringToObject(out, "language", wrapped->language);
  if (cJSON_GetObjectItemCaseSensitive(wrapped->json, "interrupt_mode"))
    cJSON_AddStringToObject(out, "interrupt_mode", wrapped->interrupt_mode);
  cJSON *env = s_install_env(o, wrapped);
  if (env)
    cJSON_AddItemToObject(out, "env", env);
  cJSON *md = wrapped->metadata ? cJSON_Duplicate(wrapped->metadata, 1) : cJSON_CreateObject();
  cJSON *kgm = cJSON_AddObjectToObject(md, "kguard");
  cJSON_AddStringToObject(kgm, "wraps", o->kernel);
  cJSON_AddItemToObject(out, "metadata", md);
  char *text = cJSON_Print(out);
  cJSON_Delete(out);
  return text;
}

/*  The run step's end: text written as dest/kernel.json, the wrapped
    kernelspec's resource files copied beside it, and what was done said,
    with a warning when Jupyter will not find it (kdir outside its search
    path) or when it names a kguard that is not installed. Returns the exit
    code. */
static int
s_install_write(const kg_cli_install_opts_t *o, const kg_kernelspec_t *spec, const char *text,
                const char *kdir, const char *dest, const char *newname, const char *dname,
                const char *exe)
{
  int rc;
  char file[PATH_MAX + 16];
  snprintf(file, sizeof file, "%s/kernel.json", dest);
  if ((rc = kg_paths_mkdirs(dest, 0755)) != 0) {
    kg_opt_error("unable to create %s: %s", dest, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  if ((rc = kg_file_write_atomic(file, text, strlen(text), 0644)) != 0) {
    kg_opt_error("unable to write %s: %s", file, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  if (spec->dir && s_copy_resources(spec->dir, dest, true) != 0)
    return KG_EXIT_SYSTEM;
  printf("installed kernelspec %s (\"%s\", wraps %s) in %s\n", newname, dname, o->kernel, dest);
  printf("remove it with: kguard uninstall --name %s%s%s\n", newname,
         o->where == 0 ? "" : " --prefix ", o->where == 0 ? "" : o->prefix);
  if (o->where == 2 && !kg_kernelspec_dir_searched(kdir))
    kg_opt_error("warning: %s is not in Jupyter's kernelspec search path, so Jupyter will "
                 "not list this kernel: set JUPYTER_PATH=%s/share/jupyter in the "
                 "environment Jupyter starts from, or install with --user or --sys-prefix",
                 kdir, o->prefix);
  if (!kg_paths_installed())
    kg_opt_error("warning: it runs %s, a kguard that is not installed (a build tree): it "
                 "stops working when that tree is moved, removed or rebuilt elsewhere, and "
                 "`kguard doctor` then says how to fix it; an installed kguard (scripts/"
                 "package.sh, or cmake --install) writes a lasting one", exe);
  return KG_EXIT_OK;
}

int
kg_cli_install_main(int argc, char **argv)
{
  kg_cli_install_opts_t o;
  int code = s_install_parse(argc, argv, &o);
  if (code >= 0)
    return code;
  if (o.where == 1)
    o.prefix = kg_kernelspec_sys_prefix();
  char env_prefix[PATH_MAX];
  bool in_env = o.prefix && kg_paths_env_prefix(env_prefix, sizeof env_prefix) == 0
                && strcmp(o.prefix, env_prefix) == 0;
  char *newname = NULL, *dname = NULL, *text = NULL;
  kg_kernelspec_t *spec = NULL;
  if ((code = s_install_newname(&o, &newname)) >= 0
      || (code = s_install_wrapped(&o, o.prefix, in_env, env_prefix, &spec)) >= 0)
    goto out;
  if (!(dname = o.display ? strdup(o.display) : s_display_name(spec->display_name))) {
    kg_opt_error("out of memory");
    code = KG_EXIT_SYSTEM;
    goto out;
  }
  char exe[PATH_MAX], kdir[PATH_MAX], dest[PATH_MAX];
  if (kg_paths_exe(exe, sizeof exe) != 0) {
    kg_opt_error("unable to find kguard's own path");
    code = KG_EXIT_SYSTEM;
    goto out;
  }
  /*  Never cut: a path that does not fit is an error. */
  int nk = o.where == 0 ? (kg_kernelspec_user_dir(kdir, sizeof kdir) == 0 ? 0 : -1)
                        : snprintf(kdir, sizeof kdir, "%s/share/jupyter/kernels", o.prefix);
  int nd = nk < 0 || (size_t) nk >= sizeof kdir ? -1
           : snprintf(dest, sizeof dest, "%s/%s", kdir, newname);
  if (nd < 0 || (size_t) nd >= sizeof dest) {
    kg_opt_error("the destination path is too long (at most %d bytes): "
                 "%s/share/jupyter/kernels/%s", PATH_MAX - 1,
                 o.where == 0 ? "the user data dir" : o.prefix, newname);
    code = KG_EXIT_USAGE;
    goto out;
  }
  text = kg_cli_install_json(&o, spec, exe, newname, dname);
  code = s_install_write(&o, spec, text, kdir, dest, newname, dname, exe);
out:
  free(text);
  free(newname);
  free(dname);
  kg_kernelspec_destroy(&spec);
  return code;
}
