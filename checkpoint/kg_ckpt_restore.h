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

#define KG_CKPT_RESTORE_READ_ONLY 1u /* files 0400, directories 0500 */
#define KG_CKPT_RESTORE_PRIVATE 2u   /* dest's parent must be private (kg_safepath.h) */

typedef struct {
  unsigned flags;              /* KG_CKPT_RESTORE_* */
  const char *expect_digest;   /* hex BLAKE2b-256 of the manifest required, or NULL */
} kg_ckpt_restore_opts_t;

/*  Restore archive into dest, which must not exist and whose parent must
    be an existing directory (KG_EUSAGE otherwise, as tar -C and cp refuse). watch: only its progress callback is used
    (NULL: none). keys: the keys accepted as signers (NULL: nothing verifies).
    opts (NULL: none): READ_ONLY takes write permission away before DEST
    appears; PRIVATE refuses a parent others could change; expect_digest
    refuses (KG_ECKPT_CORRUPT) an archive whose manifest is another.
    Fills *report (caller clears it). Returns 0, a KG_ECKPT_* verdict,
    KG_EEXISTS if dest exists, KG_EUSAGE (missing or, with PRIVATE,
    unsafe parent), or -errno. */
int kg_ckpt_restore(const char *archive, const char *dest, const kg_keyring_t *keys,
                    const kg_ckpt_sink_t *watch, const kg_ckpt_restore_opts_t *opts,
                    kg_ckpt_report_t *report);

#endif
