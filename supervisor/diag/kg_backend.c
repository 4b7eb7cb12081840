/*  kg_backend: CUDA or ROCm, from the text. */
#include "kg_backend.h"

#include <stdbool.h>
#include <string.h>

/*  memmem over text for a literal. */
static bool
s_has(const char *text, size_t len, const char *needle)
{
  return memmem(text, len, needle, strlen(needle)) != NULL;
}

kg_backend_t
kg_backend_detect(const char *text, size_t len)
{
  static const char *rocm[] = {"HIP error:", "HIP out of memory", "HIP warning:",
                               "AMD_SERIALIZE_KERNEL", "hipError", "HSA_STATUS_",
                               "Memory access fault by GPU node", "TORCH_USE_HIP_DSA",
                               "PYTORCH_HIP_ALLOC_CONF", "HIP_LAUNCH_BLOCKING",
                               "rocm.docs.amd.com", "Device-side assertion `"};
  static const char *cuda[] = {"CUDA error:", "CUDA out of memory", "CUDA_LAUNCH_BLOCKING",
                               "cudaError", "TORCH_USE_CUDA_DSA", "cuda runtime error (",
                               "docs.nvidia.com/cuda"};
  if (!text)
    return KG_BACKEND_UNKNOWN;
  /* ROCm first: hipified builds sometimes keep CUDA words (PYTORCH_CUDA_ALLOC_CONF,
     'CUDA' dispatch keys), never the other way round. */
  for (size_t i = 0; i < sizeof rocm / sizeof rocm[0]; i++)
    if (s_has(text, len, rocm[i]))
      return KG_BACKEND_ROCM;
  for (size_t i = 0; i < sizeof cuda / sizeof cuda[0]; i++)
    if (s_has(text, len, cuda[i]))
      return KG_BACKEND_CUDA;
  return KG_BACKEND_UNKNOWN;
}

const char *
kg_backend_name(kg_backend_t backend)
{
  switch (backend) {
  case KG_BACKEND_CUDA: return "cuda";
  case KG_BACKEND_ROCM: return "rocm";
  default: return "unknown";
  }
}

