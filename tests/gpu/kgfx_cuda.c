/*  kgfx_cuda: a real CUDA device-fault fixture that loads on any driver new
    enough for the GPU. It links nothing from CUDA: the driver API comes from
    dlopen("libcuda.so.1"), the kernels from kgfx_cuda.ptx (PTX ISA 6.0 for
    sm_50, JIT-compiled by the driver), so the toolkit's runtime version does
    not matter (unlike cuda_device_assert.cu, which needs a CUDA 13 driver).

    Loaded with ctypes by tests/gpu/real_device.py, inside a live ipykernel
    under `kguard kernel`, so the fault happens in the guarded process itself:
      kgfx_init(ptx_path, device)  cuInit, retain + make current the primary
                                   context, load the module; 0 or a CUresult
      kgfx_fill()                  allocate, launch kgfx_fill, synchronise,
                                   copy back, compare: 0 = the device works
      kgfx_assert()                the 4-class label bug: labels {0,1,2,4},
                                   assert(label < 4) on the device; returns
                                   the synchronisation's result (710 expected,
                                   and the device prints "... Assertion `...`
                                   failed." on the process's stdout)
      kgfx_trap()                  a kernel that executes trap: 719 expected
      kgfx_error_name(code), kgfx_error_string(code)   the driver's own words
    Negative returns: -1 no driver library (or a symbol missing), -2 the PTX
    file is unreadable; kgfx_last_error() says more.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exported functions (ctypes finds them by name; no header is shipped). */
const char *kgfx_last_error(void);
const char *kgfx_error_name(int code);
const char *kgfx_error_string(int code);
int kgfx_init(const char *ptx_path, int device);
int kgfx_fill(void);
int kgfx_assert(void);
int kgfx_trap(void);

typedef int cu_res;
static struct {
  void *lib;
  cu_res (*Init)(unsigned);
  cu_res (*DeviceGet)(int *, int);
  cu_res (*PrimaryCtxRetain)(void **, int);
  cu_res (*CtxSetCurrent)(void *);
  cu_res (*CtxSynchronize)(void);
  cu_res (*ModuleLoadData)(void **, const void *);
  cu_res (*ModuleGetFunction)(void **, void *, const char *);
  cu_res (*MemAlloc)(unsigned long long *, size_t);
  cu_res (*MemFree)(unsigned long long);
  cu_res (*MemcpyHtoD)(unsigned long long, const void *, size_t);
  cu_res (*MemcpyDtoH)(void *, unsigned long long, size_t);
  cu_res (*LaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
  cu_res (*GetErrorName)(cu_res, const char **);
  cu_res (*GetErrorString)(cu_res, const char **);
  void *ctx, *mod, *fill, *assert_fn, *trap;
} S;

static char s_err[512];

const char *
kgfx_last_error(void)
{
  return s_err;
}

const char *
kgfx_error_name(int code)
{
  const char *s = NULL;
  return S.GetErrorName && S.GetErrorName(code, &s) == 0 && s ? s : "CUDA_ERROR_UNKNOWN";
}

const char *
kgfx_error_string(int code)
{
  const char *s = NULL;
  return S.GetErrorString && S.GetErrorString(code, &s) == 0 && s ? s : "unknown error";
}

static int
s_load(void)
{
  if (S.lib)
    return 0;
  const char *path = getenv("KGUARD_CUDA_LIB");
  S.lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!S.lib) {
    snprintf(s_err, sizeof s_err, "%s", dlerror());
    return -1;
  }
  struct { void **fn; const char *name; } syms[] = {
    {(void **) &S.Init, "cuInit"}, {(void **) &S.DeviceGet, "cuDeviceGet"},
    {(void **) &S.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
    {(void **) &S.CtxSetCurrent, "cuCtxSetCurrent"},
    {(void **) &S.CtxSynchronize, "cuCtxSynchronize"},
    {(void **) &S.ModuleLoadData, "cuModuleLoadData"},
    {(void **) &S.ModuleGetFunction, "cuModuleGetFunction"},
    {(void **) &S.MemAlloc, "cuMemAlloc_v2"}, {(void **) &S.MemFree, "cuMemFree_v2"},
    {(void **) &S.MemcpyHtoD, "cuMemcpyHtoD_v2"}, {(void **) &S.MemcpyDtoH, "cuMemcpyDtoH_v2"},
    {(void **) &S.LaunchKernel, "cuLaunchKernel"},
    {(void **) &S.GetErrorName, "cuGetErrorName"},
    {(void **) &S.GetErrorString, "cuGetErrorString"}};
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
    if (!(*syms[i].fn = dlsym(S.lib, syms[i].name))) {
      snprintf(s_err, sizeof s_err, "libcuda.so.1 lacks %s", syms[i].name);
      return -1;
    }
  return 0;
}

int
kgfx_init(const char *ptx_path, int device)
{
  if (s_load() != 0)
    return -1;
  FILE *f = fopen(ptx_path, "rb");
  if (!f) {
    snprintf(s_err, sizeof s_err, "cannot open %s", ptx_path);
    return -2;
  }
  char *text = calloc(1, 1 << 16);
  size_t n = text ? fread(text, 1, (1 << 16) - 1, f) : 0;
  fclose(f);
  if (!n) {
    free(text);
    snprintf(s_err, sizeof s_err, "cannot read %s", ptx_path);
    return -2;
  }
  int dev = 0;
  cu_res rc;
  if ((rc = S.Init(0)) || (rc = S.DeviceGet(&dev, device))
      || (rc = S.PrimaryCtxRetain(&S.ctx, dev)) || (rc = S.CtxSetCurrent(S.ctx))
      || (rc = S.ModuleLoadData(&S.mod, text))
      || (rc = S.ModuleGetFunction(&S.fill, S.mod, "kgfx_fill"))
      || (rc = S.ModuleGetFunction(&S.assert_fn, S.mod, "kgfx_assert"))
      || (rc = S.ModuleGetFunction(&S.trap, S.mod, "kgfx_trap")))
    snprintf(s_err, sizeof s_err, "%s: %s", kgfx_error_name(rc), kgfx_error_string(rc));
  free(text);
  return rc;
}

int
kgfx_fill(void)
{
  unsigned long long d = 0;
  unsigned v = 0x6b67, back = 0;
  cu_res rc = S.CtxSetCurrent(S.ctx);
  if (!rc)
    rc = S.MemAlloc(&d, 4096);
  void *args[] = {&d, &v};
  if (!rc)
    rc = S.LaunchKernel(S.fill, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
  if (!rc)
    rc = S.CtxSynchronize();
  if (!rc)
    rc = S.MemcpyDtoH(&back, d, sizeof back);
  if (d)
    S.MemFree(d);
  if (!rc && back != v) {
    snprintf(s_err, sizeof s_err, "kgfx_fill wrote %#x, expected %#x", back, v);
    return -3;
  }
  return rc;
}

int
kgfx_assert(void)
{
  static const int labels[4] = {0, 1, 2, 4};   /* 4 in a 4-class problem */
  unsigned long long d = 0;
  int n = 4, classes = 4;
  cu_res rc = S.CtxSetCurrent(S.ctx);
  if (!rc)
    rc = S.MemAlloc(&d, sizeof labels);
  if (!rc)
    rc = S.MemcpyHtoD(d, labels, sizeof labels);
  void *args[] = {&d, &n, &classes};
  if (!rc)
    rc = S.LaunchKernel(S.assert_fn, 1, 1, 1, 4, 1, 1, 0, NULL, args, NULL);
  if (!rc)
    rc = S.CtxSynchronize();
  fflush(stdout);
  return rc;   /* the context is now unusable: no cleanup can succeed */
}

int
kgfx_trap(void)
{
  unsigned long long d = 0;
  cu_res rc = S.CtxSetCurrent(S.ctx);
  if (!rc)
    rc = S.MemAlloc(&d, 4096);
  void *args[] = {&d};
  if (!rc)
    rc = S.LaunchKernel(S.trap, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
  if (!rc)
    rc = S.CtxSynchronize();
  return rc;
}
