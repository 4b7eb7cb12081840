/*  kg_supervisor: `kguard kernel`, the transparent supervising kernel.

    Binds the frontend's five channels from its connection file, spawns the
    inner kernel with a private connection file (ipc transport, own random
    key, 0700 runtime dir), relays every message both ways re-signed with the
    other side's key, and watches everything the kernel says. One
    single-threaded zmq_poll loop over the sockets, the kernel's pipes, helper
    children and a signalfd; deadlines instead of sleeps; the life cycle is
    the explicit state machine of kg_state.
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
} kg_supervisor_config_t;

typedef struct kg_supervisor_t kg_supervisor_t;

/*  Set up everything that does not need the loop: signals (blocked before
    the zmq context exists), state dir and logs, the frontend's connection
    file and sockets, the rules. On failure returns NULL and sets *exit_code
    (100 for a bad connection file or usage, 111 for system failures) after
    logging a line that says what is wrong. */
kg_supervisor_t *kg_supervisor_new(const kg_supervisor_config_t *config, int *exit_code);

/*  Run the loop until shutdown. Returns the process exit code (0 after a
    shutdown_request or SIGTERM). */
int kg_supervisor_run(kg_supervisor_t *self);

/*  Kill the kernel's group if still there, close sockets (linger 0),
    terminate the context, remove the runtime dir. Sets *self_p to NULL. */
void kg_supervisor_destroy(kg_supervisor_t **self_p);

#endif
