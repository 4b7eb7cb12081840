/*  kg_gpuhealth: which readings mean a GPU needs a reset (the job goes to
    the scheduler for other hardware) and which leave the restart to the
    policy, by table; the visible-device list; the line and the record. */
#include <string.h>

#include "kg_gpuhealth.h"
#include "kg_test.h"

/*  A reading of one device: state, retired, remap pending, remap failure,
    ecc (-1 unknown). */
static kg_gpuhealth_reading_t
s_one(kg_gpuhealth_dev_state_t state, int retired, int remap, int failure, long long ecc)
{
  kg_gpuhealth_reading_t r;
  memset(&r, 0, sizeof r);
  r.available = true;
  r.n = 1;
  kg_gpuhealth_dev_t *d = &r.dev[0];
  strcpy(d->id, "0");
  strcpy(d->uuid, "GPU-11111111-2222");
  strcpy(d->bus, "00000000:3B:00.0");
  d->state = state;
  if (state == KG_GPUHEALTH_DEV_LOST)
    strcpy(d->error, "GPU is lost");
  d->retired_pending = retired;
  d->remap_pending = remap;
  d->remap_failure = failure;
  d->ecc_uncorrected = ecc;
  return r;
}

KG_TEST(gpuhealth_judge_table)
{
  enum { OK = KG_GPUHEALTH_DEV_OK, LOST = KG_GPUHEALTH_DEV_LOST,
         UNREAD = KG_GPUHEALTH_DEV_UNREADABLE, ABSENT = KG_GPUHEALTH_DEV_ABSENT };
  enum { H = KG_GPUHEALTH_HEALTHY, R = KG_GPUHEALTH_NEEDS_RESET, U = KG_GPUHEALTH_UNKNOWN };
  static const struct {
    int base_state; long long base_ecc;    /* base_state -1: no baseline */
    int state, retired, remap, failure; long long ecc;
    const char *family, *text;
    int verdict, dev;
    const char *reason;                    /* a part of the reason */
  } rows[] = {
    /* clean devices: healthy whatever the fault */
    {OK, 0, OK, 0, 0, 0, 0, "device-assert", "CUDA error: device-side assert triggered",
     H, -1, ""},
    {OK, 0, OK, 0, 0, 0, 0, "ecc-hardware", "uncorrectable ECC error encountered", H, -1, ""},
    {-1, 0, OK, -1, -1, -1, -1, "launch-failure", NULL, H, -1, ""},
    /* NVML's own flags need no baseline */
    {-1, 0, OK, 1, 0, 0, 0, "ecc-hardware", NULL, R, 0, "retired pages are pending"},
    {OK, 0, OK, 0, 1, 0, 0, "device-assert", NULL, R, 0, "row remapping is pending"},
    {OK, 0, OK, 0, 1, 1, 0, NULL, NULL, R, 0, "row remapping failed"},
    {-1, 0, LOST, -1, -1, -1, -1, NULL, NULL, R, 0, "GPU is lost"},
    /* the ECC count: growth only, against the baseline */
    {OK, 0, OK, 0, 0, 0, 2, "launch-failure", "CUDA error: unspecified launch failure", R, 0,
     "grew from 0 to 2"},
    {OK, 3, OK, 0, 0, 0, 3, "launch-failure", "CUDA error: unspecified launch failure", H, -1,
     ""},
    {-1, 0, OK, 0, 0, 0, 5, "ecc-hardware", NULL, H, -1, ""},
    {OK, -1, OK, 0, 0, 0, 5, "ecc-hardware", NULL, H, -1, ""},
    /* unreadable: a change since the baseline, or a hardware fault */
    {OK, 0, UNREAD, -1, -1, -1, -1, "device-assert", NULL, R, 0, "can no longer read"},
    {UNREAD, 0, UNREAD, -1, -1, -1, -1, "device-assert", NULL, U, -1, "every device"},
    {-1, 0, UNREAD, -1, -1, -1, -1, "ecc-hardware", NULL, R, 0, "can no longer read"},
    {OK, 0, ABSENT, -1, -1, -1, -1, NULL, NULL, R, 0, "the device is gone"},
    {-1, 0, ABSENT, -1, -1, -1, -1, NULL, NULL, U, -1, "every device"},
    /* the fault's own words */
    {OK, 0, OK, 0, 0, 0, 0, "other-sticky", "RuntimeError: GPU has fallen off the bus", R, 0,
     "fell off the bus"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_gpuhealth_reading_t base = s_one(rows[i].base_state < 0 ? OK : rows[i].base_state,
                                        0, 0, 0, rows[i].base_ecc);
    kg_gpuhealth_reading_t now = s_one(rows[i].state, rows[i].retired, rows[i].remap,
                                       rows[i].failure, rows[i].ecc);
    kg_gpuhealth_result_t res;
    kg_gpuhealth_verdict_t v = kg_gpuhealth_judge(rows[i].base_state < 0 ? NULL : &base, &now,
                                                  rows[i].family, rows[i].text, &res);
    if ((int) v != rows[i].verdict || res.dev != rows[i].dev
        || !strstr(res.reason, rows[i].reason))
      fprintf(stderr, "row %zu: verdict %d dev %d reason '%s'\n", i, v, res.dev, res.reason);
    KG_CHECK_INT(v, rows[i].verdict);
    KG_CHECK_INT(res.verdict, rows[i].verdict);
    KG_CHECK_INT(res.dev, rows[i].dev);
    KG_CHECK(strstr(res.reason, rows[i].reason) != NULL);
  }
}

KG_TEST(gpuhealth_without_nvml)
{
  kg_gpuhealth_reading_t none;
  memset(&none, 0, sizeof none);
  strcpy(none.why, "NVML (libnvidia-ml.so.1) unavailable: not found");
  kg_gpuhealth_result_t res;
  /* no reading: the policy decides, as before */
  KG_CHECK_INT(kg_gpuhealth_judge(NULL, &none, "ecc-hardware", "uncorrectable ECC error", &res),
               KG_GPUHEALTH_UNKNOWN);
  KG_CHECK(strstr(res.reason, "unavailable: not found") != NULL);
  KG_CHECK_INT(kg_gpuhealth_judge(NULL, NULL, NULL, NULL, &res), KG_GPUHEALTH_UNKNOWN);
  /* but the driver's words are enough: which GPU is not known */
  KG_CHECK_INT(kg_gpuhealth_judge(NULL, &none, NULL, "GPU has fallen off the bus", &res),
               KG_GPUHEALTH_NEEDS_RESET);
  KG_CHECK_INT(res.dev, -1);
  char line[512];
  kg_gpuhealth_line(&none, &res, line, sizeof line);
  KG_CHECK(strstr(line, "which one NVML could not tell") != NULL);
}

KG_TEST(gpuhealth_second_device_matched_by_uuid)
{
  kg_gpuhealth_reading_t base = s_one(KG_GPUHEALTH_DEV_OK, 0, 0, 0, 0);
  base.n = 2;
  base.dev[1] = base.dev[0];
  strcpy(base.dev[1].uuid, "GPU-second");
  base.dev[1].index = 1;
  base.dev[1].ecc_uncorrected = 7;
  kg_gpuhealth_reading_t now = base;
  /* the baseline in another order: matched by UUID, not by position */
  kg_gpuhealth_dev_t t = base.dev[0];
  base.dev[0] = base.dev[1];
  base.dev[1] = t;
  now.dev[1].ecc_uncorrected = 8;
  kg_gpuhealth_result_t res;
  KG_CHECK_INT(kg_gpuhealth_judge(&base, &now, NULL, NULL, &res), KG_GPUHEALTH_NEEDS_RESET);
  KG_CHECK_INT(res.dev, 1);
  KG_CHECK(strstr(res.reason, "from 7 to 8") != NULL);
  char line[512];
  KG_CHECK_STR(kg_gpuhealth_line(&now, &res, line, sizeof line),
               "GPU 1 (UUID GPU-second, PCI bus id 00000000:3B:00.0) needs a reset: its "
               "uncorrectable ECC error count grew from 7 to 8");
  cJSON *rec = kg_gpuhealth_record(&base, &now, &res);
  KG_CHECK(rec != NULL);
  KG_CHECK_STR(cJSON_GetObjectItem(rec, "verdict")->valuestring, "needs-reset");
  KG_CHECK_STR(cJSON_GetObjectItem(rec, "action")->valuestring, "drain this node");
  const cJSON *dev = cJSON_GetObjectItem(rec, "device");
  KG_CHECK_INT(cJSON_GetObjectItem(dev, "index")->valueint, 1);
  KG_CHECK_STR(cJSON_GetObjectItem(dev, "uuid")->valuestring, "GPU-second");
  KG_CHECK_STR(cJSON_GetObjectItem(dev, "pci_bus_id")->valuestring, "00000000:3B:00.0");
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "now")), 2);
  cJSON_Delete(rec);
  /* healthy: no action */
  now.dev[1].ecc_uncorrected = 7;
  KG_CHECK_INT(kg_gpuhealth_judge(&base, &now, NULL, NULL, &res), KG_GPUHEALTH_HEALTHY);
  rec = kg_gpuhealth_record(&base, &now, &res);
  KG_CHECK(cJSON_GetObjectItem(rec, "action") == NULL);
  KG_CHECK(cJSON_IsNull(cJSON_GetObjectItem(rec, "device")));
  cJSON_Delete(rec);
}

KG_TEST(gpuhealth_visible_table)
{
  static const struct { const char *in; int n; const char *first, *last; } rows[] = {
    {NULL, 1, "*", "*"},
    {"", 0, NULL, NULL},
    {"0", 1, "0", "0"},
    {"2,3", 2, "2", "3"},
    {" 1 , 0 ", 2, "1", "0"},
    {"GPU-aaaa-bbbb,1", 2, "GPU-aaaa-bbbb", "1"},
    {"0,-1,2", 1, "0", "0"},            /* CUDA stops at the first invalid entry */
    {"MIG-1234", 0, NULL, NULL},
    {"1,x", 1, "1", "1"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char ids[KG_GPUHEALTH_MAX][96];
    int n = kg_gpuhealth_visible(rows[i].in, ids, KG_GPUHEALTH_MAX);
    KG_CHECK_INT(n, rows[i].n);
    if (n > 0) {
      KG_CHECK_STR(ids[0], rows[i].first);
      KG_CHECK_STR(ids[n - 1], rows[i].last);
    }
  }
  char ids[2][96];
  KG_CHECK_INT(kg_gpuhealth_visible("0,1,2,3", ids, 2), 2);
}

KG_TEST_MAIN(KG_CASE(gpuhealth_judge_table), KG_CASE(gpuhealth_without_nvml),
             KG_CASE(gpuhealth_second_device_matched_by_uuid), KG_CASE(gpuhealth_visible_table))
