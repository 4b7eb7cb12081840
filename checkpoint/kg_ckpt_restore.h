/*  kg_ckpt_restore: extract a verified checkpoint into a new directory.

    Verification and extraction are one streaming pass: each member is
    written, as its bytes are hashed, into a private temporary directory
    ".<dest>.restore-XXXXXX" beside DEST (mode 0700, created with mkdtemp).
    Only regular files named in the authenticated manifest are created, by
    openat(O_CREAT|O_EXCL|O_NOFOLLOW) under that directory's fd, with
    exactly the manifest's sizes. Only when the whole archive verified is the
    temporary renamed to DEST (never replacing anything); otherwise it is
    removed, so DEST never exists half-written.
*/
#ifndef KG_CKPT_RESTORE_H
#define KG_CKPT_RESTORE_H

#include "kg_ckpt_verify.h"

/*  Restore archive into dest, which must not exist (its parent is created,
    mode 0700, if missing). watch: only its progress callback is used
    (NULL: none). pk: the public key (NULL: nothing verifies).
    Fills *report (caller clears it). Returns 0, a KG_ECKPT_* verdict,
    KG_EEXISTS if dest exists, or -errno. */
int kg_ckpt_restore(const char *archive, const char *dest, const unsigned char *pk,
                    const kg_ckpt_sink_t *watch, kg_ckpt_report_t *report);

#endif
