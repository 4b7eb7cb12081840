/*  kg_kcheck: can this kernelspec start here? What `kguard install` checks
    before wrapping a kernelspec and `kguard doctor` before judging one.

    A kernel starts when each program its argv runs exists and may be
    executed (a bare name looked up in PATH as the kernel will see it: the
    spec's env PATH, else ours; {resource_dir} and {prefix} filled in as
    jupyter_client fills them) and, for `PYTHON -m MODULE ...`, when MODULE
    is importable by that Python (asked in a child, under a deadline). A
    kguard kernelspec (argv `.../kguard kernel ... -- INNER...`) starts
    when its kguard program and INNER both do.
*/
#ifndef KG_KCHECK_H
#define KG_KCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "kg_kernelspec.h"

typedef struct {
  bool guarded;            /*  argv runs `kguard kernel`                       */
  bool kguard_missing;     /*  guarded, and that kguard program is gone (a
                               build tree moved or rebuilt)                   */
  bool other_kguard;       /*  guarded by a kguard program other than self     */
  char kguard[4096];       /*  guarded: the kguard program it names           */
} kg_kcheck_t;

/*  True when spec runs `kguard kernel` (a kernelspec kguard wrote). */
bool kg_kcheck_guarded(const kg_kernelspec_t *spec);

/*  Check spec (whose dir is set when found on disk). self is this kguard's
    own path (for other_kguard; may be NULL). Returns 0 when it can start,
    else KG_ESPAWN with one sentence in err naming the program or module
    and why ("/opt/py/bin/python3: No such file or directory"). *out is
    filled either way. */
int kg_kcheck_run(const kg_kernelspec_t *spec, const char *self, kg_kcheck_t *out, char *err,
                  size_t errlen);

/*  The command that writes guarded spec again with the kguard program self:
    `SELF install --kernel WRAPS --name NAME --prefix P ...` with the
    options its argv and env carry (checkpoints, restart policy, standby,
    pre-flight), shell-quoted, into buf. Returns 0, KG_EUSAGE when spec is
    not a kguard kernelspec that names the kernelspec it wraps, or
    KG_ETOOBIG. */
int kg_kcheck_reinstall_cmd(const kg_kernelspec_t *spec, const char *self, char *buf,
                            size_t len);

/*  Resolve program prog as execvp would with PATH path_env (NULL: the
    default search path) into out: 0 when found and executable, else
    -errno (-ENOENT: found nowhere). */
int kg_kcheck_program(const char *prog, const char *path_env, char *out, size_t len);

/*  Load kernelspec name from its directory dir (dir/kernel.json), with
    spec->dir set. Returns 0, or an error code with a message in err. */
int kg_kcheck_load(const char *dir, const char *name, kg_kernelspec_t **spec_p, char *err,
                   size_t errlen);

#endif
