/*  kg_nvml: NVML (libnvidia-ml.so.1), loaded at run time with dlopen like
    the driver query, for the health reading kg_gpuhealth judges. Read only:
    nothing here changes a device, and no CUDA context is created (NVML
    queries the driver, the device keeps running what it runs).

    $KGUARD_NVML_LIB overrides the library (tests load the labelled fake,
    tests/gpu/fake_nvml.c). Per device: UUID, PCI bus id, retired pages
    pending (nvmlDeviceGetRetiredPagesPendingStatus), row remapping pending
    or failed (nvmlDeviceGetRemappedRows), the volatile uncorrectable ECC
    count (nvmlDeviceGetTotalEccErrors); NVML_ERROR_GPU_IS_LOST or
    RESET_REQUIRED from any of them marks the device lost. A query the
    device does not support leaves its field unknown.

    Devices are looked up as CUDA_VISIBLE_DEVICES names them: a UUID by
    UUID, an index by NVML's index (the PCI order; CUDA's own order agrees
    with CUDA_DEVICE_ORDER=PCI_BUS_ID, which is how schedulers hand out
    GPUs). ROCm: nothing is read (amdsmi is not loaded); the reading says
    NVML is unavailable and the verdict is UNKNOWN.

    Ownership: the object owns the library handle; readings are the
    caller's.
*/
#ifndef KG_NVML_H
#define KG_NVML_H

#include <stdbool.h>

#include "kg_gpuhealth.h"

typedef struct kg_nvml_t kg_nvml_t;

/*  Load and initialise NVML if there is one. NULL only on allocation
    failure: without NVML the object exists and its readings say why. */
kg_nvml_t *kg_nvml_new(void);

/*  nvmlShutdown, unload, *self_p = NULL. Safe on NULL. */
void kg_nvml_destroy(kg_nvml_t **self_p);

/*  True when NVML is loaded and initialised. */
bool kg_nvml_available(const kg_nvml_t *self);

/*  Read the devices a process with CUDA_VISIBLE_DEVICES = visible (NULL:
    unset, every device) sees into *out (fully overwritten). */
void kg_nvml_read(kg_nvml_t *self, const char *visible, kg_gpuhealth_reading_t *out);

#endif
