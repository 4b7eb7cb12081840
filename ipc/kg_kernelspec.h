/*  kg_kernelspec: finding and reading Jupyter kernelspecs (kernel.json).

    Search order, as jupyter_client: each entry of $JUPYTER_PATH, then the
    user data dir ($JUPYTER_DATA_DIR, else ~/.local/share/jupyter), then the
    sys-prefix given (--sys-prefix/--prefix: PREFIX/share/jupyter), then
    /usr/local/share/jupyter and /usr/share/jupyter; a spec is
    <dir>/kernels/<name>/kernel.json.
*/
#ifndef KG_KERNELSPEC_H
#define KG_KERNELSPEC_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
  char *name;                   /*  directory name                          */
  char *dir;                    /*  the spec's directory (NULL if parsed)    */
  cJSON *json;                  /*  the whole kernel.json (owned)           */
  const char *display_name;     /*  borrowed from json                      */
  const char *language;         /*  borrowed, "" if absent                  */
  const char *interrupt_mode;   /*  borrowed, "signal" if absent            */
  const cJSON *argv;            /*  borrowed: array of strings, non-empty   */
  const cJSON *env;             /*  borrowed object or NULL                 */
  const cJSON *metadata;        /*  borrowed object or NULL                 */
} kg_kernelspec_t;

/*  Parse kernel.json text (len bytes) of kernelspec name. On success *spec_p
    is new and owned by the caller, 0 returned. KG_EKERNELSPEC with a message
    naming the field in err if argv is missing/empty/not strings,
    display_name is not a string, env is not an object of strings, or
    interrupt_mode is not signal|message. */
int kg_kernelspec_parse(const char *name, const char *text, size_t len,
                        kg_kernelspec_t **spec_p, char *err, size_t errlen);

/*  Find and load kernelspec name (see the search order). sys_prefix may be
    NULL. Returns 0, KG_EUSAGE for a name kg_kernelspec_check_name refuses,
    KG_ENOKERNEL (err lists the places searched), KG_EKERNELSPEC, or -errno. */
int kg_kernelspec_find(const char *name, const char *sys_prefix, kg_kernelspec_t **spec_p,
                       char *err, size_t errlen);

/*  Whether Jupyter looks for kernelspecs in kernels_dir (a ".../kernels"
    directory): one of the search order's directories, with the sys-prefix
    kg_kernelspec_sys_prefix names, compared after resolving links. */
bool kg_kernelspec_dir_searched(const char *kernels_dir);

/*  The user data dir's kernels directory: $JUPYTER_DATA_DIR/kernels or
    ~/.local/share/jupyter/kernels, into buf. Returns 0 or KG_ETOOBIG. */
int kg_kernelspec_user_dir(char *buf, size_t len);

/*  Longest kernelspec name accepted: one directory name (NAME_MAX).
    jupyter_client itself sets no limit; the file system does. */
#define KG_KERNELSPEC_NAME_MAX 255

/*  Check name as jupyter_client checks kernelspec names (kernelspec.py
    _kernel_name_pat: ASCII letters, digits, '-', '.', '_', at least one),
    and reject "." and ".." (directories, not names) and names longer than
    KG_KERNELSPEC_NAME_MAX. Pure. Returns 0, or KG_EUSAGE with a message
    naming the problem in err. */
int kg_kernelspec_check_name(const char *name, char *err, size_t errlen);

/*  The values jupyter_client puts into a kernelspec's argv
    (KernelManager.format_kernel_cmd): each "{NAME}" whose NAME is one of
    these (and non-NULL here) is replaced; any other "{...}" stays as it is,
    as jupyter_client leaves names it does not know. */
typedef struct {
  const char *connection_file;  /*  {connection_file}                      */
  const char *resource_dir;     /*  {resource_dir}: the spec's directory   */
  const char *prefix;           /*  {prefix}: jupyter's sys.prefix         */
} kg_kernelspec_ns_t;

/*  arg with every known placeholder filled from ns (pure). New string owned
    by the caller, NULL on allocation failure. */
char *kg_kernelspec_format_arg(const char *arg, const kg_kernelspec_ns_t *ns);

/*  The {prefix} jupyter_client would use: Python's sys.prefix, i.e. the
    venv or conda env this kguard was pip-installed in (kg_paths_env_prefix),
    else $VIRTUAL_ENV, else $CONDA_PREFIX, else /usr (Debian's). Borrowed.
    It is also what --sys-prefix means to `kguard install` and `uninstall`. */
const char *kg_kernelspec_sys_prefix(void);

/*  Free and NULL. Safe on NULL. */
void kg_kernelspec_destroy(kg_kernelspec_t **spec_p);

#endif
