/*  kg_doctor: the judgement and the rendering of `kguard doctor`. Pure: the
    CLI (supervisor/cli/kg_cli_doctor.c) gathers the facts into one JSON report,
    kg_doctor_assess adds what they mean, kg_doctor_render prints it.

    Facts (filled by the CLI):
      "kernel":  {"name", "source", "interpreter", "guarded"}
      "probe":   python/kguard/probe.py's object (torch, cuda, hip, backend,
                 arch_list, devices ...), or {"error": "..."}
      "drivers": {"cuda": BACKEND, "hip": BACKEND} (kg_gpudrv.h), or
                 {"error": "..."}
      "env":     [{"name", "value", "kind", "what", "level", "note"}]
      "diagnostic_run": bool
      "kernelspecs": (kg_doctor_facts.h), "kernel_dirs": [...]
      "gpu_health": NVML's reading of the visible GPUs (kg_gpuhealth_record
                 without a baseline, "line" when one needs a reset), absent
                 when it could not be allocated
      "snapshots": the directory in-memory snapshots (kguard.snapshot) go to
                 ($KGUARD_SNAPSHOT_BASE, else /dev/shm) and its room:
                 {"base", "free_bytes", "total_bytes", "tmpfs": bool}, or
                 {"base", "error": strerror text} when it cannot be read
    Added by kg_doctor_assess:
      "stack":    {"decision": "cuda"|"rocm"|"cpu"|"unknown", "why"}
      "devices":  [{"backend", "index", "name", "capability" | "gcn_arch",
                    "total_bytes", "free_bytes", "arch": {"verdict", "entry"}}]
      "problems": [...] (things that will fail), "warnings": [...]: among
                 them the snapshot directory when it is unreadable, not a
                 tmpfs, or has under 1 GiB free (never a problem: snapshots
                 are optional)
      "summary":  one line
*/
#ifndef KG_DOCTOR_H
#define KG_DOCTOR_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/*  Judge the facts in report (modified in place). */
void kg_doctor_assess(cJSON *report);

typedef enum { KG_DOCTOR_TEXT, KG_DOCTOR_MARKDOWN } kg_doctor_format_t;

/*  The report as text or Markdown (malloc'd), NULL on OOM. */
char *kg_doctor_render(const cJSON *report, kg_doctor_format_t format);

/*  "LIBRARY: ERROR" into buf, the library named once: dlerror() already
    starts its message with the file it tried ("libcuda.so.1: cannot open
    shared object file ..."). error NULL: "LIBRARY: not loadable". Returns
    buf. */
const char *kg_doctor_lib_error(char *buf, size_t len, const char *library, const char *error);

/*  "12.4" → 12004 style comparison value (major * 1000 + minor); -1 when
    not a version. */
int kg_doctor_version_value(const char *v);

#endif
