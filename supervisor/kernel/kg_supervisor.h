/*  kg_supervisor: `kguard kernel`, the supervising kernel.

    Binds the frontend's five channels from its connection file and is, to
    the frontend, the kernel. Spawns the inner kernel with a private
    connection file (ipc transport in a 0700 runtime directory, the
    frontend's key), relays every message both ways (a message kguard does
    not change goes on with the signature it came with; what kguard writes
    or edits it signs), and watches everything the kernel says, its raw
    output and its end. One thread, one loop (kg_loop: a poll over the
    sockets' ZMQ_FD, the kernel's pipes, helper children and a signalfd),
    deadlines instead of sleeps; the kernel's life cycle is a state table
    run by kg_fsm. The heartbeat is echoed on a thread of its own.
*/
#ifndef KG_SUPERVISOR_H
#define KG_SUPERVISOR_H

#include <stdint.h>

#include "kg_policy.h"

typedef struct {
  const char *connection_file;  /*  the frontend's (required)                 */
  char *const *inner_argv;      /*  NULL-terminated; may hold {connection_file}*/
  const char *interrupt_mode;   /*  the inner kernel's: "signal" or "message" */
  const char *checkpoints;      /*  checkpoint dir, NULL = ./kguard-checkpoints */
  const char *name;             /*  kernelspec name, for logs (may be NULL)   */
  const char *rules_file;       /*  NULL = the shipped rules                  */
  const char *language;         /*  the kernelspec's language, NULL = unknown
                                    (which helpers run: kg_language.h)        */
  int64_t stale_window_ms;      /*  stale-request window after a fault's
                                    notice (kg_gate.h); < 0 = 2 s             */
  kg_policy_config_t policy;    /*  restart budget and back-off (kg_policy.h) */
  bool standby;                 /*  keep a warm standby kernel (kg_sup_standby.c) */
  const char *resume_file;      /*  NULL, or `kguard ckpt resume-prepare`'s JSON
                                    result: what the first kernel resumes from
                                    (KGUARD_RESUME_*), as after a fault       */
} kg_supervisor_config_t;

typedef struct kg_supervisor_t kg_supervisor_t;

/*  Set up everything that does not need the loop: the configuration
    (state and runtime directories), signals (blocked before the zmq
    context exists), logs, the frontend's connection file and sockets, the
    rules. On failure returns NULL and sets *exit_code (KG_EXIT_USAGE, 100,
    for a bad connection file, bad rules or usage; KG_EXIT_SYSTEM, 111, for
    system failures) after logging a line that says what is wrong. config
    is borrowed (copied). */
kg_supervisor_t *kg_supervisor_new(const kg_supervisor_config_t *config, int *exit_code);

/*  Start the kernel and run the loop until the shutdown is over (EXITED).
    Returns the process exit code (0 after a shutdown_request, SIGTERM or
    the launcher's end; KG_EXIT_SYSTEM if the loop failed). */
int kg_supervisor_run(kg_supervisor_t *self);

/*  Kill the kernel's group if still there, close sockets (linger 0),
    terminate the context, remove the runtime dir. Sets *self_p to NULL. */
void kg_supervisor_destroy(kg_supervisor_t **self_p);

#endif
