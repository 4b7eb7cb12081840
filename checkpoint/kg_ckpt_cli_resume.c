/*  kg_ckpt_cli_resume: `kguard ckpt resume-prepare` (the supervisor's
    restore step) and the progress line shared by the ckpt commands.
*/
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_ckpt_cli_maint.h"
#include "kg_ckpt_cli_resume.h"
#include "kg_ckpt_inflight.h"
#include "kg_ckpt_progress.h"
#include "kg_ckpt_resume.h"
#include "kg_ckpt_verify.h"
#include "kg_exit.h"
#include "kg_error.h"
#include "kg_keys.h"

static const char s_help_resume[] =
  "usage: kguard ckpt resume-prepare --dir CKPT_DIR --before T_MS --incident ID\n"
  "                                  --into DEST --json [--run ID]\n"
  "                                  [--seal-wait-stall-ms MS] [--progress[=WHEN]]\n"
  "\n"
  "First waits for the seals still writing into CKPT_DIR (a background seal\n"
  "outlives a faulted kernel): each ends sealed, and is then a candidate, or\n"
  "dies, leaving nothing that is chosen; one making no progress for MS\n"
  "(default 60000; 0: none is waited for) is excluded. \"waited\" lists them:\n"
  "  [{\"writer\", \"outcome\": \"ended\"|\"excluded\", \"waited_ms\"}].\n"
  "For the supervisor after a sticky failure at T_MS: quarantine checkpoints\n"
  "sealed at or after T_MS, then verify completely, newest first, those sealed\n"
  "strictly before it until one is valid. Only checkpoints of the run being\n"
  "resumed count: --run ID, else $KGUARD_RUN_ID, else \"default\" (what seal\n"
  "records); every other run's is skipped, saying so. Signatures by your key\n"
  "or a trusted one (kguard keys) verify. An uncompressed checkpoint is checked\n"
  "in place and not copied (\"dir\": \"\": the kernel reads it from the archive);\n"
  "a zstd one is restored, read-only, into CKPT_DIR/.restored-ID when nobody\n"
  "else can write CKPT_DIR, else into DEST (private). Prints one JSON object:\n"
  "  {\"status\": \"restored\"|\"none\"|\"failed\", \"archive\", \"archive_abs\",\n"
  "   \"step\", \"run\", \"sealed_at\", \"sealed_at_ms\",\n"
  "   \"digest\": \"blake2b-256:<hex of the manifest>\", \"digest_of\": \"manifest\",\n"
  "   \"dir\", \"in_place\", \"compression\", \"bytes\", \"error\" (when failed),\n"
  "   \"before_ms\", \"incident\", \"resumed_run\",\n"
  "   \"quarantined\": [{\"archive\", \"to\", \"reason\"}],\n"
  "   \"skipped\": [{\"archive\", \"reason\"}]}\n"
  "\"failed\": a checkpoint could not be read or copied (system error); nothing\n"
  "partial remains.\n"
  KG_CKPT_PROGRESS_HELP
  "Machine lines (what the kernel supervisor asks for): at the start of each\n"
  "candidate and at least once a second while it is read; while seals in flight\n"
  "are waited for, 'kguard-progress BYTES 0' (their bytes written so far).\n"
  "On bad usage it prints {\"status\": \"error\", \"error\": \"...\"}.\n"
  "exit: 0 restored or none, 111 failed or system error, 100 usage.\n";

static int
s_json_error(int code, const char *msg)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "error");
  cJSON_AddStringToObject(o, "error", msg);
  char *text = cJSON_PrintUnformatted(o);
  printf("%s\n", text ? text : "{\"status\":\"error\"}");
  free(text);
  cJSON_Delete(o);
  fprintf(stderr, "kguard ckpt resume-prepare: %s\n", msg);
  return code;
}

struct s_wait_note {
  bool said;
  kg_ckpt_progress_t *prog;
};

/*  While a seal in flight is waited for: one log line, then progress
    (total unknown: 0) so that the supervisor's stall deadline sees it
    alive and a person sees the bytes the writers have written. */
static void
s_wait_tick(void *arg, uint64_t bytes, size_t writers)
{
  struct s_wait_note *note = arg;
  if (!note->said) {
    kg_ckpt_progress_end(note->prog);
    fprintf(stderr, "kguard ckpt resume-prepare: waiting for %zu checkpoint writer%s in "
            "flight to finish\n", writers, writers == 1 ? "" : "s");
    kg_ckpt_progress_begin(note->prog, "waiting for %zu checkpoint writer%s", writers,
                           writers == 1 ? "" : "s");
    note->said = true;
  }
  kg_ckpt_progress_update(note->prog, bytes, 0);
}

int
kg_ckpt_cli_resume(int argc, char **argv)
{
  const char *dir = NULL, *incident = NULL, *dest = NULL, *run = NULL;
  int64_t before = -1, stall_ms = KG_CKPT_SEAL_WAIT_STALL_MS;
  kg_ckpt_progress_when_t when = KG_CKPT_PROGRESS_AUTO;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    int po;
    if (kg_ckpt_cli_is_help(a)) {
      fputs(s_help_resume, stdout);
      return KG_EXIT_OK;
    } else if ((po = kg_ckpt_progress_option(a, &when)) != 0) {
      if (po < 0)
        return s_json_error(KG_EXIT_USAGE, "--progress is auto, machine or none");
    } else if (strcmp(a, "--dir") == 0 && more) {
      dir = argv[++i];
    } else if (strcmp(a, "--before") == 0 && more) {
      if (kg_ckpt_parse_time(argv[++i], &before) < 0)
        return s_json_error(KG_EXIT_USAGE, "--before needs ms since the epoch or ISO 8601");
    } else if (strcmp(a, "--incident") == 0 && more) {
      incident = argv[++i];
    } else if (strcmp(a, "--into") == 0 && more) {
      dest = argv[++i];
    } else if (strcmp(a, "--run") == 0 && more) {
      run = argv[++i];
    } else if (strcmp(a, "--seal-wait-stall-ms") == 0 && more) {
      char *end = NULL;
      errno = 0;
      stall_ms = strtoll(argv[++i], &end, 10);
      if (errno || !end || *end || stall_ms < 0)
        return s_json_error(KG_EXIT_USAGE, "--seal-wait-stall-ms needs milliseconds >= 0");
    } else if (strcmp(a, "--json") == 0) {
      /* JSON is the only output; the flag documents the contract. */
    } else {
      return s_json_error(KG_EXIT_USAGE, "unexpected argument");
    }
  }
  if (!dir || !incident || !dest || before < 0)
    return s_json_error(KG_EXIT_USAGE, "needs --dir, --before, --incident and --into");
  /* The run being resumed: what kguard.save and seal record by default. */
  if (!run)
    run = getenv("KGUARD_RUN_ID");
  if (!run || !*run)
    run = "default";
  const kg_keyring_t *keys = NULL;
  char kwhy[PATH_MAX + 512];
  int krc;
  kg_keyring_t *ring = kg_keyring_load(NULL, &krc, kwhy, sizeof kwhy);
  if (!ring)
    return s_json_error(krc == KG_EUNSAFEPATH || krc == KG_ECKPT_MALFORMED ? KG_EXIT_USAGE
                                                                            : KG_EXIT_SYSTEM,
                        kwhy);
  keys = ring;
  cJSON *out = NULL;
  char why[600] = "";
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, when, STDERR_FILENO);
  kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
  /* A seal still writing (a background seal outlives the faulted kernel)
     finishes first, or is excluded once it stops making progress. */
  cJSON *waited = cJSON_CreateArray();
  struct s_wait_note note = {false, &prog};
  if (kg_ckpt_inflight_wait(dir, stall_ms, s_wait_tick, &note, waited) < 0)
    fprintf(stderr, "kguard ckpt resume-prepare: could not check for seals in flight in "
            "'%s'; choosing without waiting\n", dir);
  kg_ckpt_progress_begin(&prog, "checking the last checkpoint in %s", dir);
  int rc = kg_ckpt_resume_prepare(dir, before, incident, run, dest, &watch, keys, &out, why,
                                  sizeof why);
  kg_ckpt_progress_end(&prog);
  kg_keyring_destroy(&ring);
  if (rc < 0) {
    cJSON_Delete(waited);
    return s_json_error(rc == KG_EUSAGE ? KG_EXIT_USAGE : KG_EXIT_SYSTEM, why);
  }
  cJSON_AddItemToObject(out, "waited", waited);
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(out, "status");
  bool failed = cJSON_IsString(status) && strcmp(status->valuestring, "failed") == 0;
  char *text = cJSON_PrintUnformatted(out);
  printf("%s\n", text);
  free(text);
  cJSON_Delete(out);
  return failed ? KG_EXIT_SYSTEM : KG_EXIT_OK;
}
