/*  kg_exec_store: the ranks' rendezvous store, hosted outside every tree
    kguard stops, so it survives restarts.

    torch.distributed's TCPStore, served by a small Python process
    (`python -c ...`, torch's own server, nothing written by hand) on a
    port of this host's choosing. The ranks use it as torchrun's agent
    store: TORCHELASTIC_USE_AGENT_STORE=True, MASTER_ADDR/MASTER_PORT = it,
    and each generation's keys under /worker/attempt_<TORCHELASTIC_RESTART_COUNT>
    (torch's rendezvous does that), so nothing of an old generation is seen
    by a new one. Measured (bench/README.md): init_process_group of two
    warm ranks takes 0.23 s median against 0.47 s (max 1.1 s) when rank 0
    has to bring up a fresh store each generation, whose clients retry
    after a second when they come first. Until the server says it is up
    (its torch import takes seconds) the ranks fall back to that way.

    Single node: kguard exec hosts it; several nodes: the coordinator on
    node 0 does. Ownership: the store owns its process (killed with it).
*/
#ifndef KG_EXEC_STORE_H
#define KG_EXEC_STORE_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct kg_exec_store_t kg_exec_store_t;

/*  A TCP port free on every interface of this host now, for a
    generation's rendezvous store (this server, or rank 0's own, torch's
    TCPStore): the kernel's pick, so a new one each time; 0 when none
    could be had. Another program could take it before the server does (a
    small window, as torchrun's agent has when it picks MASTER_PORT). */
int kg_exec_store_free_port(void);

/*  Start the server with the Python interpreter python on a free port.
    Returns 0 with *self_p set, or a negative code (nothing started). */
int kg_exec_store_start(const char *python, kg_exec_store_t **self_p);

/*  Stop it (SIGKILL to its group, reaped); *self_p becomes NULL. Safe on
    NULL. */
void kg_exec_store_destroy(kg_exec_store_t **self_p);

/*  Its stdout while it is starting (poll for input), else -1. */
int kg_exec_store_fd(const kg_exec_store_t *self);

/*  Read what it said; it is ready once it printed its ready line. */
void kg_exec_store_read(kg_exec_store_t *self);

/*  Serving (said ready, not ended)? Its port. */
bool kg_exec_store_ready(const kg_exec_store_t *self);
int kg_exec_store_port(const kg_exec_store_t *self);

/*  pid was the server: reap it and remember it is gone (the ranks fall
    back to a fresh store each generation). False: not the server. */
bool kg_exec_store_reaped(kg_exec_store_t *self, pid_t pid);

/*  The server's pid, -1 when none. */
pid_t kg_exec_store_pid(const kg_exec_store_t *self);

/*  Is pid the server (never signalled with the ranks)? */
bool kg_exec_store_is(const kg_exec_store_t *self, pid_t pid);

#endif
