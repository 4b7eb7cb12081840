/*  kgfx_hip: the HIP twin of kgfx_cuda.c (same C API, loaded with ctypes by
    tests/gpu/kgfx.py when KGFX_LIB names it). Built with hipcc where it
    exists (tests/gpu/CMakeLists.txt), for KGUARD_HIP_ARCHS.

    HIP with asserts built in prints "Device-side assertion `...' failed."
    and, on ROCm 5.x, aborts the process (HSA_STATUS_ERROR_EXCEPTION, then
    SIGABRT) instead of returning 710; newer ROCm may return 710 or 719. A
    trap gives 719 (hipErrorLaunchFailure) or the same abort.
*/
#undef NDEBUG
#include <assert.h>
#include <stdio.h>

#include <hip/hip_runtime.h>

extern "C" {
const char *kgfx_last_error(void);
const char *kgfx_error_name(int code);
const char *kgfx_error_string(int code);
int kgfx_init(const char *ptx_path, int device);
int kgfx_fill(void);
int kgfx_assert(void);
int kgfx_trap(void);
}

__global__ void
kgfx_fill_k(unsigned *p, unsigned v)
{
  p[0] = v;
}

__global__ void
kgfx_assert_k(const int *labels, int n, int classes)
{
  int i = threadIdx.x;
  if (i < n)
    assert(labels[i] >= 0 && labels[i] < classes);
}

__global__ void
kgfx_trap_k(unsigned *p)
{
  p[0] = 1;
  __builtin_trap();
}

static char s_err[256];

const char *
kgfx_last_error(void)
{
  return s_err;
}

const char *
kgfx_error_name(int code)
{
  return hipGetErrorName((hipError_t) code);
}

const char *
kgfx_error_string(int code)
{
  return hipGetErrorString((hipError_t) code);
}

int
kgfx_init(const char *ptx_path, int device)
{
  (void) ptx_path;   /* the kernels are compiled in */
  hipError_t e = hipSetDevice(device);
  if (e == hipSuccess)
    e = hipFree(nullptr);   /* forces the runtime's initialisation */
  if (e != hipSuccess)
    snprintf(s_err, sizeof s_err, "%s", hipGetErrorName(e));
  /* "no device" in the numbering kgfx.py shares with CUDA (100) */
  return e == hipErrorNoDevice || e == hipErrorInvalidDevice ? 100 : (int) e;
}

int
kgfx_fill(void)
{
  unsigned *d = nullptr, back = 0, v = 0x6b67;
  hipError_t e = hipMalloc((void **) &d, 4096);
  if (e == hipSuccess) {
    hipLaunchKernelGGL(kgfx_fill_k, dim3(1), dim3(1), 0, 0, d, v);
    e = hipGetLastError();
  }
  if (e == hipSuccess)
    e = hipDeviceSynchronize();
  if (e == hipSuccess)
    e = hipMemcpy(&back, d, sizeof back, hipMemcpyDeviceToHost);
  if (d)
    hipFree(d);
  if (e == hipSuccess && back != v) {
    snprintf(s_err, sizeof s_err, "kgfx_fill wrote %#x, expected %#x", back, v);
    return -3;
  }
  return (int) e;
}

int
kgfx_assert(void)
{
  static const int labels[4] = {0, 1, 2, 4};
  int *d = nullptr;
  hipError_t e = hipMalloc((void **) &d, sizeof labels);
  if (e == hipSuccess)
    e = hipMemcpy(d, labels, sizeof labels, hipMemcpyHostToDevice);
  if (e == hipSuccess) {
    hipLaunchKernelGGL(kgfx_assert_k, dim3(1), dim3(4), 0, 0, d, 4, 4);
    e = hipGetLastError();
  }
  if (e == hipSuccess)
    e = hipDeviceSynchronize();
  fflush(stdout);
  return (int) e;
}

int
kgfx_trap(void)
{
  unsigned *d = nullptr;
  hipError_t e = hipMalloc((void **) &d, 4096);
  if (e == hipSuccess) {
    hipLaunchKernelGGL(kgfx_trap_k, dim3(1), dim3(1), 0, 0, d);
    e = hipGetLastError();
  }
  if (e == hipSuccess)
    e = hipDeviceSynchronize();
  return (int) e;
}
