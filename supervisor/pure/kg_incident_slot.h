/*  kg_incident_slot: the current incident record and where it was written
    (issue 9: the fields kg_sup_notify.c, kg_sup_guard.c and five other supervisor
    files used to keep in the supervisor's shared struct).

    A sticky error opens an incident (kg_incident.h: the diagnosis, the
    cell, the restore, the pre-flight's verdict are added as they come) and
    it stays current until the next one: the restore names it, the kernel's
    environment carries its id, `%kguard status` shows it. A non-sticky
    error's advice gets a record of its own without losing the sticky one:
    the current incident is set aside while the advice's is opened and
    written, then put back. Bookkeeping over kg_incident: no sockets, no
    clock of its own (tests/unit/supervisor/test_incident_slot.c).

    Ownership: the slot owns the current incident, the one set aside and
    their paths; accessors return borrowed pointers valid until the next
    open, write, set-aside, put-back or destroy.
*/
#ifndef KG_INCIDENT_SLOT_H
#define KG_INCIDENT_SLOT_H

#include <stdint.h>

#include "kg_incident.h"

typedef struct kg_incident_slot_t kg_incident_slot_t;

/*  No incident; NULL on allocation failure. */
kg_incident_slot_t *kg_incident_slot_new(void);

/*  Free self and the incidents it holds; *self_p becomes NULL. Safe on
    NULL. */
void kg_incident_slot_destroy(kg_incident_slot_t **self_p);

/*  A new incident opened at wall_ms (kg_incident_new) replaces the current
    one and its path. Returns it (borrowed), or NULL on allocation failure
    (then no incident is current). */
kg_incident_t *kg_incident_slot_open(kg_incident_slot_t *self, int64_t wall_ms);

/*  The current incident (borrowed), or NULL. */
kg_incident_t *kg_incident_slot_current(const kg_incident_slot_t *self);

/*  Its id (borrowed), or NULL if there is none. */
const char *kg_incident_slot_id(const kg_incident_slot_t *self);

/*  Where it was last written (borrowed), or NULL if it was not. */
const char *kg_incident_slot_path(const kg_incident_slot_t *self);

/*  Write the current incident into incidents_dir (kg_incident_write) and
    remember where. 0, KG_ENOTFOUND if there is none, or kg_incident_write's
    code (the old path is kept). */
int kg_incident_slot_write(kg_incident_slot_t *self, const char *incidents_dir);

/*  Set the current incident (and path) aside: none is current. One level:
    one already set aside is destroyed. */
void kg_incident_slot_set_aside(kg_incident_slot_t *self);

/*  Destroy the current incident and make the one set aside (or none)
    current again, with its path. */
void kg_incident_slot_put_back(kg_incident_slot_t *self);

#endif
