/*  kg_incident: incident records written privately, ids distinct. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_diagnosis.h"
#include "kg_error.h"
#include "kg_incident.h"
#include "kg_notice.h"
#include "kg_policy.h"
#include "kg_test.h"
#include "kg_test_rules.h"

static int
s_count_entries(const char *dir)
{
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
      n++;
  closedir(d);
  return n;
}

static cJSON *
s_read_json(const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return cJSON_Parse(buf);
}

KG_TEST(incident_write)
{
  kg_classifier_t *rules = kg_test_rules();
  kg_diagnosis_t *d = kg_diagnosis_new(rules);
  const char *line = "../aten/src/ATen/native/cuda/Loss.cu:250: k: block: [0,0,0], thread: "
                     "[3,0,0] Assertion `t >= 0 && t < n_classes` failed.\n";
  kg_diagnosis_feed(d, KG_SRC_RAW_STDERR, NULL, NULL, line, strlen(line), 1796230984123LL);
  kg_diagnosis_confirm(d, NULL, 1796230984200LL);   /* the device probe failed */

  char dir[] = "/tmp/kg-incidents-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  kg_incident_t *inc = kg_incident_new(1796230984500LL);
  const char *id = kg_incident_id(inc);
  KG_CHECK(strlen(id) == 23 && id[8] == 'T' && id[15] == 'Z' && id[16] == '-');
  KG_CHECK_INT(kg_incident_set_diagnosis(inc, d), 0);
  kg_incident_set_cell(inc, "for s in range(100):\n  train(s)", "msg-1", 7);
  kg_incident_set_last_step(inc, 29);
  kg_incident_set_exit(inc, -1, SIGKILL);
  cJSON *v = cJSON_Parse("{\"python\":\"3.11.2\",\"torch\":\"2.8.0\",\"cuda\":\"12.8\"}");
  kg_incident_take_versions(inc, &v);
  KG_CHECK(v == NULL);
  char *envp[] = {"PATH=/bin", "CUDA_LAUNCH_BLOCKING=1", "PYTORCH_CUDA_ALLOC_CONF=x", NULL};
  kg_incident_set_env(inc, envp);
  kg_incident_set_restarts(inc, 1);
  kg_incident_set_policy(inc, "restart", "restart 1 of 3", 0);

  char *path = NULL;
  KG_CHECK_INT(kg_incident_write(inc, dir, &path), 0);
  KG_CHECK(path && strstr(path, id) && strstr(path, ".json"));
  struct stat st;
  KG_CHECK_INT(stat(path, &st), 0);
  KG_CHECK_INT(st.st_mode & 0777, 0600);
  KG_CHECK_INT(s_count_entries(dir), 1); /* no temp file left */
  cJSON *j = s_read_json(path);
  KG_CHECK(j != NULL);
  KG_CHECK_STR(cJSON_GetObjectItem(j, "id")->valuestring, id);
  KG_CHECK_STR(cJSON_GetObjectItem(j, "family")->valuestring, "device-assert");
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "T"), "iso")->valuestring,
               "2026-12-02T17:03:04.123Z");
  KG_CHECK(strstr(cJSON_GetObjectItem(j, "assertion_line")->valuestring, "Assertion `t >= 0"));
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "raw_stderr_tail")), 1);
  KG_CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "cell"), "execution_count")->valueint, 7);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "exit"), "signal_name")->valuestring,
               "SIGKILL");
  cJSON *env = cJSON_GetObjectItem(j, "diagnostic_env");
  KG_CHECK_STR(cJSON_GetObjectItem(env, "CUDA_LAUNCH_BLOCKING")->valuestring, "1");
  KG_CHECK(cJSON_GetObjectItem(env, "PYTORCH_CUDA_ALLOC_CONF") != NULL);
  KG_CHECK(cJSON_GetObjectItem(env, "PATH") == NULL);
  KG_CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "checkpoint")));
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "versions"), "torch")->valuestring,
               "2.8.0");
  cJSON_Delete(j);

  /* the supervisor fills in the restored checkpoint and writes again */
  cJSON *ck = cJSON_Parse("{\"step\":20,\"archive\":\"ckpt-20.tar.zst\"}");
  kg_incident_take_checkpoint(inc, &ck);
  char *path2 = NULL;
  KG_CHECK_INT(kg_incident_write(inc, dir, &path2), 0);
  KG_CHECK_STR(path2, path);
  KG_CHECK_INT(s_count_entries(dir), 1);
  j = s_read_json(path);
  KG_CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "checkpoint"), "step")->valueint, 20);
  cJSON_Delete(j);
  KG_CHECK_INT(stat(path, &st), 0);
  KG_CHECK_INT(st.st_mode & 0777, 0600);

  /* a missing directory is an error, not a crash */
  KG_CHECK(kg_incident_write(inc, "/nonexistent/kguard", NULL) < 0);
  unlink(path);
  rmdir(dir);
  free(path);
  free(path2);
  kg_incident_destroy(&inc);
  KG_CHECK(inc == NULL);
  kg_diagnosis_destroy(&d);
  kg_classifier_destroy(&rules);
}

KG_TEST(incident_ids_differ)
{
  char a[KG_INCIDENT_ID_MAX], b[KG_INCIDENT_ID_MAX];
  kg_incident_make_id(0, a, sizeof a);
  kg_incident_make_id(0, b, sizeof b);
  KG_CHECK(!strncmp(a, "19700101T000000Z-", 17));
  KG_CHECK(strcmp(a, b) != 0);
}

KG_TEST_MAIN(KG_CASE(incident_write), KG_CASE(incident_ids_differ))
