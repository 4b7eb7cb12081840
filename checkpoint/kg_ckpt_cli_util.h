/*  kg_ckpt_cli_util: what the `kguard ckpt` command files share (the
    usage line, --progress, the keys, the paths named on the command
    line). Below every command file (kg_ckpt_cli.c, kg_ckpt_cli_keys.c,
    kg_ckpt_cli_list.c, kg_ckpt_cli_maint.c), which all call it; it calls
    none of them.
*/
#ifndef KG_CKPT_CLI_UTIL_H
#define KG_CKPT_CLI_UTIL_H

#include <stdbool.h>

#include "kg_ckpt_progress.h"
#include "kg_keys.h"

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
