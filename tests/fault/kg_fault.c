/*  kg_fault: a test-only LD_PRELOAD shim that makes the Nth call of a
    chosen function fail (SQLite's fault injection, from outside).

      KG_FAULT=fsync:3          the 3rd fsync fails (EIO)
      KG_FAULT=rename:1:kill    SIGKILL the process at its 1st rename, before
                                the call (a crash at exactly that point)
      KG_FAULT=count            fail nothing; count every call
      KG_FAULT_EXE=kguard-ckpt  act only in processes whose executable has
                                this basename (children such as the Python
                                kernel inherit LD_PRELOAD and stay untouched)
      KG_FAULT_LOG=PATH         append "fired FN N" when a fault fires and
                                "count FN N" lines at exit, so a test knows
                                the fault really happened

    Interposed: malloc calloc realloc fork pipe pipe2 execve execvp execvpe
    socket write fsync fdatasync rename renameat renameat2. Calls that glibc makes
    internally (stdio's own writes) are not interposable and not counted.
    Errors: ENOMEM for allocation (NULL), EAGAIN fork, EMFILE pipe/socket,
    ENOENT exec, EIO write/fsync, EXDEV rename. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { F_MALLOC, F_CALLOC, F_REALLOC, F_FORK, F_PIPE, F_PIPE2, F_EXECVE, F_EXECVP,
       F_EXECVPE, F_SOCKET, F_WRITE, F_FSYNC, F_FDATASYNC, F_RENAME, F_RENAMEAT, F_RENAMEAT2, F_N };
static const char *s_names[F_N] = {"malloc", "calloc", "realloc", "fork", "pipe", "pipe2",
                                   "execve", "execvp", "execvpe", "socket", "write",
                                   "fsync", "fdatasync", "rename", "renameat", "renameat2"};

static atomic_long s_calls[F_N];
static int s_target = -1;       /* which function, or -1 */
static long s_nth;              /* its Nth call fails */
static bool s_kill;             /* SIGKILL instead of failing */
static bool s_active;           /* this process is the one to fault */
static bool s_counting;
static char s_log[512];

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static void
s_log_line(const char *what, int fn, long n, const void *caller)
{
  if (!s_log[0])
    return;
  int fd = open(s_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  /* Who called: the nearest exported symbol and its object, so a test can
     tell a failure handled in a library it does not own. */
  Dl_info info;
  const char *sym = "?", *obj = "?";
  if (caller && dladdr(caller, &info)) {
    sym = info.dli_sname ? info.dli_sname : "?";
    obj = info.dli_fname ? (strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1
                                                         : info.dli_fname) : "?";
  }
  char line[512];
  int len = snprintf(line, sizeof line, "%s %s %ld %d %s %s\n", what, s_names[fn], n,
                     (int) getpid(), sym, obj);
  ssize_t (*real_write)(int, const void *, size_t) =
      (ssize_t(*)(int, const void *, size_t)) dlsym(RTLD_NEXT, "write");
  if (real_write && len > 0)
    (void) real_write(fd, line, (size_t) len);
  close(fd);
}

/*  A forked child (before its exec) is another process: it neither counts
    nor fails, so "the Nth call" always means the Nth in the process that
    loaded the shim. */
static void
s_in_child(void)
{
  s_active = false;
}

__attribute__((constructor)) static void
s_init(void)
{
  const char *spec = getenv("KG_FAULT");
  const char *exe = getenv("KG_FAULT_EXE");
  const char *log = getenv("KG_FAULT_LOG");
  if (!spec)
    return;
  if (exe) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      return;
    self[n] = '\0';
    const char *base = strrchr(self, '/');
    if (strcmp(base ? base + 1 : self, exe) != 0)
      return;
  }
  if (log)
    snprintf(s_log, sizeof s_log, "%s", log);
  s_active = true;
  pthread_atfork(NULL, NULL, s_in_child);
  if (strcmp(spec, "count") == 0) {
    s_counting = true;
    return;
  }
  char name[32];
  long nth = 0;
  char mode[16] = "";
  if (sscanf(spec, "%31[a-z0-9]:%ld:%15s", name, &nth, mode) < 2 || nth < 1)
    return;
  for (int i = 0; i < F_N; i++)
    if (strcmp(name, s_names[i]) == 0)
      s_target = i;
  s_nth = nth;
  s_kill = strcmp(mode, "kill") == 0;
}

__attribute__((destructor)) static void
s_fini(void)
{
  if (!s_active || !s_counting)
    return;
  for (int i = 0; i < F_N; i++)
    if (atomic_load(&s_calls[i]))
      s_log_line("count", i, atomic_load(&s_calls[i]), NULL);
}

/*  Count a call of fn; true if this one must fail. */
#define s_fail(fn) s_fail_at(fn, __builtin_return_address(0))
static bool
s_fail_at(int fn, const void *caller)
{
  if (!s_active)
    return false;
  long n = atomic_fetch_add(&s_calls[fn], 1) + 1;
  if (fn != s_target || n != s_nth)
    return false;
  s_log_line("fired", fn, n, caller);
  if (s_kill)
    raise(SIGKILL);
  return true;
}

#define REAL(type, name, args) \
  static type(*real) args;     \
  if (!real)                   \
    real = (type(*) args) dlsym(RTLD_NEXT, name)

void *
malloc(size_t size)
{
  if (s_fail(F_MALLOC)) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_malloc(size);
}

void *
calloc(size_t n, size_t size)
{
  if (s_fail(F_CALLOC)) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_calloc(n, size);
}

void *
realloc(void *p, size_t size)
{
  if (s_fail(F_REALLOC)) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_realloc(p, size);
}

pid_t
fork(void)
{
  REAL(pid_t, "fork", (void));
  if (s_fail(F_FORK)) {
    errno = EAGAIN;
    return -1;
  }
  return real();
}

int
pipe(int fds[2])
{
  REAL(int, "pipe", (int *));
  if (s_fail(F_PIPE)) {
    errno = EMFILE;
    return -1;
  }
  return real(fds);
}

int
pipe2(int fds[2], int flags)
{
  REAL(int, "pipe2", (int *, int));
  if (s_fail(F_PIPE2)) {
    errno = EMFILE;
    return -1;
  }
  return real(fds, flags);
}

int
execve(const char *path, char *const argv[], char *const envp[])
{
  REAL(int, "execve", (const char *, char *const *, char *const *));
  if (s_fail(F_EXECVE)) {
    errno = ENOENT;
    return -1;
  }
  return real(path, argv, envp);
}

int
execvp(const char *file, char *const argv[])
{
  REAL(int, "execvp", (const char *, char *const *));
  if (s_fail(F_EXECVP)) {
    errno = ENOENT;
    return -1;
  }
  return real(file, argv);
}

int
execvpe(const char *file, char *const argv[], char *const envp[])
{
  REAL(int, "execvpe", (const char *, char *const *, char *const *));
  if (s_fail(F_EXECVPE)) {
    errno = ENOENT;
    return -1;
  }
  return real(file, argv, envp);
}

int
socket(int domain, int type, int protocol)
{
  REAL(int, "socket", (int, int, int));
  if (s_fail(F_SOCKET)) {
    errno = EMFILE;
    return -1;
  }
  return real(domain, type, protocol);
}

ssize_t
write(int fd, const void *buf, size_t len)
{
  REAL(ssize_t, "write", (int, const void *, size_t));
  if (s_fail(F_WRITE)) {
    errno = EIO;
    return -1;
  }
  return real(fd, buf, len);
}

int
fsync(int fd)
{
  REAL(int, "fsync", (int));
  if (s_fail(F_FSYNC)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

int
fdatasync(int fd)
{
  REAL(int, "fdatasync", (int));
  if (s_fail(F_FDATASYNC)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

int
rename(const char *from, const char *to)
{
  REAL(int, "rename", (const char *, const char *));
  if (s_fail(F_RENAME)) {
    errno = EXDEV;
    return -1;
  }
  return real(from, to);
}

int
renameat(int dfd, const char *from, int tfd, const char *to)
{
  REAL(int, "renameat", (int, const char *, int, const char *));
  if (s_fail(F_RENAMEAT)) {
    errno = EXDEV;
    return -1;
  }
  return real(dfd, from, tfd, to);
}

int
renameat2(int dfd, const char *from, int tfd, const char *to, unsigned flags)
{
  REAL(int, "renameat2", (int, const char *, int, const char *, unsigned));
  if (s_fail(F_RENAMEAT2)) {
    errno = EXDEV;
    return -1;
  }
  return real(dfd, from, tfd, to, flags);
}
