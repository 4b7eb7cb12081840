/*  kg_ckpt_list: the checkpoints of a directory, newest first, and the
    choice of the last consistent one.

    Only top-level files with a sealed archive's name are checkpoints
    (subdirectories such as quarantine/ are never looked into); dot-named
    temporaries of interrupted seals are listed as leftovers and never
    chosen. Order: the signed seal time when the manifest authenticates,
    else the file's mtime; ties by step, then name, all descending.
*/
#ifndef KG_CKPT_LIST_H
#define KG_CKPT_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_ckpt_verify.h"

typedef struct {
  char *name;                 /* file name in the directory */
  char *path;                 /* dir/name */
  bool leftover;              /* temporary of an interrupted seal */
  bool full;                  /* fully verified (not just the manifest) */
  int rc;                     /* verify result (0 valid, KG_ECKPT_*...) */
  char reason[512];           /* verify's one-line reason */
  bool authenticated;         /* manifest signature verified */
  char run[KG_CKPT_RUN_MAX + 1];
  int64_t step;               /* -1 unless authenticated */
  int64_t sealed_at_ms;       /* signed seal time, -1 unless authenticated */
  int64_t time_ms;            /* sealed_at_ms, else the file's mtime */
  uint64_t size;              /* bytes on disk */
  char manifest_digest[65];   /* hex BLAKE2b-256 of the manifest bytes */
  char *moved_to;             /* set once quarantined */
  int64_t rank, world_size;   /* a shard of a set when world_size >= 2 */
} kg_ckpt_entry_t;

typedef struct {
  char *dir;                  /* the scanned directory */
  kg_ckpt_entry_t *entries;   /* newest first, leftovers included */
  size_t count;
} kg_ckpt_list_t;

/*  Scan dir. With full, every archive is verified completely (for
    `list`); otherwise only its manifest is authenticated (cheap). Returns a
    new list (caller destroys) or NULL with *rc set (-errno; -ENOENT when
    dir does not exist). */
kg_ckpt_list_t *kg_ckpt_list_scan(const char *dir, const kg_keyring_t *keys, bool full, int *rc);

/*  Free the list and NULL *p. */
void kg_ckpt_list_destroy(kg_ckpt_list_t **p);

/*  Verify entry i completely (if not yet) and return its rc. */
int kg_ckpt_list_verify(kg_ckpt_list_t *self, size_t i, const kg_keyring_t *keys);

/*  The last consistent checkpoint: the newest archive whose signed seal
    time is strictly before before_ms (INT64_MAX: any) and that verifies
    completely. Verifies candidates newest first until one is valid. Sets
    *index and returns 0, or returns KG_ECKPT_NONE. Skipped entries keep
    their reasons (see kg_ckpt_list_skip_reason). */
int kg_ckpt_list_latest(kg_ckpt_list_t *self, const kg_keyring_t *keys, int64_t before_ms,
                        size_t *index);

/*  Why entry i is not the choice given before_ms, written into buf; NULL
    if it would be acceptable (valid and before). */
const char *kg_ckpt_list_skip_reason(const kg_ckpt_list_t *self, size_t i, int64_t before_ms,
                                     char *buf, size_t size);

#endif
