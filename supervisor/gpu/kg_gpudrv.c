/*  kg_gpudrv: CUDA driver API and HIP runtime through dlopen (kg_gpudrv.h). */
#include "kg_gpudrv.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "kg_clock.h"

/* ---- CUDA driver API: our own prototypes (cuda.h is not needed) ------- */
typedef int cu_res;
typedef int cu_dev;
typedef void *cu_ctx;
typedef void *cu_mod;
typedef void *cu_fn;
typedef unsigned long long cu_ptr;

typedef struct {
  void *lib;
  cu_res (*Init)(unsigned);
  cu_res (*DriverGetVersion)(int *);
  cu_res (*DeviceGetCount)(int *);
  cu_res (*DeviceGet)(cu_dev *, int);
  cu_res (*DeviceGetName)(char *, int, cu_dev);
  cu_res (*DeviceGetAttribute)(int *, int, cu_dev);
  cu_res (*DeviceTotalMem)(size_t *, cu_dev);
  cu_res (*PrimaryCtxRetain)(cu_ctx *, cu_dev);
  cu_res (*PrimaryCtxRelease)(cu_dev);
  cu_res (*CtxSetCurrent)(cu_ctx);
  cu_res (*CtxSynchronize)(void);
  cu_res (*MemGetInfo)(size_t *, size_t *);
  cu_res (*MemAlloc)(cu_ptr *, size_t);
  cu_res (*MemFree)(cu_ptr);
  cu_res (*MemcpyDtoH)(void *, cu_ptr, size_t);
  cu_res (*ModuleLoadDataEx)(cu_mod *, const void *, unsigned, int *, void **);
  cu_res (*ModuleGetFunction)(cu_fn *, cu_mod, const char *);
  cu_res (*ModuleUnload)(cu_mod);
  cu_res (*LaunchKernel)(cu_fn, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
  cu_res (*GetErrorName)(cu_res, const char **);
  cu_res (*GetErrorString)(cu_res, const char **);
  cu_res (*DeviceGetPCIBusId)(char *, int, cu_dev);   /* optional */
} s_cuda_t;

/*  NVML (libnvidia-ml.so.1), optional: which processes hold device memory.
    nvmlProcessInfo_t (= _v2_st) of the _v3 query: pid, usedGpuMemory, MIG
    instance ids. */
typedef struct {
  unsigned pid;
  unsigned long long used;
  unsigned gpu_instance, compute_instance;
} s_nvml_proc_t;

typedef struct {
  void *lib;
  int (*HandleByPciBusId)(const char *, void **);
  int (*Processes)(void *, unsigned *, s_nvml_proc_t *);
} s_nvml_t;

static void
s_nvml_open(s_nvml_t *n)
{
  memset(n, 0, sizeof *n);
  const char *path = getenv("KGUARD_NVML_LIB");
  n->lib = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  int (*init)(void) = NULL;
  if (n->lib)
    *(void **) &init = dlsym(n->lib, "nvmlInit_v2");
  if (n->lib) {
    *(void **) &n->HandleByPciBusId = dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **) &n->Processes = dlsym(n->lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  }
  if (!init || !n->HandleByPciBusId || !n->Processes || init() != 0)
    n->Processes = NULL;
}

/*  "processes": [{"pid", "used_bytes"}] of the device with PCI bus id bus,
    this process left out; or "processes_error". */
static void
s_nvml_processes(const s_nvml_t *n, const char *bus, cJSON *dev)
{
  void *h = NULL;
  s_nvml_proc_t procs[64];
  unsigned count = 64;
  if (!n->Processes) {
    cJSON_AddStringToObject(dev, "processes_error", "NVML (libnvidia-ml.so.1) unavailable");
    return;
  }
  if (!bus || n->HandleByPciBusId(bus, &h) != 0 || n->Processes(h, &count, procs) != 0) {
    cJSON_AddStringToObject(dev, "processes_error", "NVML could not list the processes");
    return;
  }
  cJSON *arr = cJSON_AddArrayToObject(dev, "processes");
  for (unsigned i = 0; i < count && i < 64; i++) {
    if (procs[i].pid == (unsigned) getpid())
      continue;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "pid", procs[i].pid);
    cJSON_AddNumberToObject(p, "used_bytes", (double) procs[i].used);
    cJSON_AddItemToArray(arr, p);
  }
}

enum { CU_ATTR_CC_MAJOR = 75, CU_ATTR_CC_MINOR = 76, CU_ATTR_ECC = 32 };
enum { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };

/*  The pre-flight kernel: p[0] = v. PTX ISA 6.0 for sm_50, so that any
    driver that knows the GPU can JIT-compile it. */
static const char s_fill_ptx[] =
  ".version 6.0\n.target sm_50\n.address_size 64\n"
  ".visible .entry kg_fill(.param .u64 kg_fill_p, .param .u32 kg_fill_v)\n{\n"
  "  .reg .b32 %r<2>;\n  .reg .b64 %rd<3>;\n"
  "  ld.param.u64 %rd1, [kg_fill_p];\n  ld.param.u32 %r1, [kg_fill_v];\n"
  "  cvta.to.global.u64 %rd2, %rd1;\n  st.global.u32 [%rd2], %r1;\n  ret;\n}\n";

bool
kg_gpudrv_code_is_failing(int code)
{
  static const int setup[] = {0, 2, 34, 35, 46, 100, 101, 209, 218, 221, 222};
  for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++)
    if (code == setup[i])
      return false;
  return true;
}

/*  dlsym of the first name that exists (versioned names first). */
static void *
s_sym(void *lib, const char *a, const char *b)
{
  void *p = dlsym(lib, a);
  return p || !b ? p : dlsym(lib, b);
}

#define S_LOAD(field, a, b)                                                  \
  do {                                                                       \
    *(void **) &cu->field = s_sym(cu->lib, a, b);                            \
    if (!cu->field) {                                                        \
      snprintf(err, errlen, "%s lacks %s (a driver older than CUDA 11?)", path, a); \
      return -1;                                                             \
    }                                                                        \
  } while (0)

static int
s_cuda_open(s_cuda_t *cu, const char *path, char *err, size_t errlen)
{
  memset(cu, 0, sizeof *cu);
  cu->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!cu->lib) {
    snprintf(err, errlen, "%s", dlerror());
    return -1;
  }
  S_LOAD(Init, "cuInit", NULL);
  S_LOAD(DriverGetVersion, "cuDriverGetVersion", NULL);
  S_LOAD(DeviceGetCount, "cuDeviceGetCount", NULL);
  S_LOAD(DeviceGet, "cuDeviceGet", NULL);
  S_LOAD(DeviceGetName, "cuDeviceGetName", NULL);
  S_LOAD(DeviceGetAttribute, "cuDeviceGetAttribute", NULL);
  S_LOAD(DeviceTotalMem, "cuDeviceTotalMem_v2", NULL);
  S_LOAD(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
  S_LOAD(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
  S_LOAD(CtxSetCurrent, "cuCtxSetCurrent", NULL);
  S_LOAD(CtxSynchronize, "cuCtxSynchronize", NULL);
  S_LOAD(MemGetInfo, "cuMemGetInfo_v2", NULL);
  S_LOAD(MemAlloc, "cuMemAlloc_v2", NULL);
  S_LOAD(MemFree, "cuMemFree_v2", NULL);
  S_LOAD(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL);
  S_LOAD(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL);
  S_LOAD(ModuleGetFunction, "cuModuleGetFunction", NULL);
  S_LOAD(ModuleUnload, "cuModuleUnload", NULL);
  S_LOAD(LaunchKernel, "cuLaunchKernel", NULL);
  S_LOAD(GetErrorName, "cuGetErrorName", NULL);
  S_LOAD(GetErrorString, "cuGetErrorString", NULL);
  *(void **) &cu->DeviceGetPCIBusId = dlsym(cu->lib, "cuDeviceGetPCIBusId");
  return 0;
}

/*  {"step", "code", "name", "string", "failing"} for a failed call. */
static cJSON *
s_cuda_error(const s_cuda_t *cu, const char *step, cu_res rc, const char *extra)
{
  /* The stub library answers 34 to everything, cuGetErrorName included:
     name the codes that describe the setup ourselves. */
  static const struct { int code; const char *name, *str; } known[] = {
    {34, "CUDA_ERROR_STUB_LIBRARY", "the CUDA driver is a stub library, not a real driver"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "the driver is older than this program needs"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"}};
  const char *name = NULL, *str = NULL;
  if (cu->GetErrorName(rc, &name) != 0 || !name || cu->GetErrorString(rc, &str) != 0 || !str) {
    name = "CUDA_ERROR_UNKNOWN_CODE";
    str = "unknown error";
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
      if (known[i].code == rc)
        name = known[i].name, str = known[i].str;
  }
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "step", step);
  cJSON_AddNumberToObject(e, "code", rc);
  cJSON_AddStringToObject(e, "name", name);
  char buf[1200];
  snprintf(buf, sizeof buf, "%s%s%.1000s", str, extra && *extra ? ": " : "", extra ? extra : "");
  cJSON_AddStringToObject(e, "string", buf);
  cJSON_AddBoolToObject(e, "failing", kg_gpudrv_code_is_failing(rc));
  return e;
}

/*  Allocate, launch kg_fill, synchronise, copy back, compare; in the current
    context. Returns NULL when healthy, else the error (new). */
static cJSON *
s_cuda_exercise(const s_cuda_t *cu)
{
  cu_ptr d = 0;
  cu_mod mod = NULL;
  cu_fn fn = NULL;
  cJSON *err = NULL;
  cu_res rc = cu->MemAlloc(&d, 1u << 20);
  if (rc)
    return s_cuda_error(cu, "allocate", rc, NULL);
  char log[1024] = "";
  int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {log, (void *) (uintptr_t) sizeof log};
  rc = cu->ModuleLoadDataEx(&mod, s_fill_ptx, 2, opts, vals);
  if (rc)
    err = s_cuda_error(cu, "load-module", rc, log);
  else if ((rc = cu->ModuleGetFunction(&fn, mod, "kg_fill")))
    err = s_cuda_error(cu, "get-function", rc, NULL);
  unsigned value = 0x6b67u, back = 0;
  void *args[] = {&d, &value};
  if (!err && (rc = cu->LaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL)))
    err = s_cuda_error(cu, "launch", rc, NULL);
  if (!err && (rc = cu->CtxSynchronize()))
    err = s_cuda_error(cu, "synchronize", rc, NULL);
  if (!err && (rc = cu->MemcpyDtoH(&back, d, sizeof back)))
    err = s_cuda_error(cu, "copy-back", rc, NULL);
  if (!err && back != value) {
    err = cJSON_CreateObject();
    cJSON_AddStringToObject(err, "step", "compare");
    cJSON_AddNumberToObject(err, "code", -1);
    cJSON_AddStringToObject(err, "name", "KGUARD_WRONG_RESULT");
    cJSON_AddStringToObject(err, "string", "the kernel ran but wrote the wrong value");
    cJSON_AddBoolToObject(err, "failing", true);
  }
  if (mod)
    cu->ModuleUnload(mod);
  cu->MemFree(d);
  return err;
}

static void
s_add_mem(cJSON *dev, size_t free_b, size_t total_b)
{
  cJSON_AddNumberToObject(dev, "free_bytes", (double) free_b);
  cJSON_AddNumberToObject(dev, "used_bytes", (double) (total_b - free_b));
}

/*  The pre-flight's verdict on a device: e, the exercise's error (taken),
    or NULL when it passed; t0 when it began. A failing error sets
    *failing. */
static void
s_add_preflight(cJSON *d, cJSON *e, int64_t t0, bool *failing)
{
  cJSON *p = cJSON_AddObjectToObject(d, "preflight");
  cJSON_AddBoolToObject(p, "ok", e == NULL);
  cJSON_AddNumberToObject(p, "ms", (double) (kg_clock_mono_ms() - t0));
  if (e) {
    *failing |= cJSON_IsTrue(cJSON_GetObjectItem(e, "failing"));
    cJSON_AddItemToObject(p, "error", e);
  }
}

/*  The driver's version, and its device count (0 with "error" set when
    cuInit or the count fails). */
static int
s_cuda_count(s_cuda_t *cu, cJSON *o)
{
  int v = 0;
  if (cu->DriverGetVersion(&v) == 0) {
    char buf[32];
    snprintf(buf, sizeof buf, "%d.%d", v / 1000, v % 1000 / 10);
    cJSON_AddStringToObject(o, "driver_version", buf);
  }
  cu_res rc = cu->Init(0);
  int count = 0;
  if (!rc)
    rc = cu->DeviceGetCount(&count);
  if (rc) {
    cJSON *e = s_cuda_error(cu, "init", rc, NULL);
    char buf[512];
    snprintf(buf, sizeof buf, "cuInit: %s (%d): %s", cJSON_GetObjectItem(e, "name")->valuestring,
             rc, cJSON_GetObjectItem(e, "string")->valuestring);
    cJSON_AddStringToObject(o, "error", buf);
    cJSON_Delete(e);
  }
  cJSON_AddNumberToObject(o, "device_count", count);
  return count;
}

/*  Device i's facts into d (name, capability, memory, ECC, bus id, the
    processes NVML sees), then, in its primary context, its free memory
    and, when preflight, the exercise's verdict. */
static void
s_cuda_device(s_cuda_t *cu, s_nvml_t *nvml, int i, cJSON *d, bool preflight, bool *failing)
{
  cJSON_AddNumberToObject(d, "index", i);
  cu_dev dev;
  cu_res rc;
  if ((rc = cu->DeviceGet(&dev, i))) {
    cJSON_AddItemToObject(d, "error", s_cuda_error(cu, "device", rc, NULL));
    return;
  }
  char name[256] = "";
  int major = 0, minor = 0, ecc = 0;
  size_t total = 0;
  cu->DeviceGetName(name, sizeof name, dev);
  cu->DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, dev);
  cu->DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, dev);
  cu->DeviceGetAttribute(&ecc, CU_ATTR_ECC, dev);
  cu->DeviceTotalMem(&total, dev);
  char cap[16];
  snprintf(cap, sizeof cap, "%d.%d", major, minor);
  cJSON_AddStringToObject(d, "name", name);
  cJSON_AddStringToObject(d, "capability", cap);
  cJSON_AddNumberToObject(d, "total_bytes", (double) total);
  cJSON_AddBoolToObject(d, "ecc", ecc != 0);
  char bus[64] = "";
  if (cu->DeviceGetPCIBusId && cu->DeviceGetPCIBusId(bus, sizeof bus, dev) == 0)
    cJSON_AddStringToObject(d, "pci_bus_id", bus);
  s_nvml_processes(nvml, *bus ? bus : NULL, d);   /* before our own context exists */
  cu_ctx ctx = NULL;
  int64_t t0 = kg_clock_mono_ms();
  if ((rc = cu->PrimaryCtxRetain(&ctx, dev)) || (rc = cu->CtxSetCurrent(ctx))) {
    cJSON *e = s_cuda_error(cu, "context", rc, NULL);
    if (preflight) {
      cJSON *p = cJSON_AddObjectToObject(d, "preflight");
      cJSON_AddBoolToObject(p, "ok", false);
      *failing |= cJSON_IsTrue(cJSON_GetObjectItem(e, "failing"));
      cJSON_AddItemToObject(p, "error", e);
    } else
      cJSON_AddItemToObject(d, "error", e);
    if (ctx)
      cu->PrimaryCtxRelease(dev);
    return;
  }
  size_t free_b = 0, total_b = 0;
  if (cu->MemGetInfo(&free_b, &total_b) == 0)
    s_add_mem(d, free_b, total_b);
  if (preflight)
    s_add_preflight(d, s_cuda_exercise(cu), t0, failing);
  cu->CtxSetCurrent(NULL);
  cu->PrimaryCtxRelease(dev);
}

static cJSON *
s_cuda(bool preflight, bool *failing)
{
  cJSON *o = cJSON_CreateObject();
  const char *path = getenv("KGUARD_CUDA_LIB");
  if (!path || !*path)
    path = "libcuda.so.1";
  cJSON_AddStringToObject(o, "library", path);
  char err[1024] = "";
  s_cuda_t cu;
  if (s_cuda_open(&cu, path, err, sizeof err) != 0) {
    cJSON_AddBoolToObject(o, "loaded", false);
    cJSON_AddStringToObject(o, "error", err);
    return o;
  }
  cJSON_AddBoolToObject(o, "loaded", true);
  int count = s_cuda_count(&cu, o);
  cJSON *devs = cJSON_AddArrayToObject(o, "devices");
  s_nvml_t nvml;
  if (count > 0)
    s_nvml_open(&nvml);
  for (int i = 0; i < count; i++) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddItemToArray(devs, d);
    s_cuda_device(&cu, &nvml, i, d, preflight, failing);
  }
  return o;
}

/* ---- HIP runtime ------------------------------------------------------- */
typedef struct {
  void *lib;
  int (*Init)(unsigned);
  int (*DriverGetVersion)(int *);
  int (*RuntimeGetVersion)(int *);
  int (*GetDeviceCount)(int *);
  int (*DeviceGetName)(char *, int, int);
  int (*DeviceTotalMem)(size_t *, int);
  int (*SetDevice)(int);
  int (*MemGetInfo)(size_t *, size_t *);
  int (*Malloc)(void **, size_t);
  int (*Free)(void *);
  int (*Memset)(void *, int, size_t);
  int (*Memcpy)(void *, const void *, size_t, int);
  int (*DeviceSynchronize)(void);
  const char *(*GetErrorName)(int);
} s_hip_t;

static cJSON *
s_hip_error(const s_hip_t *h, const char *step, int rc)
{
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "step", step);
  cJSON_AddNumberToObject(e, "code", rc);
  const char *name = h->GetErrorName ? h->GetErrorName(rc) : NULL;
  cJSON_AddStringToObject(e, "name", name ? name : "hipErrorUnknown");
  /* hipGetErrorString returns the enum name on ROCm 5: the name says it all */
  cJSON_AddStringToObject(e, "string", name ? name : "unknown error");
  cJSON_AddBoolToObject(e, "failing", kg_gpudrv_code_is_failing(rc));
  return e;
}

static cJSON *
s_hip_exercise(const s_hip_t *h)
{
  void *d = NULL;
  int rc = h->Malloc(&d, 1u << 20);
  if (rc)
    return s_hip_error(h, "allocate", rc);
  unsigned char back[64];
  cJSON *err = NULL;
  if ((rc = h->Memset(d, 0x6b, sizeof back)))   /* the runtime's fill kernel */
    err = s_hip_error(h, "launch", rc);
  else if ((rc = h->DeviceSynchronize()))
    err = s_hip_error(h, "synchronize", rc);
  else if ((rc = h->Memcpy(back, d, sizeof back, 2 /* DeviceToHost */)))
    err = s_hip_error(h, "copy-back", rc);
  else
    for (size_t i = 0; i < sizeof back && !err; i++)
      if (back[i] != 0x6b) {
        err = cJSON_CreateObject();
        cJSON_AddStringToObject(err, "step", "compare");
        cJSON_AddNumberToObject(err, "code", -1);
        cJSON_AddStringToObject(err, "name", "KGUARD_WRONG_RESULT");
        cJSON_AddStringToObject(err, "string", "the fill kernel wrote the wrong value");
        cJSON_AddBoolToObject(err, "failing", true);
      }
  h->Free(d);
  return err;
}

/*  dlopen the HIP runtime (KGUARD_HIP_LIB, else the usual names) and
    find its functions. Records "library" and "loaded" in o; 0, or -1 with
    "error" set in o. */
static int
s_hip_open(s_hip_t *h, cJSON *o)
{
  const char *env = getenv("KGUARD_HIP_LIB");
  const char *names[] = {env, "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                         "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so"};
  const char *path = NULL;
  char err[1024] = "";
  for (size_t i = env && *env ? 0 : 1; i < sizeof names / sizeof names[0] && !h->lib; i++) {
    path = names[i];
    h->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h->lib && !*err)
      snprintf(err, sizeof err, "%s", dlerror());
    if (env && *env)
      break;
  }
  cJSON_AddStringToObject(o, "library", h->lib ? path : names[env && *env ? 0 : 1]);
  cJSON_AddBoolToObject(o, "loaded", h->lib != NULL);
  if (!h->lib) {
    cJSON_AddStringToObject(o, "error", err);
    return -1;
  }
  /* optional: DriverGetVersion, RuntimeGetVersion, GetErrorName */
  const struct { void **fn; const char *name; bool needed; } syms[] = {
    {(void **) &h->Init, "hipInit", true},
    {(void **) &h->DriverGetVersion, "hipDriverGetVersion", false},
    {(void **) &h->RuntimeGetVersion, "hipRuntimeGetVersion", false},
    {(void **) &h->GetDeviceCount, "hipGetDeviceCount", true},
    {(void **) &h->DeviceGetName, "hipDeviceGetName", true},
    {(void **) &h->DeviceTotalMem, "hipDeviceTotalMem", true},
    {(void **) &h->SetDevice, "hipSetDevice", true},
    {(void **) &h->MemGetInfo, "hipMemGetInfo", true},
    {(void **) &h->Malloc, "hipMalloc", true},
    {(void **) &h->Free, "hipFree", true},
    {(void **) &h->Memset, "hipMemset", true},
    {(void **) &h->Memcpy, "hipMemcpy", true},
    {(void **) &h->DeviceSynchronize, "hipDeviceSynchronize", true},
    {(void **) &h->GetErrorName, "hipGetErrorName", false},
  };
  bool missing = false;
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].fn = dlsym(h->lib, syms[i].name);
    missing |= syms[i].needed && !*syms[i].fn;
  }
  if (missing) {
    cJSON_AddStringToObject(o, "error", "the HIP runtime lacks a function kguard needs");
    return -1;
  }
  return 0;
}

/*  The runtime's versions, and its device count (0 with "error" set when
    hipInit or the count fails). */
static int
s_hip_count(const s_hip_t *h, cJSON *o)
{
  int v = 0;
  char buf[64];
  if (h->DriverGetVersion && h->DriverGetVersion(&v) == 0) {
    snprintf(buf, sizeof buf, "%d", v);
    cJSON_AddStringToObject(o, "driver_version", buf);
  }
  if (h->RuntimeGetVersion && h->RuntimeGetVersion(&v) == 0) {
    /* HIP_VERSION = major * 10000000 + minor * 100000 + patch */
    snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000000, v / 100000 % 100, v % 100000);
    cJSON_AddStringToObject(o, "runtime_version", buf);
  }
  int count = 0;
  int rc = h->Init(0);
  if (!rc)
    rc = h->GetDeviceCount(&count);
  if (rc) {
    const char *name = h->GetErrorName ? h->GetErrorName(rc) : NULL;
    snprintf(buf, sizeof buf, "%s (%d)", name ? name : "hipError", rc);
    cJSON_AddStringToObject(o, "error", buf);
    count = 0;
  }
  cJSON_AddNumberToObject(o, "device_count", count);
  return count;
}

static cJSON *
s_hip(bool preflight, bool *failing)
{
  cJSON *o = cJSON_CreateObject();
  s_hip_t h = {0};
  if (s_hip_open(&h, o) != 0)
    return o;
  int count = s_hip_count(&h, o);
  cJSON *devs = cJSON_AddArrayToObject(o, "devices");
  for (int i = 0; i < count; i++) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddItemToArray(devs, d);
    cJSON_AddNumberToObject(d, "index", i);
    char name[256] = "";
    size_t total = 0;
    h.DeviceGetName(name, sizeof name, i);
    h.DeviceTotalMem(&total, i);
    cJSON_AddStringToObject(d, "name", name);
    cJSON_AddNumberToObject(d, "total_bytes", (double) total);
    int64_t t0 = kg_clock_mono_ms();
    int rc;
    if ((rc = h.SetDevice(i))) {
      cJSON_AddItemToObject(d, "error", s_hip_error(&h, "set-device", rc));
      continue;
    }
    size_t free_b = 0, total_b = 0;
    if (h.MemGetInfo(&free_b, &total_b) == 0)
      s_add_mem(d, free_b, total_b);
    if (preflight)
      s_add_preflight(d, s_hip_exercise(&h), t0, failing);
  }
  return o;
}

/* ---- the worker --------------------------------------------------------- */

/*  The labelled emulation of a failing device (KGUARD_EMULATE). */
static cJSON *
s_emulated_failure(void)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "library", "kguard emulation (no driver loaded)");
  cJSON_AddBoolToObject(o, "loaded", true);
  cJSON_AddStringToObject(o, "driver_version", "emulated");
  cJSON_AddNumberToObject(o, "device_count", 1);
  cJSON *d = cJSON_CreateObject();
  cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "devices"), d);
  cJSON_AddNumberToObject(d, "index", 0);
  cJSON_AddStringToObject(d, "name", "kguard emulation: no GPU was used");
  cJSON *p = cJSON_AddObjectToObject(d, "preflight");
  cJSON_AddBoolToObject(p, "ok", false);
  cJSON *e = cJSON_AddObjectToObject(p, "error");
  cJSON_AddStringToObject(e, "step", "synchronize");
  cJSON_AddNumberToObject(e, "code", 214);
  cJSON_AddStringToObject(e, "name", "CUDA_ERROR_ECC_UNCORRECTABLE");
  cJSON_AddStringToObject(e, "string", "uncorrectable ECC error encountered "
                                       "(kguard emulation: KGUARD_EMULATE=preflight-fail)");
  cJSON_AddBoolToObject(e, "failing", true);
  return o;
}

int
kg_gpudrv_worker_main(bool preflight)
{
  const char *emu = getenv("KGUARD_EMULATE");
  bool failing = false;
  cJSON *out = cJSON_CreateObject();
  bool emulated = preflight && emu && (strstr(emu, "preflight-fail") || strstr(emu, "preflight-hang"));
  cJSON_AddBoolToObject(out, "emulated", emulated);
  if (emulated && strstr(emu, "preflight-hang")) {
    /* kguard emulation of a wedged driver: block until the caller's deadline
       kills us (pause() returns only for a caught signal; we catch none). */
    fprintf(stderr, "kguard emulation: preflight-hang: blocking as a wedged driver would\n");
    for (;;)
      pause();
  }
  if (emulated) {
    cJSON_AddItemToObject(out, "cuda", s_emulated_failure());
    failing = true;
  } else
    cJSON_AddItemToObject(out, "cuda", s_cuda(preflight, &failing));
  if (!emulated)
    cJSON_AddItemToObject(out, "hip", s_hip(preflight, &failing));
  char *text = cJSON_PrintUnformatted(out);
  cJSON_Delete(out);
  if (text) {
    puts(text);
    free(text);
  }
  fflush(stdout);
  return failing ? 1 : 0;
}
