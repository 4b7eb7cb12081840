/*  kg_ckpt_seal_names: helpers of kg_ckpt_seal for its file names (the
    public name checks are declared in kg_ckpt_seal.h). */
#ifndef KG_CKPT_SEAL_NAMES_H
#define KG_CKPT_SEAL_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/*  mkostemp the template (ending in XXXXXX) and take the writer's lock
    (kg_ckpt_writer_lock, kg_ckpt_util.h). A gc (another seal's prune, a
    resume) that meets the fresh file before it is locked takes that lock
    itself to remove it: our lock is refused (EWOULDBLOCK) or the name is
    gone; either way a fresh name is tried. Returns 0 with *fd set, or
    -errno. */
int kg_ckpt_seal_tmp_create(char *tmpl, int *fd);

/*  kg_ckpt_seal_tmp_create with the lock taken by lock(fd, arg) instead of
    kg_ckpt_writer_lock (0 or -errno): how a test puts a gc between the
    file's creation and its lock. */
int kg_ckpt_seal_tmp_create_locking(char *tmpl, int *fd, int (*lock)(int fd, void *arg),
                                    void *arg);

/*  Rewrite final ("...<stamp>.kgckpt.tar[.zst]" or "...<stamp>-<k-1>...")
    as "...<stamp>-<k>.kgckpt.tar[.zst]" (k >= 2). Returns 0 or KG_ETOOBIG. */
int kg_ckpt_seal_numbered(char *final, size_t size, bool zstd, int k);

/*  Rename from to `to`, never replacing an existing file (renameat2
    RENAME_NOREPLACE, else link + unlink). Returns 0, KG_EEXISTS or -errno. */
int kg_ckpt_seal_rename_noreplace(const char *from, const char *to);

#endif
