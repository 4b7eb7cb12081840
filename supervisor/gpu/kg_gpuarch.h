/*  kg_gpuarch: does a PyTorch build carry code for a device? Pure.

    PyTorch lists the architectures it was compiled for (torch.cuda.
    get_arch_list(): "sm_80", "sm_90a", "compute_90" ...; on ROCm "gfx90a",
    "gfx942" ...). A device without a matching entry fails every kernel with
    "no kernel image is available for execution on the device" (209), or
    "invalid device function" (98) on ROCm: kguard doctor says so before
    training starts.

    CUDA rules (NVIDIA's compatibility guide): machine code sm_XY runs on a
    device of the same major capability and a minor >= Y; an arch-specific
    "a"/"f" target (sm_90a) runs on exactly that capability; PTX compute_XY
    is JIT-compiled by the driver for any capability >= X.Y (slow first
    launch). ROCm: code objects run only on the exact gfx target; the
    device's name may carry feature flags ("gfx90a:sramecc+:xnack-"), which
    are ignored here.
*/
#ifndef KG_GPUARCH_H
#define KG_GPUARCH_H

#include <stddef.h>

typedef enum {
  KG_ARCH_NATIVE,    /* machine code for exactly this device            */
  KG_ARCH_COMPAT,    /* machine code of the same family, older minor    */
  KG_ARCH_PTX_JIT,   /* only PTX: the driver compiles it at first use   */
  KG_ARCH_NONE,      /* nothing runs: "no kernel image" before it happens */
  KG_ARCH_UNKNOWN,   /* empty list or unreadable device capability      */
} kg_arch_verdict_t;

/*  Parse "sm_86" / "compute_90" / "sm_90a" / "sm_100": *cc = major*10+minor
    (86, 90, 100), *ptx = 1 for compute_, *specific = 1 for an a/f suffix.
    Returns 0, or -1 if arch is not of that form. */
int kg_gpuarch_parse_cuda(const char *arch, int *cc, int *ptx, int *specific);

/*  The best verdict for a CUDA device of capability major.minor against
    archs[0..n). The entry that decided is copied into best (may be ""). */
kg_arch_verdict_t kg_gpuarch_cuda(const char *const *archs, size_t n, int major, int minor,
                                  char *best, size_t len);

/*  The verdict for a ROCm device named gcn_arch ("gfx90a:sramecc+:xnack-"). */
kg_arch_verdict_t kg_gpuarch_rocm(const char *const *archs, size_t n, const char *gcn_arch,
                                  char *best, size_t len);

/*  "native" / "compatible" / "ptx-jit" / "none" / "unknown". */
const char *kg_gpuarch_verdict_name(kg_arch_verdict_t v);

#endif
