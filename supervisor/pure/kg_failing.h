/*  kg_failing: the failing request (issue 9: the fields kg_sup_guard.c used to
    keep in the supervisor's shared struct).

    When a sticky GPU error (or non-sticky advice) is judged, the guard
    names the request it belongs to: the one the evidence's parent names,
    else the one the kernel said busy for, else (a guess) the one running.
    Its msg_id says which reply and idle are the failing cell's; its code
    goes into the incident and the error signature; its header is the parent
    of the notices (shown once the fresh kernel is ready, or DOWN). Pure
    bookkeeping: no sockets, no clock, no supervisor file
    (tests/unit/supervisor/test_failing.c).

    Ownership: the object owns copies of the id, the code and the header;
    accessors return borrowed pointers valid until the next kg_failing_set,
    kg_failing_kernel_gone or destroy.
*/
#ifndef KG_FAILING_H
#define KG_FAILING_H

#include <stdbool.h>

#include <cjson/cJSON.h>

typedef struct kg_failing_t kg_failing_t;

/*  No failing request, or NULL. */
kg_failing_t *kg_failing_new(void);

/*  Free self and what it holds; *self_p becomes NULL. Safe on NULL. */
void kg_failing_destroy(kg_failing_t **self_p);

/*  The failing request is msg_id (may be NULL: none known), with its code
    and header (each may be NULL; all three copied); guessed: neither the
    evidence nor the kernel's busy status named it. Its reply is not yet
    relayed. Everything known before is forgotten. Returns 0, or KG_ENOMEM
    (then what could not be copied is NULL). */
int kg_failing_set(kg_failing_t *self, const char *msg_id, const char *code,
                   const cJSON *header, bool guessed);

/*  Its kernel is gone: the id is forgotten (a reply to it can no longer
    come) and so is its reply; the code and header are kept for the notice
    shown once the fresh kernel is ready. */
void kg_failing_kernel_gone(kg_failing_t *self);

/*  The failing request's msg_id (borrowed), NULL if none is known. */
const char *kg_failing_id(const kg_failing_t *self);

/*  True if msg_id (may be NULL) is the failing request's. */
bool kg_failing_is(const kg_failing_t *self, const char *msg_id);

/*  Its code (borrowed), NULL if not known. */
const char *kg_failing_code(const kg_failing_t *self);

/*  Its header (borrowed), NULL if not known: the notices' parent. */
const cJSON *kg_failing_header(const kg_failing_t *self);

/*  Its real execute_reply was relayed / has it been? */
void kg_failing_replied(kg_failing_t *self);
bool kg_failing_was_replied(const kg_failing_t *self);

/*  Was it a guess (no parent, no busy status named it)? */
bool kg_failing_guessed(const kg_failing_t *self);

#endif
