/*  kg_ckpt_cli_resume: `kguard ckpt resume-prepare`, the command the
    supervisor runs after a sticky failure (wait for seals in flight,
    quarantine, choose and verify the newest earlier checkpoint).
*/
#ifndef KG_CKPT_CLI_RESUME_H
#define KG_CKPT_CLI_RESUME_H

#include <stdint.h>

/*  `kguard ckpt resume-prepare --dir CKPT_DIR --before T_MS --incident ID
    --into DEST --json [--seal-wait-stall-ms MS] [--progress[=WHEN]]` (argv[0] is the command
    name). Prints exactly one JSON object on stdout, also on bad usage
    ({"status": "error", ...}). Returns 0 restored or none, 111 failed or
    system error, 100 usage. */
int kg_ckpt_cli_resume(int argc, char **argv);

#endif
