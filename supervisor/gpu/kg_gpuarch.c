/*  kg_gpuarch: architecture list against device capability. */
#include "kg_gpuarch.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int
kg_gpuarch_parse_cuda(const char *arch, int *cc, int *ptx, int *specific)
{
  const char *p;
  if (strncmp(arch, "sm_", 3) == 0) {
    p = arch + 3;
    *ptx = 0;
  } else if (strncmp(arch, "compute_", 8) == 0) {
    p = arch + 8;
    *ptx = 1;
  } else
    return -1;
  int v = 0, digits = 0;
  while (isdigit((unsigned char) *p) && digits < 4) {
    v = v * 10 + (*p++ - '0');
    digits++;
  }
  if (digits < 2)
    return -1;
  *specific = 0;
  if (*p == 'a' || *p == 'f') {
    *specific = 1;
    p++;
  }
  if (*p)
    return -1;
  *cc = v;
  return 0;
}

kg_arch_verdict_t
kg_gpuarch_cuda(const char *const *archs, size_t n, int major, int minor, char *best,
                size_t len)
{
  if (len)
    best[0] = '\0';
  if (n == 0 || major <= 0 || minor < 0)
    return KG_ARCH_UNKNOWN;
  int dev = major * 10 + minor;
  kg_arch_verdict_t v = KG_ARCH_NONE;
  int best_cc = -1;
  for (size_t i = 0; i < n; i++) {
    int cc, ptx, specific;
    if (!archs[i] || kg_gpuarch_parse_cuda(archs[i], &cc, &ptx, &specific) != 0)
      continue;
    kg_arch_verdict_t here = KG_ARCH_NONE;
    if (specific)
      here = !ptx && cc == dev ? KG_ARCH_NATIVE : KG_ARCH_NONE;
    else if (!ptx && cc == dev)
      here = KG_ARCH_NATIVE;
    else if (!ptx && cc / 10 == major && cc % 10 <= minor)
      here = KG_ARCH_COMPAT;
    else if (ptx && cc <= dev)
      here = KG_ARCH_PTX_JIT;
    /* the enum is ordered best first; among equals the newest code wins */
    if (here < v || (here == v && here != KG_ARCH_NONE && cc > best_cc)) {
      v = here;
      best_cc = cc;
      snprintf(best, len, "%s", archs[i]);
    }
  }
  return v;
}

kg_arch_verdict_t
kg_gpuarch_rocm(const char *const *archs, size_t n, const char *gcn_arch, char *best,
                size_t len)
{
  if (len)
    best[0] = '\0';
  if (n == 0 || !gcn_arch || !*gcn_arch)
    return KG_ARCH_UNKNOWN;
  size_t base = strcspn(gcn_arch, ":");
  for (size_t i = 0; i < n; i++) {
    if (!archs[i])
      continue;
    size_t ab = strcspn(archs[i], ":");
    if (ab == base && strncmp(archs[i], gcn_arch, base) == 0) {
      snprintf(best, len, "%s", archs[i]);
      return KG_ARCH_NATIVE;
    }
  }
  return KG_ARCH_NONE;
}

const char *
kg_gpuarch_verdict_name(kg_arch_verdict_t v)
{
  switch (v) {
  case KG_ARCH_NATIVE: return "native";
  case KG_ARCH_COMPAT: return "compatible";
  case KG_ARCH_PTX_JIT: return "ptx-jit";
  case KG_ARCH_NONE: return "none";
  default: return "unknown";
  }
}
