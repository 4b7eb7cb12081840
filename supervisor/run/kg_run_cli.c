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
#include "kg_clock.h"
#include "kg_run_prepare.h"
#include "kg_run_resume.h"

enum { O_OUTPUT = 1, O_KERNEL, O_TIMEOUT, O_PARAM, O_PARAMS_FILE, O_CWD, O_LOG_OUTPUT,
       O_CHECKPOINTS, O_STATE_DIR, O_MAX_RESTARTS, O_STARTUP_TIMEOUT, O_QUIET, O_RESUME,
       O_KEEP };

static const kg_opt_t s_opts[] = {
  {O_OUTPUT, 'o', "output", "OUT",
   "executed notebook (default: NOTEBOOK.kguard.ipynb beside the input; also the second "
   "operand, as papermill's OUT). Written after every cell, via a temporary file and a "
   "rename, so a killed run keeps the outputs of the cells it finished", 0},
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
   "kernel's working directory: the notebook's, or --cwd); created, and checked to be "
   "writable, before any cell runs", 0},
  {O_RESUME, 0, "resume", NULL,
   "continue this run from its last consistent checkpoint (sealed, verified, of this run, "
   "signed by a trusted key, not quarantined), as after a fault: the cells run again from "
   "the top and kguard.resume() returns that checkpoint. A run is the notebook plus its "
   "parameters: another run's checkpoints are never resumed (refused when only runs of "
   "this notebook with other parameters have some). Without --resume nothing is resumed", 0},
  {O_KEEP, 0, "keep", "N",
   "keep the newest N consistent checkpoints of the run: sets KGUARD_KEEP=N for the "
   "kernel, the default of kguard.save's keep=", 0},
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
          "read-only directory, a directory), a --checkpoints that cannot be created or "
          "written, bad parameters, --cwd, --kernel name or --keep, --resume of another "
          "run's checkpoints; nothing ran, nothing written"},
  {"111", "system failure, e.g. the kernel could not start (its own last words and its "
          "kernelspec are shown); nothing written"},
  {"130", "interrupted by Ctrl-C (143: SIGTERM); notebook written"},
  {NULL, NULL},
};

const kg_cmd_t kg_run_cmd = {
  .name = "run",
  .summary = "execute a notebook unattended, surviving sticky device errors",
  .usage = "NOTEBOOK.ipynb [OUT.ipynb] [options]",
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
          "metadata.kguard.parameters the parameters.\n\n"
          "Stop, requeue, resume: the executed notebook is written after every cell, so a "
          "SIGKILL loses at most the running cell's outputs (SIGTERM and Ctrl-C write it "
          "whole). The checkpoints kguard.save seals belong to the run (KGUARD_RUN_ID: the "
          "notebook's file name and its parameters); `kguard run NOTEBOOK --resume` starts "
          "again from the top in a kernel whose kguard.resume() returns the run's last "
          "consistent checkpoint, says at the start what it chose and why, and records it in "
          "metadata.kguard.run.resumed.",
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

/*  ------------------------------------------------------------------------
    The command line, as given. */

typedef struct {
  const char *input, *output, *kernel, *checkpoints, *state_arg, *cwd_arg, *keep;
  const char *positional_output; /*  papermill's `run IN OUT`               */
  double timeout, startup;
  int max_restarts;
  bool quiet, log_output, resume;
  /*  -p NAME VALUE pairs and -f files, applied files first, as papermill
      does. */
  const char **pnames, **pvalues, **pfiles;
  size_t np, nf;
} s_args_t;

static void
s_args_free(s_args_t *a)
{
  free(a->pnames);
  free(a->pvalues);
  free(a->pfiles);
  a->pnames = a->pvalues = a->pfiles = NULL;
}

/*  A number of checkpoints to keep: a positive integer. */
static bool
s_parse_keep(const char *text)
{
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  return !errno && end && !*end && end != text && v >= 1 && v <= 1000000;
}

static int
s_parse_option(kg_opt_parser_t *p, int id, s_args_t *a)
{
  switch (id) {
  case KG_OPT_OPERAND:
    if (!a->input)
      a->input = p->value;
    else if (!a->positional_output)
      a->positional_output = p->value;
    else
      return kg_opt_usage(p, "a notebook and where its executed copy goes, please (got "
                          "'%s', '%s' and '%s')", a->input, a->positional_output, p->value);
    return -1;
  case O_PARAM:
    a->pnames[a->np] = p->value;
    a->pvalues[a->np++] = p->value2;
    return -1;
  case O_PARAMS_FILE: a->pfiles[a->nf++] = p->value; return -1;
  case O_CWD: a->cwd_arg = p->value; return -1;
  case O_LOG_OUTPUT: a->log_output = true; return -1;
  case O_OUTPUT: a->output = p->value; return -1;
  case O_KERNEL: a->kernel = p->value; return -1;
  case O_CHECKPOINTS: a->checkpoints = p->value; return -1;
  case O_STATE_DIR: a->state_arg = p->value; return -1;
  case O_QUIET: a->quiet = true; return -1;
  case O_RESUME: a->resume = true; return -1;
  case O_KEEP:
    if (!s_parse_keep(p->value))
      return kg_opt_usage(p, "--keep: expected how many checkpoints to keep, a positive "
                          "integer, got '%s'", p->value);
    a->keep = p->value;
    return -1;
  case O_TIMEOUT:
    if (!s_parse_seconds(p->value, &a->timeout))
      return kg_opt_usage(p, "--timeout: expected seconds, got '%s'", p->value);
    return -1;
  case O_STARTUP_TIMEOUT:
    if (!s_parse_seconds(p->value, &a->startup) || a->startup <= 0)
      return kg_opt_usage(p, "--startup-timeout: expected seconds, got '%s'", p->value);
    return -1;
  case O_MAX_RESTARTS: {
    char *end = NULL;
    long v = strtol(p->value, &end, 10);
    if (!end || *end || end == p->value || v < 0 || v > 1000)
      return kg_opt_usage(p, "--max-restarts: expected 0..1000, got '%s'", p->value);
    a->max_restarts = (int) v;
    return -1;
  }
  }
  return -1;
}

/*  Step 1: the command line into *a. Returns -1 to go on, else the exit
    code (--help, a usage error). */
static int
s_parse(int argc, char **argv, s_args_t *a)
{
  *a = (s_args_t){.startup = 120, .max_restarts = 3};
  a->pnames = calloc((size_t) argc + 1, sizeof *a->pnames);
  a->pvalues = calloc((size_t) argc + 1, sizeof *a->pvalues);
  a->pfiles = calloc((size_t) argc + 1, sizeof *a->pfiles);
  if (!a->pnames || !a->pvalues || !a->pfiles) {
    kg_opt_error("out of memory");
    return KG_EXIT_SYSTEM;
  }
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_run_cmd, argc, argv);
  int id, code;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    if (id == KG_OPT_EXIT)
      return p.code;
    if ((code = s_parse_option(&p, id, a)) >= 0)
      return code;
  }
  if (!a->input)
    return kg_opt_usage(&p, "no notebook given");
  if (a->positional_output && a->output)
    return kg_opt_usage(&p, "the executed notebook is given twice ('%s' and -o %s): give one",
                        a->positional_output, a->output);
  if (a->positional_output)
    a->output = a->positional_output;
  return -1;
}

/*  ------------------------------------------------------------------------
    What the run needs, checked before any cell runs. */

typedef struct {
  kg_notebook_t *nb;
  kg_kernelspec_t *spec;
  cJSON *parameters;            /*  the run's parameters (object) or NULL  */
  char *out_path;
} s_checked_t;

static void
s_checked_free(s_checked_t *c)
{
  kg_notebook_destroy(&c->nb);
  kg_kernelspec_destroy(&c->spec);
  cJSON_Delete(c->parameters);
  c->parameters = NULL;
  free(c->out_path);
  c->out_path = NULL;
}

/*  Parameters and --cwd are usage: checked before anything is read. New
    parameters in *params_p (NULL when none). Returns -1 or the exit code. */
static int
s_check_params(const s_args_t *a, kg_params_t **params_p)
{
  char perr[2048];
  *params_p = NULL;
  if (a->np + a->nf == 0)
    return -1;
  kg_params_t *params = *params_p = kg_params_new();
  if (!params)
    return KG_EXIT_SYSTEM;
  for (size_t i = 0; i < a->nf + a->np; i++) {
    int prc = i < a->nf ? kg_params_add_file(params, a->pfiles[i], perr, sizeof perr)
                        : kg_params_add_cli(params, a->pnames[i - a->nf],
                                            a->pvalues[i - a->nf], perr, sizeof perr);
    if (prc != 0) {
      kg_opt_error("%s%s", i < a->nf ? "-f: " : "", perr);
      return prc == KG_ENOMEM ? KG_EXIT_SYSTEM : KG_EXIT_USAGE;
    }
  }
  return -1;
}

/*  The notebook first: a bad one is reported before anything starts. A
    path that does not lead to a file is a usage error, like every
    mistyped path; a file that is not a notebook, a bad notebook. */
static int
s_check_notebook(const s_args_t *a, s_checked_t *c)
{
  char err[2048];
  int rc = kg_notebook_load(a->input, &c->nb, err, sizeof err);
  if (rc != 0) {
    kg_opt_error_at(a->input, "%s", err);
    return rc == -ENOENT || rc == -ENOTDIR || rc == -EISDIR ? KG_EXIT_USAGE
           : rc == KG_ENOTEBOOK ? KG_RUN_EXIT_BAD_NOTEBOOK : KG_EXIT_SYSTEM;
  }
  const char *kname = a->kernel ? a->kernel : kg_notebook_kernel_name(c->nb);
  if (!kname)
    kname = "python3";
  rc = kg_kernelspec_find(kname, kg_kernelspec_sys_prefix(), &c->spec, err, sizeof err);
  if (rc == 0)
    return -1;
  if (a->kernel)
    kg_opt_error("--kernel %s: %s; `jupyter kernelspec list` shows the installed ones",
                 a->kernel, err);
  else
    kg_opt_error("%s: the notebook's kernel \"%s\" (metadata.kernelspec.name) is not "
                 "installed here: %s; run it with one that is: --kernel NAME (`jupyter "
                 "kernelspec list` shows them)", a->input, kname, err);
  /*  A bad --kernel is usage; a bad name in the notebook, a bad notebook. */
  return rc == KG_ENOMEM ? KG_EXIT_SYSTEM
         : rc == KG_EUSAGE && a->kernel ? KG_EXIT_USAGE : KG_RUN_EXIT_BAD_NOTEBOOK;
}

/*  Parameters go in as Python: the kernel must speak it. */
static int
s_check_inject(const kg_params_t *params, s_checked_t *c)
{
  if (!params)
    return -1;
  if (strcasecmp(c->spec->language, "python") != 0) {
    kg_opt_error("parameters are injected as Python, and kernel \"%s\" declares language "
                 "\"%s\"", c->spec->name, c->spec->language);
    return KG_EXIT_USAGE;
  }
  if (kg_params_inject(params, c->nb) < 0 || !(c->parameters = kg_params_json(params))) {
    kg_opt_error("out of memory");
    return KG_EXIT_SYSTEM;
  }
  return -1;
}

/*  Where the executed notebook goes is checked now, as papermill does: a
    run whose outputs cannot be written must not run at all. */
static int
s_check_output(const s_args_t *a, s_checked_t *c)
{
  char err[2048];
  c->out_path = a->output ? strdup(a->output) : s_default_output(a->input);
  if (!c->out_path) {
    kg_opt_error("out of memory");
    return KG_EXIT_SYSTEM;
  }
  int rc = kg_outpath_check(c->out_path, err, sizeof err);
  if (rc == 0)
    return -1;
  if (a->output)
    kg_opt_error("%s%s: %s", a->positional_output ? "" : "-o ", a->output, err);
  else
    kg_opt_error("the executed notebook %s cannot be written: %s; choose where with -o "
                 "OUT", c->out_path, err);
  return rc == -ENOMEM ? KG_EXIT_SYSTEM : KG_EXIT_USAGE;
}

/*  --checkpoints: a directory the kernel can seal into, created now (as
    kguard.save would at its first save, where a bad path would only fail
    after the work before it). */
static int
s_check_checkpoints(const char *dir)
{
  struct stat st;
  if (!dir)
    return -1;
  if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
    kg_opt_error("--checkpoints %s: not a directory; give a directory (a missing one is "
                 "created)", dir);
    return KG_EXIT_USAGE;
  }
  int rc = kg_file_mkdirs(dir, 0777, 0777);
  if (rc != 0) {
    kg_opt_error("--checkpoints %s: cannot be created: %s; give a directory you can write, "
                 "or create it first", dir, kg_strerror(rc));
    return rc == KG_ENOMEM ? KG_EXIT_SYSTEM : KG_EXIT_USAGE;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    kg_opt_error("--checkpoints %s: you cannot write there (%s); give a directory you can "
                 "write", dir, strerror(errno));
    return KG_EXIT_USAGE;
  }
  return -1;
}

/*  Step 2: everything the run needs, checked before anything starts.
    Returns -1 with *c filled, or the exit code (c is then freed). */
static int
s_check(const s_args_t *a, s_checked_t *c)
{
  kg_params_t *params = NULL;
  struct stat cst;
  int code = s_check_params(a, &params);
  if (code < 0 && a->cwd_arg && (stat(a->cwd_arg, &cst) != 0 || !S_ISDIR(cst.st_mode))) {
    kg_opt_error("--cwd %s: %s", a->cwd_arg,
                 errno == ENOENT ? "no such directory" : "not a directory");
    code = KG_EXIT_USAGE;
  }
  if (code < 0)
    code = s_check_notebook(a, c);
  if (code < 0)
    code = s_check_inject(params, c);
  kg_params_destroy(&params);
  if (code < 0)
    code = s_check_output(a, c);
  if (code < 0)
    code = s_check_checkpoints(a->checkpoints);
  if (code >= 0)
    s_checked_free(c);
  return code;
}

/*  ------------------------------------------------------------------------
    The run. */

typedef struct {
  char *nb_dir, *state_dir, *state_abs, *ckpt, *notebook;
  char exe[PATH_MAX];
  char log_path[PATH_MAX + 64];
  bool have_log;
  char run_id[KG_RUN_ID_MAX + 1];
  char *resume_json;            /*  resume-prepare's result to resume from  */
  long long resumed_step;
  kg_progress_t *pr;
  kg_sigsrc_t *sig;
} s_env_t;

static void
s_env_free(s_env_t *e)
{
  kg_sigsrc_destroy(&e->sig);
  kg_progress_destroy(&e->pr);
  free(e->nb_dir);
  free(e->state_dir);
  free(e->state_abs);
  free(e->ckpt);
  free(e->notebook);
  free(e->resume_json);
}

/*  The directories, the kernel's log, the run's id and the signals. Returns
    -1, or the exit code after saying why. */
static int
s_setup(const s_args_t *a, const s_checked_t *c, s_env_t *e)
{
  e->nb_dir = a->cwd_arg ? s_absolute(a->cwd_arg) : s_dirname(a->input);
  char state_why[PATH_MAX + 512] = "";
  e->state_dir = s_state_dir(a->state_arg, state_why, sizeof state_why);
  e->ckpt = a->checkpoints ? s_absolute(a->checkpoints) : NULL;
  e->state_abs = a->state_arg ? s_absolute(a->state_arg) : NULL;
  e->notebook = s_absolute(a->input);
  int exe_rc = kg_paths_exe(e->exe, sizeof e->exe);
  e->pr = kg_progress_new(stderr, stdout, a->quiet);
  if (!e->state_dir && e->nb_dir) {
    fprintf(stderr, "kguard run: %s\n", state_why);
    return KG_EXIT_USAGE;
  }
  if (!e->nb_dir || !e->state_dir || (a->checkpoints && !e->ckpt)
      || (a->state_arg && !e->state_abs) || !e->notebook || !e->pr || exe_rc != 0
      || kg_run_resume_id(a->input, c->parameters, e->run_id) != 0) {
    kg_opt_error("unable to set up: %s",
                 exe_rc != 0 ? "cannot read /proc/self/exe" : "out of memory");
    return KG_EXIT_SYSTEM;
  }

  /*  The kernel's output goes to a log, so the terminal shows the story. */
  snprintf(e->log_path, sizeof e->log_path, "%s/logs", e->state_dir);
  if (kg_file_mkdirs(e->log_path, 0700, 0700) == 0) {
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", gmtime_r(&now, &tm));
    snprintf(e->log_path, sizeof e->log_path, "%s/logs/run-%s-%d.log", e->state_dir, stamp,
             (int) getpid());
    e->have_log = true;
  }
  else
    kg_warning("unable to create %s/logs; the kernel's output stays on stderr", e->state_dir);

  /*  Signals become events of the client's loop. Blocked before the zmq
      context exists, so its I/O threads inherit the mask and never take them. */
  static const int signals[] = {SIGINT, SIGTERM, SIGHUP, 0};
  e->sig = kg_sigsrc_new(signals);
  if (!e->sig)
    kg_warning("unable to create a signalfd: %s; Ctrl-C ends the run at once",
               strerror(errno));
  return -1;
}

/*  --resume: the run's last consistent checkpoint, chosen as after a fault,
    and one line saying what was chosen and why. Returns -1 (e->resume_json
    set when there is one), or the exit code of a refusal. */
static int
s_resume(s_env_t *e)
{
  char dir[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s", e->ckpt ? e->ckpt : "");
  if (!e->ckpt)
    snprintf(dir, sizeof dir, "%.*s/kguard-checkpoints", PATH_MAX - 32, e->nb_dir);
  struct stat st;
  if (stat(dir, &st) != 0) {
    kg_progress_event(e->pr, true, "no checkpoint of run '%s' (%s does not exist): starting "
                      "fresh", e->run_id, dir);
    return -1;
  }
  char incident[64], into[PATH_MAX + 128], err[1024];
  snprintf(incident, sizeof incident, "run-resume-%lld-%d", (long long) kg_clock_wall_ms(),
           (int) getpid());
  snprintf(into, sizeof into, "%.*s/restored/%s", PATH_MAX - 80, e->state_dir, incident);
  kg_run_prepare_t what = {.exe = e->exe, .dir = dir, .run_id = e->run_id, .into = into,
                           .incident = incident, .before_ms = kg_clock_wall_ms()};
  char *out = NULL;
  if (kg_run_prepare(&what, &out, err, sizeof err) != 0) {
    kg_opt_error("--resume: %s", err);
    return KG_EXIT_SYSTEM;
  }
  kg_run_resume_choice_t choice;
  kg_run_resume_decide(e->run_id, e->notebook, dir, out, &choice);
  for (const char *l = choice.skipped; *l;) {
    size_t n = strcspn(l, "\n");
    kg_progress_event(e->pr, true, "%.*s", (int) n, l);
    l += n + (l[n] == '\n');
  }
  if (choice.kind == KG_RUN_RESUME_OTHER || choice.kind == KG_RUN_RESUME_FAILED) {
    fprintf(stderr, "kguard run: %s\n", choice.line);
    free(out);
    return choice.kind == KG_RUN_RESUME_OTHER ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  kg_progress_event(e->pr, true, "%s", choice.line);
  if (choice.kind == KG_RUN_RESUME_FROM) {
    e->resume_json = out;
    e->resumed_step = choice.step;
  }
  else
    free(out);
  return -1;
}

/*  Step 3: set up, choose what to resume from, run the cells. Returns the
    exit code. */
static int
s_run(const s_args_t *a, s_checked_t *c)
{
  s_env_t e = {.resumed_step = -1};
  int code = s_setup(a, c, &e);
  if (code < 0 && a->resume)
    code = s_resume(&e);
  if (code >= 0) {
    s_env_free(&e);
    return code;
  }
  kg_runner_config_t cfg = {
    .output_path = c->out_path,
    .timeout_s = a->timeout,
    .max_restarts = a->max_restarts,
    .startup_timeout_s = a->startup,
    .state_dir = e.state_dir,
    .log_path = e.have_log ? e.log_path : NULL,
    .show_output = a->log_output || !a->quiet,
    .notebook = a->input,
    .run_id = e.run_id,
    .resumed_step = e.resume_json ? e.resumed_step : -1,
    .resumed = e.resume_json != NULL,
    .signals = e.sig,
    .client = {
      .exe = e.exe,
      .spec = c->spec,
      .checkpoints = e.ckpt,
      .state_dir_arg = e.state_abs,
      .state_dir = e.state_dir,
      .cwd = e.nb_dir,
      .log_path = e.have_log ? e.log_path : NULL,
      .run_id = e.run_id,
      .notebook = e.notebook,
      .keep = a->keep,
      .resume_json = e.resume_json,
    },
  };
  if (kg_client_spec_is_kguard(c->spec))
    kg_progress_event(e.pr, false, "kernelspec \"%s\" is already a kguard wrapper: used as "
                      "it is", c->spec->name);
  kg_emurun_t *emu = kg_emurun_new(getenv("KGUARD_EMULATE"));
  code = kg_runner_run(c->nb, &cfg, e.pr);
  char emu_words[PATH_MAX + 512];
  if (!kg_emurun_fired(emu, emu_words, sizeof emu_words))
    fprintf(stderr, "kguard run: %s\n", emu_words);
  kg_emurun_destroy(&emu);
  s_env_free(&e);
  return code;
}

int
kg_run_main(int argc, char **argv)
{
  s_args_t a;
  s_checked_t c = {0};
  int code = s_parse(argc, argv, &a);
  if (code < 0)
    code = s_check(&a, &c);
  s_args_free(&a);
  if (code >= 0)
    return code;
  code = s_run(&a, &c);
  s_checked_free(&c);
  return code;
}
