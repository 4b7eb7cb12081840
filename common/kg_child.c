/*  kg_child: spawn, signal and reap one child process. */
#include "kg_child.h"

#include <assert.h>
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
  bool exited;                  /*  reaped                               */
  int status;                   /*  wait status once reaped              */
};

/*  In the child: report errno on the error pipe and exit. Only
    async-signal-safe calls here. */
static void
s_child_fail(int errfd)
{
  int e = errno;
  ssize_t w;
  do
    w = write(errfd, &e, sizeof e);
  while (w < 0 && errno == EINTR);
  _exit(127);
}

/*  The keeper, in the kernel's process group: wait until kguard is gone
    (EOF or error on the lifeline), then end the group. Only
    async-signal-safe calls: it is a fork of a possibly threaded process. */
static void
s_keeper_run(int lifeline_r)
{
  const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE};
  for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
    signal(ignored[i], SIG_IGN);
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
      s_keeper_run(lifeline[0]);
    close(lifeline[0]);
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
    child's end first, so a read of 0 bytes means exec succeeded). 0, or
    the child's -errno, the child then reaped here (a keeper it started
    sees EOF when the caller closes the lifeline, and ends the group). */
static int
s_exec_result(int errpipe[2], pid_t pid)
{
  close(errpipe[1]);
  errpipe[1] = -1;
  int child_errno = 0;
  ssize_t n;
  do
    n = read(errpipe[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(errpipe[0]);
  errpipe[0] = -1;
  if (n != (ssize_t) sizeof child_errno)
    return 0;
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return -(child_errno ? child_errno : EIO);
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

  rc = s_exec_result(errpipe, pid);
  if (lifeline[0] >= 0) {
    close(lifeline[0]);
    lifeline[0] = -1;
  }
  if (rc != 0) {
    free(self);
    goto fail;
  }
  self->pid = pid;
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
  if (self->out_fd >= 0)
    close(self->out_fd);
  if (self->err_fd >= 0)
    close(self->err_fd);
  if (self->lifeline >= 0)
    close(self->lifeline);      /* the keeper ends what is left, then itself */
  free(self);
  *self_p = NULL;
}

pid_t
kg_child_pid(const kg_child_t *self)
{
  assert(self);
  return self->pid;
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
