/*  kg_gpuhealth: the verdict on a GPU's health (contracts in the header). */
#include "kg_gpuhealth.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int
kg_gpuhealth_visible(const char *visible, char ids[][96], int max)
{
  if (!visible) {
    if (max < 1)
      return 0;
    snprintf(ids[0], 96, "*");
    return 1;
  }
  int n = 0;
  const char *p = visible;
  while (*p && n < max) {
    while (*p == ' ' || *p == ',')
      p++;
    size_t len = strcspn(p, ",");
    while (len && p[len - 1] == ' ')
      len--;
    if (!len)
      break;
    bool digits = true;
    for (size_t i = 0; i < len; i++)
      digits &= isdigit((unsigned char) p[i]) != 0;
    if (!digits && strncmp(p, "GPU-", 4) != 0)
      break;   /* CUDA stops at the first entry it cannot use */
    snprintf(ids[n++], 96, "%.*s", (int) (len < 95 ? len : 95), p);
    p += strcspn(p, ",");
  }
  return n;
}

static const kg_gpuhealth_dev_t *
s_baseline_of(const kg_gpuhealth_reading_t *baseline, const kg_gpuhealth_dev_t *d)
{
  if (!baseline || !baseline->available)
    return NULL;
  for (int i = 0; i < baseline->n; i++) {
    const kg_gpuhealth_dev_t *b = &baseline->dev[i];
    if (*d->uuid && *b->uuid ? strcmp(d->uuid, b->uuid) == 0 : strcmp(d->id, b->id) == 0)
      return b;
  }
  return NULL;
}

static bool
s_hardware_text(const char *text)
{
  return text && (strstr(text, "fallen off the bus") || strstr(text, "GPU is lost"));
}

/*  Why device d needs a reset, into why; false when nothing says so. */
static bool
s_needs_reset(const kg_gpuhealth_dev_t *d, const kg_gpuhealth_dev_t *b, bool hardware,
              char *why, size_t len)
{
  switch (d->state) {
  case KG_GPUHEALTH_DEV_LOST:
    snprintf(why, len, "NVML reports %s (the GPU fell off the bus or must be reset)",
             *d->error ? d->error : "the GPU is lost");
    return true;
  case KG_GPUHEALTH_DEV_ABSENT:
    if (b && b->state == KG_GPUHEALTH_DEV_OK) {
      snprintf(why, len, "the device is gone (NVML no longer finds it)");
      return true;
    }
    return false;
  case KG_GPUHEALTH_DEV_UNREADABLE:
    if ((b && b->state == KG_GPUHEALTH_DEV_OK) || hardware) {
      snprintf(why, len, "NVML can no longer read the device (%s)",
               *d->error ? d->error : "error");
      return true;
    }
    return false;
  case KG_GPUHEALTH_DEV_OK:
    break;
  }
  if (d->remap_failure == 1)
    snprintf(why, len, "row remapping failed (the GPU needs service)");
  else if (d->remap_pending == 1)
    snprintf(why, len, "row remapping is pending (a reset applies it)");
  else if (d->retired_pending == 1)
    snprintf(why, len, "retired pages are pending (a reset retires them)");
  else if (b && b->ecc_uncorrected >= 0 && d->ecc_uncorrected > b->ecc_uncorrected)
    snprintf(why, len, "its uncorrectable ECC error count grew from %lld to %lld",
             b->ecc_uncorrected, d->ecc_uncorrected);
  else
    return false;
  return true;
}

kg_gpuhealth_verdict_t
kg_gpuhealth_judge(const kg_gpuhealth_reading_t *baseline, const kg_gpuhealth_reading_t *now,
                   const char *family, const char *text, kg_gpuhealth_result_t *out)
{
  memset(out, 0, sizeof *out);
  out->dev = -1;
  bool hardware = family && strcmp(family, "ecc-hardware") == 0;
  if (now && now->available) {
    bool all_read = true;
    for (int i = 0; i < now->n; i++) {
      const kg_gpuhealth_dev_t *d = &now->dev[i];
      if (s_needs_reset(d, s_baseline_of(baseline, d), hardware, out->reason,
                        sizeof out->reason)) {
        out->dev = i;
        return out->verdict = KG_GPUHEALTH_NEEDS_RESET;
      }
      all_read &= d->state == KG_GPUHEALTH_DEV_OK;
    }
    if (!s_hardware_text(text)) {
      if (all_read)
        return out->verdict = KG_GPUHEALTH_HEALTHY;
      snprintf(out->reason, sizeof out->reason, "NVML could not read every device");
      return out->verdict = KG_GPUHEALTH_UNKNOWN;
    }
  }
  if (s_hardware_text(text)) {
    out->dev = now && now->n == 1 ? 0 : -1;   /* the only one, or which is not known */
    snprintf(out->reason, sizeof out->reason,
             "the driver reported the GPU fell off the bus or is lost");
    return out->verdict = KG_GPUHEALTH_NEEDS_RESET;
  }
  snprintf(out->reason, sizeof out->reason, "no health reading: %s",
           now && *now->why ? now->why : "NVML unavailable");
  return out->verdict = KG_GPUHEALTH_UNKNOWN;
}

const char *
kg_gpuhealth_verdict_name(kg_gpuhealth_verdict_t verdict)
{
  switch (verdict) {
  case KG_GPUHEALTH_HEALTHY: return "healthy";
  case KG_GPUHEALTH_NEEDS_RESET: return "needs-reset";
  case KG_GPUHEALTH_UNKNOWN: break;
  }
  return "unknown";
}

const char *
kg_gpuhealth_line(const kg_gpuhealth_reading_t *now, const kg_gpuhealth_result_t *result,
                  char *buf, size_t len)
{
  const kg_gpuhealth_dev_t *d = now && result->dev >= 0 && result->dev < now->n
                                  ? &now->dev[result->dev] : NULL;
  const char *what = result->verdict == KG_GPUHEALTH_NEEDS_RESET ? "needs a reset"
                     : result->verdict == KG_GPUHEALTH_HEALTHY ? "is healthy"
                     : "could not be judged";
  if (d)
    snprintf(buf, len, "GPU %d (UUID %s, PCI bus id %s) %s%s%s", d->index,
             *d->uuid ? d->uuid : "unknown", *d->bus ? d->bus : "unknown", what,
             *result->reason ? ": " : "", result->reason);
  else
    snprintf(buf, len, "a GPU of this job (which one NVML could not tell) %s%s%s", what,
             *result->reason ? ": " : "", result->reason);
  return buf;
}

static cJSON *
s_reading_json(const kg_gpuhealth_reading_t *r)
{
  static const char *states[] = {"ok", "lost", "unreadable", "absent"};
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; arr && i < r->n; i++) {
    const kg_gpuhealth_dev_t *d = &r->dev[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, o);
    cJSON_AddNumberToObject(o, "index", d->index);
    cJSON_AddStringToObject(o, "id", d->id);
    cJSON_AddStringToObject(o, "uuid", d->uuid);
    cJSON_AddStringToObject(o, "pci_bus_id", d->bus);
    cJSON_AddStringToObject(o, "state", states[d->state]);
    if (*d->error)
      cJSON_AddStringToObject(o, "error", d->error);
    if (d->retired_pending >= 0)
      cJSON_AddBoolToObject(o, "retired_pages_pending", d->retired_pending);
    if (d->remap_pending >= 0)
      cJSON_AddBoolToObject(o, "row_remap_pending", d->remap_pending);
    if (d->remap_failure >= 0)
      cJSON_AddBoolToObject(o, "row_remap_failure", d->remap_failure);
    if (d->ecc_uncorrected >= 0)
      cJSON_AddNumberToObject(o, "ecc_uncorrected_volatile", (double) d->ecc_uncorrected);
  }
  return arr;
}

cJSON *
kg_gpuhealth_record(const kg_gpuhealth_reading_t *baseline, const kg_gpuhealth_reading_t *now,
                    const kg_gpuhealth_result_t *result)
{
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return NULL;
  cJSON_AddStringToObject(o, "verdict", kg_gpuhealth_verdict_name(result->verdict));
  cJSON_AddStringToObject(o, "reason", result->reason);
  if (result->verdict == KG_GPUHEALTH_NEEDS_RESET)
    cJSON_AddStringToObject(o, "action", "drain this node");
  const kg_gpuhealth_dev_t *d = now && result->dev >= 0 && result->dev < now->n
                                  ? &now->dev[result->dev] : NULL;
  if (d) {
    cJSON *dev = cJSON_AddObjectToObject(o, "device");
    cJSON_AddNumberToObject(dev, "index", d->index);
    cJSON_AddStringToObject(dev, "uuid", d->uuid);
    cJSON_AddStringToObject(dev, "pci_bus_id", d->bus);
  } else
    cJSON_AddNullToObject(o, "device");
  if (baseline && baseline->available)
    cJSON_AddItemToObject(o, "baseline", s_reading_json(baseline));
  else
    cJSON_AddNullToObject(o, "baseline");
  if (now && now->available)
    cJSON_AddItemToObject(o, "now", s_reading_json(now));
  else
    cJSON_AddStringToObject(o, "nvml", now && *now->why ? now->why : "NVML unavailable");
  return o;
}
