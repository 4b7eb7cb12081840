/*  kg_cli_incident_show: an incident record as a person reads it (the row
    of `kguard incident list`, the page of `kguard incident show`). */
#include "kg_cli_incident.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kg_repro.h"

static const char *
s_str(const cJSON *o, const char *key)
{
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const cJSON *
s_get(const cJSON *o, const char *key)
{
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

/*  "2026-12-02T17:03:04.123Z" → ms since the epoch, or -1. */
static int64_t
s_iso_ms(const char *iso)
{
  struct tm tm = {0};
  int ms = 0;
  if (!iso || sscanf(iso, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  time_t t = timegm(&tm);
  return t == (time_t) -1 ? -1 : (int64_t) t * 1000 + ms;
}

void
kg_incident_local_time(int64_t ms, char *buf, size_t len)
{
  struct tm tm;
  time_t t = (time_t) (ms / 1000);
  if (ms < 0 || !localtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm) == 0)
    snprintf(buf, len, "?");
}

/*  The notebook's file name, or NULL. */
static const char *
s_notebook(const cJSON *j)
{
  const char *nb = s_str(j, "notebook");
  if (!nb || !*nb)
    return NULL;
  const char *slash = strrchr(nb, '/');
  return slash && slash[1] ? slash + 1 : nb;
}

/*  The command of a `kguard exec` record, joined by spaces, into buf. */
static void
s_command(const cJSON *argv, char *buf, size_t len)
{
  size_t k = 0;
  buf[0] = '\0';
  const cJSON *a;
  cJSON_ArrayForEach(a, argv)
  {
    if (!cJSON_IsString(a) || k + 1 >= len)
      continue;
    int n = snprintf(buf + k, len - k, "%s%s", k ? " " : "", a->valuestring);
    k = n < 0 ? k : k + (size_t) n < len ? k + (size_t) n : len - 1;
  }
}

void
kg_incident_row(const cJSON *j, kg_incident_row_t *row)
{
  memset(row, 0, sizeof *row);
  row->id = s_str(j, "id") ? s_str(j, "id") : "?";
  const cJSON *t = s_get(s_get(j, "T"), "ms");
  row->when_ms = cJSON_IsNumber(t) ? (int64_t) t->valuedouble : s_iso_ms(s_str(j, "created"));
  const cJSON *job = s_get(j, "job");
  const cJSON *root = s_get(job, "root_cause");
  const char *family = s_str(j, "family") ? s_str(j, "family") : s_str(root, "family");
  const char *backend = s_str(j, "backend");
  if (!family)
    snprintf(row->kind, sizeof row->kind, "?");
  else if (backend && strcmp(backend, "unknown") != 0)
    snprintf(row->kind, sizeof row->kind, "%s (%s)", family, backend);
  else
    snprintf(row->kind, sizeof row->kind, "%s", family);
  row->decision = s_str(s_get(j, "policy"), "decision");
  if (!row->decision)
    row->decision = "-";
  const cJSON *cell = s_get(j, "cell"), *exec = s_get(j, "exec");
  const cJSON *count = s_get(cell, "execution_count");
  const char *nb = s_notebook(j);
  if (exec) {
    char cmd[sizeof row->where - sizeof "command: " + 1];   /* cut to fit the column */
    s_command(s_get(exec, "command"), cmd, sizeof cmd);
    snprintf(row->where, sizeof row->where, "command: %s", *cmd ? cmd : "?");
  } else if (job) {
    const cJSON *node = s_get(root, "node"), *gen = s_get(job, "generation");
    snprintf(row->where, sizeof row->where, "job: node %d%s%s, generation %d",
             cJSON_IsNumber(node) ? node->valueint : -1, s_str(root, "host") ? " on " : "",
             s_str(root, "host") ? s_str(root, "host") : "",
             cJSON_IsNumber(gen) ? gen->valueint : -1);
  } else if (cell && cJSON_IsNumber(count))
    snprintf(row->where, sizeof row->where, "%s%scell [%d]", nb ? nb : "notebook",
             nb ? ", " : " ", count->valueint);
  else
    snprintf(row->where, sizeof row->where, "%s", nb ? nb : "notebook");
  /* one line each: a command may hold anything */
  for (char *p = row->where; *p; p++)
    if (*p == '\n' || *p == '\t' || *p == '\r')
      *p = ' ';
}

/* ------------------------------------------------------------------------
   `kguard incident show`. */

static void
s_field(FILE *out, const char *name, const char *value)
{
  if (value && *value)
    fprintf(out, "  %-11s %s\n", name, value);
}

/*  Text indented by two spaces per line, ANSI escapes removed, under title
    (none when NULL: a continuation). */
static void
s_block(FILE *out, const char *title, const char *text)
{
  if (!text || !*text)
    return;
  char *clean = kg_repro_strip_ansi(text);
  if (title)
    fprintf(out, "\n%s\n", title);
  for (const char *p = clean ? clean : text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t) (nl - p) : strlen(p);
    fprintf(out, "  %.*s\n", (int) n, p);
    p += n + (nl ? 1 : 0);
  }
  free(clean);
}

static void
s_exit(const cJSON *e, char *buf, size_t len)
{
  const cJSON *code = s_get(e, "code");
  const char *sig = s_str(e, "signal_name");
  if (cJSON_IsNumber(code))
    snprintf(buf, len, "exit status %d", code->valueint);
  else if (sig)
    snprintf(buf, len, "killed by %s", sig);
  else
    snprintf(buf, len, "still running when recorded");
}

static void
s_versions(const cJSON *v, char *buf, size_t len)
{
  static const struct {
    const char *key, *name;
  } keys[] = {{"python", "Python"}, {"torch", "PyTorch"}, {"cuda", "CUDA"}, {"hip", "HIP"},
              {"cudnn", "cuDNN"}};
  size_t k = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof keys / sizeof keys[0] && k + 1 < len; i++) {
    const cJSON *x = s_get(v, keys[i].key);
    char val[64];
    if (cJSON_IsString(x))
      snprintf(val, sizeof val, "%s", x->valuestring);
    else if (cJSON_IsNumber(x))
      snprintf(val, sizeof val, "%g", x->valuedouble);
    else
      continue;
    int n = snprintf(buf + k, len - k, "%s%s %s", k ? ", " : "", keys[i].name, val);
    k = n < 0 || k + (size_t) n >= len ? len - 1 : k + (size_t) n;
  }
  if (!*buf && s_str(v, "error"))
    snprintf(buf, len, "(%s)", s_str(v, "error"));
}

/*  "NAME=value, NAME=value" of an object of strings, or names of an array. */
static void
s_names(const cJSON *o, char *buf, size_t len)
{
  size_t k = 0;
  buf[0] = '\0';
  const cJSON *e;
  cJSON_ArrayForEach(e, o)
  {
    if (!cJSON_IsString(e) || k + 1 >= len)
      continue;
    int n = cJSON_IsObject(o) ? snprintf(buf + k, len - k, "%s%s=%s", k ? ", " : "", e->string,
                                         e->valuestring)
                              : snprintf(buf + k, len - k, "%s%s", k ? ", " : "", e->valuestring);
    k = n < 0 || k + (size_t) n >= len ? len - 1 : k + (size_t) n;
  }
}

static void
s_checkpoint(const cJSON *c, char *buf, size_t len)
{
  const cJSON *step = s_get(c, "step");
  if (!cJSON_IsObject(c))
    snprintf(buf, len, "none restored");
  else if (cJSON_IsNumber(step))
    snprintf(buf, len, "step %lld%s%s", (long long) step->valuedouble,
             s_str(c, "archive") ? " from " : "", s_str(c, "archive") ? s_str(c, "archive") : "");
  else
    snprintf(buf, len, "none restored");
}

/*  The header's fields: when, what, where, and what kguard decided. */
static void
s_summary(FILE *out, const cJSON *j, const kg_incident_row_t *row, const char *path)
{
  char when[40], buf[1024];
  kg_incident_local_time(row->when_ms, when, sizeof when);
  fprintf(out, "incident %s\n", row->id);
  s_field(out, "file", path);
  snprintf(buf, sizeof buf, "%s (local time)", when);
  s_field(out, "time", buf);
  const cJSON *sticky = s_get(j, "sticky");
  snprintf(buf, sizeof buf, "%s%s", row->kind,
           cJSON_IsBool(sticky) ? (cJSON_IsTrue(sticky) ? ", sticky: the process was poisoned"
                                                        : ", not sticky: advice only")
                                : "");
  s_field(out, "kind", buf);
  s_field(out, "what", s_str(j, "title"));
  s_field(out, "where", row->where);
  s_field(out, "notebook", s_str(j, "notebook"));
  const cJSON *policy = s_get(j, "policy"), *restarts = s_get(j, "restart_count");
  if (policy) {
    snprintf(buf, sizeof buf, "%s%s%s", row->decision, s_str(policy, "reason") ? ": " : "",
             s_str(policy, "reason") ? s_str(policy, "reason") : "");
    s_field(out, "decision", buf);
  }
  if (cJSON_IsNumber(restarts)) {
    snprintf(buf, sizeof buf, "%d", restarts->valueint);
    s_field(out, "restarts", buf);
  }
}

/*  The process and its surroundings: exit, step, checkpoint, versions,
    variables. */
static void
s_context(FILE *out, const cJSON *j)
{
  char buf[1024];
  if (s_get(j, "exit")) {
    s_exit(s_get(j, "exit"), buf, sizeof buf);
    s_field(out, "exit", buf);
  }
  const cJSON *step = s_get(j, "last_step");
  if (cJSON_IsNumber(step)) {
    snprintf(buf, sizeof buf, "%lld", (long long) step->valuedouble);
    s_field(out, "last step", buf);
  }
  s_checkpoint(s_get(j, "checkpoint"), buf, sizeof buf);
  s_field(out, "checkpoint", buf);
  s_versions(s_get(j, "versions"), buf, sizeof buf);
  s_field(out, "versions", buf);
  s_names(s_get(j, "diagnostic_env"), buf, sizeof buf);
  s_field(out, "diagnostic", buf);
  s_names(s_get(j, "secret_env"), buf, sizeof buf);
  if (*buf) {
    char line[1100];
    snprintf(line, sizeof line, "%s (values masked in this record)", buf);
    s_field(out, "secrets", line);
  }
}

/*  The evidence: the first error and its traceback, the assertion, the
    cell, the last lines of stderr. */
static void
s_evidence(FILE *out, const cJSON *j)
{
  char buf[1024];
  const cJSON *fe = s_get(j, "first_error");
  if (s_str(fe, "evalue")) {
    snprintf(buf, sizeof buf, "%s: %s", s_str(fe, "ename") ? s_str(fe, "ename") : "Error",
             s_str(fe, "evalue"));
    s_block(out, "first error:", buf);
    const cJSON *line;
    bool first = true;
    cJSON_ArrayForEach(line, s_get(fe, "traceback"))
    {
      if (cJSON_IsString(line))
        s_block(out, first ? "traceback:" : NULL, line->valuestring);
      first = false;
    }
  } else
    s_block(out, "first error:", s_str(fe, "text"));
  s_block(out, "device-side assertion:", s_str(j, "assertion_line"));
  s_block(out, "cell:", s_str(s_get(j, "cell"), "code"));
  const cJSON *tail = s_get(j, "raw_stderr_tail");
  if (cJSON_GetArraySize(tail) > 0) {
    fprintf(out, "\nstderr, last lines:\n");
    const cJSON *l;
    cJSON_ArrayForEach(l, tail) if (cJSON_IsString(l)) fprintf(out, "  %s\n", l->valuestring);
  }
}

void
kg_incident_show(FILE *out, const cJSON *j, const char *path)
{
  kg_incident_row_t row;
  kg_incident_row(j, &row);
  s_summary(out, j, &row, path);
  s_context(out, j);
  s_evidence(out, j);
  const cJSON *following = s_get(j, "following");
  if (cJSON_GetArraySize(following) > 0)
    fprintf(out, "\n%d later error(s) followed it (kguard incident show %s --json)\n",
            cJSON_GetArraySize(following), row.id);
  if (s_str(j, "kernel_log"))
    fprintf(out, "\nkernel log: %s\n", s_str(j, "kernel_log"));
  fprintf(out, "\nto share it: kguard incident export %s\n", row.id);
}
