/*  kg_nvml against the labelled fake NVML (tests/gpu/fake_nvml.c, path in
    KG_FAKE_NVML_LIB): what each scenario reads as, and the verdict a
    baseline and a later reading give together. One ctest entry per case:
    the fake counts lookups per process. */
#include <stdlib.h>
#include <string.h>

#include "kg_gpuhealth.h"
#include "kg_nvml.h"
#include "kg_test.h"

static kg_nvml_t *
s_fake(const char *scenario, const char *devices)
{
  const char *lib = getenv("KG_FAKE_NVML_LIB");
  KG_CHECK(lib && *lib);
  setenv("KGUARD_NVML_LIB", lib, 1);
  setenv("KG_FAKE_NVML", scenario, 1);
  setenv("KG_FAKE_NVML_DEVICES", devices, 1);
  return kg_nvml_new();
}

/*  Baseline, then a second reading, judged; returns the verdict. */
static kg_gpuhealth_verdict_t
s_twice(const char *scenario, const char *visible, kg_gpuhealth_result_t *res,
        kg_gpuhealth_reading_t *now)
{
  kg_nvml_t *nvml = s_fake(scenario, "4");
  KG_CHECK(kg_nvml_available(nvml));
  kg_gpuhealth_reading_t base;
  kg_nvml_read(nvml, visible, &base);
  kg_gpuhealth_result_t first;
  KG_CHECK_INT(kg_gpuhealth_judge(NULL, &base, NULL, NULL, &first), KG_GPUHEALTH_HEALTHY);
  kg_nvml_read(nvml, visible, now);
  kg_nvml_destroy(&nvml);
  KG_CHECK(nvml == NULL);
  return kg_gpuhealth_judge(&base, now, "launch-failure", NULL, res);
}

KG_TEST(nvml_healthy_reads_every_field)
{
  kg_nvml_t *nvml = s_fake("healthy", "2");
  kg_gpuhealth_reading_t r;
  kg_nvml_read(nvml, NULL, &r);
  KG_CHECK(r.available);
  KG_CHECK_INT(r.n, 2);
  KG_CHECK_STR(r.dev[1].uuid, "GPU-kguard-fake-1");
  KG_CHECK_STR(r.dev[1].bus, "00000000:01:00.0");
  KG_CHECK_INT(r.dev[1].state, KG_GPUHEALTH_DEV_OK);
  KG_CHECK_INT(r.dev[1].retired_pending, 0);
  KG_CHECK_INT(r.dev[1].remap_pending, 0);
  KG_CHECK_INT(r.dev[1].remap_failure, 0);
  KG_CHECK_INT((int) r.dev[1].ecc_uncorrected, 0);
  /* the ranks' list: by index and by UUID, in their order */
  kg_nvml_read(nvml, "GPU-kguard-fake-1,0", &r);
  KG_CHECK_INT(r.n, 2);
  KG_CHECK_INT(r.dev[0].index, 0);
  KG_CHECK_STR(r.dev[0].uuid, "GPU-kguard-fake-1");
  KG_CHECK_STR(r.dev[1].bus, "00000000:00:00.0");
  /* a device the list names that does not exist */
  kg_nvml_read(nvml, "5", &r);
  KG_CHECK_INT(r.dev[0].state, KG_GPUHEALTH_DEV_ABSENT);
  kg_nvml_destroy(&nvml);
}

KG_TEST(nvml_ecc_growth_needs_reset)
{
  kg_gpuhealth_result_t res;
  kg_gpuhealth_reading_t now;
  KG_CHECK_INT(s_twice("ecc-grow:after=1:device=1", "0,1", &res, &now),
               KG_GPUHEALTH_NEEDS_RESET);
  KG_CHECK_INT(res.dev, 1);
  char line[512];
  KG_CHECK_STR(kg_gpuhealth_line(&now, &res, line, sizeof line),
               "GPU 1 (UUID GPU-kguard-fake-1, PCI bus id 00000000:01:00.0) needs a reset: its "
               "uncorrectable ECC error count grew from 0 to 2");
}

KG_TEST(nvml_pending_and_lost)
{
  /* the fake stays loaded (its counts span kguard's loads): each row on a
     device of its own, never looked up before */
  static const struct { const char *scenario, *visible, *reason; } rows[] = {
    {"retired-pending:after=1:device=0", "0", "retired pages are pending"},
    {"remap-pending:after=1:device=1", "1", "row remapping is pending"},
    {"remap-failure:after=1:device=2", "2", "row remapping failed"},
    {"lost:after=1:device=3", "3", "GPU is lost"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_gpuhealth_result_t res;
    kg_gpuhealth_reading_t now;
    KG_CHECK_INT(s_twice(rows[i].scenario, rows[i].visible, &res, &now),
                 KG_GPUHEALTH_NEEDS_RESET);
    KG_CHECK_INT(res.dev, 0);
    KG_CHECK(strstr(res.reason, rows[i].reason) != NULL);
  }
}

KG_TEST(nvml_unavailable_says_why)
{
  kg_nvml_t *nvml = s_fake("no-init", "1");
  KG_CHECK(nvml != NULL);
  KG_CHECK(!kg_nvml_available(nvml));
  kg_gpuhealth_reading_t r;
  kg_nvml_read(nvml, NULL, &r);
  KG_CHECK(!r.available);
  KG_CHECK(strstr(r.why, "Driver Not Loaded") != NULL);
  kg_nvml_destroy(&nvml);
  setenv("KGUARD_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  nvml = kg_nvml_new();
  kg_nvml_read(nvml, NULL, &r);
  KG_CHECK(!r.available);
  KG_CHECK(strstr(r.why, "/nonexistent/libnvidia-ml.so.1") != NULL);
  kg_nvml_destroy(&nvml);
}

KG_TEST_MAIN(KG_CASE(nvml_healthy_reads_every_field), KG_CASE(nvml_ecc_growth_needs_reset),
             KG_CASE(nvml_pending_and_lost), KG_CASE(nvml_unavailable_says_why))
