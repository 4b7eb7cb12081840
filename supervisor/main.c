/*  kguard: wires the modules together. Each subcommand lives in its module;
    this file only dispatches and prints the top-level help. */
#include <stdio.h>
#include <string.h>

#include "kg_cli.h"
#include "kg_log.h"

#ifndef KGUARD_VERSION
#define KGUARD_VERSION "unknown"
#endif

static void
s_usage(FILE *out)
{
  fputs(
    "usage: kguard COMMAND [ARGS...]\n"
    "\n"
    "kguard guards GPU training notebooks: it runs as a Jupyter kernel that\n"
    "supervises the real one, restarts it cleanly after a sticky device error\n"
    "(CUDA or ROCm device-side assert, illegal address, launch failure ...),\n"
    "and resumes training only from a verified checkpoint sealed before it.\n"
    "\n"
    "commands:\n"
    "  kernel   run as a Jupyter kernel wrapping another (used by kernelspecs)\n"
    "  install  install a kernelspec that wraps an existing kernel\n"
    "  run      execute a notebook unattended, surviving sticky device errors\n"
    "  restart  ask a running kguard kernel for a (diagnostic) restart\n"
    "  ckpt     seal, verify, list, select and restore checkpoint archives\n"
    "  keygen   create the checkpoint signing key pair\n"
    "\n"
    "`kguard COMMAND --help` describes each command.\n"
    "exit codes: 0 success, 100 usage or configuration error, 111 system failure;\n"
    "commands document their own further codes.\n",
    out);
}

int
main(int argc, char **argv)
{
  kg_log_init("kguard");
  if (argc < 2) {
    s_usage(stderr);
    return KG_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    s_usage(stdout);
    return KG_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("kguard %s\n", KGUARD_VERSION);
    return KG_EXIT_OK;
  }
  /* Subcommands see argv starting at their own name. */
  if (strcmp(cmd, "kernel") == 0)
    return kg_cli_kernel_main(argc - 1, argv + 1);
  if (strcmp(cmd, "install") == 0)
    return kg_cli_install_main(argc - 1, argv + 1);
  if (strcmp(cmd, "restart") == 0)
    return kg_cli_restart_main(argc - 1, argv + 1);
  if (strcmp(cmd, "run") == 0)
    return kg_run_main(argc - 1, argv + 1);
  if (strcmp(cmd, "ckpt") == 0)
    return kg_ckpt_cli_main(argc - 1, argv + 1);
  if (strcmp(cmd, "keygen") == 0)
    return kg_ckpt_keygen_main(argc - 1, argv + 1);
  fprintf(stderr, "kguard: unknown command '%s' (see kguard --help)\n", cmd);
  return KG_EXIT_USAGE;
}
