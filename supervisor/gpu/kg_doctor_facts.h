/*  kg_doctor_facts: what `kguard doctor` gathers from this machine without
    touching a GPU: the kernelspecs Jupyter would list (and which of them
    kguard guards), the environment a kernel would get, and a bounded run
    of helper children whose stdout is collected.
*/
#ifndef KG_DOCTOR_FACTS_H
#define KG_DOCTOR_FACTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

/*  The kernelspec directories in Jupyter's order (`jupyter --paths`, data
    section, + "/kernels"): each $JUPYTER_PATH entry, the user data dir
    ($JUPYTER_DATA_DIR or ~/.local/share/jupyter), the environment's
    ($VIRTUAL_ENV, else $CONDA_PREFIX)/share/jupyter, /usr/local/share/jupyter,
    /usr/share/jupyter. A new JSON array of strings. */
cJSON *kg_doctor_kernel_dirs(void);

/*  Every kernelspec found in dirs (a name found twice: the first wins, as in
    jupyter_client), as a new array of objects:
      {"name", "dir", "display_name", "guarded", "wraps", "interpreter",
       "checkpoints", "keys", "state_dir", "env": {...} | null,
       "error": "..." (for an unreadable or malformed kernel.json)}
    interpreter is the argv[0] that runs Python (after "--" for a guarded
    spec), or null when the kernel is not started by a python executable. */
cJSON *kg_doctor_kernelspecs(const cJSON *dirs);

/*  Run the children argvs[0..n) at once, each with stdout captured (at most
    1 MiB kept) and stderr inherited, until all end or timeout_ms passes
    (then their process groups are killed). For each child i: outs[i] gets
    its stdout (malloc'd, NUL-terminated, never NULL unless OOM), codes[i]
    its exit code, -2 if it timed out, -3 if it could not start, 128+signo
    if a signal ended it. Returns 0, or -errno if the run itself failed. */
int kg_doctor_run_children(char **const *argvs, int n, int64_t timeout_ms, char **outs,
                           int *codes);

/*  The same, child i with the environment envps[i] (NULL: ours); envps
    itself may be NULL. */
int kg_doctor_run_children_env(char **const *argvs, char **const *envps, int n,
                               int64_t timeout_ms, char **outs, int *codes);

#endif
