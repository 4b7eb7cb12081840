/*  Real HIP fixture: a genuine device-side assert (the 4-class label bug).

    Same kernel as the CUDA fixture. With asserts built in, the HIP runtime
    prints "Device-side assertion `...' failed." and aborts the process
    (HSA_STATUS_ERROR_EXCEPTION, SIGABRT) by design; newer ROCm may instead
    return 710 or 719 from the synchronisation. run_hip_fixture.sh judges:
    pass = SIGABRT with the assertion on stderr, or 710/719 printed here.
    Exit codes: 0 = 710/719 returned, 77 = no usable GPU (hipErrorNoDevice 100,
    hipErrorInvalidDevice 101, no binary for this GPU), 1 = anything else.
*/
#undef NDEBUG
#include <assert.h>
#include <stdio.h>

#include <hip/hip_runtime.h>

#define KG_SKIP 77

__global__ void
check_labels(const int *labels, int n, int classes)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    assert(labels[i] >= 0 && labels[i] < classes);
}

static int
s_is_skip(hipError_t e)
{
  return e == hipErrorNoDevice || e == hipErrorInvalidDevice || e == hipErrorNoBinaryForGpu ||
         e == hipErrorInsufficientDriver;
}

int
main(void)
{
  int count = 0;
  hipError_t e = hipGetDeviceCount(&count);
  if (e != hipSuccess || count == 0) {
    /* hipGetErrorString returns the enum name on HIP 5.2: print the number too. */
    printf("hipGetDeviceCount: %s (%d) count=%d: skip\n", hipGetErrorName(e), (int) e, count);
    return e == hipSuccess || s_is_skip(e) ? KG_SKIP : 1;
  }
  const int host[4] = {0, 1, 2, 4};
  int *dev = NULL;
  if ((e = hipMalloc((void **) &dev, sizeof host)) != hipSuccess) {
    printf("hipMalloc: %s (%d)\n", hipGetErrorName(e), (int) e);
    return s_is_skip(e) ? KG_SKIP : 1;
  }
  hipMemcpy(dev, host, sizeof host, hipMemcpyHostToDevice);
  hipLaunchKernelGGL(check_labels, dim3(1), dim3(4), 0, 0, dev, 4, 4);
  if ((e = hipGetLastError()) != hipSuccess) {
    printf("launch: %s (%d)\n", hipGetErrorName(e), (int) e);
    return s_is_skip(e) ? KG_SKIP : 1;
  }
  e = hipDeviceSynchronize(); /* usually never returns: the runtime aborts */
  printf("hipDeviceSynchronize: %s (%d)\n", hipGetErrorName(e), (int) e);
  fflush(stdout);
  return (e == hipErrorAssert || e == hipErrorLaunchFailure) ? 0 : 1;
}
