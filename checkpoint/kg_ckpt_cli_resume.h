/*  kg_ckpt_cli_resume: `kguard ckpt resume-prepare`, the command the
    supervisor runs after a sticky failure (wait for seals in flight,
    quarantine, choose and verify the newest earlier checkpoint), and the
    progress line every long-running ckpt command writes on stderr.
*/
#ifndef KG_CKPT_CLI_RESUME_H
#define KG_CKPT_CLI_RESUME_H

#include <stdint.h>

/*  `kguard ckpt resume-prepare --dir CKPT_DIR --before T_MS --incident ID
    --into DEST --json [--seal-wait-stall-ms MS]` (argv[0] is the command
    name). Prints exactly one JSON object on stdout, also on bad usage
    ({"status": "error", ...}). Returns 0 restored or none, 111 failed or
    system error, 100 usage. */
int kg_ckpt_cli_resume(int argc, char **argv);

/*  Write "kguard-progress DONE TOTAL" on stderr and flush: the line the
    supervisor reads to push back its stall deadline (FORMAT.md,
    "Progress"). arg is unused (a kg_ckpt_sink_t progress callback). */
void kg_ckpt_cli_progress_line(void *arg, uint64_t done, uint64_t total);

#endif
