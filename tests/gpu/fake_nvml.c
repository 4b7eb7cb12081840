/*  fake_nvml: a kguard emulation of NVML (libnvidia-ml.so.1) for testing
    kguard's GPU health reading on machines without a GPU. NOT a driver: it
    answers the queries kguard makes from the environment. Its devices are
    named "kguard emulation: fake NVML", their UUIDs start "GPU-kguard-fake-",
    so nothing can mistake them for GPUs.

    Used through KGUARD_NVML_LIB=<this library>.
      KG_FAKE_NVML_DEVICES=N     devices (default 1, at most 8), PCI bus ids
                                 00000000:0N:00.0
      KG_FAKE_NVML=SCENARIO[:after=K][:device=D]
        healthy                  (the default) everything reads clean
        ecc-grow                 the volatile uncorrectable ECC count is 0,
                                 then 2
        retired-pending          retired pages pending
        remap-pending            row remapping pending
        remap-failure            row remapping failed
        lost                     every query answers GPU_IS_LOST (15)
        no-init                  nvmlInit fails (driver not loaded, 9)
      The scenario holds for device D (default 0) from its (K+1)th handle
      lookup in this process on (default K = 0: from the first); before
      that the device reads clean. kguard looks each device up once per
      reading, so after=1 leaves the baseline clean and spoils the next.
      The library is linked -z nodelete: kguard unloads NVML after each
      reading, and the counts must span its readings.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int index; } s_dev_t;

static s_dev_t s_devs[8];
static unsigned s_lookups[8];

int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int rc);
int nvmlDeviceGetCount_v2(unsigned *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned i, s_dev_t **h);
int nvmlDeviceGetHandleByUUID(const char *uuid, s_dev_t **h);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, s_dev_t **h);
int nvmlDeviceGetName(s_dev_t *h, char *name, unsigned len);
int nvmlDeviceGetUUID(s_dev_t *h, char *uuid, unsigned len);
int nvmlDeviceGetPciInfo_v3(s_dev_t *h, void *pci);
int nvmlDeviceGetRetiredPagesPendingStatus(s_dev_t *h, int *pending);
int nvmlDeviceGetRemappedRows(s_dev_t *h, unsigned *corr, unsigned *unc, unsigned *pending,
                              unsigned *failure);
int nvmlDeviceGetTotalEccErrors(s_dev_t *h, int type, int counter, unsigned long long *n);
int nvmlDeviceGetComputeRunningProcesses_v3(s_dev_t *h, unsigned *count, void *procs);

static unsigned
s_count(void)
{
  const char *e = getenv("KG_FAKE_NVML_DEVICES");
  int n = e && *e ? atoi(e) : 1;
  return n < 0 ? 0 : n > 8 ? 8 : (unsigned) n;
}

/*  The scenario's name if it holds for device h now, else "healthy". */
static const char *
s_scenario(const s_dev_t *h)
{
  static char name[64];
  const char *e = getenv("KG_FAKE_NVML");
  snprintf(name, sizeof name, "%s", e && *e ? e : "healthy");
  unsigned after = 0;
  int device = 0;
  char *p = strchr(name, ':');
  if (p) {
    *p++ = '\0';
    for (char *tok = strtok(p, ":"); tok; tok = strtok(NULL, ":")) {
      if (strncmp(tok, "after=", 6) == 0)
        after = (unsigned) atoi(tok + 6);
      else if (strncmp(tok, "device=", 7) == 0)
        device = atoi(tok + 7);
    }
  }
  if (h->index != device || s_lookups[h->index] <= after)
    return "healthy";
  return name;
}

static int
s_lost(const s_dev_t *h)
{
  return strcmp(s_scenario(h), "lost") == 0 ? 15 : 0;
}

int
nvmlInit_v2(void)
{
  const char *e = getenv("KG_FAKE_NVML");
  return e && strncmp(e, "no-init", 7) == 0 ? 9 : 0;
}

int
nvmlShutdown(void)
{
  return 0;
}

const char *
nvmlErrorString(int rc)
{
  switch (rc) {
  case 0: return "Success";
  case 2: return "Invalid Argument";
  case 6: return "Not Found";
  case 9: return "Driver Not Loaded";
  case 15: return "GPU is lost";
  default: return "Unknown Error";
  }
}

int
nvmlDeviceGetCount_v2(unsigned *n)
{
  *n = s_count();
  return 0;
}

static int
s_lookup(unsigned i, s_dev_t **h)
{
  if (i >= s_count())
    return 2;
  s_devs[i].index = (int) i;
  s_lookups[i]++;
  *h = &s_devs[i];
  return s_lost(*h);
}

int
nvmlDeviceGetHandleByIndex_v2(unsigned i, s_dev_t **h)
{
  return s_lookup(i, h);
}

int
nvmlDeviceGetHandleByUUID(const char *uuid, s_dev_t **h)
{
  unsigned i;
  if (sscanf(uuid, "GPU-kguard-fake-%u", &i) != 1 || i >= s_count())
    return 6;
  return s_lookup(i, h);
}

int
nvmlDeviceGetHandleByPciBusId_v2(const char *bus, s_dev_t **h)
{
  unsigned i;
  if (sscanf(bus, "00000000:%x:00.0", &i) != 1)
    return 6;
  return s_lookup(i, h);
}

int
nvmlDeviceGetName(s_dev_t *h, char *name, unsigned len)
{
  snprintf(name, len, "kguard emulation: fake NVML");
  return s_lost(h);
}

int
nvmlDeviceGetUUID(s_dev_t *h, char *uuid, unsigned len)
{
  snprintf(uuid, len, "GPU-kguard-fake-%d", h->index);
  return s_lost(h);
}

int
nvmlDeviceGetPciInfo_v3(s_dev_t *h, void *pci)
{
  /* nvmlPciInfo_t: busIdLegacy[16], five unsigned, busId[32] */
  memset(pci, 0, 16 + 5 * sizeof(unsigned) + 32);
  snprintf((char *) pci + 16 + 5 * sizeof(unsigned), 32, "00000000:%02X:00.0", h->index);
  return s_lost(h);
}

int
nvmlDeviceGetRetiredPagesPendingStatus(s_dev_t *h, int *pending)
{
  *pending = strcmp(s_scenario(h), "retired-pending") == 0;
  return s_lost(h);
}

int
nvmlDeviceGetRemappedRows(s_dev_t *h, unsigned *corr, unsigned *unc, unsigned *pending,
                          unsigned *failure)
{
  *corr = *unc = 0;
  *pending = strcmp(s_scenario(h), "remap-pending") == 0;
  *failure = strcmp(s_scenario(h), "remap-failure") == 0;
  return s_lost(h);
}

int
nvmlDeviceGetTotalEccErrors(s_dev_t *h, int type, int counter, unsigned long long *n)
{
  (void) type;
  (void) counter;
  *n = strcmp(s_scenario(h), "ecc-grow") == 0 ? 2 : 0;
  return s_lost(h);
}

int
nvmlDeviceGetComputeRunningProcesses_v3(s_dev_t *h, unsigned *count, void *procs)
{
  (void) procs;
  *count = 0;
  return s_lost(h);
}
