/*  kg_ckpt_cli_maint: the `kguard ckpt manifest`, `gc` and `prune`
    commands (kg_ckpt_cli.c dispatches to them). Each takes argv with the
    command name first and returns an exit code.
*/
#ifndef KG_CKPT_CLI_MAINT_H
#define KG_CKPT_CLI_MAINT_H

#include <stdbool.h>
#include <stdint.h>

#include "kg_ckpt_progress.h"
#include "kg_keys.h"

/*  `kguard ckpt manifest FILE`: authenticate FILE's manifest (no payload
    byte is read) and print {"manifest": {...}, "manifest_digest": hex,
    "archive_size": N} on stdout; exit 0, a verdict code 1..5, 100, 111. */
int kg_ckpt_cli_manifest(int argc, char **argv);

/*  `kguard ckpt gc CKPT_DIR`: remove temporaries whose writer is gone and
    copies of restored zstd checkpoints; exit 0, 100 usage, 111 system. */
int kg_ckpt_cli_gc(int argc, char **argv);

/*  `kguard ckpt prune CKPT_DIR --keep N [--keep-every K]
    [--open-incident T]... [--dry-run]` and `kguard ckpt prune CKPT_DIR
    --resolve ID` (kg_ckpt_retain.h); exit 0, 100 usage, 111 system. */
int kg_ckpt_cli_prune(int argc, char **argv);

/*  Take option id (KG_CKPT_O_KEEP, KG_CKPT_O_KEEP_EVERY) with its value.
    Returns 1 when it was one of them, 0 when not, -1 on a bad value
    (message printed). */
int kg_ckpt_cli_retain_opt(int id, const char *value, int *keep, int64_t *every);

/*  `kguard ckpt list` and `kguard ckpt latest` (kg_ckpt_cli_list.c). */
int kg_ckpt_cli_list(int argc, char **argv);
int kg_ckpt_cli_latest(int argc, char **argv);

#endif
