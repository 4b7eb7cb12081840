/*  kg_parentwatch: notice that the process that launched kguard is gone.

    Plain ipykernel exits within seconds of its launcher's death (it watches
    JPY_PARENT_PID / getppid). kguard must too, or it lives on under init
    holding the frontend's ports and, through its kernel, GPU memory.

    Three triggers, any one is enough, each cheap, all sources of the one
    loop (kg_parentwatch_attach):
    - pidfd_open(target): the fd becomes readable when the target exits
      (Linux >= 5.3; immune to pid reuse). A reader of the loop.
    - PR_SET_PDEATHSIG(sig) on kguard itself. The signal is read with the
      caller's other signals, from the caller's kg_sigsrc (one signalfd per
      process, read by the loop), and handed over with
      kg_parentwatch_signal. The death signal also fires when the *thread*
      that forked kguard exits, so it is only a hint: a check then asks
      getppid() whether the parent really changed (as the pidfd does).
    - Fallback without pidfd: a timer of the loop, every period, at which
      kill(target, 0) == ESRCH or a changed getppid() says "gone".

    The target is JPY_PARENT_PID (what jupyter_client sets to the launcher's
    pid) when it names one of kguard's ancestors (so a stale value inherited
    from another kernel's environment, or a reused pid, is not watched),
    else getppid(). A target <= 1 (started
    by init, or in a container's PID 1 namespace root) disables the watch:
    init never goes away, it is only inherited. Independently of the target,
    a change of getppid() from the pid seen at creation means the direct
    parent (possibly a wrapper such as `conda run` between the launcher and
    kguard) died and nobody waits for kguard any more: that counts as gone.

    Create the caller's kg_sigsrc, with the death signal in its list, before
    the watch (so the signal is blocked when it is armed) and before
    zmq_ctx_new (so libzmq's threads inherit the mask and the signal is not
    delivered to one of them and lost).
*/
#ifndef KG_PARENTWATCH_H
#define KG_PARENTWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kg_loop.h"

typedef struct kg_parentwatch_t kg_parentwatch_t;

/*  Pure: the pid to watch. jpy is the value of JPY_PARENT_PID (may be NULL),
    ppid is getppid(). Stores the target in *target_p (0 = watch nothing) and
    returns 0, or KG_EUSAGE if jpy is set but is not a plain decimal pid (the
    target is then ppid, or 0 if ppid <= 1): the caller logs that. */
int kg_parentwatch_target(const char *jpy, pid_t ppid, pid_t *target_p);

/*  Called once, from a handler of the loop, when the watch finds the
    launcher gone. */
typedef void (kg_parentwatch_gone_fn)(kg_loop_t *loop, void *arg);

/*  Start watching target (0 = nobody: the watch never fires and registers
    nothing). pdeath_sig: the signal to arm with PR_SET_PDEATHSIG (0 = do
    not arm it); it must already be blocked, i.e. be in the list of a
    kg_sigsrc the caller created first and whose signals it passes to
    kg_parentwatch_signal, else NULL with errno EINVAL (armed unblocked, it
    would kill kguard). period_ms: the fallback polling period when no pidfd
    can be opened. Returns a new watch owned by the caller, or NULL with
    errno set. */
kg_parentwatch_t *kg_parentwatch_new(pid_t target, int pdeath_sig, int period_ms);

/*  Remove its sources from the loop it is attached to (which must still
    exist), close the pidfd and disarm the death signal. Sets *self_p to
    NULL. Safe on NULL. */
void kg_parentwatch_destroy(kg_parentwatch_t **self_p);

/*  Register the watch's sources with loop (kept by the caller, alive until
    the watch is destroyed): a reader of the pidfd, or the fallback timer.
    on_gone(loop, arg) is called once, from one of their handlers (or from
    kg_parentwatch_signal), when the launcher is found gone, also when it
    was gone already at creation (in the loop's first iteration). Call once.
    Returns 0, or KG_ENOMEM. */
int kg_parentwatch_attach(kg_parentwatch_t *self, kg_loop_t *loop,
                          kg_parentwatch_gone_fn *on_gone, void *arg);

/*  A signal the caller's kg_sigsrc delivered (call it from the loop's
    signal handler with every signal). Returns true if it is the watch's
    death signal: the watch then looked, and called on_gone if the launcher
    is gone; false if it is another signal (the caller's to handle). */
bool kg_parentwatch_signal(kg_parentwatch_t *self, int signo);

/*  True once the launcher was found gone (sticky). */
bool kg_parentwatch_gone(const kg_parentwatch_t *self);

/*  The watched pid (0 = none) and how: "pidfd", "poll" or "off". */
pid_t kg_parentwatch_pid(const kg_parentwatch_t *self);
const char *kg_parentwatch_how(const kg_parentwatch_t *self);

#endif
