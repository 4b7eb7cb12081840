/*  kg_exec_devmem: has a process that ended let go of its GPU memory?

    Before kguard exec starts ranks again on the same devices it asks the
    driver whether any process of the previous generation still holds
    device memory: a process that was killed is gone from the process
    table before the driver has torn its context down, and a rank started
    meanwhile can fail to allocate. NVIDIA: NVML (libnvidia-ml.so.1, loaded
    with dlopen; $KGUARD_NVML_LIB overrides) lists each device's compute
    processes. Without NVML (a CPU machine, ROCm) the check cannot be made
    and says so: kg_exec_devmem_held returns -1.
*/
#ifndef KG_EXEC_DEVMEM_H
#define KG_EXEC_DEVMEM_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct kg_exec_devmem_t kg_exec_devmem_t;

/*  Load NVML if there is one. NULL only on allocation failure. */
kg_exec_devmem_t *kg_exec_devmem_new(void);

/*  Unload; *self_p becomes NULL. Safe on NULL. */
void kg_exec_devmem_destroy(kg_exec_devmem_t **self_p);

/*  How many of the n pids still hold memory on any device (0: all
    released), or -1 when this machine has no way to tell (no NVML, or it
    failed). */
int kg_exec_devmem_held(kg_exec_devmem_t *self, const pid_t *pids, int n);

#endif
