/*  kg_run_resume: the run's id and what --resume continues. See
    kg_run_resume.h. */
#include "kg_run_resume.h"

#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_json.h"

static const char *
s_base(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/*  The longest prefix of text[0..n) that ends on a UTF-8 character
    boundary. */
static size_t
s_char_cut(const char *text, size_t n)
{
  while (n > 0 && ((unsigned char) text[n] & 0xC0) == 0x80)
    n--;
  return n;
}

int
kg_run_resume_id(const char *notebook, const cJSON *parameters, char out[KG_RUN_ID_MAX + 1])
{
  size_t cap = strlen(s_base(notebook)) + 1, len = 0;
  char *full = malloc(cap);
  if (!full)
    return KG_ENOMEM;
  len = (size_t) snprintf(full, cap, "%s", s_base(notebook));
  const cJSON *p;
  cJSON_ArrayForEach(p, parameters) {
    char *value = cJSON_PrintUnformatted(p);
    size_t need = len + strlen(p->string) + (value ? strlen(value) : 0) + 3;
    char *grown = value ? realloc(full, need) : NULL;
    if (!grown) {
      free(value);
      free(full);
      return KG_ENOMEM;
    }
    full = grown;
    len += (size_t) snprintf(full + len, need - len, " %s=%s", p->string, value);
    free(value);
  }
  if (len <= KG_RUN_ID_MAX) {
    memcpy(out, full, len + 1);
    free(full);
    return 0;
  }
  unsigned char digest[8];
  crypto_generichash(digest, sizeof digest, (const unsigned char *) full, len, NULL, 0);
  char hex[2 * sizeof digest + 1];
  sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
  size_t keep = s_char_cut(full, KG_RUN_ID_MAX - 2 - (sizeof hex - 1));
  snprintf(out, KG_RUN_ID_MAX + 1, "%.*s #%s", (int) keep, full, hex);
  free(full);
  return 0;
}

/*  The run a skip reason names when it is "another run's" (resume-prepare's
    documented wording, checkpoint/FORMAT.md: "run 'B', not the run being
    resumed ('A')", "set of run 'B', ..."), into run; false otherwise. */
static bool
s_other_run(const char *reason, char *run, size_t size)
{
  const char *at = NULL;
  if (strncmp(reason, "run '", 5) == 0)
    at = reason + 5;
  else if (strncmp(reason, "set of run '", 12) == 0)
    at = reason + 12;
  const char *end = at ? strstr(at, "', not ") : NULL;
  if (!end)
    return false;
  snprintf(run, size, "%.*s", (int) (end - at), at);
  return true;
}

/*  Whether run id is one of notebook's runs (the name, alone or followed by
    its parameters). */
static bool
s_of_notebook(const char *run, const char *notebook)
{
  size_t n = strlen(notebook);
  return strncmp(run, notebook, n) == 0 && (run[n] == '\0' || run[n] == ' ');
}

static void
s_add_skipped(kg_run_resume_choice_t *out, const char *archive, const char *reason)
{
  size_t at = strlen(out->skipped);
  if (at + 1 < sizeof out->skipped)
    snprintf(out->skipped + at, sizeof out->skipped - at, "%sskipped %s: %s", at ? "\n" : "",
             s_base(archive), reason);
}

void
kg_run_resume_decide(const char *run_id, const char *notebook, const char *dir,
                     const char *output, kg_run_resume_choice_t *out)
{
  memset(out, 0, sizeof *out);
  out->step = -1;
  const char *nb = s_base(notebook);
  cJSON *j = output && *output ? cJSON_Parse(output) : NULL;
  const char *status = kg_json_string(j, "status");
  if (!cJSON_IsObject(j) || !status) {
    out->kind = KG_RUN_RESUME_FAILED;
    snprintf(out->line, sizeof out->line, "--resume: no checkpoint could be chosen in %s: "
             "`kguard ckpt resume-prepare` gave no result", dir);
    cJSON_Delete(j);
    return;
  }
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(j, "skipped")) {
    const char *archive = kg_json_string(s, "archive"), *reason = kg_json_string(s, "reason");
    char other[KG_RUN_ID_MAX + 1];
    if (!archive || !reason)
      continue;
    if (!s_other_run(reason, other, sizeof other))
      s_add_skipped(out, archive, reason);
    else if (!out->other[0] && s_of_notebook(other, nb) && strcmp(other, run_id) != 0)
      snprintf(out->other, sizeof out->other, "%s", other);
  }
  const char *archive = kg_json_string(j, "archive");
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
  if (strcmp(status, "restored") == 0 && archive && *archive) {
    out->kind = KG_RUN_RESUME_FROM;
    out->step = cJSON_IsNumber(step) && step->valuedouble >= 0 ? (long long) step->valuedouble
                                                               : -1;
    const char *sealed = kg_json_string(j, "sealed_at");
    snprintf(out->line, sizeof out->line, "resuming run '%s' from step %lld, sealed %s, "
             "verified: %s", run_id, out->step, sealed ? sealed : "(time unknown)", archive);
  }
  else if (strcmp(status, "none") == 0 && out->other[0]) {
    out->kind = KG_RUN_RESUME_OTHER;
    snprintf(out->line, sizeof out->line, "--resume: the checkpoints of %s in %s are of run "
             "'%s', not of this run '%s' (other parameters); give the same parameters to "
             "continue that run, or leave out --resume to start this one fresh", nb, dir,
             out->other, run_id);
  }
  else if (strcmp(status, "none") == 0) {
    out->kind = KG_RUN_RESUME_FRESH;
    snprintf(out->line, sizeof out->line, "no checkpoint of run '%s' in %s: starting fresh",
             run_id, dir);
  }
  else {
    out->kind = KG_RUN_RESUME_FAILED;
    const char *error = kg_json_string(j, "error");
    snprintf(out->line, sizeof out->line, "--resume: no checkpoint could be chosen in %s: %s",
             dir, error ? error : strcmp(status, "restored") == 0 ? "no archive named"
                                                                   : status);
  }
  cJSON_Delete(j);
}
