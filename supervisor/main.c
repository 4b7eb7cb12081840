/*  kguard: wires the modules together. Each command lives in its module
    with its option table (kg_opt.h); this file only dispatches, and
    answers `kguard help`, which prints any command's help, man page, the
    Markdown reference or the bash completion from those tables. */
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
#include "kg_opt.h"
#include "kg_optdoc.h"
#include "kg_paths.h"

/* ---- commands not yet described by a table (their own parsers) ----------- */

static const kg_cmd_t s_run_cmd = {
  .name = "run",
  .summary = "execute a notebook unattended, surviving sticky device errors",
  .usage = "NOTEBOOK.ipynb [options]",
  .about = "See `kguard run --help`.",
};
static const kg_cmd_t s_exec_cmd = {
  .name = "exec",
  .summary = "run a training script or torchrun, surviving sticky device errors",
  .usage = "[options] -- COMMAND [ARGS...]",
  .about = "See `kguard exec --help`.",
};
static const kg_cmd_t s_ckpt_cmd = {
  .name = "ckpt",
  .summary = "seal, verify, list, select and restore checkpoint archives",
  .usage = "COMMAND [ARGS...]",
  .about = "See `kguard ckpt --help`.",
};
static const kg_cmd_t s_keygen_cmd = {
  .name = "keygen",
  .summary = "create the checkpoint signing key pair",
  .usage = "[options]",
  .about = "See `kguard keygen --help`.",
};
static const kg_cmd_t s_incident_cmd = {
  .name = "incident",
  .summary = "list incidents; export one as a shareable repro request",
  .usage = "list | export ID [options]",
  .about = "See `kguard incident --help`.",
};
static const kg_cmd_t s_eg_cmd = {
  .name = "eg-launch",
  .summary = "kernel launcher for Jupyter Enterprise Gateway (cluster kernels)",
  .usage = "[options] [-- KERNEL_ARGV...]",
  .about = "See `kguard eg-launch --help`.",
};

/* ---- kguard help ------------------------------------------------------------ */

enum { O_FORMAT = 1, O_OUTPUT_DIR };

static const kg_opt_t s_help_opts[] = {
  {O_FORMAT, 0, "format", "text|man|markdown|bash-completion",
   "text (the default): what `kguard COMMAND --help` prints; man: the command's man page "
   "(roff, for `man -l -`); markdown: the command-line reference (docs/cli.md) when no "
   "COMMAND is given, else the command's section; bash-completion: the completion script "
   "for every command", 0},
  {O_OUTPUT_DIR, 0, "output-dir", "DIR",
   "with --format=man: write the page of kguard and of every command into DIR "
   "(kguard.1, kguard-run.1 ...) instead of one page to standard output", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_cmd_t s_help_cmd = {
  .name = "help",
  .summary = "describe a command (the same text as `kguard COMMAND --help`)",
  .usage = "[--format FORMAT] [COMMAND [SUBCOMMAND]]",
  .about = "Print the help of COMMAND (and SUBCOMMAND, as in `kguard help ckpt seal`), or "
           "kguard's own help without one. The help, the man pages and the command-line "
           "reference are all written from the same option tables.",
  .opts = s_help_opts,
};

/* ---- the command table ------------------------------------------------------ */

static const kg_cmd_t *const s_cmds[] = {
  &kg_cli_install_cmd, &kg_cli_uninstall_cmd, &s_run_cmd, &s_exec_cmd, &kg_cli_doctor_cmd,
  &s_ckpt_cmd, &s_keygen_cmd, &kg_cli_restart_cmd, &s_incident_cmd, &kg_cli_kernel_cmd,
  &s_eg_cmd, &s_help_cmd, NULL};

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

/*  `ckpt` and `keygen` run in kguard-ckpt (see supervisor/main_ckpt.c for
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

/*  Write every man page into dir. */
static int
s_man_dir(const char *dir)
{
  const kg_cmd_t *pages[32];
  size_t n = 0;
  pages[n++] = &s_root;
  for (const kg_cmd_t *const *c = s_cmds; *c && n < 32; c++)
    if (!((*c)->flags & KG_CMD_HIDDEN))
      pages[n++] = *c;
  for (size_t i = 0; i < n; i++) {
    char name[128], path[PATH_MAX];
    kg_optdoc_man_name(pages[i], name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "we");
    if (!f) {
      kg_opt_error("cannot write %s: %s", path, strerror(errno));
      return KG_EXIT_SYSTEM;
    }
    kg_optdoc_man(pages[i], &s_root, f);
    if (fclose(f) != 0) {
      kg_opt_error("cannot write %s: %s", path, strerror(errno));
      return KG_EXIT_SYSTEM;
    }
  }
  return KG_EXIT_OK;
}

static int
s_help_main(int argc, char **argv)
{
  kg_opt_parser_t p;
  kg_opt_init(&p, &s_help_cmd, argc, argv);
  const char *format = "text", *dir = NULL;
  char *words[4];
  int nwords = 0, id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case O_FORMAT: format = p.value; break;
    case O_OUTPUT_DIR: dir = p.value; break;
    case KG_OPT_OPERAND:
      if (nwords == 2)
        return kg_opt_usage(&p, "at most a command and a subcommand, not '%s'", p.value);
      words[nwords++] = (char *) p.value;
      break;
    }
  }
  static const char *const formats[] = {"text", "man", "markdown", "bash-completion"};
  size_t f = 0;
  while (f < 4 && strcmp(format, formats[f]) != 0)
    f++;
  if (f == 4)
    return kg_opt_usage(&p, "--format is text, man, markdown or bash-completion, not '%s'",
                        format);
  if (dir && (f != 1 || nwords))
    return kg_opt_usage(&p, "--output-dir writes every man page: give it with --format=man "
                        "and no COMMAND");
  const kg_cmd_t *cmd = kg_optdoc_find(&s_root, nwords, words);
  if (!cmd)
    return kg_opt_usage(&p, "no command '%s%s%s'", words[0], nwords > 1 ? " " : "",
                        nwords > 1 ? words[1] : "");
  switch (f) {
  case 0: kg_optdoc_help(cmd, stdout); break;
  case 1:
    if (dir)
      return s_man_dir(dir);
    kg_optdoc_man(cmd, &s_root, stdout);
    break;
  case 2: kg_optdoc_markdown(cmd, stdout); break;
  case 3: kg_optdoc_bash(&s_root, stdout); break;
  }
  return fflush(stdout) == 0 ? KG_EXIT_OK : KG_EXIT_SYSTEM;
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
  if (cmd != &kg_cli_kernel_cmd && cmd != &s_exec_cmd && cmd != &s_eg_cmd)
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
  if (cmd == &s_incident_cmd)
    return kg_cli_incident_main(n, rest);
  if (cmd == &s_run_cmd)
    return kg_run_main(n, rest);
  if (cmd == &s_exec_cmd)
    return kg_exec_main(n, rest);
  if (cmd == &s_help_cmd)
    return s_help_main(n, rest);
  if (cmd == &s_ckpt_cmd || cmd == &s_keygen_cmd)
    return s_exec_helper("kguard-ckpt", KGUARD_CKPT_RELPATH, argc, argv, 0);
  return s_exec_helper("kguard-eg", KGUARD_EG_RELPATH, argc, argv, 1);
}
