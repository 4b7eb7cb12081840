/*  kg_ckpt_cmds: the option tables (kg_opt.h) of `kguard ckpt ...`,
    `kguard keygen` and `kguard keys ...`. Data only, in a library of their own (kg_ckpt_cmds,
    common's only): kguard-ckpt parses with them, and kguard itself links
    them for `kguard help` and the man pages without mapping libarchive.
*/
#ifndef KG_CKPT_CMDS_H
#define KG_CKPT_CMDS_H

#include "kg_opt.h"

/*  The option ids of every ckpt command (each table uses some). */
enum {
  KG_CKPT_O_STEP = 1,
  KG_CKPT_O_RUN,
  KG_CKPT_O_INTO,
  KG_CKPT_O_OUTPUT,
  KG_CKPT_O_ZSTD,
  KG_CKPT_O_TIME,
  KG_CKPT_O_AFTER,
  KG_CKPT_O_REMOVE_DIR,
  KG_CKPT_O_KEEP,
  KG_CKPT_O_KEEP_EVERY,
  KG_CKPT_O_RANK,
  KG_CKPT_O_WORLD_SIZE,
  KG_CKPT_O_FORMAT,
  KG_CKPT_O_PROGRESS,
  KG_CKPT_O_JSON,
  KG_CKPT_O_BEFORE,
  KG_CKPT_O_INCIDENT,
  KG_CKPT_O_FROM,
  KG_CKPT_O_DIR,
  KG_CKPT_O_SEAL_WAIT,
  KG_CKPT_O_OPEN_INCIDENT,
  KG_CKPT_O_RESOLVE,
  KG_CKPT_O_DRY_RUN,
  KG_CKPT_O_FORCE,
  KG_CKPT_O_READ_ONLY,
  KG_CKPT_O_PRIVATE,
  KG_CKPT_O_DIGEST,
  KG_CKPT_O_REPLACE,
  KG_CKPT_O_TRUSTED_DIR,
  KG_CKPT_O_SNAPSHOT,
  KG_CKPT_O_PERSIST_INTO,
  KG_CKPT_O_PERSIST_KEEP,
  KG_CKPT_O_SNAPSHOT_KEEP,
  KG_CKPT_O_MEMORY,
};

/*  `kguard ckpt` (its subcommands below), `kguard keygen` and `kguard keys`
    (its subcommands below; `keys trust` is `keys import`'s hidden alias). */
extern const kg_cmd_t kg_ckpt_cmd;
extern const kg_cmd_t kg_ckpt_seal_cmd, kg_ckpt_verify_cmd, kg_ckpt_list_cmd,
  kg_ckpt_latest_cmd, kg_ckpt_restore_cmd, kg_ckpt_quarantine_cmd, kg_ckpt_resume_cmd,
  kg_ckpt_manifest_cmd, kg_ckpt_gc_cmd, kg_ckpt_prune_cmd;
extern const kg_cmd_t kg_keygen_cmd;
extern const kg_cmd_t kg_keys_cmd;
extern const kg_cmd_t kg_keys_list_cmd, kg_keys_export_cmd, kg_keys_import_cmd,
  kg_keys_trust_cmd, kg_keys_remove_cmd;

#endif
