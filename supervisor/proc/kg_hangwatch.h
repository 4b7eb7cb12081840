/*  kg_hangwatch: is the running kernel process still answering its
    heartbeat while a cell runs? (issue 9: the pinger, its process, its
    configuration and the verdict's reason that kg_sup_hang.c used to keep
    in the supervisor's shared struct; kg_sup_hang.c keeps the wiring: when
    to watch, and what a hang does to the supervisor).

    One kg_kernel_hb pinger at a time, for one kernel process (pid): a new
    process gets a new pinger (a fresh kernel has a fresh heartbeat socket;
    echoes of the old one's pings must not count). Armed while a request is
    outstanding (kg_hangwatch_tick), disarmed otherwise (kg_hangwatch_idle).
    When the pinger says HUNG, the object writes why, as the notice and
    log will say it. The clock is the caller's (monotonic ms).
    Tests: tests/unit/supervisor/test_hangwatch.c.

    Ownership: the object owns its pinger (and so its socket) and the
    reason; the zmq context is the caller's and must outlive it.
*/
#ifndef KG_HANGWATCH_H
#define KG_HANGWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kg_kernel_hb.h"

typedef struct kg_hangwatch_t kg_hangwatch_t;

/*  Watching nothing yet; cfg (copied) sets the pings' period and how many
    missed beats make a hang (NULL: the defaults). NULL on allocation
    failure. */
kg_hangwatch_t *kg_hangwatch_new(void *zmq_ctx, const kg_kernel_hb_config_t *cfg);

/*  Close the pinger, free self; *self_p becomes NULL. Safe on NULL. */
void kg_hangwatch_destroy(kg_hangwatch_t **self_p);

/*  The period and misses in use (borrowed). */
const kg_kernel_hb_config_t *kg_hangwatch_config(const kg_hangwatch_t *self);

/*  True if the pinger of process pid is open (kg_hangwatch_watch made it
    and nothing forgot it since). */
bool kg_hangwatch_watches(const kg_hangwatch_t *self, pid_t pid);

/*  Watch process pid (> 0) through its heartbeat endpoint: any other
    process's pinger is closed, a new one opened, not armed. Returns 0, or
    KG_EUSAGE (pid <= 0, no endpoint), or KG_ENOMEM (no pinger: then
    nothing is watched, and the caller may try again later). */
int kg_hangwatch_watch(kg_hangwatch_t *self, pid_t pid, const char *endpoint);

/*  The watched process is gone: its pinger is closed. The reason, if a
    hang was declared, is kept (the notice shown later says it). */
void kg_hangwatch_forget(kg_hangwatch_t *self);

/*  No request outstanding at now: the pinger (if any) is disarmed, its
    misses forgotten. */
void kg_hangwatch_idle(kg_hangwatch_t *self, int64_t now);

/*  A request is outstanding at now: arm the pinger (if not already), ping
    and count misses as its deadline says. True once the process is hung
    (from the call that crossed the misses on, until kg_hangwatch_idle);
    the reason is then set (it names the time without an answer, and
    SIGSTOP if /proc says the process is stopped). False if nothing is
    watched. */
bool kg_hangwatch_tick(kg_hangwatch_t *self, int64_t now);

/*  When kg_hangwatch_tick must run next, or 0 (nothing armed). */
int64_t kg_hangwatch_deadline(const kg_hangwatch_t *self);

/*  Why the last hang was declared (borrowed, valid until the next one or
    destroy), or NULL if none was. */
const char *kg_hangwatch_reason(const kg_hangwatch_t *self);

/*  The reason for a process silent for cfg's misses x period whose /proc
    state letter is proc_state ('T': stopped; 0: unknown), a new string
    (NULL on allocation failure): "it stopped answering its heartbeat for
    5 s (the process is stopped: SIGSTOP)". Pure. */
char *kg_hangwatch_describe(const kg_kernel_hb_config_t *cfg, char proc_state);

#endif
