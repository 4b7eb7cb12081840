/*  kg_ckpt_seal: turn a directory of files into one signed checkpoint
    archive, written atomically.

    Uncompressed archives take one pass over the payload: the manifest
    member, which must come first, is written with zero digests and a zero
    signature of the final lengths; each file is hashed as it is streamed
    into the archive; the real manifest and signature then overwrite the
    placeholders. zstd archives take two passes (hash every file in parallel
    across files, then stream them). A file whose size or mtime changes
    while it is read (or between the passes) fails the seal.
    The archive is written to a temporary name ".<final>.tmp-XXXXXX" in the
    destination directory, fsynced, renamed (never replacing) and the
    directory fsynced. On any error the temporary file is removed and no file
    with the final name exists; a crash leaves only the dot-named temporary,
    which readers ignore.
*/
#ifndef KG_CKPT_SEAL_H
#define KG_CKPT_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_keys.h"

/* Final names: "step-<10 digits>-<YYYYMMDDTHHMMSSmmmZ>" + one of these. */
#define KG_CKPT_SUFFIX ".kgckpt.tar"
#define KG_CKPT_SUFFIX_ZSTD ".kgckpt.tar.zst"
#define KG_CKPT_TMP_MARK ".tmp-"

typedef struct {
  const char *dir;           /* directory to seal (regular files and subdirs) */
  int64_t step;              /* training step, >= 0 */
  const char *run;           /* run id, NULL for "default" */
  const char *into;          /* checkpoint dir (file name chosen), or NULL */
  const char *output;        /* exact output path when into is NULL */
  bool zstd;                 /* compress with zstd */
  const unsigned char *sk;   /* KG_KEYS_SECRET_BYTES signing key */
  int64_t now_ms;            /* seal time; 0 = now */
  const char *producer;      /* NULL for "kguard" */
  int format;                /* manifest version: 0 = current (2), or 1 */
  int64_t rank;              /* shard of a set: rank (0..world_size-1) */
  int64_t world_size;        /* >= 2 for a shard, else 0 */
  /* Optional: bytes of the files sealed so far of their total, about
     every MiB and once at the end (this thread). */
  void (*progress)(void *arg, uint64_t done, uint64_t total);
  /* Optional: a zstd seal reads the files twice; called with "hashing"
     before the first pass and "sealing" before the second, each counted
     from 0 again; dir is opts->dir. */
  void (*phase)(void *arg, const char *what, const char *dir);
  void *progress_arg;
} kg_ckpt_seal_opts_t;

/*  Seal opts->dir. On success returns 0 and writes the archive's path into
    out (size bytes). On failure returns a negative code (-errno, KG_EUSAGE
    for a directory holding links or special files, KG_EEXISTS if the final
    name exists, KG_ETOOBIG past the member cap) with a phrase in why. */
int kg_ckpt_seal(const kg_ckpt_seal_opts_t *opts, char *out, size_t size, char *why,
                 size_t whysize);

/*  True if name (no directory) is a sealed archive's final name; *zstd says
    which kind. Temporaries and other files are not. */
bool kg_ckpt_seal_is_archive_name(const char *name);

/*  True if name is a temporary left by an interrupted seal. */
bool kg_ckpt_seal_is_leftover_name(const char *name);

#endif
