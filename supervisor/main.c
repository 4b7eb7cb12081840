/*  kguard: wires the modules together. Each subcommand lives in its module;
    this file only dispatches and prints the top-level help. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kg_cli.h"
#include "kg_exec.h"
#include "kg_run.h"
#include "kg_error.h"
#include "kg_log.h"
#include "kg_paths.h"

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
    "  exec     run a training script or torchrun, surviving sticky device errors\n"
    "  restart  ask a running kguard kernel for a (diagnostic) restart\n"
    "  ckpt     seal, verify, list, select and restore checkpoint archives\n"
    "  keygen   create the checkpoint signing key pair\n"
    "  keys     list, export, import (trust) and remove checkpoint signing keys\n"
    "  doctor   which GPU stack the kernel will use, and whether it fits the device\n"
    "  incident list incidents; export one as a shareable repro request\n"
    "  eg-launch  kernel launcher for Jupyter Enterprise Gateway (cluster kernels)\n"
    "\n"
    "`kguard COMMAND --help` describes each command.\n"
    "exit codes: 0 success, 100 usage or configuration error, 111 system failure;\n"
    "commands document their own further codes.\n",
    out);
}

#ifndef KGUARD_CKPT_RELPATH
#define KGUARD_CKPT_RELPATH "../libexec/kguard/kguard-ckpt"
#endif

#ifndef KGUARD_EG_RELPATH
#define KGUARD_EG_RELPATH "../libexec/kguard/kguard-eg"
#endif

/*  `ckpt`, `keygen` and `keys` run in kguard-ckpt (see supervisor/main_ckpt.c for
    why), `eg-launch` in kguard-eg (supervisor/eg/main_eg.c): beside this
    executable in a build tree, under libexec once installed. argv is passed
    on, with `--kguard SELF` after the command name when with_self is set
    (kguard-eg starts `kguard kernel`). Returns only on failure. */
static int
s_exec_helper(const char *name, const char *relpath, int argc, char **argv, int with_self)
{
  char self[PATH_MAX], dir[PATH_MAX];
  int rc = kg_paths_exe(self, sizeof self);
  if (rc != 0) {
    kg_error("cannot find kguard's own executable (/proc/self/exe): %s", kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  snprintf(dir, sizeof dir, "%s", self);
  *strrchr(dir, '/') = '\0';   /* an absolute path: there is a slash */
  const char *rel[] = {name, relpath};
  char path[2][PATH_MAX + 64];
  char *args[argc + 3];
  int n = 0;
  args[n++] = argv[0];
  args[n++] = argv[1];
  if (with_self) {
    args[n++] = "--kguard";
    args[n++] = self;
  }
  for (int i = 2; i < argc; i++)
    args[n++] = argv[i];
  args[n] = NULL;
  for (int i = 0; i < 2; i++) {
    snprintf(path[i], sizeof path[i], "%s/%s", dir, rel[i]);
    if (access(path[i], X_OK) == 0) {
      execv(path[i], args);
      kg_error("cannot run %s: %s", path[i], strerror(errno));
      return KG_EXIT_SYSTEM;
    }
  }
  kg_error("`kguard %s` needs %s, found neither at %s nor at %s "
           "(is kguard fully built or installed?)", argv[1], name, path[0], path[1]);
  return KG_EXIT_SYSTEM;
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
  if (strcmp(cmd, "doctor") == 0)
    return kg_cli_doctor_main(argc - 1, argv + 1);
  if (strcmp(cmd, "incident") == 0)
    return kg_cli_incident_main(argc - 1, argv + 1);
  if (strcmp(cmd, "run") == 0)
    return kg_run_main(argc - 1, argv + 1);
  if (strcmp(cmd, "exec") == 0)
    return kg_exec_main(argc - 1, argv + 1);
  if (strcmp(cmd, "ckpt") == 0 || strcmp(cmd, "keygen") == 0 || strcmp(cmd, "keys") == 0)
    return s_exec_helper("kguard-ckpt", KGUARD_CKPT_RELPATH, argc, argv, 0);
  if (strcmp(cmd, "eg-launch") == 0)
    return s_exec_helper("kguard-eg", KGUARD_EG_RELPATH, argc, argv, 1);
  fprintf(stderr, "kguard: unknown command '%s' (see kguard --help)\n", cmd);
  return KG_EXIT_USAGE;
}
