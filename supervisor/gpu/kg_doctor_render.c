/*  kg_doctor_render: `kguard doctor`'s report as text or Markdown. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_doctor.h"
#include "kg_throughput.h"

typedef struct {
  FILE *f;
  bool md;
} s_r_t;

static const char *
s_str(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *
s_or(const char *s, const char *dflt)
{
  return s ? s : dflt;
}

static void
s_head(s_r_t *r, const char *title)
{
  fprintf(r->f, r->md ? "\n### %s\n\n" : "\n%s\n", title);
}

/*  A bullet: "- " in Markdown, two spaces in text. */
static void
s_item(s_r_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
s_item(s_r_t *r, const char *fmt, ...)
{
  fputs(r->md ? "- " : "  ", r->f);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(r->f, fmt, ap);
  va_end(ap);
  fputc('\n', r->f);
}

static void
s_gib(char *buf, size_t len, const cJSON *bytes)
{
  if (cJSON_IsNumber(bytes))
    snprintf(buf, len, "%.1f GiB", bytes->valuedouble / (1024.0 * 1024.0 * 1024.0));
  else
    snprintf(buf, len, "?");
}

static void
s_list(s_r_t *r, const cJSON *arr, const char *none)
{
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) s_item(r, "%s", e->valuestring);
  if (cJSON_GetArraySize(arr) == 0)
    s_item(r, "%s", none);
}

static void
s_backend(s_r_t *r, const char *label, const cJSON *b)
{
  if (!b) {
    s_item(r, "%s: not queried", label);
    return;
  }
  if (!cJSON_IsTrue(cJSON_GetObjectItem(b, "loaded"))) {
    char le[512];
    s_item(r, "%s: not found (%s)", label,
           kg_doctor_lib_error(le, sizeof le, s_str(b, "library"), s_str(b, "error")));
    return;
  }
  const char *rt = s_str(b, "runtime_version");
  s_item(r, "%s: %s loaded, driver version %s%s%s, %d device(s)%s%s", label,
         s_or(s_str(b, "library"), "?"), s_or(s_str(b, "driver_version"), "?"),
         rt ? ", runtime " : "", rt ? rt : "",
         cJSON_GetArraySize(cJSON_GetObjectItem(b, "devices")),
         s_str(b, "error") ? ": " : "", s_or(s_str(b, "error"), ""));
}

/*  One section of the report: writes what rep says through r. */
typedef void (s_section_fn)(s_r_t *r, const cJSON *rep);

static void
s_whoami(s_r_t *r, const cJSON *rep)
{
  const cJSON *me = cJSON_GetObjectItem(rep, "kguard");
  if (!me)
    return;
  s_head(r, "This kguard");
  s_item(r, "%s: %s%s%s", s_or(s_str(me, "executable"), "?"), s_or(s_str(me, "install"), "?"),
         s_str(me, "prefix") ? " in " : "", s_or(s_str(me, "prefix"), ""));
  if (s_str(me, "python_env"))
    s_item(r, "Python environment: %s (`kguard install --sys-prefix` writes its "
           "kernelspec there)", s_str(me, "python_env"));
}

static void
s_stack(s_r_t *r, const cJSON *rep)
{
  const cJSON *stack = cJSON_GetObjectItem(rep, "stack");
  const cJSON *probe = cJSON_GetObjectItem(rep, "probe");
  const cJSON *kernel = cJSON_GetObjectItem(rep, "kernel");
  s_head(r, "Stack (decided by the kernel's Python, in a separate process)");
  s_item(r, "kernel: %s (%s), Python %s", s_or(s_str(kernel, "name"), "(none)"),
         s_or(s_str(kernel, "source"), "?"), s_or(s_str(kernel, "interpreter"), "?"));
  if (s_str(kernel, "chosen"))
    s_item(r, "judged: %s", s_str(kernel, "chosen"));
  s_item(r, "stack: %s: %s", s_or(s_str(stack, "decision"), "unknown"),
         s_or(s_str(stack, "why"), ""));
  s_item(r, "python %s, torch %s, CUDA %s, HIP %s", s_or(s_str(probe, "python"), "?"),
         s_or(s_str(probe, "torch"), "none"), s_or(s_str(probe, "cuda"), "none"),
         s_or(s_str(probe, "hip"), "none"));
  const cJSON *archs = cJSON_GetObjectItem(probe, "arch_list");
  if (cJSON_GetArraySize(archs) > 0) {
    fputs(r->md ? "- compiled architectures:" : "  compiled architectures:", r->f);
    const cJSON *a;
    cJSON_ArrayForEach(a, archs) fprintf(r->f, " %s", a->valuestring);
    fputc('\n', r->f);
  }
}

static void
s_drivers(s_r_t *r, const cJSON *rep)
{
  const cJSON *drivers = cJSON_GetObjectItem(rep, "drivers");
  s_head(r, "Driver (loaded with dlopen)");
  if (s_str(drivers, "error"))
    s_item(r, "driver query failed: %s", s_str(drivers, "error"));
  s_backend(r, "CUDA", cJSON_GetObjectItem(drivers, "cuda"));
  s_backend(r, "HIP", cJSON_GetObjectItem(drivers, "hip"));
}

static void
s_devices(s_r_t *r, const cJSON *rep)
{
  s_head(r, "Devices");
  const cJSON *d;
  int nd = 0;
  cJSON_ArrayForEach(d, cJSON_GetObjectItem(rep, "devices"))
  {
    char total[32], freeb[32];
    s_gib(total, sizeof total, cJSON_GetObjectItem(d, "total_bytes"));
    s_gib(freeb, sizeof freeb, cJSON_GetObjectItem(d, "free_bytes"));
    const cJSON *arch = cJSON_GetObjectItem(d, "arch");
    const char *cap = s_str(d, "capability") ? s_str(d, "capability") : s_str(d, "gcn_arch");
    s_item(r, "%s:%d %s (%s), %s total, %s free, torch code: %s%s%s%s",
           s_or(s_str(d, "backend"), "?"), cJSON_GetObjectItem(d, "index")
             ? cJSON_GetObjectItem(d, "index")->valueint : -1,
           s_or(s_str(d, "name"), "?"), s_or(cap, "?"), total, freeb,
           s_or(s_str(arch, "verdict"), "unknown"),
           s_str(arch, "entry") && *s_str(arch, "entry") ? " (" : "",
           s_or(s_str(arch, "entry"), ""), s_str(arch, "entry") && *s_str(arch, "entry") ? ")" : "");
    nd++;
  }
  if (!nd)
    s_item(r, "none visible");
}

/*  A health field in words: "yes", "no", "unknown" (not supported). */
static const char *
s_yn(const cJSON *d, const char *key)
{
  const cJSON *v = cJSON_GetObjectItem(d, key);
  return cJSON_IsBool(v) ? (cJSON_IsTrue(v) ? "yes" : "no") : "unknown";
}

/*  NVML's reading per GPU, what kguard exec and the kernel read before a
    restart. */
static void
s_health(s_r_t *r, const cJSON *rep)
{
  const cJSON *gh = cJSON_GetObjectItem(rep, "gpu_health");
  s_head(r, "GPU health (NVML)");
  if (!gh || s_str(gh, "nvml")) {
    s_item(r, "not read: %s", gh ? s_str(gh, "nvml") : "no reading");
    return;
  }
  const cJSON *d;
  int nd = 0;
  cJSON_ArrayForEach(d, cJSON_GetObjectItem(gh, "now"))
  {
    char ecc[32] = "unknown";
    const cJSON *e = cJSON_GetObjectItem(d, "ecc_uncorrected_volatile");
    if (cJSON_IsNumber(e))
      snprintf(ecc, sizeof ecc, "%.0f", e->valuedouble);
    const cJSON *idx = cJSON_GetObjectItem(d, "index");
    s_item(r, "GPU %d (UUID %s, PCI bus id %s): %s%s%s; retired pages pending: %s; row "
           "remapping pending: %s, failed: %s; uncorrectable ECC errors (volatile): %s",
           cJSON_IsNumber(idx) ? idx->valueint : -1, s_or(s_str(d, "uuid"), "?"),
           s_or(s_str(d, "pci_bus_id"), "?"), s_or(s_str(d, "state"), "?"),
           s_str(d, "error") ? ": " : "", s_or(s_str(d, "error"), ""),
           s_yn(d, "retired_pages_pending"), s_yn(d, "row_remap_pending"),
           s_yn(d, "row_remap_failure"), ecc);
    nd++;
  }
  if (!nd)
    s_item(r, "no GPU visible to NVML");
  s_item(r, "verdict: %s%s%s", s_or(s_str(gh, "verdict"), "?"),
         s_str(gh, "reason") && *s_str(gh, "reason") ? ": " : "",
         s_or(s_str(gh, "reason"), ""));
}

static void
s_env(s_r_t *r, const cJSON *rep)
{
  s_head(r, cJSON_IsTrue(cJSON_GetObjectItem(rep, "diagnostic_run"))
              ? "Variables in force (a diagnostic run: KGUARD_DIAGNOSTIC is set)"
              : "Variables in force");
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(rep, "env"))
  {
    const char *value = s_str(e, "value");
    if (!value)
      continue;
    const char *note = s_str(e, "note");
    const char *level = s_or(s_str(e, "level"), "ok");
    s_item(r, "%s%s=%s [%s]: %s%s%s", strcmp(level, "warn") == 0 ? "WARNING " : "",
           s_str(e, "name"), value, s_or(s_str(e, "kind"), "?"), s_or(s_str(e, "what"), ""),
           note && *note ? "; " : "", note ? note : "");
  }
  fputs(r->md ? "- not set:" : "  not set:", r->f);
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(rep, "env")) if (!s_str(e, "value"))
    fprintf(r->f, " %s", s_str(e, "name"));
  fputc('\n', r->f);
}

/*  The room in-memory snapshots have, shown even when it is enough: the
    figure a user compares with twice their state's size. */
static void
s_snapshots(s_r_t *r, const cJSON *rep)
{
  const cJSON *snap = cJSON_GetObjectItem(rep, "snapshots");
  if (!snap)
    return;
  s_head(r, "Snapshots in memory (kguard.snapshot)");
  const char *base = s_or(s_str(snap, "base"), "?");
  if (s_str(snap, "error")) {
    s_item(r, "%s: cannot be used: %s", base, s_str(snap, "error"));
    return;
  }
  const cJSON *fb = cJSON_GetObjectItem(snap, "free_bytes");
  const cJSON *tb = cJSON_GetObjectItem(snap, "total_bytes");
  char freew[32] = "?", totalw[32] = "?";
  if (cJSON_IsNumber(fb))
    kg_throughput_bytes(fb->valuedouble, freew, sizeof freew);
  if (cJSON_IsNumber(tb))
    kg_throughput_bytes(tb->valuedouble, totalw, sizeof totalw);
  s_item(r, "%s (%s): %s free of %s", base,
         cJSON_IsTrue(cJSON_GetObjectItem(snap, "tmpfs")) ? "tmpfs" : "not tmpfs", freew,
         totalw);
}

static void
s_kernelspecs(s_r_t *r, const cJSON *rep)
{
  s_head(r, "Kernelspecs");
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(rep, "kernelspecs"))
  {
    if (s_str(e, "error")) {
      s_item(r, "%s (%s): unreadable: %s", s_str(e, "name"), s_or(s_str(e, "dir"), "?"),
             s_str(e, "error"));
      continue;
    }
    if (!cJSON_IsTrue(cJSON_GetObjectItem(e, "guarded"))) {
      s_item(r, "%s \"%s\": not guarded (%s)", s_str(e, "name"),
             s_or(s_str(e, "display_name"), ""), s_or(s_str(e, "dir"), "?"));
      continue;
    }
    const cJSON *start = cJSON_GetObjectItem(e, "start");
    bool bad = start && !cJSON_IsTrue(cJSON_GetObjectItem(start, "ok"));
    s_item(r, "%s \"%s\": guarded by kguard, wraps %s (%s)%s%s", s_str(e, "name"),
           s_or(s_str(e, "display_name"), ""), s_or(s_str(e, "wraps"), "?"),
           s_or(s_str(e, "dir"), "?"), bad ? ": CANNOT START: " : "",
           bad ? s_or(s_str(start, "why"), "?") : "");
    s_item(r, "    checkpoints: %s; signing keys: %s; incidents: %s/incidents",
           s_or(s_str(e, "checkpoints"), "?"), s_or(s_str(e, "keys"), "?"),
           s_or(s_str(e, "state_dir"), "?"));
  }
  if (cJSON_GetArraySize(cJSON_GetObjectItem(rep, "kernelspecs")) == 0)
    s_item(r, "none found");
  fputs(r->md ? "- searched:" : "  searched:", r->f);
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(rep, "kernel_dirs")) fprintf(r->f, " %s",
                                                                         e->valuestring);
  fputc('\n', r->f);
}

static void
s_findings(s_r_t *r, const cJSON *rep)
{
  s_head(r, "Problems");
  s_list(r, cJSON_GetObjectItem(rep, "problems"), "none");
  s_head(r, "Warnings");
  s_list(r, cJSON_GetObjectItem(rep, "warnings"), "none");
}

char *
kg_doctor_render(const cJSON *rep, kg_doctor_format_t format)
{
  static s_section_fn *const sections[] = {s_whoami, s_stack,     s_drivers,     s_devices,
                                           s_health, s_env,       s_snapshots,   s_kernelspecs,
                                           s_findings};
  char *buf = NULL;
  size_t len = 0;
  s_r_t r = {open_memstream(&buf, &len), format == KG_DOCTOR_MARKDOWN};
  if (!r.f)
    return NULL;
  fprintf(r.f, r.md ? "**kguard doctor**: %s\n" : "kguard doctor: %s\n",
          s_or(s_str(rep, "summary"), "(no summary)"));
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
    sections[i](&r, rep);
  if (fclose(r.f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
