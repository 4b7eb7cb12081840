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

    Events: kg_client_next runs the client's loop (kg_loop) until the first
    of: a message on a channel (signature checked; bad ones are dropped with
    a warning), a signal of the caller's kg_sigsrc, the child's exit, or the
    deadline. Messages already here come before the child's exit.
*/
#ifndef KG_CLIENT_H
#define KG_CLIENT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kg_clock.h"
#include "kg_conninfo.h"
#include "kg_msg.h"
#include "kg_kernelspec.h"
#include "kg_sigsrc.h"

typedef struct {
  const char *exe;              /*  the kguard binary to run "kernel" with */
  const kg_kernelspec_t *spec;  /*  the kernel to guard (borrowed)         */
  const char *checkpoints;      /*  --checkpoints (absolute) or NULL       */
  const char *state_dir_arg;    /*  --state-dir as given, or NULL          */
  const char *state_dir;        /*  resolved state dir, set in the env     */
  const char *cwd;              /*  the child's working directory or NULL  */
  const char *log_path;         /*  child stdout/stderr; NULL: inherited   */
  kg_sigsrc_t *signals;         /*  the caller's signals (borrowed; outlive
                                    the client), or NULL                   */
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
  KG_CLIENT_TIMEOUT = 0,        /*  the deadline passed                    */
  KG_CLIENT_MESSAGE,            /*  msg arrived on channel                 */
  KG_CLIENT_SIGNAL,             /*  signo was received                     */
  KG_CLIENT_EXITED              /*  the child exited (status as waitpid)   */
} kg_client_event_kind_t;

typedef struct {
  kg_client_event_kind_t kind;
  kg_channel_t channel;         /*  MESSAGE: where it came from            */
  kg_msg_t *msg;                /*  MESSAGE: owned by the caller, parsed   */
  int signo;                    /*  SIGNAL                                 */
  int status;                   /*  EXITED: waitpid status                 */
} kg_client_event_t;

typedef struct kg_client_t kg_client_t;

/*  True if spec is itself a kguard wrapper (argv[1] is "kernel"): it is
    launched as it is, not wrapped twice. */
bool kg_client_spec_is_kguard(const kg_kernelspec_t *spec);

/*  Create the runtime directory and connection file, spawn the child and
    connect the sockets. On success *self_p is new, owned by the caller.
    Returns 0, or a negative code with a message in err (KG_ESPAWN when the
    child could not be executed). */
int kg_client_start(const kg_client_config_t *config, kg_client_t **self_p, char *err,
                    size_t errlen);

/*  What kg_client_wait_ready learnt besides readiness. */
typedef struct {
  int signo;                    /*  -EINTR: the signal that arrived        */
  char reason[1024];            /*  KG_EDOWN: kguard's reason ("" if none) */
} kg_client_ready_t;

/*  Wait until the kernel answers a kernel_info_request and iopub is known to
    be delivering (an iopub message for one of our requests arrived), sending
    the request again every second. A reply that kguard wrote itself because
    no kernel ever answered (its metadata says kguard event "down") means the
    kernel could not start. Returns 0, KG_ETIMEOUT, KG_ESPAWN if the child
    exited, KG_EDOWN if the kernel could not start (out->reason says why), or
    -EINTR if a signal arrived (out->signo set). */
int kg_client_wait_ready(kg_client_t *self, int64_t deadline_ms, kg_client_ready_t *out);

/*  Send a new request of msg_type on channel (shell or control) with content
    (taken; NULL means {}). Its msg_id is copied into msg_id. Returns 0 or a
    negative code. */
int kg_client_send(kg_client_t *self, kg_channel_t channel, const char *msg_type,
                   cJSON **content_p, char msg_id[37]);

/*  Wait for the next event, until deadline_ms (kg_clock_mono_ms time; < 0:
    forever). Fills *event; a message in it must be destroyed by the caller.
    Returns 0 or a negative code on a polling failure. After the child has
    exited once, KG_CLIENT_EXITED is not reported again. */
int kg_client_next(kg_client_t *self, int64_t deadline_ms, kg_client_event_t *event);

/*  The child's pid, and whether it has exited (and its waitpid status). */
pid_t kg_client_pid(const kg_client_t *self);
bool kg_client_exited(const kg_client_t *self, int *status);

/*  Shut down: shutdown_request on control, wait for the child to exit until
    grace_ms from now, then SIGTERM to its process group, then SIGKILL after
    two more seconds. Returns 0 if the child exited on request, 1 if it had to
    be signalled. Messages arriving meanwhile are dropped. */
int kg_client_shutdown(kg_client_t *self, int64_t grace_ms);

/*  Stop the child if it still runs (SIGKILL to its group), close the sockets
    and remove the runtime directory. Free self, set *self_p to NULL. */
void kg_client_destroy(kg_client_t **self_p);

#endif
