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
#include "kg_ckpt_cli_util.h"
#include "kg_ckpt_cli_resume.h"
#include "kg_ckpt_inflight.h"
#include "kg_ckpt_gc.h"
#include "kg_ckpt_retain.h"
#include "kg_ckpt_list.h"
#include "kg_ckpt_persist.h"
#include "kg_ckpt_progress.h"
#include "kg_ckpt_quarantine.h"
#include "kg_ckpt_restore.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_set.h"
#include "kg_ckpt_snapkeep.h"
#include "kg_ckpt_util.h"
#include "kg_ckpt_verify.h"
#include "kg_ckpt_cli.h"
#include "kg_ckpt_cmds.h"
#include "kg_error.h"
#include "kg_keys.h"
#include "kg_log.h"
#include "kg_opt.h"

#ifndef KGUARD_VERSION
#define KGUARD_VERSION "0.1.0"
#endif

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

/*  What `ckpt seal` was asked, besides the seal's own options. */
typedef struct {
  const char *after;
  bool remove_dir;
  int keep;
  int64_t every;
  kg_ckpt_progress_when_t when;
  bool snapshot;              /* --into is a memory directory of snapshots */
  int64_t snapshot_keep;      /* complete snapshots kept there (0: 1)       */
  const char *persist_into;   /* then copied onto disk here */
  int64_t persist_keep;       /* and that directory pruned to this many */
} s_seal_args_t;

/*  The checks of seal's options once all are read. Returns -1 to go on,
    else the exit code. */
static int
s_seal_check(kg_ckpt_seal_opts_t *o, const s_seal_args_t *a)
{
  if (!o->dir || o->step < 0 || !o->into == !o->output)
    return kg_ckpt_cli_usage("needs DIR, --step N and one of --into CKPT_DIR or -o FILE", NULL);
  if (a->snapshot && (o->zstd || !o->into))
    return kg_ckpt_cli_usage("--snapshot needs --into MEMDIR and no --zstd (snapshots are "
                             "read in place)", NULL);
  if (a->snapshot_keep && !a->snapshot)
    return kg_ckpt_cli_usage("--snapshot-keep needs --snapshot", NULL);
  if (a->persist_keep && !a->persist_into)
    return kg_ckpt_cli_usage("--persist-keep needs --persist-into DISK_DIR", NULL);
  if (!o->run)
    o->run = getenv("KGUARD_RUN_ID");
  if (o->world_size == 1)
    o->world_size = 0; /* one rank: a plain checkpoint */
  if (o->world_size >= 2 && (o->rank >= o->world_size || o->output))
    return kg_ckpt_cli_usage("--rank must be below --world-size, and shards need --into", NULL);
  int code = kg_ckpt_cli_need(o->dir, true);
  /* A memory directory is its owner's to make and remove: a seal that
     outlived the owner must not make it again (and hold memory nobody
     frees). */
  if (code == 0 && a->snapshot)
    code = kg_ckpt_cli_need(o->into, true);
  char parent[PATH_MAX];
  if (code == 0 && o->output) {
    if (kg_ckpt_dirname(o->output, parent, sizeof parent) < 0)
      return kg_ckpt_cli_usage("path too long", o->output);
    code = kg_ckpt_cli_need(parent, true);
  }
  return code ? code : -1;
}

/*  Parse and check seal's command line into o and a. Returns -1 to go on,
    else the exit code. */
static int
s_seal_parse(int argc, char **argv, kg_ckpt_seal_opts_t *o, s_seal_args_t *a)
{
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_ckpt_seal_cmd, argc, argv);
  p.parent = &kg_ckpt_cmd;
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    const char *v = p.value;
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case KG_OPT_OPERAND:
      if (o->dir)
        return kg_ckpt_cli_usage("unexpected argument", v);
      o->dir = v;
      break;
    case KG_CKPT_O_STEP:
      if (!s_parse_i64(v, &o->step))
        return kg_ckpt_cli_usage("--step needs a non-negative integer", v);
      break;
    case KG_CKPT_O_RUN: o->run = v; break;
    case KG_CKPT_O_INTO: o->into = v; break;
    case KG_CKPT_O_OUTPUT: o->output = v; break;
    case KG_CKPT_O_ZSTD: o->zstd = true; break;
    case KG_CKPT_O_TIME:
      if (kg_ckpt_parse_time(v, &o->now_ms) < 0 || o->now_ms <= 0)
        return kg_ckpt_cli_usage("--time needs ms since the epoch or ISO 8601", v);
      break;
    case KG_CKPT_O_AFTER: a->after = v; break;
    case KG_CKPT_O_RANK:
      if (!s_parse_i64(v, &o->rank))
        return kg_ckpt_cli_usage("--rank needs a non-negative integer", v);
      break;
    case KG_CKPT_O_WORLD_SIZE:
      if (!s_parse_i64(v, &o->world_size) || o->world_size < 1)
        return kg_ckpt_cli_usage("--world-size needs a positive integer", v);
      break;
    case KG_CKPT_O_FORMAT:
      if (strcmp(v, "1") != 0 && strcmp(v, "2") != 0)
        return kg_ckpt_cli_usage("--format is 1 or 2", v);
      o->format = v[0] - '0';
      break;
    case KG_CKPT_O_REMOVE_DIR: a->remove_dir = true; break;
    case KG_CKPT_O_SNAPSHOT: a->snapshot = true; break;
    case KG_CKPT_O_SNAPSHOT_KEEP:
      if (!s_parse_i64(v, &a->snapshot_keep) || a->snapshot_keep < 1 || a->snapshot_keep > 64)
        return kg_ckpt_cli_usage("--snapshot-keep needs a count from 1 to 64", v);
      break;
    case KG_CKPT_O_PERSIST_INTO: a->persist_into = v; break;
    case KG_CKPT_O_PERSIST_KEEP:
      if (!s_parse_i64(v, &a->persist_keep) || a->persist_keep < 1 || a->persist_keep > 1000000)
        return kg_ckpt_cli_usage("--persist-keep needs a count >= 1", v);
      break;
    case KG_CKPT_O_PROGRESS:
      if (kg_ckpt_cli_progress(v, &a->when))
        return KG_EXIT_USAGE;
      break;
    default:
      if (kg_ckpt_cli_retain_opt(id, v, &a->keep, &a->every) < 0)
        return KG_EXIT_USAGE;
    }
  }
  return s_seal_check(o, a);
}

/*  Retention: after this seal (a background seal's process prunes only
    once its own archive is in place), this run's archives only. */
static void
s_seal_prune(const kg_ckpt_seal_opts_t *o, const s_seal_args_t *a, kg_ckpt_progress_t *prog)
{
  const kg_keyring_t *keys = NULL;
  if (a->keep <= 0 || !o->into || kg_ckpt_cli_keys(&keys) != 0)
    return;
  kg_ckpt_sink_t watch = {.arg = prog, .progress = kg_ckpt_progress_update};
  kg_ckpt_progress_begin(prog, "checking %s", o->into);
  int rc = kg_ckpt_retain_prune(o->into, keys, o->run ? o->run : "default", a->keep, a->every,
                                NULL, 0, false, &watch, stderr);
  kg_ckpt_progress_end(prog);
  if (rc < 0)
    kg_opt_error("pruning '%s': %s (the seal itself succeeded)", o->into, kg_strerror(rc));
}

/*  After a shard was sealed into dir: its set's index once every rank's
    shard is there. */
static void
s_seal_set(const char *dir, const unsigned char *sk, const kg_ckpt_seal_opts_t *o)
{
  char set[PATH_MAX] = "";
  if (o->world_size < 2)
    return;
  int rc = kg_ckpt_set_try_index(dir, sk, o->run ? o->run : "default", o->step,
                                 o->world_size, set, sizeof set);
  if (rc < 0)
    kg_opt_error("writing the set index in '%s': %s (the shard is sealed)", dir,
                 kg_strerror(rc));
  else if (set[0])
    kg_opt_error("set complete: %s", set);
}

/*  The memory tier keeps one complete snapshot, or --snapshot-keep N
    (kg_ckpt_snapkeep.h). */
static void
s_seal_snapkeep(const kg_ckpt_seal_opts_t *o, const s_seal_args_t *a)
{
  const kg_keyring_t *keys = NULL;
  if (kg_ckpt_cli_keys(&keys) != 0)
    return;
  int rc = kg_ckpt_snapkeep_apply(o->into, keys, o->run ? o->run : "default",
                                  a->snapshot_keep > 0 ? (int) a->snapshot_keep : 1, stderr);
  if (rc < 0)
    kg_opt_error("pruning the snapshots in '%s': %s (the seal itself succeeded)", o->into,
                 kg_strerror(rc));
}

/*  --persist-into: the sealed archive copied onto disk, then the disk's
    set index and retention. Returns the exit code: a copy that failed is
    never reported as success, though the archive at sealed stays. */
static int
s_seal_persist(const kg_ckpt_seal_opts_t *o, const s_seal_args_t *a, const unsigned char *sk,
               const char *sealed, kg_ckpt_progress_t *prog)
{
  char disk[PATH_MAX], why[PATH_MAX + 512];
  int rc = kg_ckpt_persist(sealed, a->persist_into, disk, sizeof disk, why, sizeof why);
  if (rc < 0) {
    kg_opt_error("the snapshot is sealed in memory (%s) but persisting it into %s failed: %s",
                 sealed, a->persist_into, why);
    return KG_EXIT_SYSTEM;
  }
  printf("persisted: %s\n", disk);
  fflush(stdout);
  s_seal_set(a->persist_into, sk, o);
  const kg_keyring_t *keys = NULL;
  if (a->persist_keep <= 0 || kg_ckpt_cli_keys(&keys) != 0)
    return KG_EXIT_OK;
  kg_ckpt_sink_t watch = {.arg = prog, .progress = kg_ckpt_progress_update};
  kg_ckpt_progress_begin(prog, "checking %s", a->persist_into);
  rc = kg_ckpt_retain_prune(a->persist_into, keys, o->run ? o->run : "default",
                            (int) a->persist_keep, 0, NULL, 0, false, &watch, stderr);
  kg_ckpt_progress_end(prog);
  if (rc < 0)
    kg_opt_error("pruning '%s': %s (the copy itself succeeded)", a->persist_into,
                 kg_strerror(rc));
  return KG_EXIT_OK;
}

static int
s_seal(int argc, char **argv)
{
  kg_ckpt_seal_opts_t o = {.step = -1, .producer = "kguard " KGUARD_VERSION};
  s_seal_args_t a = {.when = KG_CKPT_PROGRESS_AUTO};
  int rc = s_seal_parse(argc, argv, &o, &a);
  if (rc >= 0)
    return rc;
  unsigned char sk[KG_KEYS_SECRET_BYTES];
  char kwhy[PATH_MAX + 512] = "";
  if ((rc = kg_keys_load_secret(NULL, true, sk, kwhy, sizeof kwhy)) < 0) {
    kg_opt_error("no usable signing key: %s", kwhy);
    return rc == KG_EUNSAFEPATH || rc == KG_ECKPT_MALFORMED ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  o.sk = sk;
  char out[PATH_MAX], why[512];
  /* Background saves: the previous step's seal finishes first. */
  if (a.after && (rc = kg_ckpt_writer_wait(a.after)) < 0)
    kg_opt_error("waiting for '%s': %s (sealing anyway)", a.after, kg_strerror(rc));
  kg_ckpt_inflight_test_hold("start");
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, a.when, STDERR_FILENO);
  kg_ckpt_progress_begin(&prog, "sealing %s", o.dir);
  o.progress = kg_ckpt_progress_update;
  o.phase = s_seal_phase;
  o.progress_arg = &prog;
  rc = kg_ckpt_seal(&o, out, sizeof out, why, sizeof why);
  kg_ckpt_progress_end(&prog);
  if (rc == 0)
    kg_ckpt_inflight_test_hold("renamed");
  if (rc == 0)
    s_seal_set(o.into, sk, &o);
  if (a.remove_dir) {
    int e = kg_ckpt_remove_tree_at(AT_FDCWD, o.dir);
    if (e < 0)
      kg_opt_error("removing '%s': %s", o.dir, kg_strerror(e));
  }
  if (rc < 0) {
    memset(sk, 0, sizeof sk);
    kg_opt_error("%s", why);
    return rc == KG_EUSAGE || rc == KG_EEXISTS ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  printf("%s\n", out);
  fflush(stdout);
  int code = a.persist_into ? s_seal_persist(&o, &a, sk, out, &prog) : KG_EXIT_OK;
  memset(sk, 0, sizeof sk);
  if (a.snapshot)
    s_seal_snapkeep(&o, &a);
  s_seal_prune(&o, &a, &prog);
  return code;
}

/* ---- verify ----------------------------------------------------------------- */


static int
s_verify(int argc, char **argv)
{
  int worst = 0, files_n = 0;
  const kg_keyring_t *keys = NULL;
  kg_ckpt_progress_when_t when = KG_CKPT_PROGRESS_AUTO;
  const char **files = calloc((size_t) argc + 1, sizeof *files);
  if (!files) {
    kg_opt_error("out of memory");
    return KG_EXIT_SYSTEM;
  }
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_ckpt_verify_cmd, argc, argv);
  p.parent = &kg_ckpt_cmd;
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    if (id == KG_OPT_EXIT) {
      free(files);
      return p.code;
    }
    if (id == KG_CKPT_O_PROGRESS) {
      if (kg_ckpt_cli_progress(p.value, &when)) {
        free(files);
        return KG_EXIT_USAGE;
      }
    } else if (id == KG_OPT_OPERAND)
      files[files_n++] = p.value;
  }
  if (files_n == 0) {
    free(files);
    return kg_ckpt_cli_usage("needs at least one FILE", NULL);
  }
  int code = kg_ckpt_cli_keys(&keys);
  if (code) {
    free(files);
    return code;
  }
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, when, STDERR_FILENO);
  kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
  for (int i = 0; i < files_n; i++) {
    if ((code = kg_ckpt_cli_need(files[i], false)) == 0) {
      kg_ckpt_report_t r;
      kg_ckpt_progress_begin(&prog, "verifying %s", files[i]);
      int rc = kg_ckpt_verify(files[i], keys, 0, &watch, &r);
      kg_ckpt_progress_end(&prog);
      if (rc == 0)
        printf("%s: valid: step %" PRId64 ", run %s, sealed %s, signed by %s%s%s (%s), "
               "manifest blake2b-256:%.16s\n", files[i], r.manifest->step, r.manifest->run,
               r.manifest->sealed_at, r.signer[0] ? "trusted key '" : "your key",
               r.signer, r.signer[0] ? "'" : "", r.manifest->key_id, r.manifest_digest);
      else if (kg_ckpt_status_of(rc) >= 0)
        printf("%s: %s: %s\n", files[i], kg_ckpt_status_name(rc), r.reason);
      else
        kg_opt_error_at(files[i], "%s", r.reason);
      fflush(stdout);
      code = s_exit_of(rc);
      kg_ckpt_report_clear(&r);
    }
    if (code > worst)
      worst = code;
  }
  free(files);
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
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_ckpt_restore_cmd, argc, argv);
  p.parent = &kg_ckpt_cmd;
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case KG_CKPT_O_READ_ONLY: opts.flags |= KG_CKPT_RESTORE_READ_ONLY; break;
    case KG_CKPT_O_PRIVATE: opts.flags |= KG_CKPT_RESTORE_PRIVATE; break;
    case KG_CKPT_O_PROGRESS:
      if (kg_ckpt_cli_progress(p.value, &when))
        return KG_EXIT_USAGE;
      break;
    case KG_CKPT_O_DIGEST: {
      const char *d = p.value;
      if (strncmp(d, "blake2b-256:", 12) == 0)
        d += 12;
      if (strlen(d) != 64 || strspn(d, "0123456789abcdef") != 64)
        return kg_ckpt_cli_usage("--digest needs 64 lower-case hex digits", p.value);
      opts.expect_digest = d;
      break;
    }
    case KG_OPT_OPERAND:
      if (npos == 2)
        return kg_ckpt_cli_usage("unexpected argument", p.value);
      pos[npos++] = p.value;
      break;
    }
  }
  if (npos != 2)
    return kg_ckpt_cli_usage("needs FILE and DEST", NULL);
  const kg_keyring_t *keys = NULL;
  int code = kg_ckpt_cli_need(pos[0], false);
  if (code == 0)
    code = kg_ckpt_cli_keys(&keys);
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
    kg_opt_error("%s: %s: %s", pos[0], kg_ckpt_status_name(rc), r.reason);
  else if (rc == KG_EUSAGE || rc == KG_EEXISTS)
    kg_opt_error("%s", r.reason);
  else
    kg_opt_error_at(pos[0], "%s", r.reason);
  kg_ckpt_report_clear(&r);
  return s_exit_of(rc);
}

static int
s_quarantine(int argc, char **argv)
{
  const char *dir = NULL, *incident = NULL;
  int64_t from = -1;
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_ckpt_quarantine_cmd, argc, argv);
  p.parent = &kg_ckpt_cmd;
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case KG_CKPT_O_INCIDENT: incident = p.value; break;
    case KG_CKPT_O_FROM:
      if (kg_ckpt_parse_time(p.value, &from) < 0)
        return kg_ckpt_cli_usage("--from needs ISO 8601 or ms since the epoch", p.value);
      break;
    case KG_OPT_OPERAND:
      if (dir)
        return kg_ckpt_cli_usage("unexpected argument", p.value);
      dir = p.value;
      break;
    }
  }
  if (!dir || !incident || from < 0)
    return kg_ckpt_cli_usage("needs CKPT_DIR, --incident ID and --from TIME", NULL);
  if (!kg_ckpt_quarantine_id_ok(incident))
    return kg_ckpt_cli_usage("incident id must be 1-128 of [A-Za-z0-9._:-], not starting with '.'",
                   incident);
  const kg_keyring_t *keys = NULL;
  int code = kg_ckpt_cli_need(dir, true);
  if (code == 0)
    code = kg_ckpt_cli_keys(&keys);
  if (code)
    return code;
  int rc;
  kg_ckpt_list_t *list = kg_ckpt_list_scan(dir, keys, false, &rc);
  if (!list) {
    kg_opt_error("cannot read %s: %s", dir, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  char why[PATH_MAX + 128] = "";
  rc = kg_ckpt_quarantine(list, incident, from, NULL, why, sizeof why);
  for (size_t i = 0; i < list->count; i++)
    if (list->entries[i].moved_to)
      printf("%s -> %s\n", list->entries[i].path, list->entries[i].moved_to);
  if (rc < 0)
    kg_opt_error("%s", why);
  kg_ckpt_list_destroy(&list);
  return rc < 0 ? KG_EXIT_SYSTEM : KG_EXIT_OK;
}

int
kg_ckpt_cli_main(int argc, char **argv)
{
  static int (*const mains[])(int, char **) = {
    s_seal, s_verify, kg_ckpt_cli_list, kg_ckpt_cli_latest, s_restore, s_quarantine,
    kg_ckpt_cli_resume, kg_ckpt_cli_manifest, kg_ckpt_cli_gc, kg_ckpt_cli_prune};
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_ckpt_cmd, argc, argv);
  int i = kg_opt_dispatch(&p);
  if (i < 0)
    return p.code;
  int n;
  char **rest = kg_opt_rest(&p, &n);
  return mains[i](n, rest);
}
