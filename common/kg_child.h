/*  kg_child: one child process in its own session and process group.

    Spawning uses a close-on-exec error pipe (as libuv does): if any step in
    the child fails, including exec, the child writes its errno there and
    exits 127, so kg_child_spawn reports the failure synchronously. In the
    child: the signal mask and handlers are reset, setsid() gives it its own
    process group, PR_SET_PDEATHSIG(SIGKILL) makes it die with kguard (and
    getppid() is checked afterwards, in case kguard died in between), stdin is
    /dev/null and stdout/stderr go to pipes when capture is asked. No zmq call
    happens between fork and exec.

    The keeper (opts.keeper): PDEATHSIG takes only the child itself; its own
    children (DataLoader workers, a subprocess.Popen) would be reparented to
    init when kguard is SIGKILLed and keep running (and holding the GPU).
    With .keeper the child, right after setsid(), forks a tiny keeper process
    that stays in the child's process group and blocks on a "lifeline" pipe
    whose only write end kguard holds. When kguard goes, however it goes,
    the kernel closes that end: the keeper reads EOF, sends SIGTERM to the
    group, gives it 1 s, then SIGKILL (which takes the keeper too); with
    opts.keeper_kill_at_once it sends SIGKILL at once (a SIGTERM would
    start a training's pre-emption seal, unsupervised, beside the job
    that replaces it). Why this design rather than the alternatives:
    - a pipe EOF, unlike PDEATHSIG, fires only when the whole kguard process
      is gone (not when a thread exits) and cannot be missed;
    - the keeper is a member of the group, so the group id cannot be reused
      by an unrelated group while the keeper waits (no kill of strangers);
    - a subreaper (PR_SET_CHILD_SUBREAPER) only collects orphans while
      kguard lives: after SIGKILL they go to init anyway;
    - the kernel stays kguard's direct child, so waitpid, its exit status
      and every signal kguard sends keep working unchanged.
    The keeper ignores every signal but SIGKILL and SIGSTOP (kguard's
    interrupts, stops and forwarded SIGUSR1 address the group) and dies
    with the group's SIGKILL, or when kguard closes the lifeline. It is a fork of a fork (no exec), it
    closes every other fd and calls only async-signal-safe functions.
    A process that leaves the group on purpose (setsid, start_new_session=True)
    escapes it, as it escapes any group kill.

    The keeper is not a process of the command: the child reports its pid
    on the spawn pipe before exec (kg_child_keeper_pid), and "is anything
    of the group left" is kg_child_group_alive, which ignores it (a
    kill(-pgid, 0) would see the keeper until kg_child_destroy). Its
    parent is the child; once the child is gone it is the caller's child
    if the caller is a subreaper (PR_SET_CHILD_SUBREAPER), else init's. A
    subreaper caller hands any ended child it does not know to
    kg_child_reap_keeper first. kg_child_destroy SIGKILLs the group, the
    keeper with it, before it closes the lifeline (no grace to wait out),
    and reaps the keeper if it is the caller's by then, through a pidfd
    (never a reused pid).
*/
#ifndef KG_CHILD_H
#define KG_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct kg_child_t kg_child_t;

typedef struct {
  char *const *argv;            /*  NULL-terminated; argv[0] searched in PATH */
  char *const *envp;            /*  NULL-terminated; NULL = inherit environ   */
  const char *cwd;              /*  NULL = inherit                            */
  bool capture;                 /*  stdout/stderr to pipes (else inherited)   */
  bool keeper;                  /*  group dies with kguard, even on SIGKILL   */
  bool keeper_kill_at_once;     /*  the keeper sends SIGKILL, no SIGTERM grace */
} kg_child_opts_t;

/*  Start a child as described by opts. On success *child_p is a new child
    owned by the caller and 0 is returned. If the child could not be started
    (fork, pipe, or any step in the child up to and including exec), returns
    -errno of the failing step and *child_p is NULL (the failed child is
    already reaped). */
int kg_child_spawn(const kg_child_opts_t *opts, kg_child_t **child_p);

/*  Destroy: SIGKILL the process group (the keeper too); if the child was
    not reaped yet, reap it (blocking, it cannot outlive SIGKILL), and the
    keeper if it is the caller's child by then; close the pipes and the
    lifeline. Sets *self_p to NULL. Safe on NULL. */
void kg_child_destroy(kg_child_t **self_p);

/*  The child's pid (also its process group's id). */
pid_t kg_child_pid(const kg_child_t *self);

/*  The keeper's pid (opts.keeper), or 0 without one. The pid stays held
    by the keeper until kg_child_destroy or a SIGKILL to the group. */
pid_t kg_child_keeper_pid(const kg_child_t *self);

/*  For a subreaper caller that saw pid end (waitid WNOWAIT): if pid is
    this child's keeper, reap it and return true; false if pid is not the
    keeper, was reaped already, or could not be reaped (not ended). */
bool kg_child_reap_keeper(kg_child_t *self, pid_t pid);

/*  Whether any process of the child's group is still there (zombies not
    yet reaped included, as kill(-pgid, 0) counts them), the child itself
    included, the keeper not. Without a keeper that is kill(-pgid, 0);
    with one, when kill(-pgid, 0) finds somebody, it lists /proc and asks
    getpgid of each pid until it finds a member: below 1 us a process,
    under 1 ms with 1000 processes. Call it when there is news (a child
    reaped, a handler's end), not in a tight loop. */
bool kg_child_group_alive(const kg_child_t *self);

/*  Read ends of the stdout/stderr pipes (non-blocking, close-on-exec), or -1
    if not captured or already at EOF and closed. */
int kg_child_stdout_fd(const kg_child_t *self);
int kg_child_stderr_fd(const kg_child_t *self);

/*  Read what is available from one pipe (which = 1 stdout, 2 stderr) into
    buf. Returns the byte count, 0 at EOF (the fd is then closed and becomes
    -1), -EAGAIN if nothing is there, or -errno. */
ssize_t kg_child_read(kg_child_t *self, int which, void *buf, size_t len);

/*  Send sig to the child's whole process group (its pid, it is a session
    leader). Returns 0, or -errno (-ESRCH when nobody is left). */
int kg_child_kill_group(kg_child_t *self, int sig);

/*  Send sig to the child process only. Returns 0 or -errno. */
int kg_child_kill(kg_child_t *self, int sig);

/*  waitpid(WNOHANG). Returns 1 if the child has ended now or before (status
    in kg_child_status), 0 if it still runs, -errno on failure. */
int kg_child_reap(kg_child_t *self);

/*  True once reaped. */
bool kg_child_exited(const kg_child_t *self);

/*  The wait status (valid once reaped). */
int kg_child_status(const kg_child_t *self);

/*  Describe a wait status: "exit code 1" or "signal 9 (SIGKILL)". */
void kg_child_describe(int status, char *buf, size_t len);

/*  The state letter of pid in /proc/PID/stat ('R', 'S', 'T' stopped, 't'
    traced, 'D' in the kernel, 'Z' zombie...), or 0 if unreadable. A killed
    multi-threaded process shows 'Z' before waitpid can reap it (its other
    threads are still going). */
char kg_child_proc_state(pid_t pid);

#endif
