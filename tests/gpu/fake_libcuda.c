/*  fake_libcuda: a kguard emulation of the CUDA driver API, for testing the
    device-side harness on machines without a GPU. NOT a driver: it runs the
    fixture's kernels (kg_fill, kgfx_fill, kgfx_assert, kgfx_trap) on the CPU
    by name, and imitates what the real driver does with them: a failed
    assert prints the device-style line at the next synchronisation and
    poisons the context (710, every later call fails the same way), a trap
    poisons it with 719. Its device is named "kguard emulation: fake CUDA
    driver" so nothing can mistake it for a GPU.

    Used through KGUARD_CUDA_LIB=<this library> by kguard doctor (the real
    dlopen path, the device queries and the pre-flight's module load, launch,
    sync, copy-back) and by tests/gpu/kgfx_cuda.c; see test_fake_driver.py.
    KGFX_FAKE_FAIL=ecc makes every synchronisation fail with an uncorrectable
    ECC error (214), KGFX_FAKE_FAIL=hang makes it block (a wedged device).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int cu_res;
static cu_res s_poison;      /* the sticky error, once there is one */
static char s_pending[512];  /* device printf, flushed at the next sync */

/* Every entry point, declared for -Wmissing-prototypes. */
cu_res cuInit(unsigned flags);
cu_res cuDriverGetVersion(int *v);
cu_res cuDeviceGetCount(int *n);
cu_res cuDeviceGet(int *d, int i);
cu_res cuDeviceGetName(char *name, int len, int d);
cu_res cuDeviceGetAttribute(int *v, int attr, int d);
cu_res cuDeviceTotalMem_v2(size_t *b, int d);
cu_res cuDevicePrimaryCtxRetain(void **ctx, int d);
cu_res cuDevicePrimaryCtxRelease_v2(int d);
cu_res cuCtxSetCurrent(void *ctx);
cu_res cuCtxSynchronize(void);
cu_res cuMemGetInfo_v2(size_t *free_b, size_t *total_b);
cu_res cuMemAlloc_v2(unsigned long long *p, size_t n);
cu_res cuMemFree_v2(unsigned long long p);
cu_res cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n);
cu_res cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n);
cu_res cuModuleLoadData(void **mod, const void *image);
cu_res cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *o, void **v);
cu_res cuModuleGetFunction(void **fn, void *mod, const char *name);
cu_res cuModuleUnload(void *mod);
cu_res cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, unsigned shm, void *stream, void **args, void **extra);
cu_res cuGetErrorName(cu_res e, const char **s);
cu_res cuGetErrorString(cu_res e, const char **s);
cu_res cuDeviceGetPCIBusId(char *bus, int len, int d);
/* NVML, in the same fake library (KGUARD_NVML_LIB=<this library>): two
   processes hold memory on the device, pid 4242 (1 GiB, "a dead kernel not
   yet reaped") and the caller itself (which kguard must leave out). */
typedef struct {
  unsigned pid;
  unsigned long long used;
  unsigned gi, ci;
} fake_nvml_proc_t;
int nvmlInit_v2(void);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **h);
int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *count, fake_nvml_proc_t *p);

#define S_CHECK_POISON() do { if (s_poison) return s_poison; } while (0)

cu_res cuInit(unsigned flags) { (void) flags; return 0; }
cu_res cuDriverGetVersion(int *v) { *v = 12040; return 0; }
cu_res cuDeviceGetCount(int *n) { *n = 1; return 0; }
cu_res cuDeviceGet(int *d, int i) { *d = i; return i == 0 ? 0 : 101; }
cu_res
cuDeviceGetName(char *name, int len, int d)
{
  (void) d;
  snprintf(name, (size_t) len, "kguard emulation: fake CUDA driver");
  return 0;
}
cu_res
cuDeviceGetAttribute(int *v, int attr, int d)
{
  (void) d;
  *v = attr == 75 ? 9 : attr == 76 ? 0 : attr == 32 ? 1 : 0;
  return 0;
}
cu_res cuDeviceTotalMem_v2(size_t *b, int d) { (void) d; *b = (size_t) 80 << 30; return 0; }
cu_res cuDevicePrimaryCtxRetain(void **ctx, int d) { (void) d; *ctx = &s_poison; return 0; }
cu_res cuDevicePrimaryCtxRelease_v2(int d) { (void) d; return 0; }
cu_res cuCtxSetCurrent(void *ctx) { (void) ctx; S_CHECK_POISON(); return 0; }
cu_res
cuCtxSynchronize(void)
{
  const char *fail = getenv("KGFX_FAKE_FAIL");
  if (fail && strcmp(fail, "hang") == 0)
    for (;;)
      pause();   /* the emulated wedged device: until the caller's deadline */
  if (fail && strcmp(fail, "ecc") == 0)
    s_poison = 214;
  if (s_pending[0]) {   /* what the device printed, as the driver flushes it */
    fputs(s_pending, stdout);
    fflush(stdout);
    s_pending[0] = '\0';
  }
  return s_poison;
}
cu_res
cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
  S_CHECK_POISON();
  *total_b = (size_t) 80 << 30;
  *free_b = *total_b - ((size_t) 500 << 20);
  return 0;
}
cu_res
cuMemAlloc_v2(unsigned long long *p, size_t n)
{
  S_CHECK_POISON();
  void *m = calloc(1, n);
  *p = (unsigned long long) (size_t) m;
  return m ? 0 : 2;
}
cu_res cuMemFree_v2(unsigned long long p) { free((void *) (size_t) p); return s_poison; }
cu_res
cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
  S_CHECK_POISON();
  memcpy(dst, (void *) (size_t) src, n);
  return 0;
}
cu_res
cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
  S_CHECK_POISON();
  memcpy((void *) (size_t) dst, src, n);
  return 0;
}
cu_res
cuModuleLoadData(void **mod, const void *image)
{
  S_CHECK_POISON();
  const char *t = image;
  if (!strstr(t, ".version") || !strstr(t, ".entry"))
    return 218;   /* CUDA_ERROR_INVALID_PTX */
  *mod = strdup(t);
  return 0;
}
cu_res
cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *o, void **v)
{
  (void) n, (void) o, (void) v;
  return cuModuleLoadData(mod, image);
}
cu_res
cuModuleGetFunction(void **fn, void *mod, const char *name)
{
  S_CHECK_POISON();
  char decl[160];
  snprintf(decl, sizeof decl, ".entry %s(", name);
  if (!strstr(mod, decl))
    return 500;   /* CUDA_ERROR_NOT_FOUND */
  *fn = strdup(name);
  return 0;
}
cu_res cuModuleUnload(void *mod) { free(mod); return 0; }
cu_res
cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
               unsigned bz, unsigned shm, void *stream, void **args, void **extra)
{
  (void) gx, (void) gy, (void) gz, (void) by, (void) bz, (void) shm, (void) stream, (void) extra;
  S_CHECK_POISON();
  const char *name = f;
  if (strcmp(name, "kg_fill") == 0 || strcmp(name, "kgfx_fill") == 0) {
    unsigned *p = (unsigned *) (size_t) *(unsigned long long *) args[0];
    p[0] = *(unsigned *) args[1];
  } else if (strcmp(name, "kgfx_assert") == 0) {
    const int *labels = (const int *) (size_t) *(unsigned long long *) args[0];
    int n = *(int *) args[1], classes = *(int *) args[2];
    for (unsigned i = 0; i < bx && (int) i < n; i++)
      if (labels[i] < 0 || labels[i] >= classes) {
        snprintf(s_pending, sizeof s_pending,
                 "kgfx_cuda.ptx:42: kgfx_assert: block: [0,0,0], thread: [%u,0,0] Assertion "
                 "`labels[i] >= 0 && labels[i] < classes` failed.\n", i);
        s_poison = 710;
        break;
      }
  } else if (strcmp(name, "kgfx_trap") == 0)
    s_poison = 719;
  return 0;   /* launches are asynchronous: the error shows at the sync */
}
cu_res
cuDeviceGetPCIBusId(char *bus, int len, int d)
{
  snprintf(bus, (size_t) len, "00000000:%02x:00.0", 0x65 + d);
  return 0;
}

int nvmlInit_v2(void) { return 0; }

int
nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **h)
{
  *h = strcmp(bus, "00000000:65:00.0") == 0 ? (void *) &s_poison : NULL;
  return *h ? 0 : 6;   /* NVML_ERROR_NOT_FOUND */
}

int
nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *count, fake_nvml_proc_t *p)
{
  (void) h;
  if (*count < 2) {
    *count = 2;
    return 7;   /* NVML_ERROR_INSUFFICIENT_SIZE */
  }
  p[0] = (fake_nvml_proc_t){4242, 1ull << 30, 0xFFFFFFFFu, 0xFFFFFFFFu};
  p[1] = (fake_nvml_proc_t){(unsigned) getpid(), 300ull << 20, 0xFFFFFFFFu, 0xFFFFFFFFu};
  *count = 2;
  return 0;
}

cu_res
cuGetErrorName(cu_res e, const char **s)
{
  switch (e) {
  case 0: *s = "CUDA_SUCCESS"; return 0;
  case 710: *s = "CUDA_ERROR_ASSERT"; return 0;
  case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; return 0;
  case 214: *s = "CUDA_ERROR_ECC_UNCORRECTABLE"; return 0;
  case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
  default: *s = NULL; return 1;
  }
}
cu_res
cuGetErrorString(cu_res e, const char **s)
{
  switch (e) {
  case 0: *s = "no error"; return 0;
  case 710: *s = "device-side assert triggered"; return 0;
  case 719: *s = "unspecified launch failure"; return 0;
  case 214: *s = "uncorrectable ECC error encountered"; return 0;
  case 218: *s = "a PTX JIT compilation failed"; return 0;
  default: *s = NULL; return 1;
  }
}
