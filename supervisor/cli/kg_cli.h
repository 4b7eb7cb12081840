/*  kg_cli: the entry points of the kernel supervisor's commands, with
    their option tables (kg_opt.h). main.c dispatches to these, to `kguard
    run` (kg_run.h) and `kguard exec` (kg_exec.h); each parses its own
    arguments with its table and returns the process exit code (kg_exit.h).
    argv[0] is the command's name. The checkpoint commands run in
    kguard-ckpt (kg_ckpt_cli.h).
*/
#ifndef KG_CLI_H
#define KG_CLI_H

#include "kg_exit.h"
#include "kg_opt.h"

/*  kguard kernel -f CONNECTION_FILE [options] -- INNER_KERNEL_ARGV...
    (supervisor/cli/kg_cli_kernel.c) */
extern const kg_cmd_t kg_cli_kernel_cmd;
int kg_cli_kernel_main(int argc, char **argv);

/*  kguard install [--kernel NAME] [--name N] [--user|--sys-prefix|--prefix P]
    ... (supervisor/cli/kg_cli_install.c) */
extern const kg_cmd_t kg_cli_install_cmd;
int kg_cli_install_main(int argc, char **argv);

/*  kguard uninstall [--name N] [--user|--sys-prefix|--prefix P]
    (supervisor/cli/kg_cli_uninstall.c) */
extern const kg_cmd_t kg_cli_uninstall_cmd;
int kg_cli_uninstall_main(int argc, char **argv);

/*  kguard restart [--diagnostic] -f CONNECTION_FILE (supervisor/cli/kg_cli_restart.c) */
extern const kg_cmd_t kg_cli_restart_cmd;
int kg_cli_restart_main(int argc, char **argv);

/*  kguard doctor [--json|--format F] [--kernel N] [--preflight] ...
    (supervisor/cli/kg_cli_doctor.c) */
extern const kg_cmd_t kg_cli_doctor_cmd;
int kg_cli_doctor_main(int argc, char **argv);

/*  kguard incident list | show ID | export ID [-o FILE] [--include-code]
    [--include-env] [--json] (supervisor/cli/kg_cli_incident.c) */
extern const kg_cmd_t kg_cli_incident_cmd;
int kg_cli_incident_main(int argc, char **argv);

/*  kguard help [--format F] [COMMAND [SUBCOMMAND]]: help, man pages, the
    reference, the completion, the tables as JSON; root is kguard's own
    table, whose subcommands are every command (supervisor/cli/kg_cli_help.c) */
extern const kg_cmd_t kg_cli_help_cmd;
int kg_cli_help_main(const kg_cmd_t *root, int argc, char **argv);

#endif
