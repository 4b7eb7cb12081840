/*  kguard incident: list incident records, export one as a minimal repro
    request with personal and machine details removed (diag/kg_repro.h). */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "kg_cli.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_paths.h"
#include "kg_repro.h"
#include "kg_scrub.h"

extern char **environ;

enum { O_OUTPUT = 1, O_CODE, O_ENV, O_JSON, O_STATE };

#define S_STATE_OPT                                                                   \
  {O_STATE, 0, "state-dir", "DIR",                                                    \
   "state directory (default $KGUARD_STATE_DIR, $XDG_STATE_HOME/kguard, "             \
   "~/.local/state/kguard)", 0}

static const kg_opt_t s_list_opts[] = {S_STATE_OPT, {0, 0, NULL, NULL, NULL, 0}};

static const kg_cmd_t s_list_cmd = {
  .name = "incident list",
  .summary = "list the incident records",
  .usage = "[--state-dir DIR]",
  .about = "Print one line per incident record in STATE/incidents: its id, the error family "
           "and the title.",
  .opts = s_list_opts,
};

static const kg_opt_t s_export_opts[] = {
  {O_OUTPUT, 'o', "output", "FILE", "write there instead of standard output", 0},
  {O_CODE, 0, "include-code", NULL, "keep the cell code and the traceback's code lines", 0},
  {O_ENV, 0, "include-env", NULL, "keep the environment values that are not secret-looking",
   0},
  {O_JSON, 0, "json", NULL, "write JSON instead of Markdown", 0},
  S_STATE_OPT,
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_cmd_t s_export_cmd = {
  .name = "incident export",
  .summary = "write an incident as a shareable repro request",
  .usage = "ID|FILE [-o FILE] [--include-code] [--include-env] [--json] [--state-dir DIR]",
  .about = "Write the minimal repro request for an incident (STATE/incidents/ID.json, or a "
           "record's path): the first error and the device-side assertion line, the operator "
           "and the tensor shapes/dtypes seen in the traceback, the backend, the "
           "Python/PyTorch/CUDA/HIP/driver versions, the device names and the diagnostic "
           "variables, as Markdown to paste into an issue (--json: as JSON).\n\n"
           "Removed unless asked for: directories of paths (file names stay; library files "
           "keep their path inside site-packages), the user and host names, secret-looking "
           "environment values, GPU UUIDs, other environment values (--include-env keeps "
           "them) and the cell code with the traceback's code lines (--include-code).",
  .opts = s_export_opts,
  .exits = (const kg_opt_exit_t[]){
    {"0", "written"},
    {"100", "usage error, unknown incident or not an incident record"},
    {"111", "I/O error"},
    {NULL, NULL}},
};

static const kg_cmd_t *const s_subs[] = {&s_list_cmd, &s_export_cmd, NULL};

const kg_cmd_t kg_cli_incident_cmd = {
  .name = "incident",
  .summary = "list incidents; export one as a shareable repro request",
  .usage = "COMMAND [ARGS...]",
  .about = "kguard writes an incident record for every failure it acts on, in the state "
           "directory's incidents/. `kguard incident COMMAND --help` describes each command.",
  .subs = s_subs,
};

static int
s_incidents_dir(const char *state, char *buf, size_t len)
{
  if (state) {
    snprintf(buf, len, "%s/incidents", state);
    return 0;
  }
  int rc = kg_paths_state_dir(buf, len);
  if (rc == 0)
    strncat(buf, "/incidents", len - strlen(buf) - 1);
  return rc;
}

/*  Secret-looking variable names. */
static bool
s_secret_name(const char *name, size_t n)
{
  static const char *marks[] = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL",
                                "AUTH", "COOKIE"};
  char up[256];
  snprintf(up, sizeof up, "%.*s", (int) (n < 255 ? n : 255), name);
  for (char *p = up; *p; p++)
    *p = (char) toupper((unsigned char) *p);
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (strstr(up, marks[i]))
      return true;
  return false;
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
    if (eq && s_secret_name(*e, (size_t) (eq - *e))) {
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

static int
s_list(const char *state)
{
  char dir[PATH_MAX];
  int rc = s_incidents_dir(state, dir, sizeof dir);
  DIR *d = rc == 0 ? opendir(dir) : NULL;
  if (!d) {
    printf("no incidents (%s)\n", rc == 0 ? dir : kg_strerror(rc));
    return KG_EXIT_OK;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0 || e->d_name[0] == '.')
      continue;
    char path[PATH_MAX], *text = NULL;
    size_t size = 0;
    snprintf(path, sizeof path, "%.3800s/%.255s", dir, e->d_name);
    if (kg_file_read(path, 16u << 20, &text, &size) != 0)
      continue;
    cJSON *j = cJSON_ParseWithLength(text, size);
    free(text);
    printf("%.*s  %s  %s\n", (int) (n - 5), e->d_name,
           cJSON_GetStringValue(cJSON_GetObjectItem(j, "family")) ?: "?",
           cJSON_GetStringValue(cJSON_GetObjectItem(j, "title")) ?: "");
    cJSON_Delete(j);
  }
  closedir(d);
  return KG_EXIT_OK;
}

/*  `incident list` and `incident export`: argv[0] is the subcommand. */
static int
s_sub_main(const kg_cmd_t *cmd, int argc, char **argv)
{
  kg_opt_parser_t p;
  kg_opt_init(&p, cmd, argc, argv);
  const char *output = NULL, *state = NULL, *id = NULL;
  unsigned flags = 0;
  bool json = false;
  int opt;
  while ((opt = kg_opt_next(&p)) != KG_OPT_END) {
    switch (opt) {
    case KG_OPT_EXIT: return p.code;
    case KG_OPT_OPERAND:
      if (cmd == &s_list_cmd || id)
        return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
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
    return s_list(state);
  if (!id)
    return kg_opt_usage(&p, "needs an incident ID or a record's FILE");

  char path[PATH_MAX];
  if (strchr(id, '/') || (strlen(id) > 5 && strcmp(id + strlen(id) - 5, ".json") == 0))
    snprintf(path, sizeof path, "%s", id);
  else {
    if (!*id || strspn(id, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-")
                  != strlen(id)) {
      return kg_opt_usage(&p, "'%s' is not an incident id (like 20261202T170304Z-3f9a1c) "
                          "nor a path", id);
    }
    char dir[PATH_MAX];
    int rc = s_incidents_dir(state, dir, sizeof dir);
    if (rc) {
      kg_opt_error("no state directory: %s", kg_strerror(rc));
      return KG_EXIT_SYSTEM;
    }
    snprintf(path, sizeof path, "%.4000s/%.80s.json", dir, id);
  }
  char *text = NULL;
  size_t size = 0;
  int rc = kg_file_read(path, 64u << 20, &text, &size);
  if (rc) {
    kg_opt_error("%s: %s", path, kg_strerror(rc));
    return KG_EXIT_USAGE;
  }
  cJSON *inc = cJSON_ParseWithLength(text, size);
  free(text);
  char err[256] = "";
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
  int i = kg_opt_dispatch(&p);
  if (i < 0)
    return p.code;
  int n;
  char **rest = kg_opt_rest(&p, &n);
  return s_sub_main(s_subs[i], n, rest);
}
