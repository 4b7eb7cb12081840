/*  kg_ckpt_cli_maint: `kguard ckpt manifest` (what kguard.resume() reads
    before loading members in place), `kguard ckpt gc` and `prune`. */
#include "kg_ckpt_cli_maint.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_ckpt_gc.h"
#include "kg_ckpt_progress.h"
#include "kg_ckpt_quarantine.h"
#include "kg_ckpt_retain.h"
#include "kg_ckpt_util.h"
#include "kg_ckpt_verify.h"
#include "kg_exit.h"
#include "kg_error.h"
#include "kg_keys.h"

static const char s_help_manifest[] =
  "usage: kguard ckpt manifest FILE\n"
  "\n"
  "Authenticate FILE's signed manifest (no payload byte is read) and print it:\n"
  "  {\"manifest\": {... as in FORMAT.md ...}, \"manifest_digest\": \"<hex>\",\n"
  "   \"archive_size\": N}\n"
  "kguard.resume() uses it to read members in place, checking each member's\n"
  "digest as it reads. Exit codes as for verify (0 authenticated).\n";

static const char s_help_gc[] =
  "usage: kguard ckpt gc CKPT_DIR\n"
  "\n"
  "Remove what interrupted writers left in CKPT_DIR: seal temporaries\n"
  "(.*.tmp-*) and kguard.save staging directories (.kguard-save-*) whose\n"
  "writer is gone (its lock is free; a running writer's are kept), and copies\n"
  "of restored zstd checkpoints (.restored-*). Never touches sealed archives\n"
  "or quarantine/. Prints what it removed.\n"
  "exit: 0, 100 usage (also: no such CKPT_DIR), 111 system.\n";

static bool
s_help(const char *a)
{
  return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

int
kg_ckpt_cli_manifest(int argc, char **argv)
{
  if (argc == 2 && s_help(argv[1])) {
    fputs(s_help_manifest, stdout);
    return KG_EXIT_OK;
  }
  if (argc != 2) {
    fprintf(stderr, "kguard ckpt manifest: needs exactly one FILE (see --help)\n");
    return KG_EXIT_USAGE;
  }
  const kg_keyring_t *keys = NULL;
  int code = kg_ckpt_cli_need("manifest", argv[1], false);
  if (code == 0)
    code = kg_ckpt_cli_keys("ckpt manifest", &keys);
  if (code)
    return code;
  kg_ckpt_report_t r;
  int rc = kg_ckpt_verify(argv[1], keys, KG_CKPT_VERIFY_MANIFEST_ONLY, NULL, &r);
  if (rc != 0) {
    fprintf(stderr, "kguard ckpt manifest: %s: %s: %s\n", argv[1], kg_ckpt_status_name(rc),
            r.reason);
    kg_ckpt_report_clear(&r);
    int s = kg_ckpt_status_of(rc);
    return s > 0 ? s : KG_EXIT_SYSTEM;
  }
  char *json = kg_ckpt_manifest_encode(r.manifest);
  cJSON *m = json ? cJSON_Parse(json) : NULL;
  cJSON *o = cJSON_CreateObject();
  code = KG_EXIT_SYSTEM;
  if (m && o) {
    cJSON_AddItemToObject(o, "manifest", m);
    m = NULL;
    cJSON_AddStringToObject(o, "manifest_digest", r.manifest_digest);
    cJSON_AddStringToObject(o, "signer_id", r.signer_id);
    if (r.signer[0])
      cJSON_AddStringToObject(o, "signer", r.signer);
    else
      cJSON_AddNullToObject(o, "signer");
    cJSON_AddNumberToObject(o, "archive_size", (double) r.archive_size);
    char *text = cJSON_PrintUnformatted(o);
    if (text) {
      printf("%s\n", text);
      code = KG_EXIT_OK;
    }
    free(text);
  }
  if (code != KG_EXIT_OK)
    fprintf(stderr, "kguard ckpt manifest: out of memory\n");
  cJSON_Delete(m);
  cJSON_Delete(o);
  free(json);
  kg_ckpt_report_clear(&r);
  return code;
}

int
kg_ckpt_cli_gc(int argc, char **argv)
{
  if (argc == 2 && s_help(argv[1])) {
    fputs(s_help_gc, stdout);
    return KG_EXIT_OK;
  }
  if (argc != 2) {
    fprintf(stderr, "kguard ckpt gc: needs exactly one CKPT_DIR (see --help)\n");
    return KG_EXIT_USAGE;
  }
  int code = kg_ckpt_cli_need("gc", argv[1], true);
  if (code)
    return code;
  kg_ckpt_gc_stats_t st;
  int rc = kg_ckpt_gc(argv[1], INT64_MAX, &st);
  printf("removed %zu (%llu bytes of temporaries), %zu still being written\n", st.removed,
         st.bytes, st.busy);
  if (rc < 0) {
    fprintf(stderr, "kguard ckpt gc: %s: %s\n", argv[1], kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  return KG_EXIT_OK;
}

static const char s_help_prune[] =
  "usage: kguard ckpt prune CKPT_DIR --keep N [--keep-every K] [--open-incident T]...\n"
  "                         [--dry-run] [--progress[=WHEN]]\n"
  "       kguard ckpt prune CKPT_DIR --resolve ID\n"
  "\n"
  "Remove old sealed checkpoints once a newer one verified completely: keep the\n"
  "newest N from the newest valid one down (and everything newer than it), every\n"
  "checkpoint whose step is a multiple of K, and for each open incident (fault\n"
  "time T, from --open-incident or the CKPT_DIR/.incident-ID markers that\n"
  "resume-prepare writes) the newest checkpoint sealed before T. Never removes\n"
  "leftovers, unauthenticated files or anything in quarantine/. --resolve ID\n"
  "closes an incident (removes its marker). `seal --keep N [--keep-every K]`\n"
  "prunes after each seal. Prints one line per removal.\n"
  KG_CKPT_PROGRESS_HELP
  "exit: 0, 100 usage (also: no such CKPT_DIR), 111 system.\n";

static bool
s_count(const char *s, int64_t min, int64_t *out)
{
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < min)
    return false;
  *out = v;
  return true;
}

int
kg_ckpt_cli_retain_opt(int argc, char **argv, int *i, int *keep, int64_t *every)
{
  const char *a = argv[*i];
  bool more = *i + 1 < argc;
  int64_t v;
  if (strcmp(a, "--keep") == 0 && more) {
    if (!s_count(argv[++*i], 1, &v) || v > 1000000) {
      fprintf(stderr, "kguard ckpt: --keep needs a count >= 1: %s\n", argv[*i]);
      return -1;
    }
    *keep = (int) v;
    return 1;
  }
  if (strcmp(a, "--keep-every") == 0 && more) {
    if (!s_count(argv[++*i], 1, &v)) {
      fprintf(stderr, "kguard ckpt: --keep-every needs a step count >= 1: %s\n", argv[*i]);
      return -1;
    }
    *every = v;
    return 1;
  }
  return 0;
}

int
kg_ckpt_cli_prune(int argc, char **argv)
{
  const char *dir = NULL, *resolve = NULL;
  int keep = 0;
  int64_t every = 0, open[64];
  size_t nopen = 0;
  bool dry = false;
  kg_ckpt_progress_when_t show = KG_CKPT_PROGRESS_AUTO;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int r;
    if (s_help(a)) {
      fputs(s_help_prune, stdout);
      return KG_EXIT_OK;
    } else if ((r = kg_ckpt_progress_option(a, &show)) != 0) {
      if (r < 0)
        return kg_ckpt_cli_usage("--progress is auto, machine or none", a);
    } else if ((r = kg_ckpt_cli_retain_opt(argc, argv, &i, &keep, &every)) != 0) {
      if (r < 0)
        return KG_EXIT_USAGE;
    } else if (strcmp(a, "--open-incident") == 0 && i + 1 < argc) {
      if (nopen == sizeof open / sizeof *open
          || kg_ckpt_parse_time(argv[++i], &open[nopen++]) < 0) {
        fprintf(stderr, "kguard ckpt prune: --open-incident needs a time (at most 64)\n");
        return KG_EXIT_USAGE;
      }
    } else if (strcmp(a, "--resolve") == 0 && i + 1 < argc) {
      resolve = argv[++i];
    } else if (strcmp(a, "--dry-run") == 0) {
      dry = true;
    } else if (a[0] == '-' || dir) {
      fprintf(stderr, "kguard ckpt prune: unexpected argument: %s (see --help)\n", a);
      return KG_EXIT_USAGE;
    } else {
      dir = a;
    }
  }
  if (!dir || (!resolve == !keep)) {
    fprintf(stderr, "kguard ckpt prune: needs CKPT_DIR and either --keep N or --resolve ID\n");
    return KG_EXIT_USAGE;
  }
  int rc, code = kg_ckpt_cli_need("prune", dir, true);
  if (code)
    return code;
  if (resolve) {
    if (!kg_ckpt_quarantine_id_ok(resolve)) {
      fprintf(stderr, "kguard ckpt prune: bad incident id '%s'\n", resolve);
      return KG_EXIT_USAGE;
    }
    rc = kg_ckpt_retain_resolve(dir, resolve);
  } else {
    const kg_keyring_t *keys = NULL;
    if ((code = kg_ckpt_cli_keys("ckpt prune", &keys)))
      return code;
    kg_ckpt_progress_t prog;
    kg_ckpt_progress_init(&prog, show, STDERR_FILENO);
    kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
    kg_ckpt_progress_begin(&prog, "checking %s", dir);
    rc = kg_ckpt_retain_prune(dir, keys, keep, every, open, nopen, dry, &watch, stdout);
    kg_ckpt_progress_end(&prog);
  }
  if (rc < 0) {
    fprintf(stderr, "kguard ckpt prune: %s: %s\n", dir, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  return KG_EXIT_OK;
}
