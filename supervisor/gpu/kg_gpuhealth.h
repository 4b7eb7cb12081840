/*  kg_gpuhealth: does a GPU the job used need a reset before anything runs
    on it again? Pure: readings come from kg_nvml (or a test's table), the
    verdict is a function of them and of the fault, no library, no clock.

    A reading lists the devices the ranks see, in their order (the index a
    rank calls cuda:N), each with what NVML said of it. A device needs a
    reset, and the job belongs on other hardware, when:
      - NVML answers "GPU is lost" or "reset required" for it;
      - row remapping failed (the GPU needs service) or is pending (a reset
        applies it);
      - retired pages are pending (a reset retires them);
      - its volatile uncorrectable ECC count grew since the baseline;
      - NVML could read it at the baseline (or the fault is of the hardware
        family) and cannot now, or it is gone;
      - the fault's text says the GPU fell off the bus or is lost.
    Otherwise HEALTHY when NVML read every device, UNKNOWN when it could not
    (no NVML: a CPU machine, ROCm; the old behaviour, a restart, stands).
*/
#ifndef KG_GPUHEALTH_H
#define KG_GPUHEALTH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#define KG_GPUHEALTH_MAX 16

typedef enum {
  KG_GPUHEALTH_DEV_OK = 0,      /*  read                                      */
  KG_GPUHEALTH_DEV_LOST,        /*  NVML: GPU is lost / reset required        */
  KG_GPUHEALTH_DEV_UNREADABLE,  /*  another NVML error for its handle         */
  KG_GPUHEALTH_DEV_ABSENT       /*  no device with that index or UUID         */
} kg_gpuhealth_dev_state_t;

typedef struct {
  int index;                    /*  position in the ranks' visible list       */
  char id[96];                  /*  how the list named it ("0", "GPU-...")    */
  char uuid[96];                /*  "" when unknown                           */
  char bus[32];                 /*  PCI bus id, "" when unknown               */
  kg_gpuhealth_dev_state_t state;
  char error[96];               /*  NVML's words for a state other than OK    */
  int retired_pending;          /*  1, 0, -1 unknown (not supported)          */
  int remap_pending;            /*  1, 0, -1                                  */
  int remap_failure;            /*  1, 0, -1                                  */
  long long ecc_uncorrected;    /*  volatile count, -1 unknown                */
} kg_gpuhealth_dev_t;

typedef struct {
  bool available;               /*  NVML loaded and initialised               */
  char why[192];                /*  when not available: why                   */
  int n;
  kg_gpuhealth_dev_t dev[KG_GPUHEALTH_MAX];
} kg_gpuhealth_reading_t;

typedef enum {
  KG_GPUHEALTH_HEALTHY = 0,
  KG_GPUHEALTH_NEEDS_RESET,
  KG_GPUHEALTH_UNKNOWN
} kg_gpuhealth_verdict_t;

typedef struct {
  kg_gpuhealth_verdict_t verdict;
  int dev;                      /*  the device named (index into now->dev),
                                    -1 when none                              */
  char reason[256];             /*  why, in words; "" when HEALTHY            */
} kg_gpuhealth_result_t;

/*  The devices a process with CUDA_VISIBLE_DEVICES = visible sees, as the
    list names them: visible NULL = every device (ids[0] = "*", returns 1);
    "" = none (0). Entries are indices or "GPU-" UUIDs; as CUDA does, the
    list ends at the first entry that is neither (MIG instances among them:
    NVML is not asked about those). Up to max ids into ids. Returns the
    count. */
int kg_gpuhealth_visible(const char *visible, char ids[][96], int max);

/*  Judge now against baseline (NULL: none taken) for a fault of family
    (a rules family id, NULL when none) whose text is text (NULL ok). The
    first device that needs a reset is named. Fills *out, returns its
    verdict. */
kg_gpuhealth_verdict_t kg_gpuhealth_judge(const kg_gpuhealth_reading_t *baseline,
                                          const kg_gpuhealth_reading_t *now,
                                          const char *family, const char *text,
                                          kg_gpuhealth_result_t *out);

/*  "healthy", "needs-reset", "unknown". Static storage. */
const char *kg_gpuhealth_verdict_name(kg_gpuhealth_verdict_t verdict);

/*  One line naming the device and the reason: "GPU 0 (UUID GPU-..., PCI bus
    id 00000000:3B:00.0) needs a reset: retired pages are pending (a reset
    retires them)". Into buf (always terminated). Returns buf. */
const char *kg_gpuhealth_line(const kg_gpuhealth_reading_t *now,
                              const kg_gpuhealth_result_t *result, char *buf, size_t len);

/*  The incident's record: {"verdict", "reason", "action" ("drain this node"
    for NEEDS_RESET), "device": {"index", "uuid", "pci_bus_id"} | null,
    "baseline": [...] | null, "now": [...], "nvml": "why not" (when NVML
    could not be used)}. New object (caller owns), NULL on allocation
    failure. */
cJSON *kg_gpuhealth_record(const kg_gpuhealth_reading_t *baseline,
                           const kg_gpuhealth_reading_t *now,
                           const kg_gpuhealth_result_t *result);

#endif
