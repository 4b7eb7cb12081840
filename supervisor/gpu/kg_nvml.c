/*  kg_nvml: the NVML health reading through dlopen (contracts in the
    header). Own prototypes: nvml.h is not needed to build. */
#include "kg_nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  S_NVML_SUCCESS = 0,
  S_NVML_NOT_SUPPORTED = 3,
  S_NVML_NOT_FOUND = 6,
  S_NVML_GPU_IS_LOST = 15,
  S_NVML_RESET_REQUIRED = 16
};
enum { S_ECC_UNCORRECTED = 1, S_ECC_VOLATILE = 0 };

/*  nvmlPciInfo_t of nvmlDeviceGetPciInfo_v3. */
typedef struct {
  char bus_legacy[16];
  unsigned domain, bus, device, device_id, subsystem_id;
  char bus_id[32];
} s_pci_t;

typedef void *s_dev_t;

struct kg_nvml_t {
  void *lib;
  char why[160];
  int (*shutdown)(void);
  const char *(*error_string)(int);
  int (*count)(unsigned *);
  int (*by_index)(unsigned, s_dev_t *);
  int (*by_uuid)(const char *, s_dev_t *);
  int (*uuid)(s_dev_t, char *, unsigned);
  int (*pci)(s_dev_t, s_pci_t *);
  int (*retired_pending)(s_dev_t, int *);
  int (*remapped)(s_dev_t, unsigned *, unsigned *, unsigned *, unsigned *);
  int (*ecc)(s_dev_t, int, int, unsigned long long *);
};

kg_nvml_t *
kg_nvml_new(void)
{
  kg_nvml_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  const char *env = getenv("KGUARD_NVML_LIB");
  const char *path = env && *env ? env : "libnvidia-ml.so.1";
  self->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!self->lib) {
    snprintf(self->why, sizeof self->why, "%.150s", dlerror());
    return self;
  }
  int (*init)(void) = NULL;
  *(void **) &init = dlsym(self->lib, "nvmlInit_v2");
  *(void **) &self->shutdown = dlsym(self->lib, "nvmlShutdown");
  *(void **) &self->error_string = dlsym(self->lib, "nvmlErrorString");
  *(void **) &self->count = dlsym(self->lib, "nvmlDeviceGetCount_v2");
  *(void **) &self->by_index = dlsym(self->lib, "nvmlDeviceGetHandleByIndex_v2");
  *(void **) &self->by_uuid = dlsym(self->lib, "nvmlDeviceGetHandleByUUID");
  *(void **) &self->uuid = dlsym(self->lib, "nvmlDeviceGetUUID");
  *(void **) &self->pci = dlsym(self->lib, "nvmlDeviceGetPciInfo_v3");
  *(void **) &self->retired_pending = dlsym(self->lib, "nvmlDeviceGetRetiredPagesPendingStatus");
  *(void **) &self->remapped = dlsym(self->lib, "nvmlDeviceGetRemappedRows");
  *(void **) &self->ecc = dlsym(self->lib, "nvmlDeviceGetTotalEccErrors");
  int rc = -1;
  if (!init || !self->shutdown || !self->count || !self->by_index || !self->by_uuid
      || !self->uuid)
    snprintf(self->why, sizeof self->why, "%s lacks a function kguard needs (a driver "
             "older than R450?)", path);
  else if ((rc = init()) != S_NVML_SUCCESS)
    snprintf(self->why, sizeof self->why, "nvmlInit: %s (%d)",
             self->error_string ? self->error_string(rc) : "error", rc);
  if (rc != S_NVML_SUCCESS) {
    dlclose(self->lib);
    self->lib = NULL;
  }
  return self;
}

void
kg_nvml_destroy(kg_nvml_t **self_p)
{
  kg_nvml_t *self = *self_p;
  if (!self)
    return;
  if (self->lib) {
    self->shutdown();
    dlclose(self->lib);
  }
  free(self);
  *self_p = NULL;
}

bool
kg_nvml_available(const kg_nvml_t *self)
{
  return self && self->lib;
}

/*  A failed query: true when it says the device is lost (recorded in d). */
static bool
s_lost(const kg_nvml_t *self, int rc, kg_gpuhealth_dev_t *d)
{
  if (rc != S_NVML_GPU_IS_LOST && rc != S_NVML_RESET_REQUIRED)
    return false;
  d->state = KG_GPUHEALTH_DEV_LOST;
  snprintf(d->error, sizeof d->error, "%.80s",
           self->error_string ? self->error_string(rc)
           : rc == S_NVML_GPU_IS_LOST ? "GPU is lost" : "GPU requires reset");
  return true;
}

static void
s_read_dev(const kg_nvml_t *self, s_dev_t h, kg_gpuhealth_dev_t *d)
{
  char uuid[96] = "";
  int rc = self->uuid(h, uuid, sizeof uuid);
  if (s_lost(self, rc, d))
    return;
  if (rc == S_NVML_SUCCESS)
    snprintf(d->uuid, sizeof d->uuid, "%s", uuid);
  s_pci_t pci;
  memset(&pci, 0, sizeof pci);
  if (self->pci && (rc = self->pci(h, &pci)) == S_NVML_SUCCESS)
    snprintf(d->bus, sizeof d->bus, "%.31s", pci.bus_id);
  else if (self->pci && s_lost(self, rc, d))
    return;
  int pending = 0;
  if (self->retired_pending) {
    rc = self->retired_pending(h, &pending);
    if (s_lost(self, rc, d))
      return;
    d->retired_pending = rc == S_NVML_SUCCESS ? pending != 0 : -1;
  }
  unsigned corr = 0, unc = 0, remap_pending = 0, failure = 0;
  if (self->remapped) {
    rc = self->remapped(h, &corr, &unc, &remap_pending, &failure);
    if (s_lost(self, rc, d))
      return;
    d->remap_pending = rc == S_NVML_SUCCESS ? remap_pending != 0 : -1;
    d->remap_failure = rc == S_NVML_SUCCESS ? failure != 0 : -1;
  }
  unsigned long long ecc = 0;
  if (self->ecc) {
    rc = self->ecc(h, S_ECC_UNCORRECTED, S_ECC_VOLATILE, &ecc);
    if (s_lost(self, rc, d))
      return;
    d->ecc_uncorrected = rc == S_NVML_SUCCESS ? (long long) ecc : -1;
  }
}

void
kg_nvml_read(kg_nvml_t *self, const char *visible, kg_gpuhealth_reading_t *out)
{
  memset(out, 0, sizeof *out);
  if (!kg_nvml_available(self)) {
    snprintf(out->why, sizeof out->why, "NVML (libnvidia-ml.so.1) unavailable: %.150s",
             self && *self->why ? self->why : "not loaded");
    return;
  }
  out->available = true;
  char ids[KG_GPUHEALTH_MAX][96];
  int n = kg_gpuhealth_visible(visible, ids, KG_GPUHEALTH_MAX);
  unsigned count = 0;
  if (n == 1 && strcmp(ids[0], "*") == 0) {
    if (self->count(&count) != S_NVML_SUCCESS)
      count = 0;
    n = count < KG_GPUHEALTH_MAX ? (int) count : KG_GPUHEALTH_MAX;
    for (int i = 0; i < n; i++)
      snprintf(ids[i], sizeof ids[i], "%d", i);
  }
  for (int i = 0; i < n; i++) {
    kg_gpuhealth_dev_t *d = &out->dev[out->n++];
    d->index = i;
    memcpy(d->id, ids[i], sizeof d->id);
    d->retired_pending = d->remap_pending = d->remap_failure = -1;
    d->ecc_uncorrected = -1;
    s_dev_t h = NULL;
    int rc = strncmp(ids[i], "GPU-", 4) == 0
               ? self->by_uuid(ids[i], &h)
               : self->by_index((unsigned) strtoul(ids[i], NULL, 10), &h);
    if (rc != S_NVML_SUCCESS) {
      if (s_lost(self, rc, d))
        continue;
      d->state = rc == S_NVML_NOT_FOUND || rc == 2 /* invalid argument: no such index */
                   ? KG_GPUHEALTH_DEV_ABSENT : KG_GPUHEALTH_DEV_UNREADABLE;
      snprintf(d->error, sizeof d->error, "%.80s (%d)",
               self->error_string ? self->error_string(rc) : "NVML error", rc);
      continue;
    }
    s_read_dev(self, h, d);
  }
}
