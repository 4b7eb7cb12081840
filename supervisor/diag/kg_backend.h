/*  kg_backend: which GPU stack a text comes from (CUDA or ROCm), from the
    words only one stack prints. Pure functions.
*/
#ifndef KG_BACKEND_H
#define KG_BACKEND_H

#include <stddef.h>

typedef enum {
  KG_BACKEND_UNKNOWN = 0,
  KG_BACKEND_CUDA,
  KG_BACKEND_ROCM
} kg_backend_t;

/*  Guess the backend from text alone: "CUDA error:" / "CUDA out of memory" /
    CUDA_LAUNCH_BLOCKING → CUDA; "HIP error:", "HIP out of memory",
    AMD_SERIALIZE_KERNEL, hipError..., HSA_STATUS_..., "Memory access fault by
    GPU node" → ROCm; else UNKNOWN. */
kg_backend_t kg_backend_detect(const char *text, size_t len);

/*  "cuda", "rocm" or "unknown". */
const char *kg_backend_name(kg_backend_t backend);

#endif
