/*  kguard incident: list incident records, export one as a minimal repro
    request with personal and machine details removed (diag/kg_repro.h). */
#include <ctype.h>
#include <dirent.h>
#include <getopt.h>
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

static void
s_usage(FILE *out)
{
  fputs(
    "usage: kguard incident list [--state-dir DIR]\n"
    "       kguard incident export ID|FILE [-o FILE] [--include-code] [--include-env]\n"
    "                              [--json] [--state-dir DIR]\n"
    "\n"
    "export writes the minimal repro request for an incident (STATE/incidents/ID.json,\n"
    "or a record's path): the first error and the device-side assertion line, the\n"
    "operator and the tensor shapes/dtypes seen in the traceback, the backend, the\n"
    "Python/PyTorch/CUDA/HIP/driver versions, the device names and the diagnostic\n"
    "variables, as Markdown to paste into an issue (--json: as JSON).\n"
    "Removed unless asked for: directories of paths (file names stay; library files\n"
    "keep their path inside site-packages), the user and host names, secret-looking\n"
    "environment values, GPU UUIDs, other environment values (--include-env keeps\n"
    "them) and the cell code with the traceback's code lines (--include-code).\n"
    "\n"
    "  -o, --output FILE  write there instead of standard output\n"
    "  --state-dir DIR    state directory (default $KGUARD_STATE_DIR,\n"
    "                     $XDG_STATE_HOME/kguard, ~/.local/state/kguard)\n"
    "exit codes: 0 written, 100 usage error, unknown incident or not an incident\n"
    "record, 111 I/O error.\n",
    out);
}

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

int
kg_cli_incident_main(int argc, char **argv)
{
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    s_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? KG_EXIT_USAGE : KG_EXIT_OK;
  }
  const char *sub = argv[1];
  enum { O_CODE = 1000, O_ENV, O_JSON, O_STATE };
  static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"include-code", no_argument, NULL, O_CODE},
    {"include-env", no_argument, NULL, O_ENV},
    {"json", no_argument, NULL, O_JSON},
    {"state-dir", required_argument, NULL, O_STATE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};
  const char *output = NULL, *state = NULL;
  unsigned flags = 0;
  bool json = false;
  optind = 2;
  int c;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case O_CODE: flags |= KG_REPRO_CODE; break;
    case O_ENV: flags |= KG_REPRO_ENV; break;
    case O_JSON: json = true; break;
    case O_STATE: state = optarg; break;
    case 'h': s_usage(stdout); return KG_EXIT_OK;
    default: s_usage(stderr); return KG_EXIT_USAGE;
    }
  }
  if (strcmp(sub, "list") == 0)
    return optind == argc ? s_list(state) : KG_EXIT_USAGE;
  if (strcmp(sub, "export") != 0 || optind + 1 != argc) {
    fprintf(stderr, "kguard incident: expected `list` or `export ID` (see kguard incident "
                    "--help)\n");
    return KG_EXIT_USAGE;
  }
  const char *id = argv[optind];
  char path[PATH_MAX];
  if (strchr(id, '/') || (strlen(id) > 5 && strcmp(id + strlen(id) - 5, ".json") == 0))
    snprintf(path, sizeof path, "%s", id);
  else {
    if (!*id || strspn(id, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-")
                  != strlen(id)) {
      fprintf(stderr, "kguard incident: '%s' is not an incident id (like "
                      "20261202T170304Z-3f9a1c) nor a path\n", id);
      return KG_EXIT_USAGE;
    }
    char dir[PATH_MAX];
    int rc = s_incidents_dir(state, dir, sizeof dir);
    if (rc) {
      fprintf(stderr, "kguard incident: no state directory: %s\n", kg_strerror(rc));
      return KG_EXIT_SYSTEM;
    }
    snprintf(path, sizeof path, "%.4000s/%.80s.json", dir, id);
  }
  char *text = NULL;
  size_t size = 0;
  int rc = kg_file_read(path, 64u << 20, &text, &size);
  if (rc) {
    fprintf(stderr, "kguard incident: %s: %s\n", path, kg_strerror(rc));
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
    fprintf(stderr, "kguard incident: %s: %s\n", path, *err ? err : "out of memory");
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
      fprintf(stderr, "kguard incident: unable to write %s: %s\n", output, kg_strerror(rc));
      code = KG_EXIT_SYSTEM;
    }
  } else
    fputs(out, stdout);
  if (!output && out[0] && out[strlen(out) - 1] != '\n')
    putchar('\n');
  free(out);
  return code;
}
