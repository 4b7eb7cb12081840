/*  kg_doctor: what the facts mean (see kg_doctor.h). */
#include "kg_doctor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_gpuarch.h"
#include "kg_throughput.h"

static const char *
s_str(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void
s_say(cJSON *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
s_say(cJSON *arr, const char *fmt, ...)
{
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
}

const char *
kg_doctor_lib_error(char *buf, size_t len, const char *library, const char *error)
{
  size_t n = library ? strlen(library) : 0;
  if (!error)
    snprintf(buf, len, "%s: not loadable", library ? library : "?");
  else if (n && strncmp(error, library, n) == 0 && error[n] == ':')
    snprintf(buf, len, "%s", error);
  else
    snprintf(buf, len, "%s: %s", library ? library : "?", error);
  return buf;
}

int
kg_doctor_version_value(const char *v)
{
  int major = 0, minor = 0;
  if (!v || sscanf(v, "%d.%d", &major, &minor) < 1 || major < 0 || minor < 0)
    return -1;
  return major * 1000 + minor;
}

static void
s_stack(cJSON *report, const cJSON *probe)
{
  cJSON *stack = cJSON_AddObjectToObject(report, "stack");
  const char *interp = s_str(cJSON_GetObjectItem(report, "kernel"), "interpreter");
  const char *torch = s_str(probe, "torch"), *cuda = s_str(probe, "cuda");
  const char *hip = s_str(probe, "hip"), *err = s_str(probe, "error");
  char why[768];
  const char *decision = "unknown";
  if (err || !probe)
    snprintf(why, sizeof why, "the kernel's Python could not be asked (%s)",
             err ? err : "no answer");
  else if (hip) {
    decision = "rocm";
    snprintf(why, sizeof why, "torch %s has torch.version.hip = %s: a ROCm build (devices are "
             "still named cuda:N, errors read \"HIP error\")", torch ? torch : "?", hip);
  } else if (cuda) {
    decision = "cuda";
    snprintf(why, sizeof why, "torch %s has torch.version.cuda = %s and no "
             "torch.version.hip: a CUDA build", torch ? torch : "?", cuda);
  } else if (torch) {
    decision = "cpu";
    snprintf(why, sizeof why, "torch %s is CPU-only (torch.version.cuda and "
             "torch.version.hip are None): the kernel trains on the CPU", torch);
  } else {
    const cJSON *errs = cJSON_GetObjectItem(probe, "errors");
    const cJSON *e0 = cJSON_GetArrayItem(errs, 0);
    snprintf(why, sizeof why, "torch is not importable by %s%s%s", interp ? interp : "Python",
             cJSON_IsString(e0) ? ": " : "", cJSON_IsString(e0) ? e0->valuestring : "");
  }
  cJSON_AddStringToObject(stack, "decision", decision);
  cJSON_AddStringToObject(stack, "why", why);
}

/*  The arch list as a C array (borrowed strings); *n its length. */
static const char **
s_archs(const cJSON *probe, size_t *n)
{
  const cJSON *list = cJSON_GetObjectItem(probe, "arch_list");
  *n = 0;
  int size = cJSON_GetArraySize(list);
  const char **a = calloc((size_t) size + 1, sizeof *a);
  const cJSON *e;
  cJSON_ArrayForEach(e, list) if (a && cJSON_IsString(e)) a[(*n)++] = e->valuestring;
  return a;
}

static void
s_devices(cJSON *report, const cJSON *probe, const char *decision, cJSON *problems,
          cJSON *warnings)
{
  cJSON *devs = cJSON_AddArrayToObject(report, "devices");
  const cJSON *drivers = cJSON_GetObjectItem(report, "drivers");
  size_t na;
  const char **archs = s_archs(probe, &na);
  const char *backends[] = {"cuda", "hip"};
  for (int b = 0; b < 2; b++) {
    const cJSON *be = cJSON_GetObjectItem(drivers, backends[b]);
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(be, "devices"))
    {
      cJSON *o = cJSON_Duplicate(d, true);
      cJSON_AddStringToObject(o, "backend", b == 0 ? "cuda" : "rocm");
      cJSON_AddItemToArray(devs, o);
      char best[64] = "";
      kg_arch_verdict_t v = KG_ARCH_UNKNOWN;
      int major = 0, minor = 0;
      const char *cap = s_str(d, "capability");
      const char *name = s_str(d, "name") ? s_str(d, "name") : "?";
      int idx = cJSON_GetObjectItem(d, "index") ? cJSON_GetObjectItem(d, "index")->valueint : -1;
      if (b == 0 && strcmp(decision, "cuda") == 0 && cap && sscanf(cap, "%d.%d", &major, &minor) == 2)
        v = kg_gpuarch_cuda(archs, na, major, minor, best, sizeof best);
      if (b == 1 && strcmp(decision, "rocm") == 0) {
        /* the gfx name comes from torch's device properties (the probe) */
        const cJSON *pd = cJSON_GetArrayItem(cJSON_GetObjectItem(probe, "devices"), idx);
        const char *gcn = s_str(pd, "gcn_arch");
        if (gcn)
          cJSON_AddStringToObject(o, "gcn_arch", gcn);
        v = kg_gpuarch_rocm(archs, na, gcn, best, sizeof best);
      }
      cJSON *arch = cJSON_AddObjectToObject(o, "arch");
      cJSON_AddStringToObject(arch, "verdict", kg_gpuarch_verdict_name(v));
      cJSON_AddStringToObject(arch, "entry", best);
      if (v == KG_ARCH_NONE)
        s_say(problems, "device %d (%s%s%s) is not in torch's compiled architectures: every "
              "kernel will fail with \"no kernel image is available for execution on the "
              "device\" (209%s); install a torch build that lists it", idx, name,
              cap ? ", capability " : "", cap ? cap : "", b ? ", or \"invalid device function\" "
              "98 on ROCm" : "");
      else if (v == KG_ARCH_PTX_JIT)
        s_say(warnings, "device %d (%s, capability %s) runs torch's PTX (%s) through the "
              "driver's JIT: it works, but the first use of each kernel compiles it (slow "
              "start, a JIT cache that can fill)", idx, name, cap ? cap : "?", best);
    }
  }
  free(archs);
}

static void
s_drivers(cJSON *report, const char *decision, const cJSON *probe, cJSON *problems,
          cJSON *warnings)
{
  const cJSON *drivers = cJSON_GetObjectItem(report, "drivers");
  const cJSON *cu = cJSON_GetObjectItem(drivers, "cuda");
  const cJSON *hip = cJSON_GetObjectItem(drivers, "hip");
  if (s_str(drivers, "error"))
    s_say(warnings, "the driver query did not finish: %s", s_str(drivers, "error"));
  bool cu_ok = cJSON_IsTrue(cJSON_GetObjectItem(cu, "loaded"));
  bool hip_ok = cJSON_IsTrue(cJSON_GetObjectItem(hip, "loaded"));
  int ncu = cJSON_GetArraySize(cJSON_GetObjectItem(cu, "devices"));
  int nhip = cJSON_GetArraySize(cJSON_GetObjectItem(hip, "devices"));
  const char *vis_cu = NULL;   /* from the facts, not from our environment */
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(report, "env"))
    if (strcmp(s_str(e, "name") ? s_str(e, "name") : "", "CUDA_VISIBLE_DEVICES") == 0)
      vis_cu = s_str(e, "value");
  if (strcmp(decision, "cuda") == 0) {
    char le[512];
    if (!cu_ok)
      s_say(problems, "torch is a CUDA build but no CUDA driver was found (%s): "
            "torch.cuda.is_available() will be False and training falls back to the CPU "
            "or fails", kg_doctor_lib_error(le, sizeof le, s_str(cu, "library")
                                            ? s_str(cu, "library") : "libcuda.so.1",
                                            s_str(cu, "error")));
    else if (ncu == 0)
      s_say(problems, "the CUDA driver sees no device (%s)%s",
            s_str(cu, "error") ? s_str(cu, "error") : "device count 0",
            vis_cu ? "; check CUDA_VISIBLE_DEVICES" : "");
    int tv = kg_doctor_version_value(s_str(probe, "cuda"));
    int dv = kg_doctor_version_value(s_str(cu, "driver_version"));
    if (cu_ok && tv > 0 && dv > 0 && tv / 1000 > dv / 1000)
      s_say(problems, "torch was built for CUDA %s but the driver supports CUDA %s at most: "
            "update the driver or install a torch built for CUDA %d", s_str(probe, "cuda"),
            s_str(cu, "driver_version"), dv / 1000);
    else if (cu_ok && tv > dv && dv > 0)
      s_say(warnings, "torch was built for CUDA %s, newer than the driver's %s: minor "
            "version compatibility covers most of it, but PTX built for the newer toolkit "
            "will not load", s_str(probe, "cuda"), s_str(cu, "driver_version"));
  }
  if (strcmp(decision, "rocm") == 0) {
    if (!hip_ok)
      s_say(problems, "torch is a ROCm build but no HIP runtime was found (%s)",
            s_str(hip, "error") ? s_str(hip, "error") : "libamdhip64.so not loaded");
    else if (nhip == 0)
      s_say(problems, "the HIP runtime sees no device (%s); check HIP_VISIBLE_DEVICES, "
            "ROCR_VISIBLE_DEVICES and membership of the video/render groups",
            s_str(hip, "error") ? s_str(hip, "error") : "device count 0");
  }
  if (strcmp(decision, "cpu") == 0 && (ncu > 0 || nhip > 0))
    s_say(warnings, "%d GPU(s) are here but torch is CPU-only: install a %s build of "
          "torch to use them", ncu + nhip, ncu > 0 ? "CUDA" : "ROCm");
}

/*  The environment variables doctor flagged, as warnings. */
static void
s_env(const cJSON *report, cJSON *warnings)
{
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(report, "env"))
  {
    const char *level = s_str(e, "level");
    if (level && strcmp(level, "warn") == 0)
      s_say(warnings, "%s=%s: %s", s_str(e, "name"), s_str(e, "value"), s_str(e, "note"));
  }
}

/*  Below this much free room in the snapshot directory, say so: a training
    state of a few hundred MiB (a small model with Adam's two moments)
    already needs twice that there while it is sealed. */
#define S_SNAPSHOT_ROOM_WARN (1024.0 * 1024.0 * 1024.0)

/*  The room in-memory snapshots have (report["snapshots"]): warnings only,
    since kguard.snapshot is optional and kguard.save works without it. */
static void
s_snapshots(const cJSON *report, cJSON *warnings)
{
  const cJSON *snap = cJSON_GetObjectItem(report, "snapshots");
  if (!snap)
    return;
  const char *base = s_str(snap, "base") ? s_str(snap, "base") : "?";
  if (s_str(snap, "error")) {
    s_say(warnings, "in-memory snapshots: %s cannot be used (%s): kguard.snapshot will raise "
          "(kguard.save to disk still works); point KGUARD_SNAPSHOT_BASE at a tmpfs "
          "directory", base, s_str(snap, "error"));
    return;
  }
  const cJSON *free_b = cJSON_GetObjectItem(snap, "free_bytes");
  if (cJSON_IsNumber(free_b) && free_b->valuedouble < S_SNAPSHOT_ROOM_WARN) {
    char words[32];
    kg_throughput_bytes(free_b->valuedouble, words, sizeof words);
    bool shm = strcmp(base, "/dev/shm") == 0;
    s_say(warnings, "in-memory snapshots: only %s free in %s: kguard.snapshot needs about twice "
          "the state's size there and refuses a state that does not fit; %s "
          "KGUARD_SNAPSHOT_BASE pointing kguard at a larger tmpfs", words, base,
          shm ? "give it room with `docker run --shm-size 16g`, a Kubernetes emptyDir with "
                "medium: Memory mounted at /dev/shm, or"
              : "make that tmpfs larger, or");
  }
  if (cJSON_IsFalse(cJSON_GetObjectItem(snap, "tmpfs")))
    s_say(warnings, "in-memory snapshots: %s is not a tmpfs, so snapshots there go through a "
          "disk (slower, and a reboot does not free them); point KGUARD_SNAPSHOT_BASE at a "
          "tmpfs", base);
}

/*  Kernels that cannot start: every guarded one, and the one judged; a
    warning when none is guarded. Returns whether the judged one starts (or
    none is judged). */
static bool
s_kernelspecs(const cJSON *report, cJSON *problems, cJSON *warnings)
{
  const cJSON *kernel = cJSON_GetObjectItem(report, "kernel");
  bool judged_starts = true;
  int guarded = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(report, "kernelspecs"))
  {
    guarded += cJSON_IsTrue(cJSON_GetObjectItem(e, "guarded"));
    const cJSON *start = cJSON_GetObjectItem(e, "start");
    bool judged = s_str(kernel, "name") && strcmp(s_str(kernel, "name"), s_str(e, "name")) == 0;
    if (start && !cJSON_IsTrue(cJSON_GetObjectItem(start, "ok"))) {
      if (judged)
        judged_starts = false;
      s_say(problems, "kernelspec %s (%s) cannot start: %s%s%s%s", s_str(e, "name"),
            s_str(e, "dir") ? s_str(e, "dir") : "?", s_str(start, "why") ? s_str(start, "why")
                                                                         : "?",
            s_str(start, "fix") ? "; write it again with this kguard: `" : "",
            s_str(start, "fix") ? s_str(start, "fix") : "", s_str(start, "fix") ? "`" : "");
    } else if (start && s_str(start, "other_kguard"))
      s_say(warnings, "kernelspec %s runs the kguard at %s, not this one: `%s` makes it run "
            "this kguard", s_str(e, "name"), s_str(start, "other_kguard"), s_str(start, "fix"));
    else if (s_str(e, "error"))
      s_say(warnings, "kernelspec %s: %s", s_str(e, "name"), s_str(e, "error"));
  }
  if (!guarded)
    s_say(warnings, "no kernelspec is guarded by kguard: `kguard install` wraps one");
  return judged_starts;
}

/*  The summary's driver part: which driver, and how many devices. */
static void
s_driver_line(const cJSON *report, char *drv, size_t size)
{
  const cJSON *drivers = cJSON_GetObjectItem(report, "drivers");
  const cJSON *cu = cJSON_GetObjectItem(drivers, "cuda"), *hip = cJSON_GetObjectItem(drivers, "hip");
  int ndev = cJSON_GetArraySize(cJSON_GetObjectItem(report, "devices"));
  bool cu_ok = cJSON_IsTrue(cJSON_GetObjectItem(cu, "loaded"));
  bool hip_ok = cJSON_IsTrue(cJSON_GetObjectItem(hip, "loaded"));
  if (!cu_ok && !hip_ok)
    snprintf(drv, size, "no GPU driver found (%s: not loadable; %s: not loadable)",
             s_str(cu, "library") ? s_str(cu, "library") : "libcuda.so.1",
             s_str(hip, "library") ? s_str(hip, "library") : "libamdhip64.so");
  else if (ndev == 0 && (s_str(cu, "error") || s_str(hip, "error")))
    snprintf(drv, size, "GPU driver library loaded but no device usable (%s)",
             s_str(cu, "error") ? s_str(cu, "error") : s_str(hip, "error"));
  else
    snprintf(drv, size, "%s%s%s%s%s, %d device(s) visible",
             cu_ok ? "CUDA driver " : "", cu_ok ? (s_str(cu, "driver_version") ? s_str(cu, "driver_version") : "?") : "",
             cu_ok && hip_ok ? ", " : "", hip_ok ? "HIP runtime " : "",
             hip_ok ? (s_str(hip, "runtime_version") ? s_str(hip, "runtime_version") : "?") : "", ndev);
}

/*  The summary's torch part: which stack the guarded kernel will use. */
static void
s_torch_line(const cJSON *report, const cJSON *probe, const char *decision, char *tline,
             size_t size)
{
  const char *torch = s_str(probe, "torch");
  if (strcmp(decision, "cpu") == 0)
    snprintf(tline, size, "torch %s CPU-only: the guarded kernel will use no GPU", torch);
  else if (strcmp(decision, "cuda") == 0)
    snprintf(tline, size, "torch %s for CUDA %s: the guarded kernel will use CUDA",
             torch, s_str(probe, "cuda"));
  else if (strcmp(decision, "rocm") == 0)
    snprintf(tline, size, "torch %s for ROCm/HIP %s: the guarded kernel will use ROCm",
             torch, s_str(probe, "hip"));
  else
    snprintf(tline, size, "stack unknown: %s",
             s_str(cJSON_GetObjectItem(report, "stack"), "why"));
}

void
kg_doctor_assess(cJSON *report)
{
  const cJSON *probe = cJSON_GetObjectItem(report, "probe");
  s_stack(report, probe);
  cJSON *problems = cJSON_AddArrayToObject(report, "problems");
  cJSON *warnings = cJSON_AddArrayToObject(report, "warnings");
  const char *decision = s_str(cJSON_GetObjectItem(report, "stack"), "decision");
  s_drivers(report, decision, probe, problems, warnings);
  s_devices(report, probe, decision, problems, warnings);
  s_env(report, warnings);
  s_snapshots(report, warnings);
  /* A GPU that needs a reset (NVML's reading) fails whatever runs on it
     next: kguard exec and the kernel would end, not restart, on it. */
  const cJSON *gh = cJSON_GetObjectItem(report, "gpu_health");
  if (s_str(gh, "verdict") && strcmp(s_str(gh, "verdict"), "needs-reset") == 0)
    s_say(problems, "%s: reset the GPU (or drain this node) before training here",
          s_str(gh, "line") ? s_str(gh, "line") : s_str(gh, "reason"));
  bool judged_starts = s_kernelspecs(report, problems, warnings);
  /* the judged kernel's Python must answer: one that cannot be started or
     fails is a kernel that will not work (unless its kernelspec already
     said why it cannot start) */
  if (probe && s_str(probe, "error") && !cJSON_IsTrue(cJSON_GetObjectItem(probe, "not_python"))
      && judged_starts) {
    if (cJSON_IsTrue(cJSON_GetObjectItem(probe, "timed_out")))
      s_say(warnings, "the kernel's Python was slow: %s", s_str(probe, "error"));
    else
      s_say(problems, "the kernel's Python cannot be used: %s", s_str(probe, "error"));
  }
  /* one line: the stack, the driver, the devices */
  char drv[512], tline[256], summary[1024];
  s_driver_line(report, drv, sizeof drv);
  s_torch_line(report, probe, decision, tline, sizeof tline);
  snprintf(summary, sizeof summary, "%s; %s; %d problem(s), %d warning(s)", drv, tline,
           cJSON_GetArraySize(problems), cJSON_GetArraySize(warnings));
  cJSON_AddStringToObject(report, "summary", summary);
}
