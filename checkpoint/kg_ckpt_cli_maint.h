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

/*  Shared by the ckpt command files: print "kguard ckpt CMD: MSG[: ARG]
    (see kguard ckpt CMD --help)" and return the usage exit code. */
int kg_ckpt_cli_usage(const char *msg, const char *arg);

/*  --progress's value (NULL: the bare option) into *when. Returns 0, or
    prints the usage error naming the value and returns 100. */
int kg_ckpt_cli_progress(const char *value, kg_ckpt_progress_when_t *when);

/*  The keys verification accepts (the user's own and the trusted ones,
    kg_keyring_load), loaded once per process into *out. Returns 0, or
    prints "kguard CMD: why" (kg_opt_error) and returns the exit code (100
    for a key directory others could change or a malformed trusted key, 111
    for a system error). */
int kg_ckpt_cli_keys(const kg_keyring_t **out);

/*  The one rule for paths named on a ckpt command line: path must exist
    and be a directory (dir) or a regular file. Returns 0, or prints
    "kguard ckpt CMD: no such directory: PATH" (or "... file", "not a
    directory", "not a regular file") and returns 100, or, when it cannot
    be looked at (permissions), "kguard ckpt CMD: cannot read PATH: why"
    and 111. */
int kg_ckpt_cli_need(const char *path, bool dir);

#endif
