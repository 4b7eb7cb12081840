/*  kg_ckpt_cli_list: `kguard ckpt list` and `kguard ckpt latest`, sets
    included. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_ckpt_cli_maint.h"
#include "kg_ckpt_cli_util.h"
#include "kg_ckpt_cmds.h"
#include "kg_ckpt_list.h"
#include "kg_ckpt_progress.h"
#include "kg_ckpt_resume.h"
#include "kg_ckpt_set.h"
#include "kg_exit.h"
#include "kg_error.h"
#include "kg_keys.h"
#include "kg_opt.h"

static const char *
s_entry_status(const kg_ckpt_entry_t *e)
{
  return e->leftover ? "leftover" : kg_ckpt_status_name(e->rc);
}

/*  Checkpoint sets: appended to arr as {"kind": "set", ...} rows, or
    printed after the table when arr is NULL. */
static void
s_list_sets(const char *dir, const kg_keyring_t *keys, cJSON *arr)
{
  int rc;
  kg_ckpt_sets_t *sets = kg_ckpt_sets_scan(dir, keys, &rc);
  if (!sets)
    return;
  char when[32], reason[1024];
  for (size_t i = 0; i < sets->count; i++) {
    const kg_ckpt_set_t *s = &sets->sets[i];
    rc = kg_ckpt_set_verify(s, keys, NULL, reason, sizeof reason);
    if (arr) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "kind", "set");
      cJSON_AddStringToObject(o, "archive", s->path);
      cJSON_AddStringToObject(o, "status", kg_ckpt_status_name(rc));
      cJSON_AddStringToObject(o, "reason", reason);
      cJSON_AddNumberToObject(o, "step", (double) s->step);
      cJSON_AddStringToObject(o, "run", s->run);
      cJSON_AddNumberToObject(o, "world_size", (double) s->world_size);
      cJSON_AddNumberToObject(o, "sealed_at_ms", (double) s->sealed_at_ms);
      cJSON_AddItemToArray(arr, o);
    } else {
      if (i == 0)
        printf("\nSETS\n");
      printf("%-10" PRId64 "  %-24s  %5" PRId64 " ranks  %-10s  %s%s%s\n", s->step,
             s->sealed_at_ms >= 0 ? kg_clock_iso_ms(s->sealed_at_ms, when, sizeof when) : "-",
             s->world_size, kg_ckpt_status_name(rc), strrchr(s->path, '/') + 1,
             rc ? ": " : "", rc ? reason : "");
    }
  }
  kg_ckpt_sets_destroy(&sets);
}

/*  The archives of list as a JSON array on stdout, sets appended. */
static void
s_list_print_json(const char *dir, const kg_ckpt_list_t *list, const kg_keyring_t *keys)
{
  char when[32];
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < list->count; i++) {
    const kg_ckpt_entry_t *e = &list->entries[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "archive", e->path);
    cJSON_AddStringToObject(o, "status", s_entry_status(e));
    cJSON_AddStringToObject(o, "reason", e->reason);
    if (e->authenticated) {
      cJSON_AddNumberToObject(o, "step", (double) e->step);
      cJSON_AddStringToObject(o, "run", e->run);
      cJSON_AddStringToObject(o, "sealed_at",
                              kg_clock_iso_ms(e->sealed_at_ms, when, sizeof when));
      cJSON_AddNumberToObject(o, "sealed_at_ms", (double) e->sealed_at_ms);
      /* What a reader checks the manifest against, so that an archive
         verified here is read without hashing it all again. */
      if (e->rc == 0 && e->manifest_digest[0]) {
        char digest[80];
        snprintf(digest, sizeof digest, "blake2b-256:%s", e->manifest_digest);
        cJSON_AddStringToObject(o, "digest", digest);
      }
    } else {
      cJSON_AddNullToObject(o, "step");
      cJSON_AddNullToObject(o, "sealed_at");
    }
    cJSON_AddNumberToObject(o, "size", (double) e->size);
    if (e->world_size >= 2) {
      cJSON_AddNumberToObject(o, "rank", (double) e->rank);
      cJSON_AddNumberToObject(o, "world_size", (double) e->world_size);
    }
    cJSON_AddItemToArray(arr, o);
  }
  s_list_sets(dir, keys, arr);
  char *text = cJSON_Print(arr);
  printf("%s\n", text ? text : "[]");
  free(text);
  cJSON_Delete(arr);
}

/*  The archives of list as a table on stdout, sets after it. */
static void
s_list_print_table(const char *dir, const kg_ckpt_list_t *list, const kg_keyring_t *keys)
{
  char when[32];
  printf("%-10s  %-24s  %12s  %-10s  %s\n", "STEP", "SEALED (UTC)", "SIZE", "STATUS", "FILE");
  for (size_t i = 0; i < list->count; i++) {
    const kg_ckpt_entry_t *e = &list->entries[i];
    char step[24] = "-";
    if (e->authenticated)
      snprintf(step, sizeof step, "%" PRId64, e->step);
    printf("%-10s  %-24s  %12" PRIu64 "  %-10s  %s\n", step,
           e->authenticated ? kg_clock_iso_ms(e->sealed_at_ms, when, sizeof when) : "-",
           e->size, s_entry_status(e), e->name);
  }
  s_list_sets(dir, keys, NULL);
}

/*  Parse list's argv: the directory (borrowed from argv), --json and
    --progress. Returns -1 when the command should go on, else the exit code,
    its message already said. */
static int
s_list_parse(int argc, char **argv, const char **dir_p, bool *json_p,
             kg_ckpt_progress_when_t *show_p)
{
  const char *dir = NULL;
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_ckpt_list_cmd, argc, argv);
  p.parent = &kg_ckpt_cmd;
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    if (id == KG_OPT_EXIT)
      return p.code;
    if (id == KG_CKPT_O_JSON)
      *json_p = true;
    else if (id == KG_CKPT_O_PROGRESS) {
      if (kg_ckpt_cli_progress(p.value, show_p))
        return KG_EXIT_USAGE;
    } else if (dir)
      return kg_ckpt_cli_usage("unexpected argument", p.value);
    else
      dir = p.value;
  }
  if (!dir)
    return kg_ckpt_cli_usage("needs CKPT_DIR", NULL);
  *dir_p = dir;
  return -1;
}

int
kg_ckpt_cli_list(int argc, char **argv)
{
  const char *dir = NULL;
  bool json = false;
  kg_ckpt_progress_when_t show = KG_CKPT_PROGRESS_AUTO;
  int code = s_list_parse(argc, argv, &dir, &json, &show);
  if (code >= 0)
    return code;
  const kg_keyring_t *keys = NULL;
  code = kg_ckpt_cli_need(dir, true);
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
  /* Every archive verified completely, with progress. */
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, show, STDERR_FILENO);
  kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
  list->watch = &watch;
  for (size_t i = 0; i < list->count; i++) {
    kg_ckpt_progress_begin(&prog, "verifying %s", list->entries[i].name);
    kg_ckpt_list_verify(list, i, keys);
  }
  kg_ckpt_progress_end(&prog);
  if (json)
    s_list_print_json(dir, list, keys);
  else
    s_list_print_table(dir, list, keys);
  kg_ckpt_list_destroy(&list);
  return KG_EXIT_OK;
}

/*  latest --json [--memory MEMDIR]: resume-prepare's choice without its
    side effects. */
static int
s_latest_json(const char *dir, const char *memory, int64_t before, const char *run,
              const kg_keyring_t *keys, kg_ckpt_progress_when_t show)
{
  if (!run)
    run = getenv("KGUARD_RUN_ID");
  if (!run || !*run)
    run = "default";
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, show, STDERR_FILENO);
  kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
  kg_ckpt_progress_begin(&prog, "checking %s", dir);
  cJSON *out = NULL;
  char why[600] = "";
  kg_ckpt_resume_opts_t o = {.dir = dir, .memory = memory, .before_ms = before, .run = run,
                             .watch = &watch, .keys = keys};
  int rc = kg_ckpt_resume_choose_tiers(&o, &out, why, sizeof why);
  kg_ckpt_progress_end(&prog);
  if (rc < 0) {
    kg_opt_error("%s", why);
    return KG_EXIT_SYSTEM;
  }
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(out, "status");
  bool failed = cJSON_IsString(status) && strcmp(status->valuestring, "failed") == 0;
  char *text = cJSON_PrintUnformatted(out);
  if (text)
    printf("%s\n", text);
  free(text);
  cJSON_Delete(out);
  return failed || !text ? KG_EXIT_SYSTEM : KG_EXIT_OK;
}

/*  latest: the plain choice, newest before TIME, its path on stdout and
    what was passed over on stderr. */
static int
s_latest_text(const char *dir, int64_t before, const kg_keyring_t *keys,
              kg_ckpt_progress_when_t show)
{
  int code;
  int rc;
  kg_ckpt_list_t *list = kg_ckpt_list_scan(dir, keys, false, &rc);
  if (!list) {
    kg_opt_error("cannot read %s: %s", dir, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  kg_ckpt_progress_t prog;
  kg_ckpt_progress_init(&prog, show, STDERR_FILENO);
  kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
  list->watch = &watch;
  kg_ckpt_progress_begin(&prog, "checking %s", dir);
  size_t chosen = 0;
  rc = kg_ckpt_list_latest(list, keys, before, &chosen);
  kg_ckpt_progress_end(&prog);
  size_t upto = rc == 0 ? chosen : list->count;
  char buf[700];
  for (size_t i = 0; i < upto; i++) {
    const char *why = kg_ckpt_list_skip_reason(list, i, before, buf, sizeof buf);
    fprintf(stderr, "skipped %s: %s\n", list->entries[i].name, why ? why : "not chosen");
  }
  code = 1;
  /* A complete, verified set newer than the plain choice wins. */
  int64_t plain_ms = rc == 0 ? list->entries[chosen].sealed_at_ms : INT64_MIN;
  int srcode;
  kg_ckpt_sets_t *sets = kg_ckpt_sets_scan(dir, keys, &srcode);
  for (size_t k = 0; sets && k < sets->count; k++) {
    const kg_ckpt_set_t *st = &sets->sets[k];
    if (st->rc == 0 && st->sealed_at_ms <= plain_ms)
      break;
    char why[1100];
    if (st->rc == 0 && st->sealed_at_ms >= before) {
      fprintf(stderr, "skipped %s: set sealed at or after --before\n", st->path);
      continue;
    }
    kg_ckpt_progress_begin(&prog, "checking set %s", st->path);
    int vrc = kg_ckpt_set_verify(st, keys, &watch, why, sizeof why);
    kg_ckpt_progress_end(&prog);
    if (vrc == 0) {
      printf("%s\n", st->path);
      fprintf(stderr, "chosen set %s: step %" PRId64 ", %" PRId64 " ranks, valid\n", st->path,
              st->step, st->world_size);
      kg_ckpt_sets_destroy(&sets);
      kg_ckpt_list_destroy(&list);
      return 0;
    }
    fprintf(stderr, "skipped %s: %s\n", st->path, why);
  }
  kg_ckpt_sets_destroy(&sets);
  if (rc == 0) {
    const kg_ckpt_entry_t *e = &list->entries[chosen];
    char when[32];
    printf("%s\n", e->path);
    fprintf(stderr, "chosen %s: step %" PRId64 ", sealed %s, valid\n", e->name, e->step,
            kg_clock_iso_ms(e->sealed_at_ms, when, sizeof when));
    code = 0;
  } else {
    kg_opt_error("no consistent checkpoint in %s", dir);
  }
  kg_ckpt_list_destroy(&list);
  return code;
}


int
kg_ckpt_cli_latest(int argc, char **argv)
{
  const char *dir = NULL, *run = NULL, *memory = NULL;
  bool json = false;
  int64_t before = INT64_MAX;
  kg_ckpt_progress_when_t show = KG_CKPT_PROGRESS_AUTO;
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_ckpt_latest_cmd, argc, argv);
  p.parent = &kg_ckpt_cmd;
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    if (id == KG_OPT_EXIT)
      return p.code;
    if (id == KG_CKPT_O_BEFORE) {
      if (kg_ckpt_parse_time(p.value, &before) < 0)
        return kg_ckpt_cli_usage("--before needs ISO 8601 or ms since the epoch", p.value);
    } else if (id == KG_CKPT_O_PROGRESS) {
      if (kg_ckpt_cli_progress(p.value, &show))
        return KG_EXIT_USAGE;
    } else if (id == KG_CKPT_O_JSON) {
      json = true;
    } else if (id == KG_CKPT_O_RUN) {
      run = p.value;
    } else if (id == KG_CKPT_O_MEMORY) {
      memory = p.value;
    } else if (dir)
      return kg_ckpt_cli_usage("unexpected argument", p.value);
    else
      dir = p.value;
  }
  if (!dir)
    return kg_ckpt_cli_usage("needs CKPT_DIR", NULL);
  if (run && !json)
    return kg_ckpt_cli_usage("--run chooses among one run's checkpoints: add --json", run);
  if (memory && !json)
    return kg_ckpt_cli_usage("--memory chooses between memory and disk as resume-prepare "
                             "does: add --json", memory);
  const kg_keyring_t *keys = NULL;
  /* With --memory, as for resume-prepare, a directory that does not exist
     holds nothing yet (a run with no snapshot, or none on disk yet). */
  int code = 0;
  if (!memory || access(dir, F_OK) == 0)
    code = kg_ckpt_cli_need(dir, true);
  if (code == 0 && memory && access(memory, F_OK) == 0)
    code = kg_ckpt_cli_need(memory, true);
  if (code == 0)
    code = kg_ckpt_cli_keys(&keys);
  if (code)
    return code;
  return json ? s_latest_json(dir, memory, before, run, keys, show)
              : s_latest_text(dir, before, keys, show);
}
