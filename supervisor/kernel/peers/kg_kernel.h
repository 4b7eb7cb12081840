/*  kg_kernel: the inner kernel, one object: its process and process group
    (kg_child, with the keeper), its private connection file and key, the
    kernel-side sockets (DEALER shell/control/stdin with one routing id, so
    the kernel's input_request finds its way back, and SUB iopub) with a
    bounded send queue per DEALER (a kernel that does not read never blocks
    the sender: kg_kernel_send), its
    stdout/stderr pipes and the rings that keep their last bytes (and copy
    everything to the kernel log), the generation counter, and its readiness
    bookkeeping (kg_ready: kguard's kernel_info nudges, reset at each start).

    It decides nothing and calls nothing above it: what happens is returned
    to the caller, who turns it into the supervisor's events:
      kg_kernel_start    0 (started), or SPAWN_FAILED: a negative code and a
                         reason (kg_kernel_reason) naming the command;
      kg_kernel_drain    RAW_OUTPUT: each chunk read from the pipes is handed
                         to the caller's function (after the rings, and after
                         the pass-through to kguard's own stdout/stderr);
      kg_kernel_reap     EXITED: 1 once the process has ended, its wait status
                         in kg_kernel_status;
      kg_kernel_signal   TERM, then KILL when the caller's deadline passes
                         (the state table keeps the deadlines).
    READY: the relay tells the kg_ready tracker what the kernel answered
    (kg_kernel_ready); the supervisor fires READY when it says done.

    Arrows: kg_supervisor.c and the relay -> kg_kernel.c -> kg_child,
    kg_ring, ipc/ (connection file, sockets, signer). Never back.
*/
#ifndef KG_KERNEL_H
#define KG_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kg_conninfo.h"
#include "kg_loop.h"
#include "kg_msg.h"
#include "kg_outq.h"
#include "kg_ready.h"
#include "kg_ring.h"
#include "kg_signer.h"

typedef struct kg_kernel_t kg_kernel_t;

typedef struct {
  void *ctx;                      /*  zmq context (borrowed; outlives self)   */
  const char *runtime_dir;        /*  kguard's 0700 directory: the ipc
                                      endpoints live there (copied)            */
  const char *conn_path;          /*  the private connection file (copied)    */
  const kg_conninfo_t *key_from;  /*  the kernel shares this key (the
                                      frontend's), or NULL for a fresh random
                                      key (borrowed, read at each start)       */
  kg_rotlog_t *log;               /*  the kernel log (bounded): raw output
                                      and a banner per start are copied
                                      there; NULL none (borrowed)              */
  size_t ring_bytes;              /*  last bytes of stdout/stderr kept (> 0)  */
  const char *tag;                /*  names this object's ipc endpoints and
                                      routing ids ("k" if NULL; copied): two
                                      objects in one runtime directory (the
                                      kernel and its warm standby) need two  */
  kg_loop_t *loop;                /*  the loop that polls its sockets, told of
                                      each send (kg_loop_sent); NULL: none
                                      (borrowed; outlives self)               */
} kg_kernel_opts_t;

/*  A kernel object with no process yet, or NULL (allocation failure). */
kg_kernel_t *kg_kernel_new(const kg_kernel_opts_t *opts);

/*  Close the sockets and pipes; a process not yet reaped gets SIGKILL on its
    whole group and is reaped. *self_p becomes NULL; safe on NULL, and
    idempotent. */
void kg_kernel_destroy(kg_kernel_t **self_p);

/*  Start generation N+1: a fresh connection file (ipc endpoints in the
    runtime directory, the shared key), fresh sockets, and the process from
    argv/envp (both borrowed, NULL-terminated; argv[0] searched in PATH)
    with captured pipes and the keeper, in its own process group. banner
    (may be NULL) is written to the kernel log before the start. A previous
    process must have been released (kg_kernel_release) or never started.
    Returns 0, or a negative code (kg_error.h) with kg_kernel_reason set:
    KG_ESPAWN when the process could not be started, the reason naming the
    command and the cause ("unable to start the kernel `x`: No such file or
    directory"); another code when its connection could not be prepared. */
int kg_kernel_start(kg_kernel_t *self, char *const *argv, char *const *envp,
                    const char *banner);

/*  The private connection file's path (the argv's {connection_file}).
    Borrowed. */
const char *kg_kernel_conn_path(const kg_kernel_t *self);

/*  The ZeroMQ endpoint of the running kernel's channel ch (its heartbeat
    too) into buf. 0, KG_ENOKERNEL before the first start, KG_ETOOBIG. */
int kg_kernel_endpoint(const kg_kernel_t *self, kg_channel_t ch, char *buf, size_t len);

/*  Why the last start failed ("" if it did not). Borrowed. */
const char *kg_kernel_reason(const kg_kernel_t *self);

/*  Kernels started so far (counting failed starts). */
int kg_kernel_generation(const kg_kernel_t *self);

/*  True while a process is held (started, not yet released); it may have
    ended already (kg_kernel_alive). */
bool kg_kernel_present(const kg_kernel_t *self);

/*  True if a process is held and not yet reaped. */
bool kg_kernel_alive(const kg_kernel_t *self);

/*  True if it is alive (not reaped) but already ending: killed, its main
    thread a zombie while its other threads go, so waitpid cannot see it
    yet (kg_child_proc_state 'Z'). Its SIGCHLD is still to come. */
bool kg_kernel_exiting(const kg_kernel_t *self);

/*  The process id, or -1 without a process. */
pid_t kg_kernel_pid(const kg_kernel_t *self);

/*  The kernel-side socket of channel ch (NULL for heartbeat, or before the
    first start). Borrowed; replaced by the next start. */
void *kg_kernel_socket(const kg_kernel_t *self, kg_channel_t ch);

/*  The signer of the kernel's key (NULL before the first start). Borrowed. */
kg_signer_t *kg_kernel_signer(const kg_kernel_t *self);

/*  Send msg (borrowed; no identities: the DEALERs have the routing id) to
    the running kernel on channel ch (shell, control, stdin), signed with
    its key (a message relayed with its own valid signature keeps it:
    kg_msg_send), without blocking (the loop is told: kg_loop_sent): when the kernel is not reading that channel
    the message waits in the channel's bounded queue (kg_outq), in order,
    until kg_kernel_flush. cls says how it may wait (kg_outq_class_t:
    requests may fill the queue, a burst of messages nobody answers three
    quarters of it, kguard's own nudges, sent again on their schedule,
    never wait: -EAGAIN). Returns 0 (sent or queued), KG_EQFULL (the queue
    is full: dropped), KG_ENOKERNEL (no socket), or another negative code. A
    new start discards what still waits for the previous kernel. */
int kg_kernel_send(kg_kernel_t *self, kg_channel_t ch, kg_msg_t *msg, kg_outq_class_t cls);

/*  Send what waits in channel ch's queue until the socket would block
    (the loop is told when anything went). Returns the number sent. */
size_t kg_kernel_flush(kg_kernel_t *self, kg_channel_t ch);

/*  Messages waiting in channel ch's queue. */
size_t kg_kernel_queued(const kg_kernel_t *self, kg_channel_t ch);

/*  The read end of the kernel's stdout (which = 1) or stderr (2) pipe, or
    -1 (no process, or at EOF). For the loop's poll. */
int kg_kernel_output_fd(const kg_kernel_t *self, int which);

/*  RAW_OUTPUT: called once per chunk read, which = 1 stdout, 2 stderr. */
typedef void (kg_kernel_output_fn)(void *arg, int which, const char *data, size_t len);

/*  Read what the pipes hold now (a bounded amount per call): each chunk,
    once what is not the kernel's is taken out (kg_foreign: what a stranger
    makes ipykernel print), goes to the ring of its stream (and the log),
    is passed through to kguard's own fd 1 or 2, then handed to fn(arg,
    ...) (fn may be NULL). Returns the bytes read. */
size_t kg_kernel_drain(kg_kernel_t *self, kg_kernel_output_fn *fn, void *arg);

/*  Lines taken out of this object's streams so far (kg_foreign), over
    every generation. The first is logged (its start) when it is seen. */
unsigned long kg_kernel_foreign_lines(const kg_kernel_t *self);

/*  Its readiness tracker (reset by each start). Borrowed. */
kg_ready_t *kg_kernel_ready(const kg_kernel_t *self);

/*  The ring of stdout (which = 1) or stderr (2). Borrowed. */
kg_ring_t *kg_kernel_ring(const kg_kernel_t *self, int which);

/*  Send sig to the kernel's process group. SIGTERM and SIGKILL mark the
    process as stopped by kguard (kg_kernel_release's *signalled). Returns 0,
    or -errno (-ESRCH: no process left), or KG_ENOKERNEL without a process. */
int kg_kernel_signal(kg_kernel_t *self, int sig);

/*  EXITED: reap without blocking. Returns 1 if the process has ended (now
    or before), 0 if it still runs, KG_ENOKERNEL without a process, or
    -errno. */
int kg_kernel_reap(kg_kernel_t *self);

/*  The wait status of the ended process (0 before). */
int kg_kernel_status(const kg_kernel_t *self);

/*  Let the process go once it is stopped: SIGKILL whatever is left of its
    group, reap, close its pipes. Returns its wait status (0 if it had not
    been reaped); *exited (may be NULL) says whether it had been reaped
    before, *signalled (may be NULL) whether kguard had sent it SIGTERM or
    SIGKILL. Without a process: returns 0, both false. */
int kg_kernel_release(kg_kernel_t *self, bool *exited, bool *signalled);

#endif
