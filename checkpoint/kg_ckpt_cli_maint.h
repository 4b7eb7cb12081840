/*  kg_ckpt_cli_maint: the `kguard ckpt manifest`, `gc` and `prune`
    commands (kg_ckpt_cli.c dispatches to them). Each takes argv with the
    command name first and returns an exit code.
*/
#ifndef KG_CKPT_CLI_MAINT_H
#define KG_CKPT_CLI_MAINT_H

#include <stdint.h>

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

/*  Parse --keep / --keep-every at argv[*i] (advancing *i). Returns 1 when
    it was one of them, 0 when not, -1 on a bad value (message printed). */
int kg_ckpt_cli_retain_opt(int argc, char **argv, int *i, int *keep, int64_t *every);

#endif
