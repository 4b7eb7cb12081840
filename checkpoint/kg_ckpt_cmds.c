/*  kg_ckpt_cmds: the tables of the checkpoint commands (see kg_ckpt_cmds.h). */
#include "kg_ckpt_cmds.h"

#include <stddef.h>

/*  The verdict codes: the code with its name (what `verify` prints). */
static const kg_opt_exit_t s_verdicts[] = {
  {"0 valid", "signed by your key or one you trust (`kguard keys`), complete, every digest "
              "matches"},
  {"1 unsigned", "no signature, a key you do not trust, or a plain zip (torch.save) that is "
                 "complete but not authenticated"},
  {"2 corrupt", "a member or the manifest does not match (the message names which)"},
  {"3 incomplete", "truncated, empty, or a listed member missing"},
  {"4 malformed", "not an archive, no manifest, invalid manifest"},
  {"5 unsafe", "links, devices, fifos, '..' or absolute or non-UTF-8 names, unlisted or "
               "duplicate members, oversize members, a name that is also another's directory, "
               "a NUL in a name"},
  {"100", "usage error (also: no such FILE or CKPT_DIR)"},
  {"111", "system failure"},
  {NULL, NULL},
};

/*  The commands that take a CKPT_DIR: a missing one is a usage error. */
static const kg_opt_exit_t s_dir_exits[] = {
  {"0", "success"},
  {"100", "usage error (also: no such CKPT_DIR)"},
  {"111", "system failure"},
  {NULL, NULL},
};

#define S_END {0, 0, NULL, NULL, NULL, 0}

/*  --progress[=WHEN], for every command that reads or writes an archive. */
#define S_PROGRESS                                                                    \
  {KG_CKPT_O_PROGRESS, 0, "progress", "auto|machine|none",                           \
   "auto (the default): on a terminal, one line with bytes done, rate and time left " \
   "while it runs over a second; machine: 'kguard-progress DONE TOTAL' lines for "     \
   "programs (bare --progress: these when stderr is not a terminal); none: nothing",  \
   KG_OPT_OPTIONAL}

/*  --keep and --keep-every, for seal and prune. */
#define S_KEEP(what)                                                                  \
  {KG_CKPT_O_KEEP, 0, "keep", "N",                                                    \
   what "keep the newest N valid checkpoints from the newest valid one down (and "    \
   "everything newer than it); see `kguard ckpt prune --help`", 0},                   \
  {KG_CKPT_O_KEEP_EVERY, 0, "keep-every", "K",                                        \
   "with --keep: also keep every checkpoint whose step is a multiple of K", 0}

static const kg_opt_t s_seal_opts[] = {
  {KG_CKPT_O_STEP, 0, "step", "N", "the training step the checkpoint holds (required)", 0},
  {KG_CKPT_O_RUN, 0, "run", "ID", "the run it belongs to (default $KGUARD_RUN_ID, else "
   "\"default\")", 0},
  {KG_CKPT_O_INTO, 0, "into", "CKPT_DIR",
   "write step-<N>-<UTC time>.kgckpt.tar[.zst] inside CKPT_DIR (created if missing)", 0},
  {KG_CKPT_O_OUTPUT, 'o', "output", "FILE", "write the archive to FILE instead", 0},
  {KG_CKPT_O_ZSTD, 0, "zstd", NULL, "compress the members with zstd", 0},
  {KG_CKPT_O_TIME, 0, "time", "T",
   "the seal time to record (when the state was captured; default now)", 0},
  {KG_CKPT_O_AFTER, 0, "after", "PATH",
   "first wait until the writer holding PATH's lock is gone (the previous background seal), "
   "so seals finish in step order", 0},
  {KG_CKPT_O_REMOVE_DIR, 0, "remove-dir", NULL,
   "remove DIR afterwards, sealed or not (background saves)", 0},
  S_KEEP("then prune this run's checkpoints in CKPT_DIR (other runs' stay): "),
  {KG_CKPT_O_RANK, 0, "rank", "R",
   "with --world-size N (N >= 2): seal this rank's shard of a checkpoint set; the seal "
   "that completes the set writes its signed index set-<N>-*.kgset.tar", 0},
  {KG_CKPT_O_WORLD_SIZE, 0, "world-size", "N", "the number of ranks of the set", 0},
  {KG_CKPT_O_FORMAT, 0, "format", "1|2",
   "1: a version 1 archive (one whole-member digest, read by any kguard); the default, 2, "
   "has one digest per 64 MiB chunk (verified on all cores)", 0},
  {KG_CKPT_O_SNAPSHOT, 0, "snapshot", NULL,
   "CKPT_DIR is a memory directory of snapshots (tmpfs, $KGUARD_SNAPSHOT_DIR): after the "
   "seal (and the set index), remove this run's archives and set indexes sealed before its "
   "newest complete checkpoint, and quarantine/; shards newer than it (ranks still writing), "
   "other runs' archives and leftovers stay. CKPT_DIR must exist (its owner makes it). Not "
   "with --zstd (snapshots are read in place)",
   0},
  {KG_CKPT_O_SNAPSHOT_KEEP, 0, "snapshot-keep", "N",
   "with --snapshot: keep the N newest complete checkpoints instead of one (2 for a rank of "
   "a multi-node job, whose ranks can be a step apart at a fault)", 0},
  {KG_CKPT_O_PERSIST_INTO, 0, "persist-into", "DISK_DIR",
   "then copy the sealed archive, byte for byte, into DISK_DIR under its own name (a "
   "numbered one if taken), written like a seal (locked temporary, fsync, rename, directory "
   "fsync); a shard also writes DISK_DIR's set index once every rank persisted the step. "
   "Prints 'persisted: PATH' as a second line", 0},
  {KG_CKPT_O_PERSIST_KEEP, 0, "persist-keep", "N",
   "with --persist-into: then prune this run's checkpoints in DISK_DIR as --keep N does", 0},
  S_PROGRESS,
  S_END,
};

const kg_cmd_t kg_ckpt_seal_cmd = {
  .name = "ckpt seal",
  .summary = "seal a directory into a signed checkpoint archive",
  .usage = "DIR --step N (--into CKPT_DIR | -o FILE) [options]",
  .about = "Seal the regular files under DIR into one signed archive, written atomically "
           "(temporary name, fsync, rename, directory fsync). Creates the signing key pair "
           "on first use. Prints the archive's path.",
  .opts = s_seal_opts,
  .more = "T is ISO 8601 (2026-01-02T03:04:05.678Z) or milliseconds since the epoch.",
  .exits = (const kg_opt_exit_t[]){
    {"0", "sealed"},
    {"100", "usage error (also: no such DIR, DIR holds links or special files, a key "
            "directory others could write)"},
    {"111", "system failure (also: sealed, but --persist-into failed; stderr says why)"},
    {NULL, NULL}},
};

static const kg_opt_t s_verify_opts[] = {
  S_PROGRESS,
  S_END,
};

const kg_cmd_t kg_ckpt_verify_cmd = {
  .name = "ckpt verify",
  .summary = "verify checkpoint archives completely",
  .usage = "[--progress[=WHEN]] FILE...",
  .about = "Check each archive in one streaming pass: manifest signature first, then every "
           "member's type, name, size and BLAKE2b-256 digest. Prints one line per file: "
           "'FILE: VERDICT: reason'. A plain torch.save file (zip) has every member read so "
           "its CRC is checked, without unpickling anything. The exit code is the highest "
           "verdict code among the files.",
  .opts = s_verify_opts,
  .exits = s_verdicts,
};

static const kg_opt_t s_list_opts[] = {
  {KG_CKPT_O_JSON, 0, "json", NULL, "print an array of objects instead of the table", 0},
  S_PROGRESS,
  S_END,
};

const kg_cmd_t kg_ckpt_list_cmd = {
  .name = "ckpt list",
  .summary = "verify and list the checkpoints of a directory",
  .usage = "CKPT_DIR [--json] [--progress[=WHEN]]",
  .about = "Verify every checkpoint in CKPT_DIR and print a table, newest first: step, seal "
           "time, size, status, file. Leftovers of interrupted seals are shown as 'leftover'.",
  .opts = s_list_opts,
  .exits = (const kg_opt_exit_t[]){
    {"0", "listed"},
    {"100", "usage error (also: no such CKPT_DIR)"},
    {"111", "system failure (CKPT_DIR unreadable)"},
    {NULL, NULL}},
};

static const kg_opt_t s_latest_opts[] = {
  {KG_CKPT_O_BEFORE, 0, "before", "TIME",
   "only checkpoints sealed strictly before TIME (ISO 8601 or milliseconds since the "
   "epoch; default: now and later)", 0},
  {KG_CKPT_O_JSON, 0, "json", NULL,
   "choose as resume-prepare does, without moving, marking or copying anything: only the "
   "run's checkpoints (--run), each skipped one named with its reason; print one JSON "
   "object (see `kguard ckpt resume-prepare --help`; exit 0 also when none is found)", 0},
  {KG_CKPT_O_RUN, 0, "run", "ID",
   "with --json: the run (default $KGUARD_RUN_ID, else \"default\", what seal records)", 0},
  {KG_CKPT_O_MEMORY, 0, "memory", "MEMDIR",
   "with --json: also choose among the snapshots in MEMDIR (seal --snapshot's memory "
   "directory), as resume-prepare --memory does but moving nothing: disk checkpoints not "
   "newer than the chosen snapshot are not verified; the newer one wins (\"tier\": "
   "\"memory\"|\"disk\", \"memory_dir\"; each skip names its \"tier\"). Either "
   "directory missing holds none", 0},
  S_PROGRESS,
  S_END,
};

const kg_cmd_t kg_ckpt_latest_cmd = {
  .name = "ckpt latest",
  .summary = "print the last consistent checkpoint of a directory",
  .usage = "CKPT_DIR [--before TIME] [--json [--run ID] [--memory MEMDIR]] "
           "[--progress[=WHEN]]",
  .about = "Print the last consistent checkpoint (or complete set of rank shards: its index "
           "set-*.kgset.tar): the newest one sealed strictly before TIME that verifies "
           "completely. Each newer file that was passed over is reported on stderr with the "
           "reason.",
  .opts = s_latest_opts,
  .exits = (const kg_opt_exit_t[]){
    {"0", "found"},
    {"1", "none"},
    {"100", "usage error (also: no such CKPT_DIR)"},
    {"111", "system failure"},
    {NULL, NULL}},
};

static const kg_opt_t s_restore_opts[] = {
  {KG_CKPT_O_READ_ONLY, 0, "read-only", NULL,
   "files 0400 and directories 0500 before DEST appears", 0},
  {KG_CKPT_O_PRIVATE, 0, "private", NULL,
   "refuse a DEST whose directory someone else could change", 0},
  {KG_CKPT_O_DIGEST, 0, "digest", "HEX",
   "refuse (corrupt) unless the manifest's BLAKE2b-256 is HEX (what `kguard ckpt manifest` "
   "and resume-prepare print; a blake2b-256: prefix is accepted)", 0},
  S_PROGRESS,
  S_END,
};

const kg_cmd_t kg_ckpt_restore_cmd = {
  .name = "ckpt restore",
  .summary = "verify a checkpoint while extracting it",
  .usage = "FILE DEST [--read-only] [--private] [--digest HEX] [--progress[=WHEN]]",
  .about = "Verify FILE while extracting it into a private temporary directory beside DEST; "
           "rename it to DEST only if everything verified. DEST must not exist, and the "
           "directory that will hold it must (it is never created: a typo is reported, as by "
           "tar -C and cp). Only regular files named in the signed manifest are written, with "
           "exactly its sizes; nothing is ever written outside DEST.",
  .opts = s_restore_opts,
  .exits = s_verdicts,
};

static const kg_opt_t s_quarantine_opts[] = {
  {KG_CKPT_O_INCIDENT, 0, "incident", "ID", "the incident the checkpoints belong to "
   "(required)", 0},
  {KG_CKPT_O_FROM, 0, "from", "TIME",
   "the fault's time: ISO 8601 or milliseconds since the epoch (required)", 0},
  S_END,
};

const kg_cmd_t kg_ckpt_quarantine_cmd = {
  .name = "ckpt quarantine",
  .summary = "set aside the checkpoints sealed at or after a fault",
  .usage = "CKPT_DIR --incident ID --from TIME",
  .about = "Move every checkpoint sealed at or after TIME (the signed seal time; the file's "
           "mtime when it does not authenticate) into CKPT_DIR/quarantine/ID/. Nothing is "
           "deleted; quarantined checkpoints are never chosen again. A symbolic link at "
           "quarantine/ or quarantine/ID is refused (nothing moves).",
  .opts = s_quarantine_opts,
  .exits = s_dir_exits,
};

static const kg_opt_t s_resume_opts[] = {
  {KG_CKPT_O_DIR, 0, "dir", "CKPT_DIR", "the checkpoint directory", 0},
  {KG_CKPT_O_BEFORE, 0, "before", "T_MS", "the fault's time, milliseconds since the epoch",
   0},
  {KG_CKPT_O_INCIDENT, 0, "incident", "ID", "the incident", 0},
  {KG_CKPT_O_INTO, 0, "into", "DEST",
   "where a zstd checkpoint is restored (private) when others could write CKPT_DIR", 0},
  {KG_CKPT_O_RUN, 0, "run", "ID",
   "the run being resumed (default $KGUARD_RUN_ID, else \"default\", what seal records); "
   "every other run's checkpoints are skipped, saying so", 0},
  {KG_CKPT_O_JSON, 0, "json", NULL, "JSON is the only output; the flag documents the "
   "contract", 0},
  {KG_CKPT_O_SEAL_WAIT, 0, "seal-wait-stall-ms", "MS",
   "a seal still writing that makes no progress for MS (default 60000; 0: none is waited "
   "for) is excluded", 0},
  {KG_CKPT_O_MEMORY, 0, "memory", "MEMDIR",
   "also choose among the snapshots in MEMDIR (seal --snapshot's memory directory; missing: "
   "none), waiting for its seals in flight too; the run's snapshots sealed at or after the "
   "fault are quarantined into MEMDIR/quarantine/ID/ (deleted at the next snapshot's seal), "
   "the others read in place, never copied. Disk checkpoints not newer than the chosen "
   "snapshot are not verified; the newer one wins (\"tier\": \"memory\"|\"disk\")", 0},
  S_PROGRESS,
  S_END,
};

const kg_cmd_t kg_ckpt_resume_cmd = {
  .name = "ckpt resume-prepare",
  .summary = "choose and verify the checkpoint to resume from after a fault (for kguard "
             "itself)",
  .usage = "--dir CKPT_DIR --before T_MS --incident ID --into DEST --json [--run ID] "
           "[--memory MEMDIR] [--seal-wait-stall-ms MS] [--progress[=WHEN]]",
  .about = "The supervisor's restore step after a sticky failure at T_MS. First waits for the "
           "seals still writing into CKPT_DIR (a background seal outlives a faulted kernel): "
           "each ends sealed, and is then a candidate, or dies, leaving nothing that is "
           "chosen; \"waited\" lists them: [{\"writer\", \"outcome\": "
           "\"ended\"|\"excluded\", \"waited_ms\"}]. Then quarantines checkpoints sealed at or "
           "after T_MS, and verifies completely, newest first, those sealed strictly before it "
           "until one is valid. Only checkpoints of the run being resumed count (--run); "
           "signatures by your key or a trusted one (`kguard keys`) verify. An uncompressed "
           "checkpoint is checked in place and not copied (\"dir\": \"\": the kernel reads it "
           "from the archive); a zstd one is restored, read-only, into CKPT_DIR/.restored-ID "
           "when nobody else can write CKPT_DIR, else into DEST (private).\n\n"
           "Prints one JSON object:\n\n"
           "  {\"status\": \"restored\"|\"none\"|\"failed\", \"archive\", \"archive_abs\",\n"
           "   \"step\", \"run\", \"sealed_at\", \"sealed_at_ms\",\n"
           "   \"digest\": \"blake2b-256:<hex of the manifest>\", \"digest_of\": \"manifest\",\n"
           "   \"dir\", \"in_place\", \"compression\", \"bytes\", \"error\" (when failed),\n"
           "   \"before_ms\", \"incident\", \"resumed_run\",\n"
           "   \"tier\": \"memory\"|\"disk\"|null, \"memory_dir\" (MEMDIR or null),\n"
           "   \"quarantined\": [{\"archive\", \"to\", \"reason\", \"tier\"}] (MEMDIR's first),\n"
           "   \"skipped\": [{\"archive\", \"reason\", \"tier\"}] (MEMDIR's first)}\n\n"
           "\"failed\": a checkpoint could not be read or copied (system error); nothing "
           "partial remains. Progress: 'kguard-progress DONE TOTAL' lines on stderr, at the "
           "start of each candidate and at least once a second while it is read. On bad usage "
           "it prints {\"status\": \"error\", \"error\": \"...\"}.",
  .opts = s_resume_opts,
  .exits = (const kg_opt_exit_t[]){
    {"0", "restored, or none to restore"},
    {"100", "usage error"},
    {"111", "failed, or a system error"},
    {NULL, NULL}},
};

const kg_cmd_t kg_ckpt_manifest_cmd = {
  .name = "ckpt manifest",
  .summary = "authenticate a checkpoint's manifest and print it",
  .usage = "FILE",
  .about = "Authenticate FILE's signed manifest (no payload byte is read) and print it:\n\n"
           "  {\"manifest\": {... as in FORMAT.md ...}, \"manifest_digest\": \"<hex>\",\n"
           "   \"archive_size\": N}\n\n"
           "kguard.resume() uses it to read members in place, checking each member's digest "
           "as it reads. Exit codes as for verify (0: authenticated).",
  .exits = s_verdicts,
};

const kg_cmd_t kg_ckpt_gc_cmd = {
  .name = "ckpt gc",
  .summary = "remove what interrupted checkpoint writers left",
  .usage = "CKPT_DIR",
  .about = "Remove what interrupted writers left in CKPT_DIR: seal temporaries (.*.tmp-*) and "
           "kguard.save staging directories (.kguard-save-*) whose writer is gone (its lock is "
           "free; a running writer's are kept), and copies of restored zstd checkpoints "
           "(.restored-*). Never touches sealed archives or quarantine/. Prints what it "
           "removed.",
  .exits = s_dir_exits,
};

static const kg_opt_t s_prune_opts[] = {
  S_KEEP(""),
  {KG_CKPT_O_OPEN_INCIDENT, 0, "open-incident", "T",
   "an open incident's fault time (repeatable, at most 64): the newest checkpoint sealed "
   "before T is kept", 0},
  {KG_CKPT_O_DRY_RUN, 0, "dry-run", NULL, "print what would be removed, remove nothing", 0},
  {KG_CKPT_O_RESOLVE, 0, "resolve", "ID",
   "close incident ID instead: remove its CKPT_DIR/.incident-ID marker", 0},
  S_PROGRESS,
  S_END,
};

const kg_cmd_t kg_ckpt_prune_cmd = {
  .name = "ckpt prune",
  .summary = "remove old sealed checkpoints once a newer one verified",
  .usage = "CKPT_DIR --keep N [--keep-every K] [--open-incident T]... [--dry-run]\n"
           "CKPT_DIR --keep N ... [--progress[=WHEN]]\n"
           "CKPT_DIR --resolve ID",
  .about = "Remove old sealed checkpoints once a newer one verified completely: keep the "
           "newest N from the newest valid one down (and everything newer than it), every "
           "checkpoint whose step is a multiple of K, and for each open incident (fault time "
           "T, from --open-incident or the CKPT_DIR/.incident-ID markers that resume-prepare "
           "writes) the newest checkpoint sealed before T. Never removes leftovers, "
           "unauthenticated files or anything in quarantine/. `seal --keep N [--keep-every "
           "K]` prunes after each seal. Prints one line per removal.",
  .opts = s_prune_opts,
  .exits = s_dir_exits,
};

static const kg_cmd_t *const s_subs[] = {
  &kg_ckpt_seal_cmd, &kg_ckpt_verify_cmd, &kg_ckpt_list_cmd, &kg_ckpt_latest_cmd,
  &kg_ckpt_restore_cmd, &kg_ckpt_quarantine_cmd, &kg_ckpt_resume_cmd, &kg_ckpt_manifest_cmd,
  &kg_ckpt_gc_cmd, &kg_ckpt_prune_cmd, NULL};

const kg_cmd_t kg_ckpt_cmd = {
  .name = "ckpt",
  .summary = "seal, verify, list, select and restore checkpoint archives",
  .usage = "COMMAND [ARGS...]",
  .about = "Signed, verifiable checkpoint archives (see checkpoint/FORMAT.md). Keys: "
           "$KGUARD_KEY_DIR, else $XDG_CONFIG_HOME/kguard, else ~/.config/kguard; archives "
           "signed by your key or a key you trust verify (see `kguard keys --help`). TIME is "
           "ISO 8601 (2026-01-02T03:04:05.678Z) or milliseconds since the epoch. A missing "
           "FILE or CKPT_DIR is a usage error (100) naming it, for every command. Every command "
           "that reads or writes an archive shows, on a terminal, one line with bytes done, "
           "rate and time left while it runs over a second (--progress[=auto|machine|none]). "
           "`kguard ckpt COMMAND --help` describes each command.",
  .exits = s_verdicts,
  .subs = s_subs,
};

static const kg_opt_t s_keygen_opts[] = {
  {KG_CKPT_O_FORCE, 0, "force", NULL,
   "replace an existing key: archives signed by the old key then verify only once its public "
   "key is trusted (`kguard keys import`)", 0},
  S_END,
};

const kg_cmd_t kg_keygen_cmd = {
  .name = "keygen",
  .summary = "create the checkpoint signing key pair",
  .usage = "[--force]",
  .about = "Create the Ed25519 key pair that signs your checkpoints, in $KGUARD_KEY_DIR, else "
           "$XDG_CONFIG_HOME/kguard, else ~/.config/kguard (directory 0700, refused if anyone "
           "else could write it): ckpt-ed25519.secret (mode 0600) and ckpt-ed25519.public. "
           "Sealing creates the pair on first use, so this is optional. When a key exists it "
           "is kept and its id printed (exit 0). Prints 'key ID in DIR'. Share your public "
           "key with `kguard keys export`.",
  .opts = s_keygen_opts,
  .exits = (const kg_opt_exit_t[]){
    {"0", "created, or kept"},
    {"100", "usage error (or a key directory others could write)"},
    {"111", "system failure"},
    {NULL, NULL}},
};

/* ---- kguard keys ------------------------------------------------------------ */

static const kg_opt_exit_t s_keys_exits[] = {
  {"0", "success"},
  {"100", "usage error (a bad name, a bad key file, no such trusted key, a key directory "
          "others could write)"},
  {"111", "system failure"},
  {NULL, NULL},
};

static const kg_opt_t s_keys_list_opts[] = {
  {KG_CKPT_O_JSON, 0, "json", NULL,
   "print an array of {\"id\", \"name\", \"own\", \"file\"} instead of the table", 0},
  S_END,
};

const kg_cmd_t kg_keys_list_cmd = {
  .name = "keys list",
  .summary = "list your key and every trusted key",
  .usage = "[--json]",
  .about = "Print your key and every trusted key: id, name ('(yours)' for your own), file.",
  .opts = s_keys_list_opts,
  .exits = s_keys_exits,
};

const kg_cmd_t kg_keys_export_cmd = {
  .name = "keys export",
  .summary = "print a public key as one line to give to others",
  .usage = "[NAME]",
  .about = "Print your public key (or trusted key NAME) as one line:\n\n"
           "  kguard-ckpt-ed25519 BASE64 KEY_ID COMMENT\n\n"
           "Give it to whoever should verify your checkpoints: they run `kguard keys import`.",
  .exits = s_keys_exits,
};

static const kg_opt_t s_keys_trust_opts[] = {
  {KG_CKPT_O_TRUSTED_DIR, 0, "trusted-dir", "DIR",
   "use DIR instead of KEY_DIR/trusted (a job's own keys)", 0},
  S_END,
};

static const kg_opt_t s_keys_import_opts[] = {
  {KG_CKPT_O_REPLACE, 0, "replace", NULL, "put a different key under a NAME already taken", 0},
  {KG_CKPT_O_TRUSTED_DIR, 0, "trusted-dir", "DIR",
   "use DIR instead of KEY_DIR/trusted (a job's own keys)", 0},
  S_END,
};

#define S_IMPORT_ABOUT                                                                    \
  "Trust the public key in FILE (an export line, or a 32-byte ckpt-ed25519.public; '-' "  \
  "reads stdin) under NAME (1-64 of A-Z a-z 0-9 . _ -, not starting with '.'): archives " \
  "it signs then verify. Importing the same key again changes nothing; a different key "  \
  "under a taken NAME needs --replace. Trusted keys live in KEY_DIR/trusted/NAME.pub "     \
  "(KEY_DIR as for `kguard keygen`); verification also reads $KGUARD_TRUSTED_KEYS_DIR "   \
  "when it is set. Every key directory must be yours and writable by nobody else."

const kg_cmd_t kg_keys_import_cmd = {
  .name = "keys import",
  .summary = "trust another public key (a colleague's, another node's)",
  .usage = "NAME FILE [--replace] [--trusted-dir DIR]",
  .about = S_IMPORT_ABOUT " `kguard keys trust` is the same command.",
  .opts = s_keys_import_opts,
  .exits = s_keys_exits,
};

const kg_cmd_t kg_keys_trust_cmd = {
  .name = "keys trust",
  .summary = "the same as `kguard keys import`",
  .usage = "NAME FILE [--replace] [--trusted-dir DIR]",
  .about = S_IMPORT_ABOUT,
  .opts = s_keys_import_opts,
  .exits = s_keys_exits,
  .flags = KG_CMD_HIDDEN,
};

const kg_cmd_t kg_keys_remove_cmd = {
  .name = "keys remove",
  .summary = "stop trusting a key",
  .usage = "NAME [--trusted-dir DIR]",
  .about = "Stop trusting NAME (remove KEY_DIR/trusted/NAME.pub): the archives it signed then "
           "read as unsigned.",
  .opts = s_keys_trust_opts,
  .exits = s_keys_exits,
};

static const kg_cmd_t *const s_keys_subs[] = {
  &kg_keys_list_cmd, &kg_keys_export_cmd, &kg_keys_import_cmd, &kg_keys_remove_cmd,
  &kg_keys_trust_cmd, NULL};

const kg_cmd_t kg_keys_cmd = {
  .name = "keys",
  .summary = "list, export, import (trust) and remove checkpoint signing keys",
  .usage = "COMMAND [ARGS...]",
  .about = "Checkpoints verify when their signature is by your own key or by a key you trust: "
           "a colleague's, or another node's of a multi-node job. `kguard keys COMMAND "
           "--help` describes each command.",
  .exits = s_keys_exits,
  .subs = s_keys_subs,
};
