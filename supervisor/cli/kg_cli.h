/*  kg_cli: the entry points of the kernel supervisor's commands. main.c
    dispatches to these, to `kguard run` (kg_run.h) and `kguard exec`
    (kg_exec.h); each parses its own arguments and returns the process exit
    code (kg_exit.h). The checkpoint commands run in kguard-ckpt
    (kg_ckpt_cli.h).
*/
#ifndef KG_CLI_H
#define KG_CLI_H

#include "kg_exit.h"

/*  kguard kernel -f CONNECTION_FILE [options] -- INNER_KERNEL_ARGV...
    (supervisor/cli/kg_cli_kernel.c) */
int kg_cli_kernel_main(int argc, char **argv);

/*  kguard install [--kernel NAME] [--name N] [--display-name D]
    [--user|--sys-prefix|--prefix P] [--checkpoints DIR] (supervisor/cli/kg_cli_install.c) */
int kg_cli_install_main(int argc, char **argv);

/*  kguard restart [--diagnostic] -f CONNECTION_FILE (supervisor/cli/kg_cli_restart.c) */
int kg_cli_restart_main(int argc, char **argv);

/*  kguard doctor [--json|--format F] [--kernel N] [--preflight] ...
    (supervisor/cli/kg_cli_doctor.c) */
int kg_cli_doctor_main(int argc, char **argv);

/*  kguard incident list | show ID | export ID [-o FILE] [--include-code]
    [--include-env] [--json] (supervisor/cli/kg_cli_incident.c) */
int kg_cli_incident_main(int argc, char **argv);

#endif
