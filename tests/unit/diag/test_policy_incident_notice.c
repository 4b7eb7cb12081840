/*  Restart policy, incident records and user notices. */
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

/* ---- policy ---- */

KG_TEST(policy_budget_and_backoff)
{
  kg_policy_t *p = kg_policy_new(NULL);
  int64_t delay = -1;
  const char *reason = NULL;
  KG_CHECK_INT(kg_policy_decide(p, 0, "a", &delay, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(delay, 0); /* the first restart is immediate */
  KG_CHECK(reason && strstr(reason, "restart 1 of 3"));
  KG_CHECK_INT(kg_policy_decide(p, 1000, "b", &delay, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(delay, 1000);
  KG_CHECK_INT(kg_policy_decide(p, 2000, "c", &delay, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(delay, 2000);
  KG_CHECK_INT(kg_policy_restarts_in_window(p, 2000), 3);
  KG_CHECK_INT(kg_policy_decide(p, 3000, "d", &delay, &reason), KG_POLICY_GIVE_UP);
  KG_CHECK(strstr(reason, "budget") && strstr(reason, "%kguard restart") &&
           strstr(reason, "10 min"));
  /* the window slides: 10 minutes after the first restart one slot is free */
  KG_CHECK_INT(kg_policy_decide(p, 600000, "e", &delay, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(delay, 2000);
  KG_CHECK_INT(kg_policy_restart_count(p), 4);
  kg_policy_destroy(&p);
  KG_CHECK(p == NULL);
}

KG_TEST(policy_backoff_cap)
{
  kg_policy_config_t cfg;
  kg_policy_config_default(&cfg);
  cfg.max_restarts = 10;
  cfg.backoff_initial_ms = 1000;
  cfg.backoff_max_ms = 5000;
  kg_policy_t *p = kg_policy_new(&cfg);
  int64_t expect[] = {0, 1000, 2000, 4000, 5000, 5000};
  for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
    int64_t delay = -1;
    char sig[8];
    snprintf(sig, sizeof sig, "s%zu", i);
    KG_CHECK_INT(kg_policy_decide(p, (int64_t) i * 10, sig, &delay, NULL), KG_POLICY_RESTART);
    KG_CHECK_INT(delay, expect[i]);
  }
  kg_policy_destroy(&p);
}

KG_TEST(policy_same_signature_twice)
{
  kg_policy_t *p = kg_policy_new(NULL);
  const char *reason;
  KG_CHECK_INT(kg_policy_decide(p, 0, "device-assert:aa:bb", NULL, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(kg_policy_decide(p, 10, "device-assert:aa:bb", NULL, &reason), KG_POLICY_GIVE_UP);
  KG_CHECK(strstr(reason, "twice in a row") != NULL);
  /* unknown signatures never count as a repeat */
  kg_policy_reset(p);
  KG_CHECK_INT(kg_policy_restart_count(p), 0);
  KG_CHECK_INT(kg_policy_decide(p, 20, NULL, NULL, NULL), KG_POLICY_RESTART);
  KG_CHECK_INT(kg_policy_decide(p, 30, "", NULL, NULL), KG_POLICY_RESTART);
  /* after a reset the same signature restarts again, once */
  kg_policy_reset(p);
  KG_CHECK_INT(kg_policy_decide(p, 40, "device-assert:aa:bb", NULL, NULL), KG_POLICY_RESTART);
  KG_CHECK_INT(kg_policy_decide(p, 50, "x", NULL, NULL), KG_POLICY_RESTART);
  KG_CHECK_INT(kg_policy_decide(p, 60, "device-assert:aa:bb", NULL, NULL), KG_POLICY_RESTART);
  kg_policy_destroy(&p);
}

/* ---- incident ---- */

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

/* ---- notices ---- */

static const char *
s_data(cJSON *data, const char *mime)
{
  return cJSON_GetObjectItem(data, mime)->valuestring;
}

KG_TEST(notice_sticky_rocm_and_cuda)
{
  kg_classifier_t *rules = kg_test_rules();
  kg_notice_info_t info = {0};
  info.family = kg_classifier_family(rules, "launch-failure");
  info.rule_id = "hip-719";
  info.note = "ROCm form of a device-side assert likely (asserts are compiled out on ROCm builds)";
  info.backend = KG_BACKEND_ROCM;
  info.matched_line = "RuntimeError: HIP error: unspecified launch failure";
  info.execution_count = 2;
  info.cell_code = "\nfor step in range(100):\n    train(step)\n";
  info.incident_id = "20261202T170304Z-3f9a1c";
  info.incident_path = "/state/incidents/20261202T170304Z-3f9a1c.json";
  info.restarted = true;
  cJSON *data = NULL, *meta = NULL;
  KG_CHECK_INT(kg_notice_build(KG_NOTICE_STICKY_RESTART, &info, &data, &meta), 0);
  const char *md = s_data(data, "text/markdown"), *txt = s_data(data, "text/plain");
  for (int i = 0; i < 2; i++) {
    const char *s = i ? txt : md;
    KG_CHECK(strstr(s, "CUDA_LAUNCH_BLOCKING") == NULL);
    KG_CHECK(strstr(s, "AMD_SERIALIZE_KERNEL=3") != NULL);
    KG_CHECK(strstr(s, info.family->first_check) != NULL);
    KG_CHECK(strstr(s, info.family->avoid) != NULL);
    KG_CHECK(strstr(s, "ROCm form of a device-side assert likely") != NULL);
    KG_CHECK(strstr(s, "Cell [2]") && strstr(s, "for step in range(100):"));
    KG_CHECK(strstr(s, "(+1 more line)") != NULL);
    KG_CHECK(strstr(s, info.incident_path) != NULL);
    KG_CHECK(strstr(s, "restarted") != NULL);
    /* What a client that sends one cell at a time sees: its next cell runs. */
    KG_CHECK(strstr(s, "a cell sent after the failing cell's error reply runs in the fresh "
                       "kernel") != NULL);
    KG_CHECK(strstr(s, "training starts over") != NULL);
    KG_CHECK(strstr(s, "not for timing") != NULL); /* the hint is for a separate run */
  }
  cJSON *k = cJSON_GetObjectItem(meta, "kguard");
  KG_CHECK_STR(cJSON_GetObjectItem(k, "event")->valuestring, "sticky-restart");
  KG_CHECK_STR(cJSON_GetObjectItem(k, "family")->valuestring, "launch-failure");
  KG_CHECK_STR(cJSON_GetObjectItem(k, "incident")->valuestring, info.incident_id);
  KG_CHECK(cJSON_IsNull(cJSON_GetObjectItem(k, "restored_step")));
  cJSON_Delete(data);
  cJSON_Delete(meta);

  /* CUDA, with a restored checkpoint and in diagnostic mode */
  info.family = kg_classifier_family(rules, "device-assert");
  info.backend = KG_BACKEND_CUDA;
  info.note = NULL;
  info.assertion_line = "Loss.cu:250: k: block: [0,0,0], thread: [3,0,0] Assertion `t < n` failed.";
  info.checkpoint_restored = true;
  info.restored_step = 20;
  info.restored_archive = "kguard-checkpoints/step-20.kgc";
  info.restored_sealed = "2026-12-02T17:01:00.000Z";
  info.restored_digest = "blake2b:0123456789abcdef0123456789abcdef";
  info.diagnostic = true;
  KG_CHECK_INT(kg_notice_build(KG_NOTICE_STICKY_RESTART, &info, &data, &meta), 0);
  md = s_data(data, "text/markdown");
  KG_CHECK(strstr(md, "CUDA_LAUNCH_BLOCKING=1") != NULL);
  KG_CHECK(strstr(md, "AMD_SERIALIZE_KERNEL") == NULL);
  KG_CHECK(strstr(md, "diagnostic, not for timing") != NULL);
  KG_CHECK(strstr(md, "restored step 20") && strstr(md, info.restored_sealed) &&
           strstr(md, "blake2b:0123456789abcdef"));
  KG_CHECK(strstr(md, "Assertion `t < n` failed.") != NULL);
  KG_CHECK(strstr(md, "The GPU must be broken") != NULL);
  k = cJSON_GetObjectItem(meta, "kguard");
  KG_CHECK_INT(cJSON_GetObjectItem(k, "restored_step")->valueint, 20);
  KG_CHECK_STR(cJSON_GetObjectItem(k, "restored_archive")->valuestring, info.restored_archive);
  KG_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(k, "diagnostic")));
  cJSON_Delete(data);
  cJSON_Delete(meta);
  kg_classifier_destroy(&rules);
}

KG_TEST(notice_advice_down_died_diagnostic)
{
  kg_classifier_t *rules = kg_test_rules();
  kg_notice_info_t info = {0};
  info.family = kg_classifier_family(rules, "out-of-memory");
  info.backend = KG_BACKEND_ROCM;
  info.execution_count = 5;
  info.cell_code = "model(x)";
  cJSON *data, *meta;
  KG_CHECK_INT(kg_notice_build(KG_NOTICE_ADVICE, &info, &data, &meta), 0);
  const char *md = s_data(data, "text/markdown");
  KG_CHECK(strstr(md, "no restart") && strstr(md, "Shapes, tensor lifetimes, process memory"));
  KG_CHECK(strstr(md, "Every CUDA error is a VRAM shortage") != NULL);
  KG_CHECK(strstr(md, "PYTORCH_HIP_ALLOC_CONF") && !strstr(md, "CUDA_LAUNCH_BLOCKING"));
  KG_CHECK(strstr(md, "restarted:") == NULL);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "kguard"), "event")->valuestring,
               "advice");
  cJSON_Delete(data);
  cJSON_Delete(meta);

  info.family = kg_classifier_family(rules, "device-assert");
  info.reason = "the same failure happened twice in a row";
  KG_CHECK_INT(kg_notice_build(KG_NOTICE_DOWN, &info, &data, NULL), 0);
  md = s_data(data, "text/markdown");
  KG_CHECK(strstr(md, "twice in a row") && strstr(md, "%kguard restart") &&
           strstr(md, "KernelDown"));
  KG_CHECK(!strstr(md, "CUDA_LAUNCH_BLOCKING"));
  cJSON_Delete(data);

  memset(&info, 0, sizeof info);
  info.exit_code = -1;
  info.signo = SIGABRT;
  info.restarted = true;
  KG_CHECK_INT(kg_notice_build(KG_NOTICE_KERNEL_DIED, &info, &data, &meta), 0);
  KG_CHECK(strstr(s_data(data, "text/plain"), "signal 6 (SIGABRT)") != NULL);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "kguard"), "event")->valuestring,
               "kernel-died");
  cJSON_Delete(data);
  cJSON_Delete(meta);

  info.backend = KG_BACKEND_ROCM;
  info.diagnostic = true;
  KG_CHECK_INT(kg_notice_build(KG_NOTICE_DIAGNOSTIC, &info, &data, NULL), 0);
  md = s_data(data, "text/markdown");
  KG_CHECK(strstr(md, "AMD_SERIALIZE_KERNEL=3 and HIP_LAUNCH_BLOCKING=1") &&
           !strstr(md, "CUDA_LAUNCH_BLOCKING") && strstr(md, "not for timing"));
  /* a restart the user asked for: nothing failed, nothing is rolled back */
  KG_CHECK(strstr(md, "at your request") && strstr(md, "nothing was restored"));
  KG_CHECK(!strstr(md, "failing cell") && !strstr(md, "before the fault"));
  cJSON_Delete(data);
  kg_classifier_destroy(&rules);
}

KG_TEST_MAIN(KG_CASE(policy_budget_and_backoff), KG_CASE(policy_backoff_cap),
             KG_CASE(policy_same_signature_twice), KG_CASE(incident_write),
             KG_CASE(incident_ids_differ), KG_CASE(notice_sticky_rocm_and_cuda),
             KG_CASE(notice_advice_down_died_diagnostic))
