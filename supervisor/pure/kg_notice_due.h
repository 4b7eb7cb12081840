/*  kg_notice_due: what the user is still to be told after a fault (issue 9:
    the fields kg_sup_guard.c, kg_sup_inband.c and the start's files used to keep in
    the supervisor's shared struct).

    Two things wait here. The notice due once the fresh kernel is ready: a
    sticky restart's (its parent is the failing request's, known to the
    guard), or a diagnostic restart's (parented to the `%kguard restart`
    cell that asked for it). And why kguard is DOWN, said in the DOWN
    notice and in the KernelDown error of every request that comes while
    it is; when automatic restarts stop, the reason ends with how to start
    a kernel by hand. Pure: no sockets, no clock
    (tests/unit/supervisor/test_notice_due.c).

    Ownership: the object owns a copy of the parent header and of the
    reason; accessors return borrowed pointers valid until the next set,
    clear or destroy.
*/
#ifndef KG_NOTICE_DUE_H
#define KG_NOTICE_DUE_H

#include <cjson/cJSON.h>

typedef enum {
  KG_DUE_NONE = 0,              /*  nothing to say when the kernel is ready  */
  KG_DUE_STICKY,                /*  the sticky error's restart notice        */
  KG_DUE_DIAGNOSTIC             /*  the diagnostic restart's notice          */
} kg_due_kind_t;

typedef struct kg_notice_due_t kg_notice_due_t;

/*  Nothing due, no reason; NULL on allocation failure. */
kg_notice_due_t *kg_notice_due_new(void);

/*  Free self; *self_p becomes NULL. Safe on NULL. */
void kg_notice_due_destroy(kg_notice_due_t **self_p);

/*  The notice due when the next kernel is ready: kind, with parent (the
    header it answers, copied; may be NULL). Replaces any due before;
    KG_DUE_NONE clears. Returns 0, or KG_ENOMEM (then nothing is due). */
int kg_notice_due_set(kg_notice_due_t *self, kg_due_kind_t kind, const cJSON *parent);

/*  What is due (KG_DUE_NONE: nothing), and its parent (borrowed, or NULL). */
kg_due_kind_t kg_notice_due_kind(const kg_notice_due_t *self);
const cJSON *kg_notice_due_parent(const kg_notice_due_t *self);

/*  Nothing is due any more (it was said, or kguard went DOWN instead). */
void kg_notice_due_clear(kg_notice_due_t *self);

/*  Why kguard is DOWN: reason as given (copied; NULL clears: kguard is no
    longer down). Returns 0, or KG_ENOMEM (then no reason is held). */
int kg_notice_due_set_down(kg_notice_due_t *self, const char *reason);

/*  Why kguard is DOWN after automatic restarts stopped: reason (may be
    NULL) followed by how to start a fresh kernel by hand. 0 or KG_ENOMEM. */
int kg_notice_due_set_gave_up(kg_notice_due_t *self, const char *reason);

/*  The reason (borrowed), or NULL if none is held. */
const char *kg_notice_due_down_reason(const kg_notice_due_t *self);

#endif
