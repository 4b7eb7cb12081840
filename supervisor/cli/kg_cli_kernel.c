/*  kguard kernel: run as a Jupyter kernel that supervises another one. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_cli.h"
#include "kg_log.h"
#include "kg_supervisor.h"

static void
s_usage(FILE *out)
{
  fputs(
    "usage: kguard kernel -f CONNECTION_FILE [options] -- INNER_KERNEL_ARGV...\n"
    "\n"
    "Run as a Jupyter kernel (a kernelspec's argv, see `kguard install`): bind the\n"
    "frontend's five channels from CONNECTION_FILE, start INNER_KERNEL_ARGV (where\n"
    "{connection_file} is replaced by the inner kernel's own private connection\n"
    "file), relay every message, and restart the inner kernel cleanly after a\n"
    "sticky GPU error, restoring the last checkpoint sealed before it.\n"
    "\n"
    "options:\n"
    "  -f, --connection-file FILE   the frontend's connection file (required)\n"
    "  --interrupt-mode signal|message\n"
    "                               how the INNER kernel takes interrupts\n"
    "                               (default signal; kguard itself takes both)\n"
    "  --checkpoints DIR            checkpoint directory given to the kernel as\n"
    "                               KGUARD_CKPT_DIR (default ./kguard-checkpoints)\n"
    "  --name NAME                  kernelspec name, for the logs\n"
    "  --language LANG              the kernelspec's language: kguard's Python\n"
    "                               helpers (version and device probes) run only\n"
    "                               for a Python kernel; its kernel_info_reply\n"
    "                               decides once seen, the program's name before\n"
    "                               when LANG is not given\n"
    "  --state-dir DIR              state directory (default $KGUARD_STATE_DIR,\n"
    "                               $XDG_STATE_HOME/kguard, ~/.local/state/kguard)\n"
    "  --rules FILE                 classification rules (default the shipped ones,\n"
    "                               or $KGUARD_RULES)\n"
    "  --stale-window SEC           after a sticky error or the kernel's death, an\n"
    "                               execute_request that arrives before kguard's\n"
    "                               notice or within SEC seconds after it was sent\n"
    "                               before the user saw the failure: it is answered\n"
    "                               KernelRestarted, never run (default 2; 0 ends\n"
    "                               the rule at the notice)\n"
    "  --max-restarts N             automatic restarts allowed per window (default 3)\n"
    "  --restart-window SEC         that window, sliding (default 600)\n"
    "  --backoff SEC                delay before the 2nd restart of a window,\n"
    "                               doubling after (default 1; the first is at once)\n"
    "  --backoff-max SEC            cap of that delay (default 30)\n"
    "  --standby                    keep a warm standby: a second kernel started\n"
    "                               (imports done, no GPU touched) while this one\n"
    "                               runs, that takes over at a restart instead of\n"
    "                               a cold start; it costs one idle kernel's memory.\n"
    "                               KGUARD_STANDBY_IMPORTS=torch,... names modules\n"
    "                               it imports ahead\n"
    "  -h, --help                   this text\n"
    "\n"
    "In a notebook cell: `%kguard status`, `%kguard restart`, `%kguard restart\n"
    "--diagnostic` are answered by kguard and never reach the kernel.\n"
    "exit codes: 0 after a shutdown request or SIGTERM, 100 usage or invalid\n"
    "connection file or rules, 111 system failure.\n",
    out);
}

/*  Parse a duration in seconds (a non-negative decimal, at most a day) into
    *ms; print what is wrong and return -1 for anything else. */
static int
s_seconds(const char *flag, const char *text, int64_t *ms)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !(v >= 0) || v > 86400) {
    fprintf(stderr, "kguard kernel: %s takes seconds (a number from 0 to 86400), not '%s'\n",
            flag, text);
    return -1;
  }
  *ms = (int64_t) (v * 1000.0 + 0.5);
  return 0;
}

int
kg_cli_kernel_main(int argc, char **argv)
{
  enum { O_IMODE = 1000, O_CKPT, O_NAME, O_STATE, O_RULES, O_STALE, O_MAXR, O_RWIN, O_BACKOFF,
         O_BACKOFF_MAX, O_LANG, O_STANDBY };
  static const struct option opts[] = {
    {"connection-file", required_argument, NULL, 'f'},
    {"interrupt-mode", required_argument, NULL, O_IMODE},
    {"checkpoints", required_argument, NULL, O_CKPT},
    {"name", required_argument, NULL, O_NAME},
    {"language", required_argument, NULL, O_LANG},
    {"state-dir", required_argument, NULL, O_STATE},
    {"rules", required_argument, NULL, O_RULES},
    {"stale-window", required_argument, NULL, O_STALE},
    {"max-restarts", required_argument, NULL, O_MAXR},
    {"restart-window", required_argument, NULL, O_RWIN},
    {"backoff", required_argument, NULL, O_BACKOFF},
    {"backoff-max", required_argument, NULL, O_BACKOFF_MAX},
    {"standby", no_argument, NULL, O_STANDBY},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};
  kg_supervisor_config_t cfg = {.interrupt_mode = "signal", .stale_window_ms = -1};
  kg_policy_config_default(&cfg.policy);
  int64_t ms = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "+f:h", opts, NULL)) != -1) {
    switch (c) {
    case 'f':
      cfg.connection_file = optarg;
      break;
    case O_IMODE:
      if (strcmp(optarg, "signal") != 0 && strcmp(optarg, "message") != 0) {
        fprintf(stderr, "kguard kernel: --interrupt-mode must be signal or message, not '%s'\n",
                optarg);
        return KG_EXIT_USAGE;
      }
      cfg.interrupt_mode = optarg;
      break;
    case O_CKPT:
      cfg.checkpoints = optarg;
      break;
    case O_NAME:
      cfg.name = optarg;
      break;
    case O_LANG:
      if (!*optarg) {
        fprintf(stderr, "kguard kernel: --language needs a language name (python, r, ...)\n");
        return KG_EXIT_USAGE;
      }
      cfg.language = optarg;
      break;
    case O_STATE:
      setenv("KGUARD_STATE_DIR", optarg, 1);
      break;
    case O_RULES:
      cfg.rules_file = optarg;
      break;
    case O_STANDBY:
      cfg.standby = true;
      break;
    case O_STALE:
      if (s_seconds("--stale-window", optarg, &ms) != 0)
        return KG_EXIT_USAGE;
      cfg.stale_window_ms = ms;
      break;
    case O_MAXR: {
      char *end = NULL;
      errno = 0;
      long n = strtol(optarg, &end, 10);
      if (errno || end == optarg || *end || n < 0 || n > 1000000) {
        fprintf(stderr, "kguard kernel: --max-restarts must be a whole number >= 0, not '%s'\n",
                optarg);
        return KG_EXIT_USAGE;
      }
      cfg.policy.max_restarts = (int) n;
      break;
    }
    case O_RWIN:
      if (s_seconds("--restart-window", optarg, &ms) != 0)
        return KG_EXIT_USAGE;
      cfg.policy.window_ms = ms;
      break;
    case O_BACKOFF:
      if (s_seconds("--backoff", optarg, &ms) != 0)
        return KG_EXIT_USAGE;
      cfg.policy.backoff_initial_ms = ms;
      break;
    case O_BACKOFF_MAX:
      if (s_seconds("--backoff-max", optarg, &ms) != 0)
        return KG_EXIT_USAGE;
      cfg.policy.backoff_max_ms = ms;
      break;
    case 'h':
      s_usage(stdout);
      return KG_EXIT_OK;
    default:
      s_usage(stderr);
      return KG_EXIT_USAGE;
    }
  }
  if (cfg.policy.backoff_max_ms < cfg.policy.backoff_initial_ms) {
    fprintf(stderr, "kguard kernel: --backoff-max (%.3g s) is below --backoff (%.3g s)\n",
            (double) cfg.policy.backoff_max_ms / 1000, (double) cfg.policy.backoff_initial_ms / 1000);
    return KG_EXIT_USAGE;
  }
  if (!cfg.connection_file) {
    fprintf(stderr, "kguard kernel: missing -f CONNECTION_FILE (see kguard kernel --help)\n");
    return KG_EXIT_USAGE;
  }
  if (optind >= argc) {
    fprintf(stderr, "kguard kernel: missing the inner kernel's argv after `--` "
                    "(see kguard kernel --help)\n");
    return KG_EXIT_USAGE;
  }
  cfg.inner_argv = argv + optind;
  /* One malloc arena for every thread, before libzmq starts its I/O thread.
     That thread allocates each received message; in an arena of its own,
     the multi-MB blocks of an output burst end up in that arena's top
     chunk, which malloc_trim does not give back (it trims only the main
     arena's top), so an idle kguard would keep ~7 MiB after a burst. */
  mallopt(M_ARENA_MAX, 1);
  int code = 0;
  kg_supervisor_t *sup = kg_supervisor_new(&cfg, &code);
  if (!sup)
    return code ? code : KG_EXIT_SYSTEM;
  code = kg_supervisor_run(sup);
  kg_supervisor_destroy(&sup);
  return code;
}
