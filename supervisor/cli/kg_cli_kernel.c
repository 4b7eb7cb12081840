/*  kguard kernel: run as a Jupyter kernel that supervises another one. */
#include <errno.h>
#include <stdint.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_cli.h"
#include "kg_log.h"
#include "kg_supervisor.h"

enum { O_CONN = 1, O_IMODE, O_CKPT, O_NAME, O_STATE, O_RULES, O_STALE, O_MAXR, O_RWIN,
       O_BACKOFF, O_BACKOFF_MAX, O_LANG, O_STANDBY, O_RESUME };

static const kg_opt_t s_opts[] = {
  {O_CONN, 'f', "connection-file", "FILE", "the frontend's connection file (required)", 0},
  {O_IMODE, 0, "interrupt-mode", "signal|message",
   "how the INNER kernel takes interrupts (default signal; kguard itself takes both)", 0},
  {O_CKPT, 0, "checkpoints", "DIR",
   "checkpoint directory given to the kernel as KGUARD_CKPT_DIR (default "
   "./kguard-checkpoints)", 0},
  {O_NAME, 0, "name", "NAME", "kernelspec name, for the logs", 0},
  {O_LANG, 0, "language", "LANG",
   "the kernelspec's language: kguard's Python helpers (version and device probes) run "
   "only for a Python kernel; its kernel_info_reply decides once seen, the program's name "
   "before when LANG is not given", 0},
  {O_STATE, 0, "state-dir", "DIR",
   "state directory (default $KGUARD_STATE_DIR, $XDG_STATE_HOME/kguard, "
   "~/.local/state/kguard)", 0},
  {O_RULES, 0, "rules", "FILE",
   "classification rules (default the shipped ones, or $KGUARD_RULES)", 0},
  {O_STALE, 0, "stale-window", "SEC",
   "after a sticky error or the kernel's death, an execute_request that arrives before "
   "kguard's notice or within SEC seconds after it was sent before the user saw the "
   "failure: it is answered KernelRestarted, never run (default 2; 0 ends the rule at the "
   "notice)", 0},
  {O_MAXR, 0, "max-restarts", "N", "automatic restarts allowed per window (default 3)", 0},
  {O_RWIN, 0, "restart-window", "SEC", "that window, sliding (default 600)", 0},
  {O_BACKOFF, 0, "backoff", "SEC",
   "delay before the 2nd restart of a window, doubling after (default 1; the first is at "
   "once)", 0},
  {O_BACKOFF_MAX, 0, "backoff-max", "SEC", "cap of that delay (default 30)", 0},
  {O_STANDBY, 0, "standby", NULL,
   "keep a warm standby: a second kernel started (imports done, no GPU touched) while this "
   "one runs, that takes over at a restart instead of a cold start; it costs one idle "
   "kernel's memory. KGUARD_STANDBY_IMPORTS=torch,... names modules it imports ahead", 0},
  {O_RESUME, 0, "resume", "FILE",
   "the first kernel resumes from the checkpoint FILE names: the JSON object `kguard ckpt "
   "resume-prepare` printed (its KGUARD_RESUME_* variables, as after a fault; `kguard run "
   "--resume` writes it)", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"0", "after a shutdown request or SIGTERM"},
  {"100", "usage error, or an invalid connection file or rules"},
  {"111", "system failure"},
  {NULL, NULL},
};

const kg_cmd_t kg_cli_kernel_cmd = {
  .name = "kernel",
  .summary = "run as a Jupyter kernel wrapping another (used by kernelspecs)",
  .usage = "-f CONNECTION_FILE [options] -- INNER_KERNEL_ARGV...",
  .about = "Run as a Jupyter kernel (a kernelspec's argv, see `kguard install`): bind the "
           "frontend's five channels from CONNECTION_FILE, start INNER_KERNEL_ARGV (where "
           "{connection_file} is replaced by the inner kernel's own private connection "
           "file), relay every message, and restart the inner kernel cleanly after a sticky "
           "GPU error, restoring the last checkpoint sealed before it.",
  .opts = s_opts,
  .more = "In a notebook cell: `%kguard status`, `%kguard restart`, `%kguard restart "
          "--diagnostic`, `%kguard doctor` are answered by kguard and never reach the kernel.",
  .exits = s_exits,
  .flags = KG_CMD_STOP,
};

/*  Parse a duration in seconds (a non-negative decimal, at most a day) into
    *ms; print what is wrong and return -1 for anything else. */
static int
s_seconds(kg_opt_parser_t *p, const char *text, int64_t *ms)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !(v >= 0) || v > 86400) {
    kg_opt_usage(p, "%s takes seconds (a number from 0 to 86400), not '%s'", p->written, text);
    return -1;
  }
  *ms = (int64_t) (v * 1000.0 + 0.5);
  return 0;
}

/*  The options that take seconds, and where each goes in cfg. */
static int64_t *
s_seconds_field(kg_supervisor_config_t *cfg, int id)
{
  switch (id) {
  case O_STALE: return &cfg->stale_window_ms;
  case O_RWIN: return &cfg->policy.window_ms;
  case O_BACKOFF: return &cfg->policy.backoff_initial_ms;
  case O_BACKOFF_MAX: return &cfg->policy.backoff_max_ms;
  }
  return NULL;
}

/*  One option (id, its value in p) into cfg. 0, or the exit code of a
    usage error already printed. */
static int
s_option(kg_opt_parser_t *p, int id, kg_supervisor_config_t *cfg)
{
  int64_t *seconds = s_seconds_field(cfg, id);
  if (seconds)
    return s_seconds(p, p->value, seconds) != 0 ? KG_EXIT_USAGE : 0;
  switch (id) {
  case O_CONN: cfg->connection_file = p->value; break;
  case O_IMODE:
    if (strcmp(p->value, "signal") != 0 && strcmp(p->value, "message") != 0)
      return kg_opt_usage(p, "--interrupt-mode must be signal or message, not '%s'", p->value);
    cfg->interrupt_mode = p->value;
    break;
  case O_CKPT: cfg->checkpoints = p->value; break;
  case O_NAME: cfg->name = p->value; break;
  case O_LANG:
    if (!*p->value)
      return kg_opt_usage(p, "--language needs a language name (python, r, ...)");
    cfg->language = p->value;
    break;
  case O_STATE: setenv("KGUARD_STATE_DIR", p->value, 1); break;
  case O_RULES: cfg->rules_file = p->value; break;
  case O_STANDBY: cfg->standby = true; break;
  case O_RESUME: cfg->resume_file = p->value; break;
  case O_MAXR: {
    char *end = NULL;
    errno = 0;
    long n = strtol(p->value, &end, 10);
    if (errno || end == p->value || *end || n < 0 || n > 1000000)
      return kg_opt_usage(p, "--max-restarts must be a whole number >= 0, not '%s'", p->value);
    cfg->policy.max_restarts = (int) n;
    break;
  }
  }
  return 0;
}

/*  Parse and check the command line into cfg; the first operand starts
    the inner kernel's argv. Returns -1 to go on, else the exit code (help,
    or a usage error already printed). */
static int
s_parse_args(kg_opt_parser_t *p, kg_supervisor_config_t *cfg)
{
  int id, rc;
  char **inner = NULL;
  while (!inner && (id = kg_opt_next(p)) != KG_OPT_END) {
    if (id == KG_OPT_EXIT)
      return p->code;
    if (id == KG_OPT_OPERAND)
      inner = (char **) &p->argv[p->next - 1];   /* the rest is the inner kernel's argv */
    else if ((rc = s_option(p, id, cfg)) != 0)
      return rc;
  }
  if (cfg->policy.backoff_max_ms < cfg->policy.backoff_initial_ms)
    return kg_opt_usage(p, "--backoff-max (%.3g s) is below --backoff (%.3g s)",
                        (double) cfg->policy.backoff_max_ms / 1000,
                        (double) cfg->policy.backoff_initial_ms / 1000);
  if (!cfg->connection_file)
    return kg_opt_usage(p, "missing -f CONNECTION_FILE");
  if (!inner)
    return kg_opt_usage(p, "missing the inner kernel's argv after `--`");
  cfg->inner_argv = inner;
  return -1;
}

int
kg_cli_kernel_main(int argc, char **argv)
{
  kg_supervisor_config_t cfg = {.interrupt_mode = "signal", .stale_window_ms = -1};
  kg_policy_config_default(&cfg.policy);
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_cli_kernel_cmd, argc, argv);
  int code = s_parse_args(&p, &cfg);
  if (code >= 0)
    return code;
  /* One malloc arena for every thread, before libzmq starts its I/O thread.
     That thread allocates each received message; in an arena of its own,
     the multi-MB blocks of an output burst end up in that arena's top
     chunk, which malloc_trim does not give back (it trims only the main
     arena's top), so an idle kguard would keep ~7 MiB after a burst. */
  mallopt(M_ARENA_MAX, 1);
  code = 0;
  kg_supervisor_t *sup = kg_supervisor_new(&cfg, &code);
  if (!sup)
    return code ? code : KG_EXIT_SYSTEM;
  code = kg_supervisor_run(sup);
  kg_supervisor_destroy(&sup);
  return code;
}
