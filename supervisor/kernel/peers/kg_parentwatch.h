/*  kg_parentwatch: notice that the process that launched kguard is gone.

    Plain ipykernel exits within seconds of its launcher's death (it watches
    JPY_PARENT_PID / getppid). kguard must too, or it lives on under init
    holding the frontend's ports and, through its kernel, GPU memory.

    Three triggers, any one is enough, each cheap:
    - pidfd_open(target): the fd becomes readable when the target exits
      (Linux >= 5.3; immune to pid reuse). Polled through kg_parentwatch_fd.
    - PR_SET_PDEATHSIG(sig) on kguard itself, the signal read from a private
      signalfd behind the same fd. The death signal also fires when the
      *thread* that forked kguard exits, so it is only a hint: a check then
      asks getppid() whether the parent really changed (as the pidfd does).
    - Fallback without pidfd: a periodic deadline (kg_parentwatch_deadline_ms)
      at which kill(target, 0) == ESRCH or a changed getppid() says "gone".

    The target is JPY_PARENT_PID (what jupyter_client sets to the launcher's
    pid) when it names one of kguard's ancestors (so a stale value inherited
    from another kernel's environment, or a reused pid, is not watched),
    else getppid(). A target <= 1 (started
    by init, or in a container's PID 1 namespace root) disables the watch:
    init never goes away, it is only inherited. Independently of the target,
    a change of getppid() from the pid seen at creation means the direct
    parent (possibly a wrapper such as `conda run` between the launcher and
    kguard) died and nobody waits for kguard any more: that counts as gone.

    Create it BEFORE zmq_ctx_new (like kg_sigsrc): it blocks its death signal
    with sigprocmask, and libzmq's threads must inherit that mask, else the
    signal could be delivered to one of them and be lost.
*/
#ifndef KG_PARENTWATCH_H
#define KG_PARENTWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct kg_parentwatch_t kg_parentwatch_t;

/*  Pure: the pid to watch. jpy is the value of JPY_PARENT_PID (may be NULL),
    ppid is getppid(). Stores the target in *target_p (0 = watch nothing) and
    returns 0, or KG_EUSAGE if jpy is set but is not a plain decimal pid (the
    target is then ppid, or 0 if ppid <= 1): the caller logs that. */
int kg_parentwatch_target(const char *jpy, pid_t ppid, pid_t *target_p);

/*  Start watching target (0 = nobody: the watch never fires, fd is -1 and the
    deadline INT64_MAX). pdeath_sig: the signal to arm with PR_SET_PDEATHSIG
    (0 = do not arm it; it must not be one kg_sigsrc handles). period_ms: the
    fallback polling period when no pidfd can be opened. Returns a new watch
    owned by the caller, or NULL with errno set (allocation, signalfd). */
kg_parentwatch_t *kg_parentwatch_new(pid_t target, int pdeath_sig, int period_ms);

/*  Close the fds, disarm the death signal and restore the signal mask. Sets
    *self_p to NULL. Safe on NULL. */
void kg_parentwatch_destroy(kg_parentwatch_t **self_p);

/*  An fd to poll for POLLIN (the launcher exited or the death signal came),
    or -1 when only the deadline applies. Poll it; on POLLIN call
    kg_parentwatch_check. */
int kg_parentwatch_fd(const kg_parentwatch_t *self);

/*  Next monotonic ms at which kg_parentwatch_check must run (fallback
    polling), or INT64_MAX when the fd covers everything. */
int64_t kg_parentwatch_deadline_ms(const kg_parentwatch_t *self);

/*  Decide: returns true if the launcher is gone (sticky: stays true). Drains
    the fd; reschedules the deadline from now_ms. Never blocks. */
bool kg_parentwatch_check(kg_parentwatch_t *self, int64_t now_ms);

/*  The watched pid (0 = none) and how: "pidfd", "poll" or "off". */
pid_t kg_parentwatch_pid(const kg_parentwatch_t *self);
const char *kg_parentwatch_how(const kg_parentwatch_t *self);

#endif
