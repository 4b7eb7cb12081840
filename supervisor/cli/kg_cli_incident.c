/*  kguard incident: list incident records, show one for a person, export
    one as a minimal repro request with personal and machine details
    removed (diag/kg_repro.h). Reading commands never create the state
    directory. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "kg_cli.h"
#include "kg_cli_incident.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_paths.h"
#include "kg_repro.h"
#include "kg_scrub.h"
#include "kg_tokens.h"

extern char **environ;

enum { O_OUTPUT = 1, O_CODE, O_ENV, O_JSON, O_STATE };

#define S_STATE_OPT                                                                   \
  {O_STATE, 0, "state-dir", "DIR",                                                    \
   "state directory (default $KGUARD_STATE_DIR, $XDG_STATE_HOME/kguard, "             \
   "~/.local/state/kguard)", 0}
#define S_END {0, 0, NULL, NULL, NULL, 0}

static const kg_opt_exit_t s_exits[] = {
  {"0", "done (list: also when there are none)"},
  {"100", "usage error, unknown incident or not an incident record"},
  {"111", "I/O error"},
  {NULL, NULL},
};

static const kg_opt_t s_list_opts[] = {
  {O_JSON, 0, "json", NULL, "print the same as a JSON array", 0},
  S_STATE_OPT,
  S_END,
};

static const kg_cmd_t s_list_cmd = {
  .name = "incident list",
  .summary = "list the incidents, newest first",
  .usage = "[--json] [--state-dir DIR]",
  .about = "Print one line per incident, newest first: its id, local time, kind (the error "
           "family and backend), kguard's decision and where it happened (the notebook and "
           "cell, or the command).",
  .opts = s_list_opts,
  .exits = s_exits,
};

static const kg_opt_t s_show_opts[] = {
  {O_JSON, 0, "json", NULL, "print the record as it is stored", 0},
  S_STATE_OPT,
  S_END,
};

static const kg_cmd_t s_show_cmd = {
  .name = "incident show",
  .summary = "show an incident for reading",
  .usage = "ID|FILE [--json] [--state-dir DIR]",
  .about = "Print an incident for reading: what, where, the decision, exit status, "
           "checkpoint restored, versions, the first error with its traceback, the "
           "device-side assertion, the cell and the last lines of stderr. ID is an incident's "
           "id (as list prints it) or the path of a record.",
  .opts = s_show_opts,
  .exits = s_exits,
};

static const kg_opt_t s_export_opts[] = {
  {O_OUTPUT, 'o', "output", "FILE", "write there instead of standard output", 0},
  {O_CODE, 0, "include-code", NULL, "keep the cell code and the traceback's code lines", 0},
  {O_ENV, 0, "include-env", NULL, "keep the environment values that are not secret-looking",
   0},
  {O_JSON, 0, "json", NULL, "write JSON instead of Markdown", 0},
  S_STATE_OPT,
  S_END,
};

static const kg_cmd_t s_export_cmd = {
  .name = "incident export",
  .summary = "write an incident as a shareable repro request",
  .usage = "ID|FILE [-o FILE] [--include-code] [--include-env] [--json] [--state-dir DIR]",
  .about = "Write the minimal repro request for an incident: the first error and the "
           "device-side assertion line, the operator and the tensor shapes/dtypes seen in the "
           "traceback, the backend, the Python/PyTorch/CUDA/HIP/driver versions, the device "
           "names and the diagnostic variables, as Markdown to paste into an issue (--json: "
           "as JSON). ID is an incident's id (as list prints it) or the path of a record.\n\n"
           "Removed unless asked for: directories of paths (file names stay; library files "
           "keep their path inside site-packages), the user and host names, secret-looking "
           "environment values and credentials recognised by their shape (tokens, API keys, "
           "private keys, passwords in URLs), GPU UUIDs, other environment values "
           "(--include-env keeps them) and the cell code with the traceback's code lines "
           "(--include-code). Records never hold the kernel's secret values: they are masked "
           "when the incident is written.",
  .opts = s_export_opts,
  .exits = s_exits,
};

static const kg_cmd_t *const s_subs[] = {&s_list_cmd, &s_show_cmd, &s_export_cmd, NULL};

const kg_cmd_t kg_cli_incident_cmd = {
  .name = "incident",
  .summary = "list and show incidents; export one as a shareable repro request",
  .usage = "COMMAND [ARGS...]",
  .about = "kguard writes an incident record for every failure it acts on, in the state "
           "directory's incidents/ (never created by these commands: reading needs nothing "
           "to exist). `kguard incident COMMAND --help` describes each command.",
  .subs = s_subs,
  .exits = s_exits,
};

/*  STATE/incidents, STATE from --state-dir or where kguard keeps its state
    (never created here: reading needs nothing to exist). */
static int
s_incidents_dir(const char *state, char *buf, size_t len)
{
  char dir[PATH_MAX];
  int rc = state ? (snprintf(dir, sizeof dir, "%s", state) < (int) sizeof dir ? 0 : -ENAMETOOLONG)
                 : kg_paths_state_dir_name(dir, sizeof dir);
  if (rc == 0 && snprintf(buf, len, "%s/incidents", dir) >= (int) len)
    rc = -ENAMETOOLONG;
  return rc;
}

/*  The words and secrets of this user and machine. */
static kg_scrub_t *
s_scrubber(void)
{
  kg_scrub_t *s = kg_scrub_new();
  if (!s)
    return NULL;
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (eq && kg_tokens_secret_name(*e, (size_t) (eq - *e))) {
      char name[256];
      snprintf(name, sizeof name, "%.*s", (int) (eq - *e < 255 ? eq - *e : 255), *e);
      kg_scrub_add_secret(s, name, eq + 1);
    }
  }
  const char *users[] = {getenv("USER"), getenv("LOGNAME"), NULL};
  struct passwd *pw = getpwuid(getuid());
  users[2] = pw ? pw->pw_name : NULL;
  for (size_t i = 0; i < 3; i++)
    if (users[i])
      kg_scrub_add_word(s, users[i], "<user>");
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) == 0 && *host) {
    kg_scrub_add_word(s, host, "<host>");
    char *dot = strchr(host, '.');
    if (dot) {
      *dot = '\0';
      kg_scrub_add_word(s, host, "<host>");
    }
  }
  return s;
}

/*  A record, parsed, or NULL (not JSON, or no "kguard_incident" key). */
static cJSON *
s_parse_record(const char *text, size_t size)
{
  cJSON *j = cJSON_ParseWithLength(text, size);
  if (!cJSON_IsObject(j) || !cJSON_GetObjectItemCaseSensitive(j, "kguard_incident")) {
    cJSON_Delete(j);
    return NULL;
  }
  return j;
}

static int
s_newest_first(const void *a, const void *b)
{
  const cJSON *x = *(const cJSON *const *) a, *y = *(const cJSON *const *) b;
  const char *ix = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "id"));
  const char *iy = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(y, "id"));
  return strcmp(iy ? iy : "", ix ? ix : "");   /* ids begin with their UTC time */
}

static void
s_list_table(cJSON **recs, size_t n)
{
  kg_incident_row_t *rows = calloc(n ? n : 1, sizeof *rows);
  char (*when)[40] = calloc(n ? n : 1, sizeof *when);
  if (!rows || !when) {
    free(rows);
    free(when);
    return;
  }
  int wid = 2, wtime = 4, wkind = 4, wdec = 8;
  for (size_t i = 0; i < n; i++) {
    kg_incident_row(recs[i], &rows[i]);
    kg_incident_local_time(rows[i].when_ms, when[i], sizeof when[i]);
    wid = (int) strlen(rows[i].id) > wid ? (int) strlen(rows[i].id) : wid;
    wtime = (int) strlen(when[i]) > wtime ? (int) strlen(when[i]) : wtime;
    wkind = (int) strlen(rows[i].kind) > wkind ? (int) strlen(rows[i].kind) : wkind;
    wdec = (int) strlen(rows[i].decision) > wdec ? (int) strlen(rows[i].decision) : wdec;
  }
  printf("%-*s  %-*s  %-*s  %-*s  %s\n", wid, "ID", wtime, "TIME", wkind, "KIND", wdec,
         "DECISION", "WHERE");
  for (size_t i = 0; i < n; i++)
    printf("%-*s  %-*s  %-*s  %-*s  %s\n", wid, rows[i].id, wtime, when[i], wkind, rows[i].kind,
           wdec, rows[i].decision, rows[i].where);
  free(rows);
  free(when);
}

static void
s_list_json(cJSON **recs, size_t n)
{
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; arr && i < n; i++) {
    kg_incident_row_t r;
    kg_incident_row(recs[i], &r);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r.id);
    if (r.when_ms >= 0)
      cJSON_AddNumberToObject(o, "time_ms", (double) r.when_ms);
    else
      cJSON_AddNullToObject(o, "time_ms");
    cJSON_AddStringToObject(o, "kind", r.kind);
    cJSON_AddStringToObject(o, "decision", r.decision);
    cJSON_AddStringToObject(o, "where", r.where);
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(recs[i], "_path");
    cJSON_AddStringToObject(o, "path", cJSON_GetStringValue(path) ? path->valuestring : "");
    cJSON_AddItemToArray(arr, o);
  }
  char *text = arr ? cJSON_Print(arr) : NULL;
  if (text)
    puts(text);
  free(text);
  cJSON_Delete(arr);
}

static int
s_list(const char *state, bool json)
{
  char dir[PATH_MAX];
  int rc = s_incidents_dir(state, dir, sizeof dir);
  if (rc) {
    kg_opt_error("no state directory: %s", kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  DIR *d = opendir(dir);
  if (!d && errno != ENOENT && errno != ENOTDIR) {
    kg_opt_error("cannot read %s: %s", dir, strerror(errno));
    return KG_EXIT_SYSTEM;
  }
  cJSON **recs = NULL;
  size_t n = 0, bad = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 || e->d_name[0] == '.')
      continue;
    char path[PATH_MAX], *text = NULL;
    size_t size = 0;
    snprintf(path, sizeof path, "%.3800s/%.255s", dir, e->d_name);
    cJSON *j = kg_file_read(path, 64u << 20, &text, &size) == 0 ? s_parse_record(text, size)
                                                                 : NULL;
    free(text);
    cJSON **g = j ? realloc(recs, (n + 1) * sizeof *recs) : NULL;
    if (!g) {
      kg_opt_error("%s: not a readable incident record (skipped)", path);
      cJSON_Delete(j);
      bad++;
      continue;
    }
    cJSON_AddStringToObject(j, "_path", path);
    recs = g;
    recs[n++] = j;
  }
  if (d)
    closedir(d);
  if (n > 1)
    qsort(recs, n, sizeof *recs, s_newest_first);
  if (json)
    s_list_json(recs, n);
  else if (n == 0)
    printf("no incidents in %s\n", dir);
  else
    s_list_table(recs, n);
  for (size_t i = 0; i < n; i++)
    cJSON_Delete(recs[i]);
  free(recs);
  return KG_EXIT_OK;
}

/*  The record named by id (an id or a path) into *j, its path into path.
    Returns 0 or an exit code after saying why. */
static int
s_load(const char *id, const char *state, char *path, size_t pathlen, cJSON **j)
{
  *j = NULL;
  if (strchr(id, '/') || (strlen(id) > 5 && strcmp(id + strlen(id) - 5, ".json") == 0))
    snprintf(path, pathlen, "%s", id);
  else {
    if (!*id || strlen(id) > 80
        || strspn(id, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-")
             != strlen(id)) {
      kg_opt_error("'%s' is not an incident id (like 20261202T170304Z-3f9a1c) nor a path",
                   id);
      return KG_EXIT_USAGE;
    }
    char dir[PATH_MAX];
    int rc = s_incidents_dir(state, dir, sizeof dir);
    if (rc) {
      kg_opt_error("no state directory: %s", kg_strerror(rc));
      return KG_EXIT_SYSTEM;
    }
    snprintf(path, pathlen, "%.4000s/%.80s.json", dir, id);
  }
  char *text = NULL;
  size_t size = 0;
  int rc = kg_file_read(path, 64u << 20, &text, &size);
  if (rc == -ENOENT && !strchr(id, '/')) {
    kg_opt_error("no incident %s (kguard incident list shows them)", id);
    return KG_EXIT_USAGE;
  }
  if (rc) {
    kg_opt_error("%s: %s", path, kg_strerror(rc));
    return rc == -ENOENT || rc == -EISDIR ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  *j = s_parse_record(text, size);
  free(text);
  if (!*j) {
    kg_opt_error("%s: not a kguard incident record", path);
    return KG_EXIT_USAGE;
  }
  return 0;
}

static int
s_show(const char *id, const char *state, bool json)
{
  char path[PATH_MAX];
  cJSON *j = NULL;
  int rc = s_load(id, state, path, sizeof path, &j);
  if (rc)
    return rc;
  if (json) {
    char *text = cJSON_Print(j);
    if (text)
      puts(text);
    rc = text ? KG_EXIT_OK : KG_EXIT_SYSTEM;
    free(text);
  } else
    kg_incident_show(stdout, j, path);
  cJSON_Delete(j);
  return rc;
}

static int
s_export(const char *id, const char *state, unsigned flags, bool json, const char *output)
{
  char path[PATH_MAX], err[256] = "";
  cJSON *inc = NULL;
  int rc = s_load(id, state, path, sizeof path, &inc);
  if (rc)
    return rc;
  kg_scrub_t *scrub = s_scrubber();
  cJSON *repro = scrub ? kg_repro_build(inc, scrub, flags, err, sizeof err) : NULL;
  kg_scrub_destroy(&scrub);
  cJSON_Delete(inc);
  if (!repro) {
    kg_opt_error_at(path, "%s", *err ? err : "out of memory");
    return *err ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  char *out = json ? cJSON_Print(repro) : kg_repro_markdown(repro);
  cJSON_Delete(repro);
  if (!out)
    return KG_EXIT_SYSTEM;
  int code = KG_EXIT_OK;
  if (output) {
    size_t n = strlen(out);
    if ((rc = kg_file_write_atomic(output, out, n, 0644)) != 0) {
      kg_opt_error("unable to write %s: %s", output, kg_strerror(rc));
      code = KG_EXIT_SYSTEM;
    }
  } else
    fputs(out, stdout);
  if (!output && out[0] && out[strlen(out) - 1] != '\n')
    putchar('\n');
  free(out);
  return code;
}

int
kg_cli_incident_main(int argc, char **argv)
{
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_cli_incident_cmd, argc, argv);
  int sub = kg_opt_dispatch(&p);
  if (sub < 0)
    return p.code;
  const kg_cmd_t *cmd = s_subs[sub];
  int n;
  char **rest = kg_opt_rest(&p, &n);
  kg_opt_init(&p, cmd, n, rest);
  p.parent = &kg_cli_incident_cmd;
  const char *output = NULL, *state = NULL, *id = NULL;
  unsigned flags = 0;
  bool json = false;
  int opt;
  while ((opt = kg_opt_next(&p)) != KG_OPT_END) {
    switch (opt) {
    case KG_OPT_EXIT: return p.code;
    case KG_OPT_OPERAND:
      if (cmd == &s_list_cmd)
        return kg_opt_usage(&p, "takes no argument, not '%s'", p.value);
      if (id)
        return kg_opt_usage(&p, "expects one incident id or record path, not also '%s'",
                            p.value);
      id = p.value;
      break;
    case O_OUTPUT: output = p.value; break;
    case O_CODE: flags |= KG_REPRO_CODE; break;
    case O_ENV: flags |= KG_REPRO_ENV; break;
    case O_JSON: json = true; break;
    case O_STATE: state = p.value; break;
    }
  }
  if (cmd == &s_list_cmd)
    return s_list(state, json);
  if (!id)
    return kg_opt_usage(&p, "expects one incident id or record path");
  if (cmd == &s_show_cmd)
    return s_show(id, state, json);
  return s_export(id, state, flags, json, output);
}
