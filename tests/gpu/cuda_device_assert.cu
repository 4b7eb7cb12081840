/*  Real CUDA fixture: a genuine device-side assert (the 4-class label bug).

    A kernel asserts label < 4 over labels {0, 1, 2, 4}; the thread that sees
    4 fails the assert, and the next synchronisation must return
    cudaErrorAssert (710), after which the context is unusable (sticky).
    Exit codes: 0 = 710 seen as expected (and sticky), 77 = no usable GPU here
    (driver/stub/no device/no kernel image: 34, 35, 100, 209), 1 = anything else.
*/
#undef NDEBUG /* Release flags add -DNDEBUG, which would compile the assert out */
#include <assert.h>
#include <stdio.h>

#include <cuda_runtime.h>

#define KG_SKIP 77

__global__ void
check_labels(const int *labels, int n, int classes)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    assert(labels[i] >= 0 && labels[i] < classes);
}

static int
s_is_skip(cudaError_t e)
{
  return e == cudaErrorStubLibrary || e == cudaErrorInsufficientDriver ||
         e == cudaErrorNoDevice || e == cudaErrorNoKernelImageForDevice;
}

static int
s_report(const char *what, cudaError_t e)
{
  printf("%s: %s (%d): %s\n", what, cudaGetErrorName(e), (int) e, cudaGetErrorString(e));
  fflush(stdout);
  return s_is_skip(e) ? KG_SKIP : 1;
}

int
main(void)
{
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return s_report("cudaGetDeviceCount", e);
  if (count == 0) {
    printf("no CUDA device: skip\n");
    return KG_SKIP;
  }
  const int host[4] = {0, 1, 2, 4};
  int *dev = NULL;
  if ((e = cudaMalloc(&dev, sizeof host)) != cudaSuccess)
    return s_report("cudaMalloc", e);
  if ((e = cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice)) != cudaSuccess)
    return s_report("cudaMemcpy", e);
  check_labels<<<1, 4>>>(dev, 4, 4);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return s_report("launch", e);
  e = cudaDeviceSynchronize();
  printf("cudaDeviceSynchronize: %s (%d): %s\n", cudaGetErrorName(e), (int) e,
         cudaGetErrorString(e));
  if (e != cudaErrorAssert)
    return s_is_skip(e) ? KG_SKIP : 1;
  /* Sticky: any further work in this process fails the same way. */
  int *again = NULL;
  cudaError_t e2 = cudaMalloc(&again, 16);
  printf("after the assert, cudaMalloc: %s (%d)\n", cudaGetErrorName(e2), (int) e2);
  if (e2 == cudaSuccess) {
    printf("FAIL: the context was expected to be unusable after 710\n");
    return 1;
  }
  printf("PASS: device-side assert reported as cudaErrorAssert (710), sticky\n");
  return 0;
}
