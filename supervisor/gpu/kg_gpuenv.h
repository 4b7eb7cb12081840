/*  kg_gpuenv: the GPU-related environment variables `kguard doctor` explains,
    and which of them are a problem where they are set. Pure: a table and a
    function of (name, value, diagnostic run?).

    Kinds: SELECT variables choose devices, DIAGNOSTIC ones slow or change a
    run to make an error easier to locate (left on in normal training they
    cost speed, so they are flagged outside a diagnostic run: one started by
    `%kguard restart --diagnostic`, which sets KGUARD_DIAGNOSTIC), TUNING
    ones change behaviour without a diagnostic purpose.
*/
#ifndef KG_GPUENV_H
#define KG_GPUENV_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { KG_GPUENV_SELECT, KG_GPUENV_DIAGNOSTIC, KG_GPUENV_TUNING } kg_gpuenv_kind_t;

/*  OK: nothing to say beyond what it does; INFO: worth knowing; WARN: likely
    a mistake (a device hidden, a diagnostic slowdown left on, ...). */
typedef enum { KG_GPUENV_OK, KG_GPUENV_INFO, KG_GPUENV_WARN } kg_gpuenv_level_t;

typedef struct {
  const char *name;
  kg_gpuenv_kind_t kind;
  const char *what;   /* one sentence: what the variable does */
} kg_gpuenv_var_t;

/*  The table (static storage), *n set to its length. */
const kg_gpuenv_var_t *kg_gpuenv_table(size_t *n);

/*  The table entry of name, or NULL. */
const kg_gpuenv_var_t *kg_gpuenv_find(const char *name);

/*  Assess name=value (value NULL = unset) in a run that is (diagnostic_run)
    or is not diagnostic. Writes a one-sentence note into note (may be "")
    and returns its level. Unknown names are OK with an empty note. */
kg_gpuenv_level_t kg_gpuenv_assess(const char *name, const char *value, bool diagnostic_run,
                                   char *note, size_t len);

/*  "select" / "diagnostic" / "tuning"; "ok" / "info" / "warn". */
const char *kg_gpuenv_kind_name(kg_gpuenv_kind_t kind);
const char *kg_gpuenv_level_name(kg_gpuenv_level_t level);

#endif
