/*  kg_client: `kguard run`'s connection to the `kguard kernel` it spawns.

    Start: a private 0700 runtime directory (mkdtemp under $XDG_RUNTIME_DIR,
    else /tmp) holds a connection file with a random key and the ipc
    transport (no TCP port races); the child is started as
      <kguard> kernel -f CONN [--checkpoints DIR] [--state-dir D]
                      [--resume FILE] -- INNER...
    (or, when the kernelspec is itself a kguard wrapper, its own argv with
    {connection_file} replaced), in its own process group, in the given
    working directory, with its stdout and stderr going to a log file. Then
    DEALER sockets (one routing id) for shell, control and stdin and a SUB
    socket for iopub are connected.

    Events: the client registers its sources on the caller's loop (the
    sockets, then the child's end) and hands each event to the caller's
    function as it comes: a message on a channel (signature checked; bad
    ones are dropped with a warning), the child's exit, or a receive that
    failed. Messages already here come before the child's exit, which is
    reported once.
*/
#ifndef KG_CLIENT_H
#define KG_CLIENT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kg_conninfo.h"
#include "kg_msg.h"
#include "kg_kernelspec.h"
#include "kg_loop.h"

typedef struct {
  const char *exe;              /*  the kguard binary to run "kernel" with */
  const kg_kernelspec_t *spec;  /*  the kernel to guard (borrowed)         */
  const char *checkpoints;      /*  --checkpoints (absolute) or NULL       */
  const char *state_dir_arg;    /*  --state-dir as given, or NULL          */
  const char *state_dir;        /*  resolved state dir, set in the env     */
  const char *cwd;              /*  the child's working directory or NULL  */
  const char *log_path;         /*  child stdout/stderr; NULL: inherited   */
  const char *run_id;           /*  KGUARD_RUN_ID: the run kguard.save seals
                                    into (kg_run_resume.h), or NULL         */
  const char *notebook;         /*  JPY_SESSION_NAME, as Jupyter Server sets
                                    it: incidents name the notebook; or NULL */
  const char *keep;             /*  KGUARD_KEEP (kguard.save's retention), or
                                    NULL: the environment's                */
  const char *resume_json;      /*  resume-prepare's result the first kernel
                                    resumes from (`kguard kernel --resume`,
                                    written in the private runtime dir), or
                                    NULL                                   */
} kg_client_config_t;

typedef enum {
  KG_CLIENT_MESSAGE = 0,        /*  msg arrived on channel                 */
  KG_CLIENT_EXITED,             /*  the child exited (status as waitpid)   */
  KG_CLIENT_FAILED              /*  a receive failed (error)               */
} kg_client_event_kind_t;

typedef struct {
  kg_client_event_kind_t kind;
  kg_channel_t channel;         /*  MESSAGE: where it came from            */
  kg_msg_t *msg;                /*  MESSAGE: parsed, borrowed for the call */
  int status;                   /*  EXITED: waitpid status                 */
  int error;                    /*  FAILED: a negative code                */
} kg_client_event_t;

typedef struct kg_client_t kg_client_t;

/*  The caller's handler of the client's events, called from the loop's
    handlers (it may send, and post to its own machine). */
typedef void (kg_client_fn)(void *arg, const kg_client_event_t *event);

/*  True if spec is itself a kguard wrapper (argv[1] is "kernel"): it is
    launched as it is, not wrapped twice. */
bool kg_client_spec_is_kguard(const kg_kernelspec_t *spec);

/*  Create the runtime directory and connection file, spawn the child,
    connect the sockets and register them and the child's end on loop
    (borrowed: it outlives the client), whose events go to on_event(arg).
    On success *self_p is new, owned by the caller. Returns 0, or a
    negative code with a message in err (KG_ESPAWN when the child could not
    be executed). */
int kg_client_start(const kg_client_config_t *config, kg_loop_t *loop, kg_client_fn *on_event,
                    void *arg, kg_client_t **self_p, char *err, size_t errlen);

/*  Readiness: the kernel answers a kernel_info_request and iopub is known
    to be delivering (an iopub message for one of those requests arrived).
    A reply that kguard wrote itself because no kernel ever answered (its
    metadata says kguard event "down") means the kernel could not start.
    The caller keeps this (a value, zeroed to begin). */
typedef struct {
  char ids[128][37];            /*  the kernel_info_requests sent          */
  size_t nids;
  bool replied, iopub;
  char reason[1024];            /*  KG_EDOWN: kguard's reason ("" if none) */
} kg_client_ready_t;

/*  Send one more kernel_info_request and remember it (none once 128 were
    sent). Returns 0 or a negative code. */
int kg_client_ready_nudge(kg_client_t *self, kg_client_ready_t *ready);

/*  Judge a message from channel: 1 once the kernel is ready, 0 while not
    yet, KG_EDOWN if it could not start (ready->reason says why). Pure. */
int kg_client_ready_judge(kg_client_ready_t *ready, kg_channel_t channel, kg_msg_t *msg);

/*  Send a new request of msg_type on channel (shell or control) with content
    (taken; NULL means {}). Its msg_id is copied into msg_id. Returns 0 or a
    negative code. */
int kg_client_send(kg_client_t *self, kg_channel_t channel, const char *msg_type,
                   cJSON **content_p, char msg_id[37]);

/*  The child's pid, and whether it has exited (and its waitpid status). */
pid_t kg_client_pid(const kg_client_t *self);
bool kg_client_exited(const kg_client_t *self, int *status);

/*  Ask the kernel to shut down (shutdown_request on control, restart
    false). Returns 0 or a negative code. */
int kg_client_ask_shutdown(kg_client_t *self);

/*  Send signo to the child's process group (and the child), unless it has
    been reaped. */
void kg_client_kill(kg_client_t *self, int signo);

/*  Stop the child if it still runs (SIGKILL to its group), remove the
    client's sources from the loop (before the loop is destroyed), close the
    sockets and remove the runtime directory. Free self, set *self_p to
    NULL. */
void kg_client_destroy(kg_client_t **self_p);

#endif
