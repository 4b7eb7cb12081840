/*  kg_notice: the user notices (sticky faults, advice, down, died). */
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

KG_TEST_MAIN(KG_CASE(notice_sticky_rocm_and_cuda), KG_CASE(notice_advice_down_died_diagnostic))
