/*  kg_ckpt_persist: a sealed snapshot copied, verbatim, into the
    checkpoint directory on disk (`kguard ckpt seal --persist-into`).

    The archive is already sealed and signed, so its bytes are copied as
    they are (never re-hashed). The copy is written under a dot-named
    temporary holding the writer's exclusive lock, as a seal's temporaries
    are, so that `kguard ckpt gc`, list's "leftover" and resume-prepare's
    wait for seals in flight treat it as a writer; it gets the archive's
    own file name only once complete and synced.
*/
#ifndef KG_CKPT_PERSIST_H
#define KG_CKPT_PERSIST_H

#include <stddef.h>

/*  Copy the sealed archive src into dir (created if missing) under src's
    file name: copy_file_range (read/write where the filesystems cannot),
    fsync, rename never replacing (an existing name gets a numbered one,
    "...-2.kgckpt.tar", as a seal does), then fsync dir. src is read under
    its shared lock, so a pruning of its directory keeps it meanwhile.
    On success (0) out holds the copy's path. Any failure removes the
    temporary (nothing partial stays) and returns -errno / KG_ETOOBIG with
    why filled. */
int kg_ckpt_persist(const char *src, const char *dir, char *out, size_t outsize, char *why,
                    size_t whysize);

#endif
