/*  kguard install: write a kernelspec that wraps an existing one. */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_safepath.h"
#include "kg_cli.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_kernelspec.h"
#include "kg_paths.h"
#include "kg_preflight.h"

static void
s_usage(FILE *out)
{
  fputs(
    "usage: kguard install [--kernel NAME] [--name N] [--display-name D]\n"
    "                      [--user | --sys-prefix | --prefix P] [--checkpoints DIR]\n"
    "                      [--max-restarts N] [--restart-window SEC] [--backoff SEC]\n"
    "                      [--backoff-max SEC] [--stale-window SEC]\n"
    "                      [--preflight never|sticky|first] [--preflight-timeout SEC]\n"
    "                      [--standby] [--standby-imports MODULES]\n"
    "\n"
    "Write a kernelspec whose argv runs `kguard kernel ... -- <the wrapped argv>`,\n"
    "keeping the wrapped kernelspec's language, env, interrupt_mode and metadata,\n"
    "and copying every resource file of its directory (logos, kernel.js, scripts\n"
    "its argv names through {resource_dir}, ...), so that {resource_dir},\n"
    "{connection_file} and {prefix} in the wrapped argv still mean what they did.\n"
    "Jupyter then lists it as e.g. \"Python 3 (kguard)\". Any kernel works, not only\n"
    "Python ones.\n"
    "\n"
    "  --kernel NAME        kernelspec to wrap (default python3)\n"
    "  --name N             name of the new kernelspec (default NAME-kguard): ASCII\n"
    "                       letters, digits, - . _ (as Jupyter requires), at most 255\n"
    "                       characters; lowercased, as jupyter kernelspec install does\n"
    "  --display-name D     default: the wrapped display name with its trailing\n"
    "                       \"(...)\" replaced by \"(kguard)\", or \" (kguard)\" appended:\n"
    "                       \"Python 3 (ipykernel)\" becomes \"Python 3 (kguard)\"\n"
    "  --user               install in $JUPYTER_DATA_DIR/kernels or\n"
    "                       ~/.local/share/jupyter/kernels (the default)\n"
    "  --sys-prefix         install in $VIRTUAL_ENV, else $CONDA_PREFIX, else /usr\n"
    "                       (Debian's sys.prefix), under share/jupyter/kernels\n"
    "  --prefix P           install in P/share/jupyter/kernels\n"
    "  --checkpoints DIR    checkpoint directory for the guarded kernel\n"
    "                       (default ./kguard-checkpoints in the kernel's cwd)\n"
    "\n"
    "restart policy (written into the kernelspec's argv as `kguard kernel` options\n"
    "of the same names; omitted ones keep kguard's defaults):\n"
    "  --max-restarts N     restarts allowed within --restart-window (default 3;\n"
    "                       0: never restart, report only); beyond it kguard stops\n"
    "                       restarting (\"down\")\n"
    "  --restart-window SEC the window the budget counts restarts in (default 600)\n"
    "  --backoff SEC        the first restart of a window is immediate; the second\n"
    "                       waits SEC (default 1), each further one twice as long\n"
    "  --backoff-max SEC    the longest wait between restarts (default 30)\n"
    "  --stale-window SEC   how long after a failure requests that were queued before\n"
    "                       the user saw it are still dropped as stale instead of\n"
    "                       run in the fresh kernel (default: `kguard kernel`'s)\n"
    "SEC: a positive number of seconds (e.g. 0.5, 600); N: an integer 0..1000.\n"
    "\n"
    "device pre-flight (written into the kernelspec's env as KGUARD_PREFLIGHT and\n"
    "KGUARD_PREFLIGHT_TIMEOUT; omitted: kguard's defaults):\n"
    "  --preflight WHEN     when `kguard doctor --preflight` checks the devices the\n"
    "                       kernel will see (allocate, launch, synchronise), beside\n"
    "                       the kernel's start and before it is declared ready:\n"
    "                       sticky (default) after a restart for a sticky GPU\n"
    "                       error; first: also at the first start; never. A failing\n"
    "                       or hung device stops kguard (down) instead of looping\n"
    "  --preflight-timeout SEC  the probe's deadline (default 10, at most 3600)\n"
    "\n"
    "warm standby:\n"
    "  --standby            keep a warm standby kernel: a second kernel process,\n"
    "                       started while the first runs, takes over at a restart\n"
    "                       (no Python start, no imports), with the checkpoint\n"
    "                       restore handed to it; costs one idle kernel's memory\n"
    "  --standby-imports MODULES\n"
    "                       comma-separated modules the standby imports ahead\n"
    "                       (e.g. torch,numpy; no GPU is touched); implies\n"
    "                       --standby (kernelspec env KGUARD_STANDBY_IMPORTS)\n"
    "\n"
    "exit codes: 0 installed, 100 usage error (bad name or value, no such\n"
    "kernelspec: nothing written), 111 I/O error.\n",
    out);
}

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
    fprintf(stderr, "kguard install: unable to read %s: %s\n", from_dir, kg_strerror(e));
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
      fprintf(stderr, "kguard install: path too long: %s/%s\n", from_dir, e->d_name);
      rc = KG_ETOOBIG;
      break;
    }
    struct stat st;
    if (stat(a, &st) != 0) {
      rc = -errno;
      fprintf(stderr, "kguard install: unable to read %s: %s\n", a, kg_strerror(rc));
    }
    else if (S_ISDIR(st.st_mode)) {
      if (mkdir(b, 0755) != 0 && errno != EEXIST) {
        rc = -errno;
        fprintf(stderr, "kguard install: unable to create %s: %s\n", b, kg_strerror(rc));
      }
      else
        rc = s_copy_resources(a, b, false);
    }
    else if (S_ISREG(st.st_mode)) {
      rc = s_copy_file(a, b);
      if (rc == 0)
        chmod(b, st.st_mode & 0777);
      else
        fprintf(stderr, "kguard install: unable to copy %s: %s\n", a, kg_strerror(rc));
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
s_policy_parse(s_policy_opt_t *opt)
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
    fprintf(stderr, "kguard install: %s: expected %s, got '%s'\n", opt->flag,
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

int
kg_cli_install_main(int argc, char **argv)
{
  enum { O_KERNEL = 1000, O_NAME, O_DISPLAY, O_USER, O_SYSPREFIX, O_PREFIX, O_CKPT,
         O_PREFLIGHT, O_PREFLIGHT_TIMEOUT, O_STANDBY, O_STANDBY_IMPORTS, O_POLICY };
  s_policy_opt_t policy[] = {
    {"--max-restarts", true, NULL, 0}, {"--restart-window", false, NULL, 0},
    {"--backoff", false, NULL, 0}, {"--backoff-max", false, NULL, 0},
    {"--stale-window", false, NULL, 0}};
  const size_t npolicy = sizeof policy / sizeof policy[0];
  static const struct option opts[] = {
    {"kernel", required_argument, NULL, O_KERNEL},
    {"name", required_argument, NULL, O_NAME},
    {"display-name", required_argument, NULL, O_DISPLAY},
    {"user", no_argument, NULL, O_USER},
    {"sys-prefix", no_argument, NULL, O_SYSPREFIX},
    {"prefix", required_argument, NULL, O_PREFIX},
    {"checkpoints", required_argument, NULL, O_CKPT},
    {"preflight", required_argument, NULL, O_PREFLIGHT},
    {"preflight-timeout", required_argument, NULL, O_PREFLIGHT_TIMEOUT},
    {"standby", no_argument, NULL, O_STANDBY},
    {"standby-imports", required_argument, NULL, O_STANDBY_IMPORTS},
    {"max-restarts", required_argument, NULL, O_POLICY + 0},
    {"restart-window", required_argument, NULL, O_POLICY + 1},
    {"backoff", required_argument, NULL, O_POLICY + 2},
    {"backoff-max", required_argument, NULL, O_POLICY + 3},
    {"stale-window", required_argument, NULL, O_POLICY + 4},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};
  const char *kernel = "python3", *name = NULL, *display = NULL, *prefix = NULL, *ckpt = NULL;
  const char *preflight = NULL, *preflight_timeout = NULL;
  const char *standby_imports = NULL;
  bool standby = false;
  int where = 0;   /* 0 user, 1 sys-prefix, 2 prefix */
  int places = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case O_KERNEL: kernel = optarg; break;
    case O_NAME: name = optarg; break;
    case O_DISPLAY: display = optarg; break;
    case O_USER: where = 0; places++; break;
    case O_SYSPREFIX: where = 1; places++; break;
    case O_PREFIX: where = 2; prefix = optarg; places++; break;
    case O_CKPT: ckpt = optarg; break;
    case O_PREFLIGHT: preflight = optarg; break;
    case O_PREFLIGHT_TIMEOUT: preflight_timeout = optarg; break;
    case O_STANDBY: standby = true; break;
    case O_STANDBY_IMPORTS:
      if (!s_module_list_ok(optarg)) {
        fprintf(stderr, "kguard install: --standby-imports takes Python module names "
                        "separated by commas (e.g. torch,numpy), not '%s'\n", optarg);
        return KG_EXIT_USAGE;
      }
      standby_imports = optarg;
      standby = true;
      break;
    case 'h': s_usage(stdout); return KG_EXIT_OK;
    default:
      if (c >= O_POLICY && c < O_POLICY + (int) npolicy) {
        policy[c - O_POLICY].value = optarg;
        if (s_policy_parse(&policy[c - O_POLICY]) != 0)
          return KG_EXIT_USAGE;
        break;
      }
      s_usage(stderr);
      return KG_EXIT_USAGE;
    }
  }
  if (policy[2].value && policy[3].value && policy[2].number > policy[3].number) {
    fprintf(stderr, "kguard install: --backoff %s is longer than --backoff-max %s\n",
            policy[2].value, policy[3].value);
    return KG_EXIT_USAGE;
  }
  /* the values kguard kernel will read back: checked by the same parser */
  if (preflight || preflight_timeout) {
    kg_preflight_config_t pf;
    char perr[256];
    if (kg_preflight_config_parse(preflight, preflight_timeout, &pf, perr, sizeof perr) != 0) {
      fprintf(stderr, "kguard install: %s: %s\n",
              strstr(perr, "TIMEOUT") ? "--preflight-timeout" : "--preflight", perr);
      return KG_EXIT_USAGE;
    }
  }
  if (optind < argc || places > 1) {
    fprintf(stderr, "kguard install: %s (see kguard install --help)\n",
            places > 1 ? "give at most one of --user, --sys-prefix, --prefix"
                       : "unexpected argument");
    return KG_EXIT_USAGE;
  }
  if (where == 1) {
    prefix = getenv("VIRTUAL_ENV");
    if (!prefix || !*prefix)
      prefix = getenv("CONDA_PREFIX");
    if (!prefix || !*prefix)
      prefix = "/usr";
  }
  /*  The new name first, as jupyter_client's install_kernel_spec checks it
      (lowercased, then _kernel_name_pat): a name Jupyter would refuse, or
      one that is a directory reference, is an error, never cut or
      rewritten. */
  char err[2048] = "";
  if (kg_kernelspec_check_name(kernel, err, sizeof err) != 0) {
    fprintf(stderr, "kguard install: --kernel: %s\n", err);
    return KG_EXIT_USAGE;
  }
  char *newname = NULL;
  if (name)
    newname = strdup(name);
  else if (asprintf(&newname, "%s-kguard", kernel) < 0)
    newname = NULL;
  if (!newname) {
    fprintf(stderr, "kguard install: out of memory\n");
    return KG_EXIT_SYSTEM;
  }
  for (char *p = newname; *p; p++)
    *p = (char) tolower((unsigned char) *p);
  if (kg_kernelspec_check_name(newname, err, sizeof err) != 0) {
    fprintf(stderr, "kguard install: %s%s\n", name ? "--name: " : "", err);
    if (!name)
      fprintf(stderr, "kguard install: the default name is --kernel's with -kguard "
                      "appended; give one with --name\n");
    free(newname);
    return KG_EXIT_USAGE;
  }
  if (name && strcmp(name, newname) != 0)
    printf("kguard install: the name is lowercased as Jupyter does: %s\n", newname);
  kg_kernelspec_t *spec = NULL;
  int rc = kg_kernelspec_find(kernel, prefix, &spec, err, sizeof err);
  if (rc) {
    fprintf(stderr, "kguard install: %s\n", *err ? err : kg_strerror(rc));
    free(newname);
    return rc == KG_ENOKERNEL || rc == KG_EKERNELSPEC || rc == KG_EUSAGE ? KG_EXIT_USAGE
                                                                         : KG_EXIT_SYSTEM;
  }
  const char *a0 = cJSON_GetArrayItem(spec->argv, 0)->valuestring;
  const cJSON *a1 = cJSON_GetArrayItem(spec->argv, 1);
  if (strstr(a0, "kguard") && cJSON_IsString(a1) && strcmp(a1->valuestring, "kernel") == 0) {
    fprintf(stderr, "kguard install: '%s' is already a kguard kernelspec; wrap the kernel it "
                    "wraps instead\n", kernel);
    free(newname);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  char *dname = display ? strdup(display) : s_display_name(spec->display_name);
  if (!dname) {
    fprintf(stderr, "kguard install: out of memory\n");
    free(newname);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_SYSTEM;
  }
  char exe[PATH_MAX], kdir[PATH_MAX], dest[PATH_MAX];
  if (kg_paths_exe(exe, sizeof exe) != 0) {
    fprintf(stderr, "kguard install: unable to find kguard's own path\n");
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
    fprintf(stderr, "kguard install: the destination path is too long (at most %d "
            "bytes): %s/share/jupyter/kernels/%s\n", PATH_MAX - 1,
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
  if ((preflight || preflight_timeout) && !env)
    env = cJSON_CreateObject();
  const char *pf_vars[][2] = {{"KGUARD_PREFLIGHT", preflight},
                              {"KGUARD_PREFLIGHT_TIMEOUT", preflight_timeout}};
  for (size_t i = 0; i < 2; i++)
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
  rc = kg_paths_mkdirs(dest, 0755);
  char file[PATH_MAX + 16];
  snprintf(file, sizeof file, "%s/kernel.json", dest);
  if (rc == 0)
    rc = kg_file_write_atomic(file, text, strlen(text), 0644);
  if (rc != 0) {
    fprintf(stderr, "kguard install: unable to write %s: %s\n", file, kg_strerror(rc));
    code = KG_EXIT_SYSTEM;
  }
  if (code == KG_EXIT_OK && spec->dir && s_copy_resources(spec->dir, dest, true) != 0)
    code = KG_EXIT_SYSTEM;
  if (code == KG_EXIT_OK) {
    printf("installed kernelspec %s (\"%s\", wraps %s) in %s\n", newname, dname, kernel, dest);
  }
  free(text);
  free(newname);
  free(dname);
  kg_kernelspec_destroy(&spec);
  return code;
}
