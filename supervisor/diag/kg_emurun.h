/*  kg_emurun: whether the labelled emulation (KGUARD_EMULATE) fired during
    one run of `kguard run` or `kguard exec`. The emulation raises its error
    only inside `kguard.emulate.step(n)`: a training loop that never calls it
    never fails, and a `:once` spec whose marker an earlier run left never
    fires again. Either way the run looks like a clean one, so kguard says
    so at its end.

    The run gets a private directory, named to its children by
    KGUARD_EMULATE_RUN_DIR; python/kguard/emulate.py writes `fired` there
    when it raises, `blocked` (holding the marker's path) when a `:once`
    marker stopped it, and keeps its default `:once` marker there, so that
    `:once` means once per run.

    Ownership: the object owns its directory and removes it, with what the
    children wrote there, when destroyed.
*/
#ifndef KG_EMURUN_H
#define KG_EMURUN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kg_emurun_t kg_emurun_t;

/*  The kernel-side kind KGUARD_EMULATE names (its first part that is not a
    `preflight-` word), copied into buf; false when spec is NULL, empty or
    names only the pre-flight's emulation (which kguard's doctor reports
    itself). Pure. */
bool kg_emurun_kind(const char *spec, char *buf, size_t len);

/*  The end-of-run words when the emulation did not fire: blocked_by is the
    `:once` marker that stopped it (NULL: step() was never reached). Pure;
    returns buf. */
const char *kg_emurun_message(const char *spec, const char *blocked_by, char *buf, size_t len);

/*  Watch one run: when spec names a kernel-side kind, create the private
    directory and set KGUARD_EMULATE_RUN_DIR in this process's environment
    (call before any child or thread starts; children inherit it). NULL when
    there is nothing to watch, or when the directory cannot be made (then a
    warning says so). */
kg_emurun_t *kg_emurun_new(const char *spec);

/*  At the end of the run: true when the emulation fired; else false, with
    the words for the user (kg_emurun_message) in buf. Safe on NULL (true). */
bool kg_emurun_fired(const kg_emurun_t *self, char *buf, size_t len);

/*  Remove the directory and what it holds, unset KGUARD_EMULATE_RUN_DIR,
    free and NULL. Safe on NULL. */
void kg_emurun_destroy(kg_emurun_t **self_p);

#endif
