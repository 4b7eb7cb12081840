/*  kg_ckpt_cli_maint: `kguard ckpt manifest` (what kguard.resume() reads
    before loading members in place), `kguard ckpt gc` and `prune`. */
#include "kg_ckpt_cli_maint.h"
#include "kg_ckpt_cli_util.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_ckpt_cmds.h"
#include "kg_ckpt_gc.h"
#include "kg_ckpt_progress.h"
#include "kg_ckpt_quarantine.h"
#include "kg_ckpt_retain.h"
#include "kg_ckpt_util.h"
#include "kg_ckpt_verify.h"
#include "kg_exit.h"
#include "kg_error.h"
#include "kg_keys.h"
#include "kg_opt.h"

/*  The one operand of a command that takes exactly one (FILE, CKPT_DIR),
    or NULL after a message (*code set). */
static const char *
s_one_operand(const kg_cmd_t *cmd, int argc, char **argv, const char *what, int *code)
{
  kg_opt_parser_t p;
  kg_opt_init(&p, cmd, argc, argv);
  p.parent = &kg_ckpt_cmd;
  const char *found = NULL;
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    if (id == KG_OPT_EXIT) {
      *code = p.code;
      return NULL;
    }
    if (found) {
      *code = kg_opt_usage(&p, "needs exactly one %s, not also '%s'", what, p.value);
      return NULL;
    }
    found = p.value;
  }
  if (!found)
    *code = kg_opt_usage(&p, "needs %s", what);
  return found;
}

int
kg_ckpt_cli_manifest(int argc, char **argv)
{
  int code = KG_EXIT_USAGE;
  const char *file = s_one_operand(&kg_ckpt_manifest_cmd, argc, argv, "FILE", &code);
  if (!file)
    return code;
  const kg_keyring_t *keys = NULL;
  code = kg_ckpt_cli_need(file, false);
  if (code == 0)
    code = kg_ckpt_cli_keys(&keys);
  if (code)
    return code;
  kg_ckpt_report_t r;
  int rc = kg_ckpt_verify(file, keys, KG_CKPT_VERIFY_MANIFEST_ONLY, NULL, &r);
  if (rc != 0) {
    kg_opt_error("%s: %s: %s", file, kg_ckpt_status_name(rc), r.reason);
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
    kg_opt_error("out of memory");
  cJSON_Delete(m);
  cJSON_Delete(o);
  free(json);
  kg_ckpt_report_clear(&r);
  return code;
}

int
kg_ckpt_cli_gc(int argc, char **argv)
{
  int code = KG_EXIT_USAGE;
  const char *dir = s_one_operand(&kg_ckpt_gc_cmd, argc, argv, "CKPT_DIR", &code);
  if (!dir)
    return code;
  if ((code = kg_ckpt_cli_need(dir, true)))
    return code;
  kg_ckpt_gc_stats_t st;
  int rc = kg_ckpt_gc(dir, INT64_MAX, &st);
  printf("removed %zu (%llu bytes of temporaries), %zu still being written\n", st.removed,
         st.bytes, st.busy);
  if (rc < 0) {
    kg_opt_error("%s: %s", dir, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  return KG_EXIT_OK;
}

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
kg_ckpt_cli_retain_opt(int id, const char *value, int *keep, int64_t *every)
{
  int64_t v;
  if (id == KG_CKPT_O_KEEP) {
    if (!s_count(value, 1, &v) || v > 1000000)
      return kg_ckpt_cli_usage("--keep needs a count >= 1", value), -1;
    *keep = (int) v;
    return 1;
  }
  if (id == KG_CKPT_O_KEEP_EVERY) {
    if (!s_count(value, 1, &v))
      return kg_ckpt_cli_usage("--keep-every needs a step count >= 1", value), -1;
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
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_ckpt_prune_cmd, argc, argv);
  p.parent = &kg_ckpt_cmd;
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case KG_CKPT_O_OPEN_INCIDENT:
      if (nopen == sizeof open / sizeof *open
          || kg_ckpt_parse_time(p.value, &open[nopen++]) < 0)
        return kg_opt_usage(&p, "--open-incident needs a time (at most 64), not '%s'",
                            p.value);
      break;
    case KG_CKPT_O_RESOLVE: resolve = p.value; break;
    case KG_CKPT_O_DRY_RUN: dry = true; break;
    case KG_CKPT_O_PROGRESS:
      if (kg_ckpt_cli_progress(p.value, &show))
        return KG_EXIT_USAGE;
      break;
    case KG_OPT_OPERAND:
      if (dir)
        return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
      dir = p.value;
      break;
    default:
      if (kg_ckpt_cli_retain_opt(id, p.value, &keep, &every) < 0)
        return KG_EXIT_USAGE;
    }
  }
  if (!dir || (!resolve == !keep))
    return kg_opt_usage(&p, "needs CKPT_DIR and either --keep N or --resolve ID");
  int rc, code = kg_ckpt_cli_need(dir, true);
  if (code)
    return code;
  if (resolve) {
    if (!kg_ckpt_quarantine_id_ok(resolve))
      return kg_opt_usage(&p, "bad incident id '%s'", resolve);
    rc = kg_ckpt_retain_resolve(dir, resolve);
  } else {
    const kg_keyring_t *keys = NULL;
    if ((code = kg_ckpt_cli_keys(&keys)))
      return code;
    kg_ckpt_progress_t prog;
    kg_ckpt_progress_init(&prog, show, STDERR_FILENO);
    kg_ckpt_sink_t watch = {.arg = &prog, .progress = kg_ckpt_progress_update};
    kg_ckpt_progress_begin(&prog, "checking %s", dir);
    rc = kg_ckpt_retain_prune(dir, keys, NULL, keep, every, open, nopen, dry, &watch, stdout);
    kg_ckpt_progress_end(&prog);
  }
  if (rc < 0) {
    kg_opt_error("%s: %s", dir, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  return KG_EXIT_OK;
}
