/*  kg_shutdown: how kguard ends (issue 9: the fields kg_sup_relay.c,
    kg_supervisor.c and kg_sup_loop.c used to keep in the supervisor's shared
    struct).

    It holds whether the supervisor is running (from a successful start
    until a fatal error; the exit phases themselves are states, kg_state.h),
    the exit code kguard's `kernel` command returns, and the frontend's
    shutdown_request: its msg_id (any length: the frontend chose it), never
    answered as an ordinary request nor doomed with the others, and its
    content.restart, echoed in the shutdown_reply kguard writes when the
    kernel cannot. Pure bookkeeping: no sockets, no clock
    (tests/unit/supervisor/test_shutdown.c).

    Ownership: the object owns a copy of the request's id; kg_shutdown_id
    returns it borrowed, valid until the next kg_shutdown_requested or
    destroy.
*/
#ifndef KG_SHUTDOWN_H
#define KG_SHUTDOWN_H

#include <stdbool.h>

typedef struct kg_shutdown_t kg_shutdown_t;

/*  Not running yet, exit code 0, no shutdown requested; NULL on
    allocation failure. */
kg_shutdown_t *kg_shutdown_new(void);

/*  Free self and the id it holds; *self_p becomes NULL. Safe on NULL. */
void kg_shutdown_destroy(kg_shutdown_t **self_p);

/*  The supervisor is up: running until kg_shutdown_fail. */
void kg_shutdown_begin(kg_shutdown_t *self);

/*  Running (begun, and no fatal error since)? */
bool kg_shutdown_running(const kg_shutdown_t *self);

/*  A fatal error: not running any more, and kguard exits with exit_code. */
void kg_shutdown_fail(kg_shutdown_t *self, int exit_code);

/*  What kguard exits with (0 unless kg_shutdown_fail said otherwise). */
int kg_shutdown_exit_code(const kg_shutdown_t *self);

/*  The frontend asked for a shutdown: msg_id is its request's (copied; NULL
    when it could not be recorded: none), restart its content.restart. An
    earlier request is forgotten. Returns 0, or KG_ENOMEM (then no id is
    held, as for NULL). */
int kg_shutdown_requested(kg_shutdown_t *self, const char *msg_id, bool restart);

/*  The shutdown request's msg_id (borrowed), or NULL if none is held. */
const char *kg_shutdown_id(const kg_shutdown_t *self);

/*  True if msg_id (may be NULL) is the shutdown request's. */
bool kg_shutdown_is_request(const kg_shutdown_t *self, const char *msg_id);

/*  Its content.restart (false if none was asked). */
bool kg_shutdown_restart(const kg_shutdown_t *self);

#endif
