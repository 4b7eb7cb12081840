/*  kg_sup_parent: the supervisor's side of kg_parentwatch (see there).

    The hook the event loop needs, in three calls: kg__parent_init once at
    start (before zmq_ctx_new), poll kg_parentwatch_fd(S->parent) and honour
    kg_parentwatch_deadline_ms(S->parent) in the wait, and call
    kg__parent_poll after each wake-up. */
#ifndef KG_SUP_PARENT_H
#define KG_SUP_PARENT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct kg_supervisor_t kg_sup_t;

/*  Start watching the launcher: JPY_PARENT_PID if it names an ancestor,
    else the parent; KGUARD_PARENT_WATCH=0 turns the watch off (for a
    kguard deliberately left running after its launcher, e.g. under nohup).
    Returns 0 or -errno. Call before zmq_ctx_new. */
int kg__parent_init(kg_sup_t *S);

/*  After a wake-up: fd_ready is whether the watch fd polled readable. If
    the launcher is gone, logs it once and fires the shutdown event (the
    kernel is stopped as on SIGTERM). */
void kg__parent_poll(kg_sup_t *S, bool fd_ready, int64_t now_ms);

#endif
