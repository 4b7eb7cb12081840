/*  kg_ckpt_cli: `kguard ckpt ...` (`kguard keygen` and `kguard keys`:
    kg_ckpt_cli_keys.c).

    Every subcommand parses its own options, prints one line per problem on
    stderr, and returns an exit code: 0 ok, 100 usage, 111 system, and for
    verify/restore the archive verdicts 1..5 (kg_ckpt_status_t).
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_ckpt_cli_maint.h"
#include "kg_ckpt_cli_resume.h"
#include "kg_ckpt_inflight.h"
#include "kg_ckpt_gc.h"
#include "kg_ckpt_retain.h"
#include "kg_ckpt_list.h"
#include "kg_ckpt_progress.h"
#include "kg_ckpt_quarantine.h"
#include "kg_ckpt_restore.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_set.h"
#include "kg_ckpt_util.h"
#include "kg_ckpt_verify.h"
#include "kg_ckpt_cli.h"
#include "kg_error.h"
#include "kg_keys.h"
#include "kg_log.h"

#ifndef KGUARD_VERSION
#define KGUARD_VERSION "0.1.0"
#endif

#define VERDICT_CODES                                                           \
  "verdict exit codes (verify, restore):\n"                                    \
  "  0 valid       signed by your key or one you trust (kguard keys), complete,\n" \
  "                every digest matches\n"                                       \
  "  1 unsigned    no signature, a key you do not trust, or a plain zip\n"      \
  "                (torch.save) that is complete but not authenticated\n"      \
  "  2 corrupt     a member or the manifest does not match (names which)\n"    \
  "  3 incomplete  truncated, empty, or a listed member missing\n"             \
  "  4 malformed   not an archive, no manifest, invalid manifest\n"            \
  "  5 unsafe      links, devices, fifos, '..' or absolute or non-UTF-8\n"     \
  "                names, unlisted or duplicate members, oversize members,\n"  \
  "                a name that is also another's directory, a NUL in a name\n" \
  "  100 usage, 111 system failure\n"

static const char s_help_main[] =
  "usage: kguard ckpt COMMAND [ARGS...]\n"
  "\n"
  "Signed, verifiable checkpoint archives (see checkpoint/FORMAT.md).\n"
  "\n"
  "commands:\n"
  "  seal DIR --step N [--run ID] (--into CKPT_DIR | -o FILE) [--zstd]\n"
  "  verify [--progress[=WHEN]] FILE...\n"
  "  list CKPT_DIR [--json] [--progress[=WHEN]]\n"
  "  latest CKPT_DIR [--before TIME] [--progress[=WHEN]]\n"
  "  restore FILE DEST [--read-only] [--private] [--digest HEX]\n"
  "          [--progress[=WHEN]]\n"
  "  quarantine CKPT_DIR --incident ID --from TIME\n"
  "  resume-prepare --dir CKPT_DIR --before T_MS --incident ID --into DEST --json\n"
  "                 [--run ID]\n"
  "  manifest FILE\n"
  "  gc CKPT_DIR\n"
  "  prune CKPT_DIR --keep N [--keep-every K] | --resolve ID\n"
  "\n"
  "Every command that reads or writes an archive shows, on a terminal, one line\n"
  "with bytes done, rate and time left while it runs over a second\n"
  "(--progress[=auto|machine|none]).\n"
  "TIME is ISO 8601 (2026-01-02T03:04:05.678Z) or milliseconds since the epoch.\n"
  "Keys: $KGUARD_KEY_DIR, else $XDG_CONFIG_HOME/kguard, else ~/.config/kguard;\n"
  "archives signed by your key or a key you trust verify (`kguard keys --help`).\n"
  "A missing FILE or CKPT_DIR is a usage error (100) naming it, for every command.\n"
  "`kguard ckpt COMMAND --help` describes each command.\n\n" VERDICT_CODES;

static const char s_help_seal[] =
  "usage: kguard ckpt seal DIR --step N [--run ID] (--into CKPT_DIR | -o FILE) [--zstd]\n"
  "                         [--time T] [--after PATH] [--remove-dir]\n"
  "                         [--keep N [--keep-every K]] [--rank R --world-size N]\n"
  "                         [--format 1|2] [--progress[=WHEN]]\n"
  "\n"
  "Seal the regular files under DIR into one signed archive, written atomically\n"
  "(temporary name, fsync, rename, directory fsync). With --into the name is\n"
  "step-<N>-<UTC time>.kgckpt.tar[.zst] inside CKPT_DIR (created if missing).\n"
  "Creates the signing key pair on first use. Prints the archive's path.\n"
  "--run defaults to $KGUARD_RUN_ID, else \"default\".\n"
  "--format 1: write a version 1 archive (one whole-member digest, read by any\n"
  "kguard); the default, 2, has one digest per 64 MiB chunk (verified on all cores).\n"
  "--time T: the seal time to record (when the state was captured; default now).\n"
  "--after PATH: first wait until the writer holding PATH's lock is gone (the\n"
  "previous background seal), so seals finish in step order.\n"
  "--remove-dir: remove DIR afterwards, sealed or not (background saves).\n"
  "--keep N [--keep-every K]: then prune CKPT_DIR (see `kguard ckpt prune --help`).\n"
  "--rank R --world-size N (N >= 2): seal this rank's shard of a checkpoint set;\n"
  "the seal that completes the set writes its signed index set-<N>-*.kgset.tar.\n"
  KG_CKPT_PROGRESS_HELP
  "exit: 0 sealed, 100 usage (also: DIR holds links or special files), 111 system.\n";

static const char s_help_verify[] =
  "usage: kguard ckpt verify [--progress[=WHEN]] FILE...\n"
  "\n"
  "Check each archive in one streaming pass: manifest signature first, then\n"
  "every member's type, name, size and BLAKE2b-256 digest. Prints one line per\n"
  "file: 'FILE: VERDICT: reason'. A plain torch.save file (zip) has every\n"
  "member read so its CRC is checked, without unpickling anything.\n"
  "The exit code is the highest verdict code among the files.\n"
  KG_CKPT_PROGRESS_HELP
  "Machine lines count bytes of the file: at the start, at least once a second\n"
  "while reading, and at the end.\n\n"
  VERDICT_CODES;

static const char s_help_restore[] =
  "usage: kguard ckpt restore FILE DEST [--read-only] [--private] [--digest HEX]\n"
  "                           [--progress[=WHEN]]\n"
  "\n"
  "Verify FILE while extracting it into a private temporary directory beside\n"
  "DEST; rename it to DEST only if everything verified. DEST must not exist,\n"
  "and the directory that will hold it must (it is never created: a typo is\n"
  "reported, as by tar -C and cp). Only regular files named in the signed\n"
  "manifest are written, with exactly its sizes; nothing is ever written\n"
  "outside DEST.\n"
  "--read-only: files 0400 and directories 0500 before DEST appears.\n"
  "--private: refuse a DEST whose directory someone else could change.\n"
  "--digest HEX: refuse (corrupt) unless the manifest's BLAKE2b-256 is HEX\n"
  "(what `kguard ckpt manifest` and resume-prepare print).\n"
  KG_CKPT_PROGRESS_HELP "\n" VERDICT_CODES;

static const char s_help_quarantine[] =
  "usage: kguard ckpt quarantine CKPT_DIR --incident ID --from TIME\n"
  "\n"
  "Move every checkpoint sealed at or after TIME (the signed seal time; the\n"
  "file's mtime when it does not authenticate) into CKPT_DIR/quarantine/ID/.\n"
  "Nothing is deleted; quarantined checkpoints are never chosen again. A\n"
  "symbolic link at quarantine/ or quarantine/ID is refused (nothing moves).\n"
  "exit: 0, 100 usage, 111 system.\n";

bool
kg_ckpt_cli_is_help(const char *arg)
{
  return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int
kg_ckpt_cli_usage(const char *msg, const char *arg)
{
  fprintf(stderr, "kguard ckpt: %s%s%s (see --help)\n", msg, arg ? ": " : "", arg ? arg : "");
  return KG_EXIT_USAGE;
}

static int
s_exit_of(int rc)
{
  if (rc == 0)
    return KG_EXIT_OK;
  int s = kg_ckpt_status_of(rc);
  if (s > 0)
    return s;
  return rc == KG_EUSAGE || rc == KG_EEXISTS ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
}

int
kg_ckpt_cli_keys(const char *cmd, const kg_keyring_t **out)
{
  static kg_keyring_t *ring;
  static int ring_rc;
  static char why[PATH_MAX + 512];
  if (!ring && ring_rc == 0)
    ring = kg_keyring_load(NULL, &ring_rc, why, sizeof why);
  *out = ring;
  if (ring)
    return KG_EXIT_OK;
  fprintf(stderr, "kguard %s: %s\n", cmd, why);
  return ring_rc == KG_EUNSAFEPATH || ring_rc == KG_ECKPT_MALFORMED || ring_rc == KG_ETOOBIG
           ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
}

int
kg_ckpt_cli_need(const char *cmd, const char *path, bool dir)
{
  struct stat st;
  if (stat(path, &st) == 0) {
    if (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode))
      return KG_EXIT_OK;
    fprintf(stderr, "kguard ckpt %s: %s: %s\n", cmd,
            dir ? "not a directory" : S_ISDIR(st.st_mode) ? "a directory, not a file"
                                                          : "not a regular file", path);
    return KG_EXIT_USAGE;
  }
  if (errno == ENOENT || errno == ENOTDIR) {
    fprintf(stderr, "kguard ckpt %s: no such %s: %s\n", cmd, dir ? "directory" : "file",
            path);
    return KG_EXIT_USAGE;
  }
  fprintf(stderr, "kguard ckpt %s: cannot read %s: %s\n", cmd, path, strerror(errno));
  return KG_EXIT_SYSTEM;
}

static bool
s_parse_i64(const char *s, int64_t *out)
{
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 0)
    return false;
  *out = v;
  return true;
}

/* ---- seal ----------------------------------------------------------------- */

/*  A zstd seal hashes every file first, then writes: one line each. */
static void
s_seal_phase(void *arg, const char *what, const char *dir)
{
  kg_ckpt_progress_begin(arg, "%s %s", what, dir);
}

static int
s_seal(int argc, char **argv)
{
  kg_ckpt_seal_opts_t o = {.step = -1, .producer = "kguard " KGUARD_VERSION};
  const char *after = NULL;
  bool remove_dir = false;
  int keep = 0, r;
  int64_t every = 0;
  kg_ckpt_progress_when_t when = KG_CKPT_PROGRESS_AUTO;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    int po;
    if (kg_ckpt_cli_is_help(a)) {
      fputs(s_help_seal, stdout);
      return KG_EXIT_OK;
    } else if ((po = kg_ckpt_progress_option(a, &when)) != 0) {
      if (po < 0)
        return kg_ckpt_cli_usage("--progress is auto, machine or none", a);
    } else if (strcmp(a, "--step") == 0 && more) {
      if (!s_parse_i64(argv[++i], &o.step))
        return kg_ckpt_cli_usage("--step needs a non-negative integer", argv[i]);
    } else if (strcmp(a, "--run") == 0 && more) {
      o.run = argv[++i];
    } else if (strcmp(a, "--into") == 0 && more) {
      o.into = argv[++i];
    } else if (strcmp(a, "-o") == 0 && more) {
      o.output = argv[++i];
    } else if (strcmp(a, "--zstd") == 0) {
      o.zstd = true;
    } else if (strcmp(a, "--time") == 0 && more) {
      if (kg_ckpt_parse_time(argv[++i], &o.now_ms) < 0 || o.now_ms <= 0)
        return kg_ckpt_cli_usage("--time needs ms since the epoch or ISO 8601", argv[i]);
    } else if (strcmp(a, "--after") == 0 && more) {
      after = argv[++i];
    } else if (strcmp(a, "--rank") == 0 && more) {
      if (!s_parse_i64(argv[++i], &o.rank))
        return kg_ckpt_cli_usage("--rank needs a non-negative integer", argv[i]);
    } else if (strcmp(a, "--world-size") == 0 && more) {
      if (!s_parse_i64(argv[++i], &o.world_size) || o.world_size < 1)
        return kg_ckpt_cli_usage("--world-size needs a positive integer", argv[i]);
    } else if (strcmp(a, "--format") == 0 && more) {
      const char *f = argv[++i];
      if (strcmp(f, "1") != 0 && strcmp(f, "2") != 0)
        return kg_ckpt_cli_usage("--format is 1 or 2", f);
      o.format = f[0] - '0';
    } else if (strcmp(a, "--remove-dir") == 0) {
      remove_dir = true;
    } else if ((r = kg_ckpt_cli_retain_opt(argc, argv, &i, &keep, &every)) != 0) {
      if (r < 0)
        return KG_EXIT_USAGE;
    } else if (a[0] == '-' || o.dir) {
      return kg_ckpt_cli_usage("unexpected argument", a);
    } else {
      o.dir = a;
    }
  }
  if (!o.dir || o.step < 0 || !o.into == !o.output)
    return kg_ckpt_cli_usage("seal needs DIR, --step N and one of --into CKPT_DIR or -o FILE", NULL);
  if (!o.run)
    o.run = getenv("KGUARD_RUN_ID");
  if (o.world_size == 1)
    o.world_size = 0; /* one rank: a plain checkpoint */
  if (o.world_size >= 2 && (o.rank >= o.world_size || o.output))
    return kg_ckpt_cli_usage("--rank must be below --world-size, and shards need --into", NULL);
  int code = kg_ckpt_cli_need("seal", o.dir, true);
  char parent[PATH_MAX];
  if (code == 0 && o.output) {
    if (kg_ckpt_dirname(o.output, parent, sizeof parent) < 0)
      return kg_ckpt_cli_usage("path too long", o.output);
    code = kg_ckpt_cli_need("seal", parent, true);
  }
  if (code)
    return code;
  unsigned char sk[KG_KEYS_SECRET_BYTES];
  char kwhy[PATH_MAX + 512] = "";
  int rc = kg_keys_load_secret(NULL, true, sk, kwhy, sizeof kwhy);
  if (rc < 0) {
    fprintf(stderr, "kguard ckpt seal: no usable signing key: %s\n", kwhy);
    return rc == KG_EUNSAFEPATH || rc == KG_ECKPT_MALFORMED ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  o.sk = sk;
  char out[PATH_MAX], why[512];
  /* Background saves: the previous step's seal finishes first. */
  if (after && (rc = kg_ckpt_gc_wait_writer(after)) < 0)
    fprintf(stderr, "kguard ckpt seal: waiting for '%s': %s (sealing anyway)\n", after,
            kg_strerror(rc));
  kg_ckpt_inflight_test_hold("start");
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, when, STDERR_FILENO);
  kg_ckpt_progress_begin(&prog, "sealing %s", o.dir);
  o.progress = kg_ckpt_progress_update;
  o.phase = s_seal_phase;
  o.progress_arg = &prog;
  rc = kg_ckpt_seal(&o, out, sizeof out, why, sizeof why);
  kg_ckpt_progress_end(&prog);
  if (rc == 0)
    kg_ckpt_inflight_test_hold("renamed");
  char set[PATH_MAX] = "";
  int setrc = 0;
  if (rc == 0 && o.world_size >= 2)
    setrc = kg_ckpt_set_try_index(o.into, sk, o.run ? o.run : "default", o.step,
                                  o.world_size, set, sizeof set);
  memset(sk, 0, sizeof sk);
  if (setrc < 0)
    fprintf(stderr, "kguard ckpt seal: writing the set index: %s (the shard is sealed)\n",
            kg_strerror(setrc));
  else if (set[0])
    fprintf(stderr, "kguard ckpt seal: set complete: %s\n", set);
  if (remove_dir) {
    int e = kg_ckpt_remove_tree_at(AT_FDCWD, o.dir);
    if (e < 0)
      fprintf(stderr, "kguard ckpt seal: removing '%s': %s\n", o.dir, kg_strerror(e));
  }
  if (rc < 0) {
    fprintf(stderr, "kguard ckpt seal: %s\n", why);
    return rc == KG_EUSAGE || rc == KG_EEXISTS ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  printf("%s\n", out);
  fflush(stdout);
  /* Retention: after this seal, with the public half of the key. */
  const kg_keyring_t *keys = NULL;
  if (keep > 0 && o.into && kg_ckpt_cli_keys("ckpt seal", &keys) == 0) {
    kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
    kg_ckpt_progress_begin(&prog, "checking %s", o.into);
    rc = kg_ckpt_retain_prune(o.into, keys, keep, every, NULL, 0, false, &watch, stderr);
    kg_ckpt_progress_end(&prog);
    if (rc < 0)
      fprintf(stderr, "kguard ckpt seal: pruning '%s': %s (the seal itself succeeded)\n",
              o.into, kg_strerror(rc));
  }
  return KG_EXIT_OK;
}

/* ---- verify ----------------------------------------------------------------- */


static int
s_verify(int argc, char **argv)
{
  int worst = 0, files = 0;
  const kg_keyring_t *keys = NULL;
  kg_ckpt_progress_when_t when = KG_CKPT_PROGRESS_AUTO;
  for (int i = 1; i < argc; i++)
    if (kg_ckpt_cli_is_help(argv[i])) {
      fputs(s_help_verify, stdout);
      return KG_EXIT_OK;
    } else if (kg_ckpt_progress_option(argv[i], &when) < 0) {
      return kg_ckpt_cli_usage("--progress is auto, machine or none", argv[i]);
    }
  int code = kg_ckpt_cli_keys("ckpt verify", &keys);
  if (code)
    return code;
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, when, STDERR_FILENO);
  kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
  for (int i = 1; i < argc; i++) {
    if (kg_ckpt_progress_option(argv[i], &when))
      continue;
    files++;
    if (argv[i][0] == '-') {
      code = kg_ckpt_cli_usage("unexpected argument", argv[i]);
    } else if ((code = kg_ckpt_cli_need("verify", argv[i], false)) == 0) {
      kg_ckpt_report_t r;
      kg_ckpt_progress_begin(&prog, "verifying %s", argv[i]);
      int rc = kg_ckpt_verify(argv[i], keys, 0, &watch, &r);
      kg_ckpt_progress_end(&prog);
      if (rc == 0)
        printf("%s: valid: step %" PRId64 ", run %s, sealed %s, signed by %s%s%s (%s), "
               "manifest blake2b-256:%.16s\n", argv[i], r.manifest->step, r.manifest->run,
               r.manifest->sealed_at, r.signer[0] ? "trusted key '" : "your key",
               r.signer, r.signer[0] ? "'" : "", r.manifest->key_id, r.manifest_digest);
      else if (kg_ckpt_status_of(rc) >= 0)
        printf("%s: %s: %s\n", argv[i], kg_ckpt_status_name(rc), r.reason);
      else
        fprintf(stderr, "kguard ckpt verify: %s: %s\n", argv[i], r.reason);
      fflush(stdout);
      code = s_exit_of(rc);
      kg_ckpt_report_clear(&r);
    }
    if (code > worst)
      worst = code;
  }
  if (files == 0)
    return kg_ckpt_cli_usage("verify needs at least one FILE", NULL);
  return worst;
}

/* ---- restore / quarantine (resume-prepare: kg_ckpt_cli_resume.c) ------------ */

static int
s_restore(int argc, char **argv)
{
  const char *pos[2] = {NULL, NULL};
  int npos = 0;
  kg_ckpt_restore_opts_t opts = {0};
  kg_ckpt_progress_when_t when = KG_CKPT_PROGRESS_AUTO;
  for (int i = 1; i < argc; i++) {
    int o;
    if (kg_ckpt_cli_is_help(argv[i])) {
      fputs(s_help_restore, stdout);
      return KG_EXIT_OK;
    } else if ((o = kg_ckpt_progress_option(argv[i], &when)) != 0) {
      if (o < 0)
        return kg_ckpt_cli_usage("--progress is auto, machine or none", argv[i]);
    } else if (strcmp(argv[i], "--read-only") == 0) {
      opts.flags |= KG_CKPT_RESTORE_READ_ONLY;
    } else if (strcmp(argv[i], "--private") == 0) {
      opts.flags |= KG_CKPT_RESTORE_PRIVATE;
    } else if (strcmp(argv[i], "--digest") == 0 && i + 1 < argc) {
      const char *d = argv[++i];
      if (strncmp(d, "blake2b-256:", 12) == 0)
        d += 12;
      if (strlen(d) != 64 || strspn(d, "0123456789abcdef") != 64)
        return kg_ckpt_cli_usage("--digest needs 64 lower-case hex digits", argv[i]);
      opts.expect_digest = d;
    } else if (argv[i][0] == '-' || npos == 2) {
      return kg_ckpt_cli_usage("unexpected argument", argv[i]);
    } else {
      pos[npos++] = argv[i];
    }
  }
  if (npos != 2)
    return kg_ckpt_cli_usage("restore needs FILE and DEST", NULL);
  const kg_keyring_t *keys = NULL;
  int code = kg_ckpt_cli_need("restore", pos[0], false);
  if (code == 0)
    code = kg_ckpt_cli_keys("ckpt restore", &keys);
  if (code)
    return code;
  kg_ckpt_report_t r;
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, when, STDERR_FILENO);
  kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
  kg_ckpt_progress_begin(&prog, "restoring %s", pos[0]);
  int rc = kg_ckpt_restore(pos[0], pos[1], keys, &watch, &opts, &r);
  kg_ckpt_progress_end(&prog);
  if (rc == 0)
    printf("%s: restored step %" PRId64 " into %s\n", pos[0], r.manifest->step, pos[1]);
  else if (kg_ckpt_status_of(rc) > 0)
    fprintf(stderr, "kguard ckpt restore: %s: %s: %s\n", pos[0], kg_ckpt_status_name(rc),
            r.reason);
  else if (rc == KG_EUSAGE || rc == KG_EEXISTS)
    fprintf(stderr, "kguard ckpt restore: %s\n", r.reason);
  else
    fprintf(stderr, "kguard ckpt restore: %s: %s\n", pos[0], r.reason);
  kg_ckpt_report_clear(&r);
  return s_exit_of(rc);
}

static int
s_quarantine(int argc, char **argv)
{
  const char *dir = NULL, *incident = NULL;
  int64_t from = -1;
  for (int i = 1; i < argc; i++) {
    if (kg_ckpt_cli_is_help(argv[i])) {
      fputs(s_help_quarantine, stdout);
      return KG_EXIT_OK;
    } else if (strcmp(argv[i], "--incident") == 0 && i + 1 < argc) {
      incident = argv[++i];
    } else if (strcmp(argv[i], "--from") == 0 && i + 1 < argc) {
      if (kg_ckpt_parse_time(argv[++i], &from) < 0)
        return kg_ckpt_cli_usage("--from needs ISO 8601 or ms since the epoch", argv[i]);
    } else if (argv[i][0] == '-' || dir) {
      return kg_ckpt_cli_usage("unexpected argument", argv[i]);
    } else {
      dir = argv[i];
    }
  }
  if (!dir || !incident || from < 0)
    return kg_ckpt_cli_usage("quarantine needs CKPT_DIR, --incident ID and --from TIME", NULL);
  if (!kg_ckpt_quarantine_id_ok(incident))
    return kg_ckpt_cli_usage("incident id must be 1-128 of [A-Za-z0-9._:-], not starting with '.'",
                   incident);
  const kg_keyring_t *keys = NULL;
  int code = kg_ckpt_cli_need("quarantine", dir, true);
  if (code == 0)
    code = kg_ckpt_cli_keys("ckpt quarantine", &keys);
  if (code)
    return code;
  int rc;
  kg_ckpt_list_t *list = kg_ckpt_list_scan(dir, keys, false, &rc);
  if (!list) {
    fprintf(stderr, "kguard ckpt quarantine: cannot read %s: %s\n", dir, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  char why[PATH_MAX + 128] = "";
  rc = kg_ckpt_quarantine(list, incident, from, NULL, why, sizeof why);
  for (size_t i = 0; i < list->count; i++)
    if (list->entries[i].moved_to)
      printf("%s -> %s\n", list->entries[i].path, list->entries[i].moved_to);
  if (rc < 0)
    fprintf(stderr, "kguard ckpt quarantine: %s\n", why);
  kg_ckpt_list_destroy(&list);
  return rc < 0 ? KG_EXIT_SYSTEM : KG_EXIT_OK;
}

int
kg_ckpt_cli_main(int argc, char **argv)
{
  if (argc < 2) {
    fputs(s_help_main, stderr);
    return KG_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  argc--;
  argv++;
  if (kg_ckpt_cli_is_help(cmd) || strcmp(cmd, "help") == 0) {
    fputs(s_help_main, stdout);
    return KG_EXIT_OK;
  }
  if (strcmp(cmd, "seal") == 0)
    return s_seal(argc, argv);
  if (strcmp(cmd, "verify") == 0)
    return s_verify(argc, argv);
  if (strcmp(cmd, "list") == 0)
    return kg_ckpt_cli_list(argc, argv);
  if (strcmp(cmd, "latest") == 0)
    return kg_ckpt_cli_latest(argc, argv);
  if (strcmp(cmd, "restore") == 0)
    return s_restore(argc, argv);
  if (strcmp(cmd, "quarantine") == 0)
    return s_quarantine(argc, argv);
  if (strcmp(cmd, "resume-prepare") == 0)
    return kg_ckpt_cli_resume(argc, argv);
  if (strcmp(cmd, "manifest") == 0)
    return kg_ckpt_cli_manifest(argc, argv);
  if (strcmp(cmd, "gc") == 0)
    return kg_ckpt_cli_gc(argc, argv);
  if (strcmp(cmd, "prune") == 0)
    return kg_ckpt_cli_prune(argc, argv);
  return kg_ckpt_cli_usage("unknown ckpt command", cmd);
}
