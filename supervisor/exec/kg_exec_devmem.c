/*  kg_exec_devmem: device memory still held by ended processes, through
    NVML (contracts in the header). */
#include "kg_exec_devmem.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/*  nvmlProcessInfo_t of the _v3 query: pid, usedGpuMemory, MIG ids. */
typedef struct {
  unsigned pid;
  unsigned long long used;
  unsigned gpu_instance, compute_instance;
} s_proc_t;

struct kg_exec_devmem_t {
  void *lib;
  int (*count)(unsigned *);
  int (*handle)(unsigned, void **);
  int (*procs)(void *, unsigned *, s_proc_t *);
  int (*shutdown)(void);
};

kg_exec_devmem_t *
kg_exec_devmem_new(void)
{
  kg_exec_devmem_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  const char *path = getenv("KGUARD_NVML_LIB");
  self->lib = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!self->lib)
    return self;
  int (*init)(void) = NULL;
  *(void **) &init = dlsym(self->lib, "nvmlInit_v2");
  *(void **) &self->count = dlsym(self->lib, "nvmlDeviceGetCount_v2");
  *(void **) &self->handle = dlsym(self->lib, "nvmlDeviceGetHandleByIndex_v2");
  *(void **) &self->procs = dlsym(self->lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  *(void **) &self->shutdown = dlsym(self->lib, "nvmlShutdown");
  if (!init || !self->count || !self->handle || !self->procs || init() != 0) {
    dlclose(self->lib);
    self->lib = NULL;
    self->shutdown = NULL;
  }
  return self;
}

void
kg_exec_devmem_destroy(kg_exec_devmem_t **self_p)
{
  kg_exec_devmem_t *self = *self_p;
  if (!self)
    return;
  if (self->lib) {
    if (self->shutdown)
      self->shutdown();
    dlclose(self->lib);
  }
  free(self);
  *self_p = NULL;
}

int
kg_exec_devmem_held(kg_exec_devmem_t *self, const pid_t *pids, int n)
{
  if (!self || !self->lib)
    return -1;
  unsigned devices = 0;
  if (self->count(&devices) != 0)
    return -1;
  int held = 0;
  for (unsigned d = 0; d < devices; d++) {
    void *h = NULL;
    s_proc_t p[256];
    unsigned count = 256;
    if (self->handle(d, &h) != 0 || self->procs(h, &count, p) != 0)
      return -1;
    for (unsigned i = 0; i < count && i < 256; i++)
      for (int k = 0; k < n; k++)
        if (pids[k] > 0 && (unsigned) pids[k] == p[i].pid)
          held++;
  }
  return held;
}
