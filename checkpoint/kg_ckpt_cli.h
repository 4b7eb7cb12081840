/*  kg_ckpt_cli: the entry points of the checkpoint commands, run in
    kguard-ckpt (checkpoint/main_ckpt.c), which `kguard ckpt ...` and
    `kguard keygen` and `kguard keys` exec. Each returns the process exit code (kg_exit.h).
*/
#ifndef KG_CKPT_CLI_H
#define KG_CKPT_CLI_H

#include "kg_exit.h"

/*  kguard ckpt SUBCOMMAND ... */
int kg_ckpt_cli_main(int argc, char **argv);

/*  kguard keygen [--force] (kg_ckpt_cli_keys.c) */
int kg_ckpt_keygen_main(int argc, char **argv);

/*  kguard keys list|export|import|trust|remove ... (kg_ckpt_cli_keys.c) */
int kg_ckpt_keys_main(int argc, char **argv);

#endif
