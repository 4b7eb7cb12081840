/*  kg_child: spawn, signal and reap one child process. */
#include "kg_child.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_error.h"

extern char **environ;

struct kg_child_t {
  pid_t pid;                    /*  the child, leader of its own group   */
  int out_fd;                   /*  read end of stdout pipe, or -1       */
  int err_fd;                   /*  read end of stderr pipe, or -1       */
  int lifeline;                 /*  write end the keeper waits on, or -1 */
  pid_t keeper;                 /*  the keeper's pid, or 0               */
  int keeper_fd;                /*  its pidfd, or -1                     */
  bool keeper_reaped;           /*  reaped here (so its pid means nothing) */
  bool exited;                  /*  reaped                               */
  int status;                   /*  wait status once reaped              */
};

/*  What the child says on the spawn pipe: the keeper's pid, then (only if
    a step failed) its errno. Each is one write, under PIPE_BUF: atomic. */
enum { S_MSG_KEEPER = 1, S_MSG_ERRNO = 2 };

/*  In the child: one message on the spawn pipe. Async-signal-safe. */
static bool
s_child_say(int errfd, int kind, int value)
{
  int msg[2] = {kind, value};
  ssize_t w;
  do
    w = write(errfd, msg, sizeof msg);
  while (w < 0 && errno == EINTR);
  return w == (ssize_t) sizeof msg;
}

/*  In the child: report errno on the error pipe and exit. Only
    async-signal-safe calls here. */
static void
s_child_fail(int errfd)
{
  s_child_say(errfd, S_MSG_ERRNO, errno);
  _exit(127);
}

/*  The keeper, in the kernel's process group: wait until kguard is gone
    (EOF or error on the lifeline), then end the group. Only
    async-signal-safe calls: it is a fork of a possibly threaded process. */
static void
s_keeper_run(int lifeline_r, bool at_once)
{
  /* Every signal the group gets is the command's (kguard forwards a
     scheduler's SIGUSR1, whose default would end the keeper): only
     SIGKILL ends it. */
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP)
      signal(sig, SIG_IGN);   /* fails harmlessly on the RT signals glibc reserves */
  /* Keep nothing else open: a pipe end held here would hide EOF from
     kguard (the kernel's stdout) or block kg_child_spawn (the error pipe). */
  if (lifeline_r > 0)
    syscall(SYS_close_range, 0, (unsigned) lifeline_r - 1, 0);
  syscall(SYS_close_range, (unsigned) lifeline_r + 1, ~0U, 0);
  prctl(PR_SET_NAME, "kguard-keeper");
  char b;
  ssize_t n;
  do
    n = read(lifeline_r, &b, 1);
  while (n > 0 || (n < 0 && errno == EINTR));
  pid_t group = getpgrp();
  if (at_once) {
    kill(-group, SIGKILL);      /* the keeper included */
    _exit(0);
  }
  kill(-group, SIGTERM);
  /* A grace period for workers to exit on SIGTERM. A sleep is right here:
     this process has nothing else to wait for. */
  struct timespec grace = {1, 0};
  while (nanosleep(&grace, &grace) != 0 && errno == EINTR)
    ;
  kill(-group, SIGKILL);        /* the keeper included */
  _exit(0);
}

static void
s_child_run(const kg_child_opts_t *opts, pid_t parent, int errfd, int out_w, int err_w,
            const int lifeline[2])
{
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  for (int sig = 1; sig < NSIG; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP)
      continue;
    signal(sig, SIG_DFL);   /* fails harmlessly on the RT signals glibc reserves */
  }
  if (setsid() < 0)
    s_child_fail(errfd);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    s_child_fail(errfd);
  if (getppid() != parent) {  /* kguard died before the death signal was armed */
    errno = ESRCH;
    s_child_fail(errfd);
  }
  if (opts->keeper) {
    close(lifeline[1]);         /* only kguard may hold the write end */
    pid_t keeper = fork();
    if (keeper < 0)
      s_child_fail(errfd);
    if (keeper == 0)
      s_keeper_run(lifeline[0], opts->keeper_kill_at_once);
    close(lifeline[0]);
    /* kguard must know it: it is not a process of the command. */
    if (!s_child_say(errfd, S_MSG_KEEPER, (int) keeper))
      s_child_fail(errfd);
  }
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, 0) < 0)
    s_child_fail(errfd);
  if (out_w >= 0 && (dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0))
    s_child_fail(errfd);
  if (opts->cwd && chdir(opts->cwd) != 0)
    s_child_fail(errfd);
  execvpe(opts->argv[0], opts->argv, opts->envp ? opts->envp : environ);
  s_child_fail(errfd);
}

/*  Whether the child reached exec: closes both ends of errpipe (the
    child's end first, so EOF without an errno means exec succeeded) and
    stores the keeper's pid it reported in *keeper. 0, or the child's
    -errno, the child then reaped here. */
static int
s_exec_result(int errpipe[2], pid_t pid, pid_t *keeper)
{
  close(errpipe[1]);
  errpipe[1] = -1;
  int msgs[8];
  size_t got = 0;
  ssize_t n;
  for (;;) {
    n = read(errpipe[0], (char *) msgs + got, sizeof msgs - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t) n;
    if (got == sizeof msgs)
      break;   /* more than the child ever says */
  }
  close(errpipe[0]);
  errpipe[0] = -1;
  int child_errno = 0;
  bool failed = false;
  for (size_t i = 0; i + 1 < got / sizeof(int); i += 2) {
    if (msgs[i] == S_MSG_KEEPER)
      *keeper = (pid_t) msgs[i + 1];
    else if (msgs[i] == S_MSG_ERRNO) {
      failed = true;
      child_errno = msgs[i + 1];
    }
  }
  if (!failed)
    return 0;
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return -(child_errno ? child_errno : EIO);
}

/*  The keeper was SIGKILLed with its group: reap it if it is the caller's
    child by now (the caller is a subreaper and the child is reaped). The
    pidfd names that one process, so a reused pid is never waited for. */
static void
s_keeper_reap_killed(kg_child_t *self)
{
  if (self->keeper_fd < 0 || self->keeper_reaped)
    return;
  siginfo_t si;
  while (waitid(P_PIDFD, (id_t) self->keeper_fd, &si, WEXITED) < 0 && errno == EINTR)
    ;
  self->keeper_reaped = true;   /* reaped, or not ours (ECHILD): nothing to wait for */
}

/*  The keeper the child reported, if any. Its pidfd is opened while it
    surely lives: it waits on the lifeline this process still holds.
    Without pidfds (before Linux 5.3) it is never waited for here, a
    subreaper caller reaps it (kg_child_reap_keeper). When the spawn
    failed (the child already reaped), the keeper still holds the group
    id: it is ended and reaped now rather than after its grace. */
static void
s_keeper_take(kg_child_t *self, pid_t keeper, bool failed)
{
  self->keeper = keeper;
  /* The system call, not glibc 2.36's wrapper: the wheel runs on 2.35. */
  self->keeper_fd = keeper > 0 ? (int) syscall(SYS_pidfd_open, keeper, 0) : -1;
  if (!failed)
    return;
  if (keeper > 0) {
    kill(-self->pid, SIGKILL);
    s_keeper_reap_killed(self);
  }
  if (self->keeper_fd >= 0)
    close(self->keeper_fd);
  self->keeper_fd = -1;
}

int
kg_child_spawn(const kg_child_opts_t *opts, kg_child_t **child_p)
{
  assert(opts && opts->argv && opts->argv[0]);
  assert(child_p);
  *child_p = NULL;
  int errpipe[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
  int lifeline[2] = {-1, -1};
  int rc = 0;
  if (pipe2(errpipe, O_CLOEXEC) != 0)
    return -errno;
  if ((opts->capture && (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0))
      || (opts->keeper && pipe2(lifeline, O_CLOEXEC) != 0)) {
    rc = -errno;
    goto fail;
  }
  kg_child_t *self = calloc(1, sizeof *self);
  if (!self) {
    rc = KG_ENOMEM;
    goto fail;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    rc = -errno;
    free(self);
    goto fail;
  }
  if (pid == 0)
    s_child_run(opts, parent, errpipe[1], outp[1], errp[1], lifeline);

  pid_t keeper = 0;
  rc = s_exec_result(errpipe, pid, &keeper);
  if (lifeline[0] >= 0) {
    close(lifeline[0]);
    lifeline[0] = -1;
  }
  self->pid = pid;
  s_keeper_take(self, keeper, rc != 0);
  if (rc != 0) {
    free(self);
    goto fail;
  }
  self->out_fd = outp[0];
  self->err_fd = errp[0];
  self->lifeline = lifeline[1];
  if (outp[1] >= 0)
    close(outp[1]);
  if (errp[1] >= 0)
    close(errp[1]);
  if (self->out_fd >= 0) {
    fcntl(self->out_fd, F_SETFL, fcntl(self->out_fd, F_GETFL) | O_NONBLOCK);
    fcntl(self->err_fd, F_SETFL, fcntl(self->err_fd, F_GETFL) | O_NONBLOCK);
  }
  *child_p = self;
  return 0;

fail:
  for (int i = 0; i < 2; i++) {
    if (errpipe[i] >= 0)
      close(errpipe[i]);
    if (outp[i] >= 0)
      close(outp[i]);
    if (errp[i] >= 0)
      close(errp[i]);
    if (lifeline[i] >= 0)
      close(lifeline[i]);
  }
  return rc;
}

void
kg_child_destroy(kg_child_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_child_t *self = *self_p;
  if (!self->exited) {
    kill(-self->pid, SIGKILL);
    kill(self->pid, SIGKILL);
    int st;
    while (waitpid(self->pid, &st, 0) < 0 && errno == EINTR)
      ;
  } else {
    kill(-self->pid, SIGKILL);   /* leftovers of its group, if any */
  }
  /* The keeper went with its group's SIGKILL, at once (not after its
     grace: the lifeline is still open). */
  s_keeper_reap_killed(self);
  if (self->keeper_fd >= 0)
    close(self->keeper_fd);
  if (self->out_fd >= 0)
    close(self->out_fd);
  if (self->err_fd >= 0)
    close(self->err_fd);
  if (self->lifeline >= 0)
    close(self->lifeline);      /* a keeper not reaped (not ours) is gone too */
  free(self);
  *self_p = NULL;
}

pid_t
kg_child_pid(const kg_child_t *self)
{
  assert(self);
  return self->pid;
}

pid_t
kg_child_keeper_pid(const kg_child_t *self)
{
  assert(self);
  return self->keeper;
}

bool
kg_child_reap_keeper(kg_child_t *self, pid_t pid)
{
  assert(self);
  if (self->keeper <= 0 || pid != self->keeper || self->keeper_reaped)
    return false;
  int st;
  pid_t r;
  do
    r = waitpid(pid, &st, WNOHANG);
  while (r < 0 && errno == EINTR);
  self->keeper_reaped = r == pid;
  return self->keeper_reaped;
}

/*  Whether a process other than the keeper has pgrp as its group: every
    pid in /proc asked with getpgid (one system call, no file to open and
    parse). A process that ends meanwhile is skipped. */
static bool
s_group_has_other(pid_t pgrp, pid_t keeper)
{
  DIR *d = opendir("/proc");
  if (!d)
    return true;   /* cannot tell: not gone */
  bool found = false;
  struct dirent *de;
  while (!found && (de = readdir(d))) {
    if (de->d_name[0] < '1' || de->d_name[0] > '9')
      continue;
    char *end;
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid == keeper)
      continue;
    found = getpgid((pid_t) pid) == pgrp;
  }
  closedir(d);
  return found;
}

bool
kg_child_group_alive(const kg_child_t *self)
{
  assert(self);
  if (kill(-self->pid, 0) != 0)
    return errno == EPERM;   /* somebody is there, not ours to signal */
  if (self->keeper <= 0 || self->keeper_reaped)
    return true;
  return s_group_has_other(self->pid, self->keeper);
}

int
kg_child_stdout_fd(const kg_child_t *self)
{
  assert(self);
  return self->out_fd;
}

int
kg_child_stderr_fd(const kg_child_t *self)
{
  assert(self);
  return self->err_fd;
}

ssize_t
kg_child_read(kg_child_t *self, int which, void *buf, size_t len)
{
  assert(self);
  int *fdp = which == 1 ? &self->out_fd : &self->err_fd;
  if (*fdp < 0)
    return 0;
  ssize_t n;
  do
    n = read(*fdp, buf, len);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return errno == EWOULDBLOCK ? -EAGAIN : -errno;
  if (n == 0) {
    close(*fdp);
    *fdp = -1;
  }
  return n;
}

int
kg_child_kill_group(kg_child_t *self, int sig)
{
  assert(self);
  return kill(-self->pid, sig) == 0 ? 0 : -errno;
}

int
kg_child_kill(kg_child_t *self, int sig)
{
  assert(self);
  if (self->exited)
    return -ESRCH;
  return kill(self->pid, sig) == 0 ? 0 : -errno;
}

int
kg_child_reap(kg_child_t *self)
{
  assert(self);
  if (self->exited)
    return 1;
  int st;
  pid_t r;
  do
    r = waitpid(self->pid, &st, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return -errno;
  if (r == 0)
    return 0;
  self->exited = true;
  self->status = st;
  return 1;
}

bool
kg_child_exited(const kg_child_t *self)
{
  assert(self);
  return self->exited;
}

int
kg_child_status(const kg_child_t *self)
{
  assert(self);
  return self->status;
}

void
kg_child_describe(int status, char *buf, size_t len)
{
  if (WIFEXITED(status))
    snprintf(buf, len, "exit code %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) {
    const char *name = sigabbrev_np(WTERMSIG(status));
    snprintf(buf, len, "signal %d (SIG%s)%s", WTERMSIG(status), name ? name : "?",
             WCOREDUMP(status) ? ", core dumped" : "");
  } else
    snprintf(buf, len, "wait status 0x%x", (unsigned) status);
}

char
kg_child_proc_state(pid_t pid)
{
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long) pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  /* "pid (comm) S ...": comm may hold anything, ')' included: the last ')' */
  char *close_paren = strrchr(buf, ')');
  if (!close_paren || close_paren[1] != ' ' || !close_paren[2])
    return 0;
  return close_paren[2];
}
