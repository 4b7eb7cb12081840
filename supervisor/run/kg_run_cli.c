/*  kguard run: argument parsing, --help, and the setup around kg_runner
    (state directory, kernelspec, signals).
*/
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kg_run.h"
#include "kg_opt.h"
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
#include "kg_emurun.h"

enum { O_OUTPUT = 1, O_KERNEL, O_TIMEOUT, O_PARAM, O_PARAMS_FILE, O_CWD, O_LOG_OUTPUT,
       O_CHECKPOINTS, O_STATE_DIR, O_MAX_RESTARTS, O_STARTUP_TIMEOUT, O_QUIET };

static const kg_opt_t s_opts[] = {
  {O_OUTPUT, 'o', "output", "OUT",
   "executed notebook (default: NOTEBOOK.kguard.ipynb beside the input; written via a "
   "temporary file and a rename)", 0},
  {O_KERNEL, 'k', "kernel", "NAME",
   "kernelspec to guard (default: the notebook's metadata.kernelspec.name, else python3); "
   "a kernelspec that is itself a kguard wrapper is used as it is", 0},
  {O_TIMEOUT, 't', "timeout", "SEC", "per-cell limit: interrupt the cell and stop (default: "
   "none)", 0},
  {O_PARAM, 'p', "parameters", "NAME VALUE",
   "set a notebook parameter (repeatable), as papermill does: VALUE True, False, None, an "
   "integer or a float is that, one starting with [ or { is JSON, anything else a string",
   KG_OPT_PAIR},
  {O_PARAMS_FILE, 'f', "parameters-file", "FILE",
   "parameters from a JSON object (.json) or flat `name: value` YAML (.yaml/.yml; nesting: "
   "use JSON); read before the -p ones, which win\n\n"
   "Parameters go into a code cell tagged injected-parameters, inserted after the cell "
   "tagged `parameters` (at the top if none; an earlier injected cell is replaced), as "
   "Python literals (the kernel must be a Python one); they are recorded in "
   "metadata.kguard.parameters, and re-runs after a restart execute the same injected cell",
   0},
  {O_CWD, 0, "cwd", "DIR",
   "the kernel's working directory (default: the notebook's directory); relative paths in "
   "the notebook and the default kguard-checkpoints directory are found there", 0},
  {O_LOG_OUTPUT, 0, "log-output", NULL,
   "show the cells' output even with --quiet (papermill's spelling; without --quiet it is "
   "shown anyway)", 0},
  {O_CHECKPOINTS, 0, "checkpoints", "DIR",
   "checkpoint directory for the kernel (KGUARD_CKPT_DIR; default: kguard-checkpoints in the "
   "kernel's working directory: the notebook's, or --cwd)", 0},
  {O_STATE_DIR, 0, "state-dir", "DIR",
   "incidents and logs (default: $KGUARD_STATE_DIR, else $XDG_STATE_HOME/kguard, else "
   "~/.local/state/kguard)", 0},
  {O_MAX_RESTARTS, 0, "max-restarts", "N",
   "kernel restarts to follow before giving up (default 3; kguard's own budget and "
   "repeated-failure rule apply too)", 0},
  {O_STARTUP_TIMEOUT, 0, "startup-timeout", "SEC",
   "time for the kernel to become ready (default 120)", 0},
  {O_QUIET, 'q', "quiet", NULL,
   "show neither the cells' output nor each cell's progress: only problems and the final "
   "summary", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"0", "every code cell ran (after restarts, if any)"},
  {"1", "a cell raised an error (not tagged raises-exception); notebook written"},
  {"2", "gave up: kguard stopped restarting (same failure twice, or its restart budget "
        "spent), or more than --max-restarts restarts; notebook written"},
  {"3", "bad notebook (empty, not UTF-8, not JSON, not nbformat 4, no cells) or unknown "
        "kernel; nothing written"},
  {"4", "a cell ran past --timeout; notebook written"},
  {"5", "every cell ran, but after a restart kguard could not restore a verified checkpoint "
        "it had (metadata.kguard.run.checkpoints_not_restored): training started over "
        "instead of resuming; notebook written"},
  {"100", "wrong usage: no such NOTEBOOK, an -o that cannot be written (a missing or "
          "read-only directory, a directory), bad parameters, --cwd or --kernel name; nothing "
          "ran, nothing written"},
  {"111", "system failure, e.g. the kernel could not start (its own last words and its "
          "kernelspec are shown); nothing written"},
  {"130", "interrupted by Ctrl-C (143: SIGTERM); notebook written"},
  {NULL, NULL},
};

const kg_cmd_t kg_run_cmd = {
  .name = "run",
  .summary = "execute a notebook unattended, surviving sticky device errors",
  .usage = "NOTEBOOK.ipynb [options]",
  .about = "Execute a notebook's code cells in order, unattended, through a `kguard kernel` "
           "that guards the real kernel (the same path as the installed kernelspec). When a "
           "sticky GPU error (CUDA/ROCm device-side assert, illegal address ...) poisons the "
           "kernel, kguard restarts it and restores the last checkpoint sealed before the "
           "fault; `run` then executes the notebook again from its first cell through the "
           "failed one in the fresh kernel (training resumes through kguard.resume()), and "
           "goes on. Other errors stop the run as nbconvert does, except in cells tagged "
           "`raises-exception`.",
  .opts = s_opts,
  .more = "What the cells print is shown as it arrives, as if their code ran as a script: "
          "their stdout, results and displays (as text) on standard output, their stderr and "
          "tracebacks on standard error, whether or not these are terminals (so `kguard run "
          "nb.ipynb | grep RESULT` and CI logs see it; --quiet hides it). kguard's own lines "
          "go to standard error: a live line for the running cell on a terminal, plain lines "
          "otherwise. Cells are numbered as Jupyter numbers them when a notebook runs from "
          "the top: cell N is the Nth non-empty code cell, In [N] in the written notebook and "
          "Cell [N] in kguard's notices.\n\n"
          "Before any cell runs, kguard checks what it will need: the notebook, the kernel, "
          "the parameters, and that the executed notebook can be written (its directory "
          "exists and takes a new file). The kernel runs in the notebook's directory (or "
          "--cwd); the kguard kernel's log is in the state directory (logs/). The written "
          "notebook holds the outputs of each cell's final execution; "
          "metadata.kguard.incidents lists every kguard event (family, incident record, "
          "restored checkpoint step, cell), metadata.kguard.run the result and "
          "metadata.kguard.parameters the parameters.",
  .exits = s_exits,
};

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
  const char *output = NULL, *kernel = NULL, *checkpoints = NULL, *state_arg = NULL;
  double timeout = 0, startup = 120;
  int max_restarts = 3;
  bool quiet = false, log_output = false;
  const char *cwd_arg = NULL, *input = NULL;
  /*  -p NAME VALUE pairs and -f files, applied files first, as papermill
      does. */
  const char **pnames = calloc((size_t) argc + 1, sizeof *pnames);
  const char **pvalues = calloc((size_t) argc + 1, sizeof *pvalues);
  const char **pfiles = calloc((size_t) argc + 1, sizeof *pfiles);
  size_t np = 0, nf = 0;
  int code = KG_EXIT_USAGE;
  if (!pnames || !pvalues || !pfiles) {
    kg_opt_error("out of memory");
    code = KG_EXIT_SYSTEM;
    goto usage;
  }
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_run_cmd, argc, argv);
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT:
      code = p.code;
      goto usage;
    case KG_OPT_OPERAND:
      if (input) {
        kg_opt_usage(&p, "exactly one notebook, please (got '%s' and '%s')", input, p.value);
        goto usage;
      }
      input = p.value;
      break;
    case O_PARAM:
      pnames[np] = p.value;
      pvalues[np++] = p.value2;
      break;
    case O_PARAMS_FILE: pfiles[nf++] = p.value; break;
    case O_CWD: cwd_arg = p.value; break;
    case O_LOG_OUTPUT: log_output = true; break;
    case O_OUTPUT: output = p.value; break;
    case O_KERNEL: kernel = p.value; break;
    case O_CHECKPOINTS: checkpoints = p.value; break;
    case O_STATE_DIR: state_arg = p.value; break;
    case O_QUIET: quiet = true; break;
    case O_TIMEOUT:
      if (!s_parse_seconds(p.value, &timeout)) {
        kg_opt_usage(&p, "--timeout: expected seconds, got '%s'", p.value);
        goto usage;
      }
      break;
    case O_STARTUP_TIMEOUT:
      if (!s_parse_seconds(p.value, &startup) || startup <= 0) {
        kg_opt_usage(&p, "--startup-timeout: expected seconds, got '%s'", p.value);
        goto usage;
      }
      break;
    case O_MAX_RESTARTS: {
      char *end = NULL;
      long v = strtol(p.value, &end, 10);
      if (!end || *end || end == p.value || v < 0 || v > 1000) {
        kg_opt_usage(&p, "--max-restarts: expected 0..1000, got '%s'", p.value);
        goto usage;
      }
      max_restarts = (int) v;
      break;
    }
    }
  }
  if (!input) {
    kg_opt_usage(&p, "no notebook given");
    goto usage;
  }



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
      kg_opt_error("-f: %s", perr);
      code = prc == KG_ENOMEM ? KG_EXIT_SYSTEM : KG_EXIT_USAGE;
      kg_params_destroy(&params);
      goto usage;
    }
  }
  for (size_t i = 0; i < np; i++) {
    int prc = kg_params_add_cli(params, pnames[i], pvalues[i], perr, sizeof perr);
    if (prc != 0) {
      kg_opt_error("%s", perr);
      code = prc == KG_ENOMEM ? KG_EXIT_SYSTEM : KG_EXIT_USAGE;
      kg_params_destroy(&params);
      goto usage;
    }
  }
  free(pnames);
  free(pvalues);
  free(pfiles);
  pnames = pvalues = pfiles = NULL;
  struct stat cst;
  if (cwd_arg && (stat(cwd_arg, &cst) != 0 || !S_ISDIR(cst.st_mode))) {
    kg_opt_error("--cwd %s: %s", cwd_arg,
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
    kg_opt_error_at(input, "%s", err);
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
      kg_opt_error("--kernel %s: %s; `jupyter kernelspec list` shows the installed ones",
                   kernel, err);
    else
      kg_opt_error("%s: the notebook's kernel \"%s\" (metadata.kernelspec.name) is not "
                   "installed here: %s; run it with one that is: --kernel NAME (`jupyter "
                   "kernelspec list` shows them)", input, kname, err);
    kg_notebook_destroy(&nb);
    kg_params_destroy(&params);
    /*  A bad --kernel is usage; a bad name in the notebook, a bad notebook. */
    return rc == KG_ENOMEM ? KG_EXIT_SYSTEM
           : rc == KG_EUSAGE && kernel ? KG_EXIT_USAGE : KG_RUN_EXIT_BAD_NOTEBOOK;
  }
  if (params && strcasecmp(spec->language, "python") != 0) {
    kg_opt_error("parameters are injected as Python, and kernel \"%s\" declares language "
                 "\"%s\"", spec->name, spec->language);
    kg_notebook_destroy(&nb);
    kg_params_destroy(&params);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  if (params && kg_params_inject(params, nb) < 0) {
    kg_opt_error("out of memory");
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
        kg_opt_error("-o %s: %s", output, err);
      else
        kg_opt_error("the executed notebook %s cannot be written: %s; choose where with -o "
                     "OUT", out_path, err);
      free(out_path);
      kg_notebook_destroy(&nb);
      kg_kernelspec_destroy(&spec);
      return rc == -ENOMEM ? KG_EXIT_SYSTEM : KG_EXIT_USAGE;
    }
  }
  struct stat ckst;
  if (checkpoints && stat(checkpoints, &ckst) == 0 && !S_ISDIR(ckst.st_mode)) {
    kg_opt_error("--checkpoints %s: not a directory", checkpoints);
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
  kg_sigsrc_t *sig = NULL;
  if (!state_dir && out_path && nb_dir) {
    fprintf(stderr, "kguard run: %s\n", state_why);
    code = KG_EXIT_USAGE;
    goto done;
  }
  if (!out_path || !nb_dir || !state_dir || (checkpoints && !ckpt) || (state_arg && !state_abs)
      || !pr || exe_rc != 0) {
    kg_opt_error("unable to set up: %s",
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

  /*  Signals become events of the client's loop. Blocked before the zmq
      context exists, so its I/O threads inherit the mask and never take them. */
  static const int signals[] = {SIGINT, SIGTERM, SIGHUP, 0};
  sig = kg_sigsrc_new(signals);
  if (!sig)
    kg_warning("unable to create a signalfd: %s; Ctrl-C ends the run at once",
               strerror(errno));

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
      .signals = sig,
    },
  };
  if (kg_client_spec_is_kguard(spec))
    kg_progress_event(pr, false, "kernelspec \"%s\" is already a kguard wrapper: used as "
                      "it is", spec->name);
  kg_emurun_t *emu = kg_emurun_new(getenv("KGUARD_EMULATE"));
  code = kg_runner_run(nb, &cfg, pr);
  char emu_words[PATH_MAX + 512];
  if (!kg_emurun_fired(emu, emu_words, sizeof emu_words))
    fprintf(stderr, "kguard run: %s\n", emu_words);
  kg_emurun_destroy(&emu);

done:
  kg_sigsrc_destroy(&sig);
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
  free(pvalues);
  free(pfiles);
  return code;
}
