/*  kg_cli: the entry points of kguard's subcommands. main.c only dispatches
    to these; each parses its own arguments and returns the process exit code.

    Exit codes shared by every subcommand (skarnet's convention):
      0    success
      100  wrong usage or invalid configuration (a message says which)
      111  a system call or a dependency failed
    Subcommands document further codes in their --help.
*/
#ifndef KG_CLI_H
#define KG_CLI_H

#define KG_EXIT_OK 0
#define KG_EXIT_USAGE 100
#define KG_EXIT_SYSTEM 111

/*  kguard kernel -f CONNECTION_FILE [options] -- INNER_KERNEL_ARGV...
    (supervisor/kg_cli_kernel.c) */
int kg_cli_kernel_main(int argc, char **argv);

/*  kguard install [--kernel NAME] [--name N] [--display-name D]
    [--user|--sys-prefix|--prefix P] [--checkpoints DIR] (supervisor/kg_cli_install.c) */
int kg_cli_install_main(int argc, char **argv);

/*  kguard restart [--diagnostic] -f CONNECTION_FILE (supervisor/kg_cli_restart.c) */
int kg_cli_restart_main(int argc, char **argv);

/*  kguard ckpt SUBCOMMAND ... (checkpoint/kg_ckpt_cli.c) */
int kg_ckpt_cli_main(int argc, char **argv);

/*  kguard keygen [--force] (checkpoint/kg_ckpt_cli.c) */
int kg_ckpt_keygen_main(int argc, char **argv);

/*  kguard doctor [--json|--format F] [--kernel N] [--preflight] ...
    (supervisor/kg_cli_doctor.c) */
int kg_cli_doctor_main(int argc, char **argv);

/*  kguard incident list | export ID [-o FILE] [--include-code] [--json]
    (supervisor/kg_cli_incident.c) */
int kg_cli_incident_main(int argc, char **argv);

/*  kguard run NOTEBOOK.ipynb [options] (supervisor/run/) */
int kg_run_main(int argc, char **argv);

/*  kguard exec [options] -- COMMAND [ARGS...] (supervisor/exec/) */
int kg_exec_main(int argc, char **argv);

#endif
