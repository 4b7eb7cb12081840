/*  kguard incident list over a temporary state directory: records newest
    first (their ids begin with their UTC time), each with its path; files
    that are not incident records skipped with a message, hidden and
    non-JSON files ignored; an empty or missing directory is no error. Its
    output (stdout) is read back from a temporary file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "kg_cli.h"
#include "kg_test.h"

static char s_state[64];

static void
s_record(const char *name, const char *text)
{
  char path[256];
  snprintf(path, sizeof path, "%s/incidents/%s", s_state, name);
  FILE *f = fopen(path, "w");
  KG_CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/*  Run `kguard incident ARGS... --state-dir STATE` and return its exit
    code, its stdout in *out (the caller frees it). */
static int
s_run(const char *sub, const char *flag, char **out)
{
  char *argv[] = {"incident", (char *) sub, "--state-dir", s_state, (char *) flag, NULL};
  int argc = flag ? 5 : 4;
  char file[128];
  snprintf(file, sizeof file, "%s/stdout", s_state);
  fflush(stdout);
  int saved = dup(1);
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  dup2(fd, 1);
  close(fd);
  int code = kg_cli_incident_main(argc, argv);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  FILE *f = fopen(file, "r");
  *out = calloc(1, 1 << 16);
  if (f) {
    size_t n = fread(*out, 1, (1 << 16) - 1, f);
    (*out)[n] = '\0';
    fclose(f);
  }
  unlink(file);
  return code;
}

KG_TEST(incident_list_newest_first)
{
  snprintf(s_state, sizeof s_state, "/tmp/kg-incident-XXXXXX");
  KG_CHECK(mkdtemp(s_state) != NULL);
  char *out = NULL;
  /* no incidents directory yet: nothing, no error */
  KG_CHECK_INT(s_run("list", NULL, &out), 0);
  KG_CHECK(strstr(out, "no incidents") != NULL);
  free(out);

  char dir[128];
  snprintf(dir, sizeof dir, "%s/incidents", s_state);
  KG_CHECK_INT(mkdir(dir, 0700), 0);
  s_record("20261201T100000Z-aaaa.json",
           "{\"kguard_incident\": 1, \"id\": \"20261201T100000Z-aaaa\", \"family\": \"oom\"}");
  s_record("20261202T100000Z-bbbb.json",
           "{\"kguard_incident\": 1, \"id\": \"20261202T100000Z-bbbb\", "
           "\"family\": \"device-assert\", \"policy\": {\"decision\": \"restart\"}}");
  s_record("other.json", "{\"not\": \"an incident\"}");
  s_record(".hidden.json", "{\"kguard_incident\": 1, \"id\": \"hidden\"}");
  s_record("notes.txt", "{\"kguard_incident\": 1, \"id\": \"notes\"}");

  KG_CHECK_INT(s_run("list", "--json", &out), 0);
  cJSON *arr = cJSON_Parse(out);
  KG_CHECK(cJSON_IsArray(arr));
  KG_CHECK_INT(cJSON_GetArraySize(arr), 2);
  const char *ids[] = {"20261202T100000Z-bbbb", "20261201T100000Z-aaaa"};
  for (int i = 0; i < 2 && cJSON_GetArraySize(arr) == 2; i++) {
    const cJSON *o = cJSON_GetArrayItem(arr, i);
    KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "id")), ids[i]);
    char path[256];
    snprintf(path, sizeof path, "%s/%s.json", dir, ids[i]);
    KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "path")), path);
  }
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                 cJSON_GetArrayItem(arr, 0), "decision")), "restart");
  cJSON_Delete(arr);
  free(out);

  /* the table: a header, then the same order */
  KG_CHECK_INT(s_run("list", NULL, &out), 0);
  const char *b = strstr(out, "20261202T100000Z-bbbb"), *a = strstr(out, "20261201T100000Z-aaaa");
  KG_CHECK(strncmp(out, "ID", 2) == 0);
  KG_CHECK(a && b && b < a);
  KG_CHECK(strstr(out, "hidden") == NULL && strstr(out, "notes") == NULL);
  free(out);

  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_state);
  KG_CHECK_INT(system(cmd), 0);
}

KG_TEST_MAIN(KG_CASE(incident_list_newest_first))
