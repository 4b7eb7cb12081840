/*  kg_gpuwatch: the GPU health check around a restart, for the kernel
    supervisor and `kguard exec` alike: a baseline reading at the start,
    a second reading before a restart (and at once after a fault of the
    hardware family), judged by kg_gpuhealth.

    The check is read when the fault is proven, before anything is killed,
    not when its text first appears: what it judges does not change in
    between (retired pages and row remaps stay pending and the volatile ECC
    count only grows until the GPU is reset, and nothing resets it while
    the ranks still hold it), except a GPU that falls off the bus, which
    the later reading sees and an earlier one could miss.

    NVML (kg_nvml) is loaded for each reading and unloaded after it, so a
    long-lived kguard does not carry it; a reading takes milliseconds (the
    driver's nvmlInit, longer without persistence mode). Without NVML every
    check is UNKNOWN and the caller's restart policy decides as before.

    Ownership: the object owns its baseline; results and records are the
    caller's.
*/
#ifndef KG_GPUWATCH_H
#define KG_GPUWATCH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "kg_gpuhealth.h"

typedef struct kg_gpuwatch_t kg_gpuwatch_t;

/*  A watch of the devices a process with CUDA_VISIBLE_DEVICES = visible
    sees (NULL: unset, every device; copied). NULL on allocation failure. */
kg_gpuwatch_t *kg_gpuwatch_new(const char *visible);

/*  Free it, *self_p = NULL. Safe on NULL. */
void kg_gpuwatch_destroy(kg_gpuwatch_t **self_p);

/*  Take the baseline now unless one was taken. True when NVML read it. */
bool kg_gpuwatch_baseline(kg_gpuwatch_t *self);

/*  Read now and judge against the baseline for a fault of family (a rules
    family id, NULL for a death without one) with text (NULL ok). *result
    gets the verdict; *record_p (record_p may be NULL) a new object for the
    incident (kg_gpuhealth_record); line (len bytes, may be NULL) the
    verdict in words (kg_gpuhealth_line). Returns the verdict; UNKNOWN on
    allocation failure. */
kg_gpuhealth_verdict_t kg_gpuwatch_check(kg_gpuwatch_t *self, const char *family,
                                         const char *text, kg_gpuhealth_result_t *result,
                                         cJSON **record_p, char *line, size_t len);

#endif
