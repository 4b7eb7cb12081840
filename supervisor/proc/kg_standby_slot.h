/*  kg_standby_slot: the warm standby's place (issue 9: the fields
    kg_sup_standby.c used to keep in the supervisor's shared struct; that file
    keeps the wiring: when to start, read, promote and stop it).

    The slot holds the standby's kernel object (a kg_kernel with endpoints
    of its own), when its process was started, whether it has answered
    kernel_info yet (warm), and how many standbys died before they were
    needed: after max_failures no more are started (restarts start cold).
    At a promotion the slot swaps kernel objects with the caller: the
    standby becomes the kernel, the old kernel's (stopped) object becomes
    the next standby's. Pure bookkeeping: no process, socket or clock of
    its own (tests/unit/supervisor/test_standby_slot.c).

    Ownership: the slot owns the kernel object it holds (given to
    kg_standby_slot_new, swapped by kg_standby_slot_swap) and destroys it.
*/
#ifndef KG_STANDBY_SLOT_H
#define KG_STANDBY_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "kg_kernel.h"

typedef struct kg_standby_slot_t kg_standby_slot_t;

/*  A slot holding *kernel_p, never started, no failures; after
    max_failures (>= 1) deaths no more starts. *kernel_p is taken in every
    case (it becomes NULL; destroyed if the slot is not made). NULL on
    allocation failure or bad arguments (no kernel object: *kernel_p NULL,
    or kernel_p NULL). */
kg_standby_slot_t *kg_standby_slot_new(kg_kernel_t **kernel_p, int max_failures);

/*  Destroy the kernel object held and self; *self_p becomes NULL. Safe on
    NULL. The caller stops the process first (kg_kernel_release). */
void kg_standby_slot_destroy(kg_standby_slot_t **self_p);

/*  The standby's kernel object (borrowed; owned by the slot). */
kg_kernel_t *kg_standby_slot_kernel(const kg_standby_slot_t *self);

/*  Its process was started at now (monotonic ms): not warm yet. */
void kg_standby_slot_started(kg_standby_slot_t *self, int64_t now);

/*  Milliseconds since its start at now. */
int64_t kg_standby_slot_age_ms(const kg_standby_slot_t *self, int64_t now);

/*  It answered kernel_info: warm. / Is it? */
void kg_standby_slot_warmed(kg_standby_slot_t *self);
bool kg_standby_slot_is_warm(const kg_standby_slot_t *self);

/*  A standby failed to start or died before it was needed. Returns true
    if that was the last allowed: no more are started. */
bool kg_standby_slot_failed(kg_standby_slot_t *self);

/*  May another standby be started (fewer than max_failures so far)? */
bool kg_standby_slot_may_start(const kg_standby_slot_t *self);

/*  The promotion: the slot takes *kernel_p (the old kernel's object) and
    hands out the standby's in its place. Returns whether the standby was
    warm; the slot's next standby is not. */
bool kg_standby_slot_swap(kg_standby_slot_t *self, kg_kernel_t **kernel_p);

#endif
