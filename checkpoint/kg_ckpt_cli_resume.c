/*  kg_ckpt_cli_resume: `kguard ckpt resume-prepare` (the supervisor's
    restore step).
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
#include "kg_ckpt_cmds.h"
#include "kg_ckpt_inflight.h"
#include "kg_ckpt_progress.h"
#include "kg_ckpt_resume.h"
#include "kg_ckpt_verify.h"
#include "kg_exit.h"
#include "kg_error.h"
#include "kg_keys.h"
#include "kg_opt.h"

/*  On bad usage the supervisor still reads one JSON object. say: also the
    message on stderr (not when the parser said it already). */
static int
s_json_error_say(int code, const char *msg, bool say)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "error");
  cJSON_AddStringToObject(o, "error", msg);
  char *text = cJSON_PrintUnformatted(o);
  printf("%s\n", text ? text : "{\"status\":\"error\"}");
  free(text);
  cJSON_Delete(o);
  if (say)
    kg_opt_error("%s", msg);
  return code;
}

static int
s_json_error(int code, const char *msg)
{
  return s_json_error_say(code, msg, true);
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
    kg_opt_error("waiting for %zu checkpoint writer%s in flight to finish", writers,
                 writers == 1 ? "" : "s");
    kg_ckpt_progress_begin(note->prog, "waiting for %zu checkpoint writer%s", writers,
                           writers == 1 ? "" : "s");
    note->said = true;
  }
  kg_ckpt_progress_update(note->prog, bytes, 0);
}

/*  What the resume command was asked: the options, validated. */
typedef struct {
  const char *dir, *incident, *dest, *run;
  int64_t before, stall_ms;
  kg_ckpt_progress_when_t when;
  const char *memory;   /* --memory MEMDIR, or NULL */
} s_resume_args_t;

/*  Parse and check argv into *a (which borrows argv's strings). Returns -1
    when the command should go on, else the exit code, its JSON error
    already printed. */
static int
s_resume_parse(int argc, char **argv, s_resume_args_t *a)
{
  const char *dir = NULL, *incident = NULL, *dest = NULL, *run = NULL, *memory = NULL;
  int64_t before = -1, stall_ms = KG_CKPT_SEAL_WAIT_STALL_MS;
  kg_ckpt_progress_when_t when = KG_CKPT_PROGRESS_AUTO;
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_ckpt_resume_cmd, argc, argv);
  p.parent = &kg_ckpt_cmd;
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT:
      return p.code == 0 ? 0 : s_json_error_say(KG_EXIT_USAGE, "bad usage", false);
    case KG_OPT_OPERAND: return s_json_error(KG_EXIT_USAGE, "unexpected argument");
    case KG_CKPT_O_DIR: dir = p.value; break;
    case KG_CKPT_O_BEFORE:
      if (kg_ckpt_parse_time(p.value, &before) < 0)
        return s_json_error(KG_EXIT_USAGE, "--before needs ms since the epoch or ISO 8601");
      break;
    case KG_CKPT_O_INCIDENT: incident = p.value; break;
    case KG_CKPT_O_INTO: dest = p.value; break;
    case KG_CKPT_O_RUN: run = p.value; break;
    case KG_CKPT_O_MEMORY: memory = p.value; break;
    case KG_CKPT_O_SEAL_WAIT: {
      char *end = NULL;
      errno = 0;
      stall_ms = strtoll(p.value, &end, 10);
      if (errno || !end || *end || end == p.value || stall_ms < 0)
        return s_json_error(KG_EXIT_USAGE, "--seal-wait-stall-ms needs milliseconds >= 0");
      break;
    }
    case KG_CKPT_O_JSON: break;   /* JSON is the only output; the flag documents it */
    case KG_CKPT_O_PROGRESS:
      if (kg_ckpt_progress_value(p.value, &when) < 0)
        return s_json_error(KG_EXIT_USAGE, "--progress is auto, machine or none");
      break;
    }
  }
  if (!dir || !incident || !dest || before < 0)
    return s_json_error(KG_EXIT_USAGE, "needs --dir, --before, --incident and --into");
  /* The run being resumed: what kguard.save and seal record by default. */
  if (!run)
    run = getenv("KGUARD_RUN_ID");
  if (!run || !*run)
    run = "default";
  *a = (s_resume_args_t){dir, incident, dest, run, before, stall_ms, when, memory};
  return -1;
}

int
kg_ckpt_cli_resume(int argc, char **argv)
{
  s_resume_args_t a = {0};
  int code = s_resume_parse(argc, argv, &a);
  if (code >= 0)
    return code;
  const char *dir = a.dir;
  char kwhy[PATH_MAX + 512];
  int krc;
  kg_keyring_t *ring = kg_keyring_load(NULL, &krc, kwhy, sizeof kwhy);
  if (!ring)
    return s_json_error(krc == KG_EUNSAFEPATH || krc == KG_ECKPT_MALFORMED ? KG_EXIT_USAGE
                                                                            : KG_EXIT_SYSTEM,
                        kwhy);
  cJSON *out = NULL;
  char why[600] = "";
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, a.when, STDERR_FILENO);
  kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
  /* A seal still writing (a background seal outlives the faulted kernel)
     finishes first, or is excluded once it stops making progress. */
  cJSON *waited = cJSON_CreateArray();
  struct s_wait_note note = {false, &prog};
  for (int t = 0; t < 2; t++) {
    const char *where = t == 0 ? a.memory : dir;
    if (where && kg_ckpt_inflight_wait(where, a.stall_ms, s_wait_tick, &note, waited) < 0)
      kg_opt_error("could not check for seals in flight in '%s'; choosing without waiting",
                   where);
  }
  kg_ckpt_progress_begin(&prog, "checking the last checkpoint in %s", dir);
  kg_ckpt_resume_opts_t o = {.dir = dir, .memory = a.memory, .before_ms = a.before,
                             .incident = a.incident, .run = a.run, .dest = a.dest,
                             .watch = &watch, .keys = ring};
  int rc = kg_ckpt_resume_prepare_tiers(&o, &out, why, sizeof why);
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
