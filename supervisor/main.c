/*  kguard: wires the modules together. Each command lives in its module
    with its option table (kg_opt.h); this file only lists them (the root
    table, which `kguard help` walks) and dispatches. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kg_ckpt_cmds.h"
#include "kg_cli.h"
#include "kg_eg_args.h"
#include "kg_exec.h"
#include "kg_run.h"
#include "kg_error.h"
#include "kg_log.h"
#include "kg_opt.h"
#include "kg_optdoc.h"
#include "kg_paths.h"

/* ---- the command table ------------------------------------------------------ */

static const kg_cmd_t *const s_cmds[] = {
  &kg_cli_install_cmd, &kg_cli_uninstall_cmd, &kg_run_cmd, &kg_exec_cmd, &kg_cli_doctor_cmd,
  &kg_ckpt_cmd, &kg_keygen_cmd, &kg_keys_cmd, &kg_cli_restart_cmd, &kg_cli_incident_cmd,
  &kg_cli_kernel_cmd, &kg_eg_cmd, &kg_cli_help_cmd, NULL};

static const kg_opt_exit_t s_root_exits[] = {
  {"0", "success"},
  {"100", "usage or configuration error: a message says what is wrong, nothing was done"},
  {"111", "system failure (a file, a process or a library call failed)"},
  {NULL, NULL},
};

static const kg_cmd_t s_root = {
  .name = "",
  .summary = "guard GPU training in Jupyter notebooks and scripts",
  .usage = "COMMAND [ARGS...]",
  .about = "kguard guards GPU training notebooks and scripts: it runs as a Jupyter kernel that "
           "supervises the real one, restarts it cleanly after a sticky device error (a CUDA "
           "or ROCm device-side assert, an illegal address, a launch failure ...), and "
           "resumes training only from a verified checkpoint sealed before it.",
  .more = "`kguard help COMMAND` and `kguard COMMAND --help` describe each command, as does "
          "`man kguard-COMMAND`. Every command reads its options the same way: `--name VALUE` "
          "or `--name=VALUE`, short ones as `-n VALUE`, in any order with the operands; "
          "`--` ends the options. Commands document their own further exit codes.",
  .exits = s_root_exits,
  .subs = s_cmds,
};

/* ---- dispatch --------------------------------------------------------------- */

#ifndef KGUARD_CKPT_RELPATH
#define KGUARD_CKPT_RELPATH "../libexec/kguard/kguard-ckpt"
#endif

#ifndef KGUARD_EG_RELPATH
#define KGUARD_EG_RELPATH "../libexec/kguard/kguard-eg"
#endif

/*  `ckpt`, `keygen` and `keys` run in kguard-ckpt (see checkpoint/main_ckpt.c for
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
    kg_opt_error("cannot find kguard's own executable (/proc/self/exe): %s", kg_strerror(rc));
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
      kg_opt_error("cannot run %s: %s", path[i], strerror(errno));
      return KG_EXIT_SYSTEM;
    }
  }
  kg_opt_error("this command needs %s, found neither at %s nor at %s "
               "(is kguard fully built or installed?)", name, path[0], path[1]);
  return KG_EXIT_SYSTEM;
}

int
main(int argc, char **argv)
{
  kg_log_init("kguard");
  if (argc < 2) {
    kg_optdoc_help(&s_root, stderr);
    return KG_EXIT_USAGE;
  }
  kg_opt_parser_t p;
  kg_opt_init(&p, &s_root, argc, argv);
  int i = kg_opt_dispatch(&p);
  if (i < 0)
    return p.code;
  const kg_cmd_t *cmd = s_cmds[i];
  int n;
  char **rest = kg_opt_rest(&p, &n);
  char prog[64];
  snprintf(prog, sizeof prog, "kguard %s", cmd->name);
  kg_opt_set_prog(prog);
  /* Commands that run for long keep timestamped log lines (they are logs);
     the others speak plainly, "kguard CMD: ...". */
  if (cmd != &kg_cli_kernel_cmd && cmd != &kg_exec_cmd && cmd != &kg_eg_cmd)
    kg_log_set_plain(1);
  if (cmd == &kg_cli_kernel_cmd)
    return kg_cli_kernel_main(n, rest);
  if (cmd == &kg_cli_install_cmd)
    return kg_cli_install_main(n, rest);
  if (cmd == &kg_cli_uninstall_cmd)
    return kg_cli_uninstall_main(n, rest);
  if (cmd == &kg_cli_restart_cmd)
    return kg_cli_restart_main(n, rest);
  if (cmd == &kg_cli_doctor_cmd)
    return kg_cli_doctor_main(n, rest);
  if (cmd == &kg_cli_incident_cmd)
    return kg_cli_incident_main(n, rest);
  if (cmd == &kg_run_cmd)
    return kg_run_main(n, rest);
  if (cmd == &kg_exec_cmd)
    return kg_exec_main(n, rest);
  if (cmd == &kg_cli_help_cmd)
    return kg_cli_help_main(&s_root, n, rest);
  if (cmd == &kg_ckpt_cmd || cmd == &kg_keygen_cmd || cmd == &kg_keys_cmd)
    return s_exec_helper("kguard-ckpt", KGUARD_CKPT_RELPATH, argc, argv, 0);
  return s_exec_helper("kguard-eg", KGUARD_EG_RELPATH, argc, argv, 1);
}
