/*  kguard run: argument parsing, --help, and the setup around kg_runner
    (state directory, kernelspec, signals).
*/
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kg_run.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"
#include "kg_notebook.h"
#include "kg_outpath.h"
#include "kg_params.h"
#include "kg_paths.h"
#include "kg_safepath.h"
#include "kg_progress.h"
#include "kg_runner.h"
#include "kg_kernelspec.h"
#include "kg_client.h"

static void
s_usage(FILE *out)
{
  fputs(
    "usage: kguard run NOTEBOOK.ipynb [-o OUT] [--kernel NAME] [--timeout SECONDS]\n"
    "                  [-p NAME VALUE]... [-f PARAMS.json|PARAMS.yaml] [--cwd DIR]\n"
    "                  [--checkpoints DIR] [--state-dir DIR] [--max-restarts N]\n"
    "                  [--log-output] [--quiet]\n"
    "\n"
    "Execute a notebook's code cells in order, unattended, through a `kguard kernel`\n"
    "that guards the real kernel (the same path as the installed kernelspec). When a\n"
    "sticky GPU error (CUDA/ROCm device-side assert, illegal address ...) poisons the\n"
    "kernel, kguard restarts it and restores the last checkpoint sealed before the\n"
    "fault; `run` then executes the notebook again from its first cell through the\n"
    "failed one in the fresh kernel (training resumes through kguard.resume()), and\n"
    "goes on. Other errors stop the run as nbconvert does, except in cells tagged\n"
    "`raises-exception`.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT      executed notebook (default: NOTEBOOK.kguard.ipynb beside\n"
    "                        the input; written via a temporary file and a rename)\n"
    "  -k, --kernel NAME     kernelspec to guard (default: the notebook's\n"
    "                        metadata.kernelspec.name, else python3); a kernelspec that\n"
    "                        is itself a kguard wrapper is used as it is\n"
    "  -t, --timeout SEC     per-cell limit: interrupt the cell and stop (default: none)\n"
    "  -p, --parameters NAME VALUE\n"
    "                        set a notebook parameter (repeatable), as papermill does:\n"
    "                        VALUE True, False, None, an integer or a float is that,\n"
    "                        one starting with [ or { is JSON, anything else a string\n"
    "  -f, --parameters-file FILE\n"
    "                        parameters from a JSON object (.json) or flat `name:\n"
    "                        value` YAML (.yaml/.yml; nesting: use JSON); read before\n"
    "                        the -p ones, which win\n"
    "                        Parameters go into a code cell tagged injected-parameters,\n"
    "                        inserted after the cell tagged `parameters` (at the top\n"
    "                        if none; an earlier injected cell is replaced), as Python\n"
    "                        literals (the kernel must be a Python one); they are\n"
    "                        recorded in metadata.kguard.parameters, and re-runs after\n"
    "                        a restart execute the same injected cell\n"
    "  --cwd DIR             the kernel's working directory (default: the notebook's\n"
    "                        directory); relative paths in the notebook and the\n"
    "                        default kguard-checkpoints directory are found there\n"
    "  --log-output          show the cells' output even with --quiet (papermill's\n"
    "                        spelling; without --quiet it is shown anyway)\n"
    "  --checkpoints DIR     checkpoint directory for the kernel (KGUARD_CKPT_DIR;\n"
    "                        default: kguard-checkpoints in the kernel's working\n"
    "                        directory: the notebook's, or --cwd)\n"
    "  --state-dir DIR       incidents and logs (default: $KGUARD_STATE_DIR, else\n"
    "                        $XDG_STATE_HOME/kguard, else ~/.local/state/kguard)\n"
    "  --max-restarts N      kernel restarts to follow before giving up (default 3;\n"
    "                        kguard's own budget and repeated-failure rule apply too)\n"
    "  --startup-timeout SEC time for the kernel to become ready (default 120)\n"
    "  -q, --quiet           show neither the cells' output nor each cell's progress:\n"
    "                        only problems and the final summary\n"
    "  -h, --help            this text\n"
    "\n"
    "What the cells print is shown as it arrives, as if their code ran as a script:\n"
    "their stdout, results and displays (as text) on standard output, their stderr\n"
    "and tracebacks on standard error, whether or not these are terminals (so\n"
    "`kguard run nb.ipynb | grep RESULT` and CI logs see it; --quiet hides it).\n"
    "kguard's own lines go to standard error: a live line for the running cell on a\n"
    "terminal, plain lines otherwise. Cells are numbered as Jupyter numbers them\n"
    "when a notebook runs from the top: cell N is the Nth non-empty code cell, In [N]\n"
    "in the written notebook and Cell [N] in kguard's notices.\n"
    "\n"
    "Before any cell runs, kguard checks what it will need: the notebook, the\n"
    "kernel, the parameters, and that the executed notebook can be written (its\n"
    "directory exists and takes a new file). The kernel runs in the notebook's\n"
    "directory (or --cwd); the kguard kernel's log is in the state directory\n"
    "(logs/). The written notebook holds the outputs of each cell's final\n"
    "execution; metadata.kguard.incidents lists every kguard event (family,\n"
    "incident record, restored checkpoint step, cell), metadata.kguard.run the\n"
    "result and metadata.kguard.parameters the parameters.\n"
    "\n"
    "exit codes:\n"
    "  0    every code cell ran (after restarts, if any)\n"
    "  1    a cell raised an error (not tagged raises-exception); notebook written\n"
    "  2    gave up: kguard stopped restarting (same failure twice, or its restart\n"
    "       budget spent), or more than --max-restarts restarts; notebook written\n"
    "  3    bad notebook (empty, not UTF-8, not JSON, not nbformat 4, no cells) or\n"
    "       unknown kernel; nothing written\n"
    "  4    a cell ran past --timeout; notebook written\n"
    "  5    every cell ran, but after a restart kguard could not restore a verified\n"
    "       checkpoint it had (metadata.kguard.run.checkpoints_not_restored):\n"
    "       training started over instead of resuming; notebook written\n"
    "  100  wrong usage: no such NOTEBOOK, an -o that cannot be written (a missing\n"
    "       or read-only directory, a directory), bad parameters, --cwd or --kernel\n"
    "       name; nothing ran, nothing written\n"
    "  111  system failure, e.g. the kernel could not start (its own last words and\n"
    "       its kernelspec are shown); nothing written\n"
    "  130  interrupted by Ctrl-C (143: SIGTERM); notebook written\n",
    out);
}

static char *
s_absolute(const char *path)
{
  if (path[0] == '/')
    return strdup(path);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    return NULL;
  size_t n = strlen(cwd) + strlen(path) + 2;
  char *out = malloc(n);
  if (out)
    snprintf(out, n, "%s/%s", cwd, path);
  return out;
}

/*  The state directory (--state-dir, else the shared convention of
    kg_paths), created and checked to be private (kg_safepath.h). New
    string, or NULL with why filled. */
static char *
s_state_dir(const char *arg, char *why, size_t whylen)
{
  char buf[PATH_MAX];
  if (!arg) {
    if (kg_paths_state_dir_why(buf, sizeof buf, why, whylen) != 0)
      return NULL;
    return s_absolute(buf);
  }
  char *abs = s_absolute(arg);
  if (!abs) {
    kg_errf(why, whylen, "out of memory");
    return NULL;
  }
  char sub[PATH_MAX + 256];
  if (kg_safepath_make_dir(abs, sub, sizeof sub) != 0) {
    kg_errf(why, whylen, "--state-dir: %s", sub);
    free(abs);
    return NULL;
  }
  return abs;
}

/*  NOTEBOOK.ipynb -> NOTEBOOK.kguard.ipynb in the same directory. */
static char *
s_default_output(const char *input)
{
  size_t n = strlen(input);
  const char *slash = strrchr(input, '/');
  size_t stem = n;
  if (n > 6 && strcmp(input + n - 6, ".ipynb") == 0 && (!slash || slash < input + n - 6))
    stem = n - 6;
  char *out = malloc(stem + 16);
  if (out)
    snprintf(out, stem + 16, "%.*s.kguard.ipynb", (int) stem, input);
  return out;
}

static char *
s_dirname(const char *path)
{
  char *abs = s_absolute(path);
  if (!abs)
    return NULL;
  char *slash = strrchr(abs, '/');
  if (slash == abs)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  return abs;
}

static bool
s_parse_seconds(const char *text, double *out)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || !end || *end || end == text || !(v >= 0) || v > 1e9)
    return false;
  *out = v;
  return true;
}

int
kg_run_main(int argc, char **argv)
{
  static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"kernel", required_argument, NULL, 'k'},
    {"timeout", required_argument, NULL, 't'},
    {"checkpoints", required_argument, NULL, 'c'},
    {"state-dir", required_argument, NULL, 's'},
    {"max-restarts", required_argument, NULL, 'm'},
    {"startup-timeout", required_argument, NULL, 'S'},
    {"parameters-file", required_argument, NULL, 'f'},
    {"cwd", required_argument, NULL, 'C'},
    {"log-output", no_argument, NULL, 'L'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}
  };
  const char *output = NULL, *kernel = NULL, *checkpoints = NULL, *state_arg = NULL;
  double timeout = 0, startup = 120;
  int max_restarts = 3;
  bool quiet = false, log_output = false;
  const char *cwd_arg = NULL;
  /*  -p NAME VALUE pairs (indices into argv) and -f files, applied files
      first, as papermill does. getopt takes one value per option, so the
      pairs are taken out of argv first (a VALUE such as -0.5 is a value,
      not an option). */
  int *pnames = calloc((size_t) argc + 1, sizeof *pnames);
  const char **pfiles = calloc((size_t) argc + 1, sizeof *pfiles);
  char **args = calloc((size_t) argc + 1, sizeof *args);
  size_t np = 0, nf = 0;
  int nargs = 0;
  int code = KG_EXIT_USAGE;
  if (!pnames || !pfiles || !args) {
    fprintf(stderr, "kguard run: out of memory\n");
    code = KG_EXIT_SYSTEM;
    goto usage;
  }
  for (int i = 0; i < argc; i++) {
    bool rest = i > 0 && strcmp(argv[i - 1], "--") == 0;
    if (!rest && i > 0 && (strcmp(argv[i], "-p") == 0
                           || strcmp(argv[i], "--parameters") == 0)) {
      if (i + 2 >= argc) {
        fprintf(stderr, "kguard run: %s needs a NAME and a VALUE (-p NAME VALUE)\n",
                argv[i]);
        goto usage;
      }
      pnames[np++] = i + 1;
      i += 2;
      continue;
    }
    args[nargs++] = argv[i];
  }
  args[nargs] = NULL;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(nargs, args, "o:k:t:f:qh", opts, NULL)) != -1) {
    switch (c) {
    case 'f': pfiles[nf++] = optarg; break;
    case 'C': cwd_arg = optarg; break;
    case 'L': log_output = true; break;
    case 'o': output = optarg; break;
    case 'k': kernel = optarg; break;
    case 'c': checkpoints = optarg; break;
    case 's': state_arg = optarg; break;
    case 'q': quiet = true; break;
    case 'h':
      s_usage(stdout);
      code = KG_EXIT_OK;
      goto usage;
    case 't':
      if (!s_parse_seconds(optarg, &timeout)) {
        fprintf(stderr, "kguard run: --timeout: expected seconds, got '%s'\n", optarg);
        goto usage;
      }
      break;
    case 'S':
      if (!s_parse_seconds(optarg, &startup) || startup <= 0) {
        fprintf(stderr, "kguard run: --startup-timeout: expected seconds, got '%s'\n",
                optarg);
        goto usage;
      }
      break;
    case 'm': {
      char *end = NULL;
      long v = strtol(optarg, &end, 10);
      if (!end || *end || end == optarg || v < 0 || v > 1000) {
        fprintf(stderr, "kguard run: --max-restarts: expected 0..1000, got '%s'\n", optarg);
        goto usage;
      }
      max_restarts = (int) v;
      break;
    }
    default:
      if (optopt)
        fprintf(stderr, "kguard run: option -%c: unknown or missing its value\n", optopt);
      else
        fprintf(stderr, "kguard run: unknown option '%s'\n", args[optind - 1]);
      fputs("usage: kguard run NOTEBOOK.ipynb [options] (see kguard run --help)\n", stderr);
      goto usage;
    }
  }
  if (optind != nargs - 1) {
    fprintf(stderr, "kguard run: %s\nusage: kguard run NOTEBOOK.ipynb [options] "
            "(see kguard run --help)\n", optind >= nargs ? "no notebook given"
            : "exactly one notebook, please");
    goto usage;
  }
  const char *input = args[optind];

  /*  Parameters and --cwd are usage: checked before anything is read. */
  char perr[2048];
  kg_params_t *params = np + nf ? kg_params_new() : NULL;
  if ((np + nf) && !params) {
    code = KG_EXIT_SYSTEM;
    goto usage;
  }
  for (size_t i = 0; i < nf; i++) {
    int prc = kg_params_add_file(params, pfiles[i], perr, sizeof perr);
    if (prc != 0) {
      fprintf(stderr, "kguard run: -f: %s\n", perr);
      code = prc == KG_ENOMEM ? KG_EXIT_SYSTEM : KG_EXIT_USAGE;
      kg_params_destroy(&params);
      goto usage;
    }
  }
  for (size_t i = 0; i < np; i++) {
    int prc = kg_params_add_cli(params, argv[pnames[i]], argv[pnames[i] + 1], perr,
                                sizeof perr);
    if (prc != 0) {
      fprintf(stderr, "kguard run: %s\n", perr);
      code = prc == KG_ENOMEM ? KG_EXIT_SYSTEM : KG_EXIT_USAGE;
      kg_params_destroy(&params);
      goto usage;
    }
  }
  free(pnames);
  free(pfiles);
  free(args);
  pnames = NULL;
  pfiles = NULL;
  args = NULL;
  struct stat cst;
  if (cwd_arg && (stat(cwd_arg, &cst) != 0 || !S_ISDIR(cst.st_mode))) {
    fprintf(stderr, "kguard run: --cwd %s: %s\n", cwd_arg,
            errno == ENOENT ? "no such directory" : "not a directory");
    kg_params_destroy(&params);
    return KG_EXIT_USAGE;
  }

  /*  The notebook first: a bad one is reported before anything starts. A
      path that does not lead to a file is a usage error, like every
      mistyped path; a file that is not a notebook, a bad notebook. */
  char err[2048];
  kg_notebook_t *nb = NULL;
  int rc = kg_notebook_load(input, &nb, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "kguard run: %s: %s\n", input, err);
    kg_params_destroy(&params);
    return rc == -ENOENT || rc == -ENOTDIR || rc == -EISDIR ? KG_EXIT_USAGE
           : rc == KG_ENOTEBOOK ? KG_RUN_EXIT_BAD_NOTEBOOK : KG_EXIT_SYSTEM;
  }
  const char *kname = kernel ? kernel : kg_notebook_kernel_name(nb);
  if (!kname)
    kname = "python3";
  kg_kernelspec_t *spec = NULL;
  rc = kg_kernelspec_find(kname, NULL, &spec, err, sizeof err);
  if (rc != 0) {
    if (kernel)
      fprintf(stderr, "kguard run: --kernel %s: %s; `jupyter kernelspec list` shows the "
              "installed ones\n", kernel, err);
    else
      fprintf(stderr, "kguard run: %s: the notebook's kernel \"%s\" "
              "(metadata.kernelspec.name) is not installed here: %s; run it with one "
              "that is: --kernel NAME (`jupyter kernelspec list` shows them)\n", input,
              kname, err);
    kg_notebook_destroy(&nb);
    kg_params_destroy(&params);
    /*  A bad --kernel is usage; a bad name in the notebook, a bad notebook. */
    return rc == KG_ENOMEM ? KG_EXIT_SYSTEM
           : rc == KG_EUSAGE && kernel ? KG_EXIT_USAGE : KG_RUN_EXIT_BAD_NOTEBOOK;
  }
  if (params && strcasecmp(spec->language, "python") != 0) {
    fprintf(stderr, "kguard run: parameters are injected as Python, and kernel \"%s\" "
            "declares language \"%s\"\n", spec->name, spec->language);
    kg_notebook_destroy(&nb);
    kg_params_destroy(&params);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  if (params && kg_params_inject(params, nb) < 0) {
    fprintf(stderr, "kguard run: out of memory\n");
    kg_notebook_destroy(&nb);
    kg_params_destroy(&params);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_SYSTEM;
  }
  kg_params_destroy(&params);

  code = KG_EXIT_SYSTEM;
  char *out_path = output ? strdup(output) : s_default_output(input);
  /*  Where the executed notebook goes is checked now, as papermill does:
      a run whose outputs cannot be written must not run at all. */
  if (out_path) {
    rc = kg_outpath_check(out_path, err, sizeof err);
    if (rc != 0) {
      if (output)
        fprintf(stderr, "kguard run: -o %s: %s\n", output, err);
      else
        fprintf(stderr, "kguard run: the executed notebook %s cannot be written: %s; "
                "choose where with -o OUT\n", out_path, err);
      free(out_path);
      kg_notebook_destroy(&nb);
      kg_kernelspec_destroy(&spec);
      return rc == -ENOMEM ? KG_EXIT_SYSTEM : KG_EXIT_USAGE;
    }
  }
  struct stat ckst;
  if (checkpoints && stat(checkpoints, &ckst) == 0 && !S_ISDIR(ckst.st_mode)) {
    fprintf(stderr, "kguard run: --checkpoints %s: not a directory\n", checkpoints);
    free(out_path);
    kg_notebook_destroy(&nb);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  char *nb_dir = cwd_arg ? s_absolute(cwd_arg) : s_dirname(input);
  char state_why[PATH_MAX + 512] = "";
  char *state_dir = s_state_dir(state_arg, state_why, sizeof state_why);
  char *ckpt = checkpoints ? s_absolute(checkpoints) : NULL;
  char *state_abs = state_arg ? s_absolute(state_arg) : NULL;
  char exe[PATH_MAX];
  int exe_rc = kg_paths_exe(exe, sizeof exe);
  char log_path[PATH_MAX + 64];
  bool have_log = false;
  kg_progress_t *pr = kg_progress_new(stderr, stdout, quiet);
  int sigfd = -1;
  if (!state_dir && out_path && nb_dir) {
    fprintf(stderr, "kguard run: %s\n", state_why);
    code = KG_EXIT_USAGE;
    goto done;
  }
  if (!out_path || !nb_dir || !state_dir || (checkpoints && !ckpt) || (state_arg && !state_abs)
      || !pr || exe_rc != 0) {
    fprintf(stderr, "kguard run: unable to set up: %s\n",
            exe_rc != 0 ? "cannot read /proc/self/exe" : "out of memory");
    goto done;
  }

  /*  The kernel's output goes to a log, so the terminal shows the story. */
  snprintf(log_path, sizeof log_path, "%s/logs", state_dir);
  if (kg_file_mkdirs(log_path, 0700, 0700) == 0) {
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", gmtime_r(&now, &tm));
    snprintf(log_path, sizeof log_path, "%s/logs/run-%s-%d.log", state_dir, stamp,
             (int) getpid());
    have_log = true;
  }
  else
    kg_warning("unable to create %s/logs; the kernel's output stays on stderr", state_dir);

  /*  Signals become events of the poll loop. Blocked before the zmq context
      exists, so its I/O threads inherit the mask and never take them. */
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0)
    kg_warning("unable to create a signalfd: %s; Ctrl-C ends the run at once",
               strerror(errno));
  if (sigfd < 0)
    sigprocmask(SIG_UNBLOCK, &mask, NULL);

  kg_runner_config_t cfg = {
    .output_path = out_path,
    .timeout_s = timeout,
    .max_restarts = max_restarts,
    .startup_timeout_s = startup,
    .state_dir = state_dir,
    .log_path = have_log ? log_path : NULL,
    .show_output = log_output || !quiet,
    .client = {
      .exe = exe,
      .spec = spec,
      .checkpoints = ckpt,
      .state_dir_arg = state_abs,
      .state_dir = state_dir,
      .cwd = nb_dir,
      .log_path = have_log ? log_path : NULL,
      .signal_fd = sigfd,
    },
  };
  if (kg_client_spec_is_kguard(spec))
    kg_progress_event(pr, false, "kernelspec \"%s\" is already a kguard wrapper: used as "
                      "it is", spec->name);
  code = kg_runner_run(nb, &cfg, pr);

done:
  if (sigfd >= 0)
    close(sigfd);
  kg_progress_destroy(&pr);
  free(out_path);
  free(nb_dir);
  free(state_dir);
  free(state_abs);
  free(ckpt);
  kg_kernelspec_destroy(&spec);
  kg_notebook_destroy(&nb);
  return code;

usage:
  free(pnames);
  free(pfiles);
  free(args);
  return code;
}
