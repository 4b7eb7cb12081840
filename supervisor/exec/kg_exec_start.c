/*  kg_exec_start: the start-time choice of a `kguard exec` run, in words
    (contract in kg_exec_start.h). */
#include "kg_exec_start.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_clock.h"

/*  How many skipped checkpoints the line names; the rest are counted. */
#define S_NAMED 3

char *
kg_exec_start_ago(int64_t ms, char *buf, size_t len)
{
  int64_t s = ms > 0 ? ms / 1000 : 0;
  if (s < 120)
    snprintf(buf, len, "%" PRId64 " s", s);
  else if (s < 2 * 3600)
    snprintf(buf, len, "%" PRId64 " min", s / 60);
  else if (s < 2 * 86400)
    snprintf(buf, len, "%" PRId64 " h", s / 3600);
  else
    snprintf(buf, len, "%" PRId64 " days", s / 86400);
  return buf;
}

int64_t
kg_exec_start_name_step(const char *path)
{
  if (!path)
    return -1;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strncmp(base, "step-", 5) != 0)
    return -1;
  char *end;
  long long v = strtoll(base + 5, &end, 10);
  if (end == base + 5 || *end != '-' || v < 0)
    return -1;
  return (int64_t) v;
}

/*  Which skipped rows are not this run's (never a reason to stop), and
    which are a shard waiting for its set (said by the set, not the shard). */
static bool
s_other_run(const char *reason)
{
  return strstr(reason, "not the run being resumed") || strstr(reason,
                                                               "not of the run being resumed");
}

static bool
s_quiet(const char *reason)
{
  return strncmp(reason, "shard of rank", 13) == 0 || strstr(reason, "at or after the failure");
}

/*  "another run's ('x')" from "run 'x', not the run ..." or "set of run 'x', ...". */
static void
s_short_reason(const char *reason, char *buf, size_t len)
{
  if (strstr(reason, "which you do not trust")) {
    snprintf(buf, len, "signed by a key you do not trust");
    return;
  }
  if (s_other_run(reason)) {
    const char *q = strchr(reason, '\'');
    const char *q2 = q ? strchr(q + 1, '\'') : NULL;
    if (q && q2)
      snprintf(buf, len, "of run '%.*s', not this one", (int) (q2 - q - 1), q + 1);
    else
      snprintf(buf, len, "of another run");
    return;
  }
  /* The verdict and the first clause of its reason: enough to say why. */
  size_t n = strcspn(reason, ";(");
  while (n > 0 && reason[n - 1] == ' ')
    n--;
  snprintf(buf, len, "%.*s", (int) (n > 160 ? 160 : n), reason);
}

/*  Append "; skipped step 40: why, ..." for the rows worth naming. */
static void
s_skipped(const cJSON *resume, const char *dir, char *line, size_t len)
{
  int named = 0, more = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(resume, "skipped")) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "archive");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "reason");
    const char *reason = cJSON_IsString(r) ? r->valuestring : "";
    if (s_quiet(reason))
      continue;
    if (named == S_NAMED) {
      more++;
      continue;
    }
    char why[200];
    s_short_reason(reason, why, sizeof why);
    int64_t step = kg_exec_start_name_step(cJSON_IsString(a) ? a->valuestring : NULL);
    size_t used = strlen(line);
    if (step >= 0)
      snprintf(line + used, len - used, "%s step %" PRId64 ": %s", named ? ";" : "; skipped",
               step, why);
    else
      snprintf(line + used, len - used, "%s %s: %s", named ? ";" : "; skipped",
               cJSON_IsString(a) ? a->valuestring : "?", why);
    named++;
  }
  if (more) {
    size_t used = strlen(line);
    snprintf(line + used, len - used, "; and %d more (kguard ckpt list %s)", more, dir);
  }
}

kg_exec_start_t
kg_exec_start_judge(const cJSON *resume, const char *run, const char *dir, int64_t now_ms,
                    int64_t *step, char *line, size_t len)
{
  *step = -1;
  line[0] = '\0';
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(resume, "status");
  const char *s = cJSON_IsString(status) ? status->valuestring : "";
  if (strcmp(s, "restored") == 0) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(resume, "step");
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(resume, "sealed_at_ms");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(resume, "archive");
    if (!cJSON_IsNumber(st) || !cJSON_IsString(arch) || st->valuedouble < 0) {
      snprintf(line, len, "`kguard ckpt resume-prepare` restored a checkpoint of run %s but "
               "did not say which", run);
      return KG_EXEC_START_FAILED;
    }
    *step = (int64_t) st->valuedouble;
    char ago[32], when[40] = "?";
    int64_t t = cJSON_IsNumber(at) ? (int64_t) at->valuedouble : now_ms;
    kg_clock_iso_ms(t, when, sizeof when);
    snprintf(line, len, "resuming run %s from step %" PRId64 ", sealed %s ago (%s), verified: "
             "%s", run, *step, kg_exec_start_ago(now_ms - t, ago, sizeof ago), when,
             arch->valuestring);
    s_skipped(resume, dir, line, len);
    return KG_EXEC_START_RESUME;
  }
  if (strcmp(s, "none") == 0) {
    int unverified = 0;
    char first[700] = "";
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(resume, "skipped")) {
      const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "archive");
      const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "reason");
      const char *reason = cJSON_IsString(r) ? r->valuestring : "";
      if (s_quiet(reason) || s_other_run(reason))
        continue;
      if (unverified++ == 0)
        snprintf(first, sizeof first, "%.300s: %.380s",
                 cJSON_IsString(a) ? a->valuestring : "?", reason);
    }
    if (unverified > 0) {
      snprintf(line, len, "%d checkpoint(s) of run %s in %s, but none verifies (first: %s): "
               "kguard does not start the run over and lose them; make them verify (the "
               "signing key, `kguard keys`), or start over with --fresh (they stay where they "
               "are)", unverified, run, dir, first);
      return KG_EXEC_START_UNVERIFIED;
    }
    snprintf(line, len, "no checkpoint of run %s in %s: starting fresh", run, dir);
    s_skipped(resume, dir, line, len);
    return KG_EXEC_START_FRESH;
  }
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(resume, "error");
  snprintf(line, len, "`kguard ckpt resume-prepare` failed to choose run %s's checkpoint in "
           "%s: %.600s", run, dir, cJSON_IsString(err) ? err->valuestring
                                                        : "no answer (its message above)");
  return KG_EXEC_START_FAILED;
}
