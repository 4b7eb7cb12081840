/*  kg_run: the entry point of `kguard run NOTEBOOK.ipynb [options]`, the
    unattended notebook runner (kg_runner.h). Returns the process exit code
    (kg_exit.h; its --help lists the others).
*/
#ifndef KG_RUN_H
#define KG_RUN_H

#include "kg_exit.h"
#include "kg_opt.h"

/*  The command's option table (its --help, man page and reference). */
extern const kg_cmd_t kg_run_cmd;

/*  argv[0] is "run". */
int kg_run_main(int argc, char **argv);

#endif
