/*  kg_gpudrv: the GPU driver, loaded at run time with dlopen, so the same
    kguard binary runs on machines without any GPU software. Own prototypes,
    no CUDA or HIP header is needed to build it.

    CUDA: the driver API from libcuda.so.1 ($KGUARD_CUDA_LIB overrides, e.g.
    the toolkit's stub for tests). HIP: libamdhip64.so (then .so.7/.6/.5 and
    /opt/rocm/lib; $KGUARD_HIP_LIB overrides).

    Everything here runs in a throw-away worker process (`kguard doctor
    --driver-worker`): a wedged driver can hang it, and the caller kills it
    at its deadline. The worker prints one JSON object:
      {"cuda": BACKEND, "hip": BACKEND, "emulated": bool}
    BACKEND = {"library", "loaded", "error", "driver_version",
               "runtime_version" (HIP), "device_count",
               "devices": [{"index", "name", "capability" (CUDA),
                 "total_bytes", "free_bytes", "used_bytes", "ecc" (CUDA),
                 "pci_bus_id", "processes" | "processes_error" (CUDA),
                 "preflight": {"ok", "steps_ms", "error": {"step", "code",
                   "name", "string", "failing"}}}]}
    In the device list, index is the index the process sees (after
    CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES).

    Processes holding device memory come from NVML (libnvidia-ml.so.1,
    optional; $KGUARD_NVML_LIB overrides), matched by PCI bus id and read
    before the worker's own context exists: "processes": [{"pid",
    "used_bytes"}] (this worker left out), or "processes_error" saying why
    there is no list. After a sticky restart, the dead kernel's pid in that
    list means its memory is not released yet.
    Free memory needs a context: the worker retains each device's primary
    context for a moment (a few hundred MB of device memory while it runs).
    used_bytes = total - free at that moment: memory held by every process
    on the device, this worker's own context included.

    Pre-flight (preflight = true), per visible device: allocate, launch a
    trivial kernel (CUDA: a PTX module for an old ISA, JIT-compiled by any
    driver; HIP: the runtime's memset kernel), synchronise, copy back and
    compare. An error of the failing kind (kg_gpudrv_code_is_failing) marks
    the device failing.

    Emulation (labelled "kguard emulation" in the output): KGUARD_EMULATE
    containing "preflight-fail" reports one emulated CUDA device failing with
    an uncorrectable ECC error (214); "preflight-hang" blocks the worker
    forever, as a wedged driver would.
*/
#ifndef KG_GPUDRV_H
#define KG_GPUDRV_H

#include <stdbool.h>

/*  Run as the worker: query (and with preflight, exercise) both backends,
    print the JSON object on stdout. Returns the exit code: 0, or 1 if a
    pre-flight found a failing device. */
int kg_gpudrv_worker_main(bool preflight);

/*  True if a driver error code means the device (or its context) is
    failing: sticky errors (700, 702, 710, 714-719, ...), uncorrectable ECC
    (214) and NVLink (220) errors, and anything unknown. False for the codes
    that describe the setup, not the device: 2 out of memory, 34 stub
    library, 35 driver too old, 46 device busy or unavailable, 100 no
    device, 101 invalid device, 209 no kernel image, 218/221/222 PTX the
    driver cannot compile. The CUDA and HIP numbers agree on these. */
bool kg_gpudrv_code_is_failing(int code);

#endif
