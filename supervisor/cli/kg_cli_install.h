/*  kg_cli_install: what `kguard install` writes, apart from where: the
    guarded kernelspec's kernel.json built from the wrapped one and the
    options, so that it can be table-tested without a Jupyter data dir. */
#ifndef KG_CLI_INSTALL_H
#define KG_CLI_INSTALL_H

#include <stdbool.h>

#include "kg_kernelspec.h"

/*  The restart-policy options `kguard install` forwards to `kguard kernel`,
    in the order they are written into the argv. */
enum { KG_CLI_INSTALL_POLICY_COUNT = 5 };

/*  A restart-policy option of `kguard kernel`, as written into the argv. */
typedef struct {
  const char *flag;             /*  "--max-restarts" ...                   */
  bool integer;                 /*  N (0..1000) rather than SEC (> 0)      */
  const char *value;            /*  as given, NULL when not given          */
  double number;                /*  parsed                                 */
} kg_cli_install_policy_t;

/*  What the user asked of `kguard install`, checked (strings borrowed from
    argv; NULL when not given). */
typedef struct {
  const char *kernel;           /*  the kernelspec wrapped ("python3")     */
  const char *name, *display, *prefix, *ckpt;
  const char *preflight, *preflight_timeout, *keep, *standby_imports;
  bool standby, check;
  int where;                    /*  0 user, 1 sys-prefix, 2 prefix         */
  kg_cli_install_policy_t policy[KG_CLI_INSTALL_POLICY_COUNT];
} kg_cli_install_opts_t;

/*  The guarded kernelspec's kernel.json text (the caller frees it; NULL when
    out of memory): argv runs `EXE kernel -f {connection_file} --name NAME`,
    the wrapped interrupt mode and language, --checkpoints, the policy given,
    --standby, then `--` and the wrapped argv unchanged; display_name, the
    wrapped language, interrupt_mode and metadata (with kguard.wraps), and
    the wrapped env plus the KGUARD_* variables the options set. */
char *kg_cli_install_json(const kg_cli_install_opts_t *o, const kg_kernelspec_t *wrapped,
                          const char *exe, const char *name, const char *display);

#endif
