/*  kg_ckpt_quarantine: set aside checkpoints sealed at or after a failure.

    Archives are moved (rename, never copied, never deleted) into
    <dir>/quarantine/<incident>/, which kg_ckpt_list never looks into, so a
    quarantined checkpoint is never chosen again. A name already taken there
    gets a ".N" suffix rather than replacing anything. quarantine/ and its
    incident directory are opened without following symbolic links (a link
    planted in a shared checkpoint directory is refused), and archives are
    moved between directory fds. New directories get 0777 less the umask,
    like the checkpoint directory's other contents.
*/
#ifndef KG_CKPT_QUARANTINE_H
#define KG_CKPT_QUARANTINE_H

#include <stdbool.h>
#include <stdint.h>

#include "kg_ckpt_list.h"

/*  True if incident is usable as one directory name: 1-128 bytes of
    [A-Za-z0-9._:-], not starting with '.'. */
bool kg_ckpt_quarantine_id_ok(const char *incident);

/*  Move every archive of list (not leftovers) whose time (signed seal time,
    else mtime) is at or after from_ms into the incident's quarantine
    directory, setting each entry's moved_to. With run (NULL: every run),
    authenticated archives of other runs stay where they are. Returns the number moved, or a
    negative code (KG_EUSAGE for a bad incident id, -ELOOP for a symbolic
    link at quarantine/ or its incident directory, -errno) with why naming
    the path, after which entries moved so far keep their moved_to. */
int kg_ckpt_quarantine(kg_ckpt_list_t *list, const char *incident, int64_t from_ms,
                       const char *run, char *why, size_t whylen);

/*  kg_ckpt_quarantine for a memory directory of snapshots, whose
    quarantine/ the next snapshot's seal deletes (kg_ckpt_snapkeep): only
    run's archives whose manifest authenticates move; a file that does not
    authenticate (another key's, or damaged) stays, as the pruning leaves it.
    Returns as kg_ckpt_quarantine does. */
int kg_ckpt_quarantine_own(kg_ckpt_list_t *list, const char *incident, int64_t from_ms,
                           const char *run, char *why, size_t whylen);

#endif
