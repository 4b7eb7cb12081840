/*  kg_eg_launch: bind, start, report, then serve the gateway's requests.
    One poll over the signalfd, the listening communication socket and at
    most one accepted request connection; deadlines, never sleeps. */
#include "kg_eg_launch.h"

#include <arpa/inet.h>
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_exit.h"
#include "kg_clock.h"
#include "kg_conninfo.h"
#include "kg_eg_args.h"
#include "kg_eg_seal.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"
#include "kg_optdoc.h"

#define KG_EG_REPORT_TIMEOUT_MS 30000   /* the gateway's own launch timeout */
#define KG_EG_REQUEST_TIMEOUT_MS 10000  /* a request connection must finish */
#define KG_EG_STOP_GRACE_MS 10000       /* SIGTERM, then SIGKILL            */
#define KG_EG_REQUEST_MAX (64 * 1024)   /* requests are a few bytes         */

typedef struct {
  kg_eg_opts_t o;
  int fds[6];                   /*  5 kernel ports, then the comm port      */
  int ports[6];
  char dir[PATH_MAX];           /*  private dir of the connection file      */
  char conn_path[PATH_MAX];
  kg_conninfo_t *info;
  pid_t child;
  int sfd;                      /*  signalfd                                */
  int conn;                     /*  accepted request connection, or -1      */
  char *req;                    /*  its bytes so far                        */
  size_t req_len;
  int64_t req_deadline, stop_deadline;
  bool shutdown_asked;
} s_eg_t;

/* ------------------------------------------------------------------------
   Ports: six sockets bound inside the range, scanned from a random start. */

static int
s_bind_one(const struct in_addr *addr, int port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                           .sin_addr = *addr};
  if (bind(fd, (struct sockaddr *) &sa, sizeof sa) != 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  return fd;
}

static int
s_bind_ports(s_eg_t *E)
{
  struct in_addr addr;
  if (inet_pton(AF_INET, E->o.ip, &addr) != 1) {
    kg_error("--ip %s: expected an IPv4 address", E->o.ip);
    return KG_EUSAGE;
  }
  int lo = E->o.port_lo, hi = E->o.port_hi, n = 0;
  uint32_t span = (uint32_t) (hi - lo + 1);
  uint32_t start = hi ? arc4random_uniform(span) : 0;
  for (uint32_t k = 0; n < 6 && (hi == 0 || k < span); k++) {
    int port = hi ? lo + (int) ((start + k) % span) : 0;
    if (hi && port == 0)
      continue;   /* port 0 would be any port, maybe outside the range */
    int fd = s_bind_one(&addr, port);
    if (hi && (fd == -EADDRINUSE || fd == -EACCES))
      continue;
    if (fd < 0) {
      kg_error("cannot bind %s:%d: %s", E->o.ip, port, kg_strerror(fd));
      return KG_EXIT_SYSTEM;
    }
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *) &sa, &sl);
    E->fds[n] = fd;
    E->ports[n++] = ntohs(sa.sin_port);
  }
  if (n < 6) {
    kg_error("--port-range %d..%d: only %d of the 6 ports a kernel needs are free on %s",
             lo, hi, n, E->o.ip);
    return KG_EXIT_SYSTEM;
  }
  if (listen(E->fds[5], 16) != 0) {
    kg_error("cannot listen on the communication port %d: %s", E->ports[5], strerror(errno));
    return KG_EXIT_SYSTEM;
  }
  return 0;
}

/* ------------------------------------------------------------------------
   The frontend connection file, in a private directory. */

static int
s_write_conn(s_eg_t *E)
{
  for (const char *p = E->o.kernel_id; *p; p++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", *p)
        || strlen(E->o.kernel_id) > 128) {
      kg_error("--kernel-id '%s': expected letters, digits, '-', '_' or '.' (a UUID)",
               E->o.kernel_id);
      return KG_EXIT_USAGE;
    }
  const char *tmp = getenv("TMPDIR");
  snprintf(E->dir, sizeof E->dir, "%s/kguard-eg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (strlen(E->dir) > 3800) {
    kg_error("TMPDIR is too long: %s", tmp);
    E->dir[0] = '\0';
    return KG_EXIT_USAGE;
  }
  if (!mkdtemp(E->dir)) {
    kg_error("cannot create a directory for the connection file (%s): %s", E->dir,
             strerror(errno));
    E->dir[0] = '\0';
    return KG_EXIT_SYSTEM;
  }
  snprintf(E->conn_path, sizeof E->conn_path, "%.3800s/kernel-%.128s.json", E->dir,
           E->o.kernel_id);   /* both lengths checked above */
  if (!(E->info = kg_conninfo_new()) || kg_conninfo_set_random_key(E->info) != 0)
    return KG_EXIT_SYSTEM;
  snprintf(E->info->ip, sizeof E->info->ip, "%s", E->o.ip);
  for (int c = 0; c < KG_CH_COUNT; c++)
    E->info->ports[c] = E->ports[c];
  int rc = kg_conninfo_save(E->info, E->conn_path);
  if (rc) {
    kg_error("cannot write %s: %s", E->conn_path, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  return 0;
}

/* ------------------------------------------------------------------------
   The guarded kernel: kguard kernel -f FILE -- INNER. */

static int
s_spawn(s_eg_t *E, const sigset_t *old_mask)
{
  const char *py = getenv("KGUARD_PYTHON");
  char *deflt[] = {(char *) (py && *py ? py : "python3"), "-m", "ipykernel_launcher", "-f",
                   "{connection_file}", NULL};
  char **inner = E->o.inner_argv ? E->o.inner_argv : deflt;
  size_t n = 0;
  while (inner[n])
    n++;
  char **argv = calloc(n + 8, sizeof *argv);
  if (!argv)
    return KG_EXIT_SYSTEM;
  int k = 0;
  argv[k++] = (char *) E->o.kguard;
  argv[k++] = "kernel";
  argv[k++] = "-f";
  argv[k++] = E->conn_path;
  if (E->o.checkpoints) {
    argv[k++] = "--checkpoints";
    argv[k++] = (char *) E->o.checkpoints;
  }
  argv[k++] = "--";
  memcpy(argv + k, inner, n * sizeof *argv);
  for (int i = 0; i < 5; i++) {     /* kguard kernel binds these itself */
    close(E->fds[i]);
    E->fds[i] = -1;
  }
  E->child = fork();
  if (E->child == 0) {
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    execv(argv[0], argv);
    fprintf(stderr, "kguard eg-launch: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(KG_EXIT_SYSTEM);
  }
  int e = errno;
  free(argv);
  if (E->child < 0) {
    kg_error("cannot start the guarded kernel: %s", strerror(e));
    return KG_EXIT_SYSTEM;
  }
  kg_notice("kernel %s: guarded kernel pid %ld, ports %d %d %d %d %d, comm port %d",
            E->o.kernel_id, (long) E->child, E->ports[0], E->ports[1], E->ports[2],
            E->ports[3], E->ports[4], E->ports[5]);
  return 0;
}

/* ------------------------------------------------------------------------
   The report to the gateway's response address. */

static char *
s_report_json(const s_eg_t *E)
{
  static const char *names[KG_CH_COUNT] = {"shell_port", "iopub_port", "stdin_port",
                                           "control_port", "hb_port"};
  const kg_conninfo_t *ci = E->info;
  cJSON *o = cJSON_CreateObject();
  char *key = ci->key_len < SIZE_MAX ? malloc(ci->key_len + 1) : NULL;
  bool ok = o && key;
  if (ok) {
    memcpy(key, ci->key, ci->key_len);
    key[ci->key_len] = '\0';
    for (int c = 0; c < KG_CH_COUNT && ok; c++)
      ok = cJSON_AddNumberToObject(o, names[c], ci->ports[c]) != NULL;
    ok = ok && cJSON_AddStringToObject(o, "ip", ci->ip) && cJSON_AddStringToObject(o, "key", key)
         && cJSON_AddStringToObject(o, "transport", "tcp")
         && cJSON_AddStringToObject(o, "signature_scheme", ci->scheme)
         && cJSON_AddStringToObject(o, "kernel_name", "")
         && cJSON_AddNumberToObject(o, "pid", getpid())
         && cJSON_AddNumberToObject(o, "pgid", getpgrp())
         && cJSON_AddNumberToObject(o, "comm_port", E->ports[5])
         && cJSON_AddStringToObject(o, "kernel_id", E->o.kernel_id);
  }
  char *s = ok ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  if (key) {
    memset(key, 0, ci->key_len);
    free(key);
  }
  return s;
}

/*  Wait until fd is ready for events or the deadline passes. 0, or
    KG_ETIMEOUT / -errno. */
static int
s_wait_fd(int fd, short events, int64_t deadline)
{
  for (;;) {
    int64_t left = deadline - kg_clock_mono_ms();
    if (left <= 0)
      return KG_ETIMEOUT;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, (int) left);
    if (n > 0)
      return 0;
    if (n < 0 && errno != EINTR)
      return -errno;
  }
}

/*  Seal the report (before the kernel starts, so a bad --public-key starts
    nothing) into *payload_p. Returns 0 or an exit code. */
static int
s_seal_report(s_eg_t *E, char **payload_p)
{
  char err[256];
  char *json = s_report_json(E);
  int rc = json ? kg_eg_seal(E->o.public_key, json, strlen(json), payload_p, err, sizeof err)
                : KG_ENOMEM;
  if (json) {
    memset(json, 0, strlen(json));
    free(json);
  }
  if (rc)
    kg_error("%s", rc == KG_ENOMEM ? kg_strerror(rc) : err);
  return rc == 0 ? 0 : rc == KG_EUSAGE ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
}

/*  Send the sealed payload to the response address and close (the gateway
    reads until EOF). Returns 0 or KG_EXIT_SYSTEM. */
static int
s_send_report(s_eg_t *E, const char *payload)
{
  char host[256], port[16], err[256];
  int p;
  kg_eg_address_parse(E->o.response_address, host, sizeof host, &p, err, sizeof err);
  snprintf(port, sizeof port, "%d", p);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  int g = getaddrinfo(host, port, &hints, &ai);
  int fd = -1;
  int64_t deadline = kg_clock_mono_ms() + KG_EG_REPORT_TIMEOUT_MS;
  int rc = g ? KG_ENOTFOUND : 0;
  if (rc == 0) {
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS))
      rc = -errno;
  }
  if (rc == 0 && (rc = s_wait_fd(fd, POLLOUT, deadline)) == 0) {
    int so = 0;
    socklen_t sl = sizeof so;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
    rc = -so;
  }
  for (size_t off = 0, len = strlen(payload); rc == 0 && off < len;) {
    ssize_t w = send(fd, payload + off, len - off, MSG_NOSIGNAL);
    if (w > 0)
      off += (size_t) w;
    else if (w < 0 && errno == EAGAIN)
      rc = s_wait_fd(fd, POLLOUT, deadline);
    else if (w < 0 && errno != EINTR)
      rc = -errno;
  }
  if (ai)
    freeaddrinfo(ai);
  if (fd >= 0)
    close(fd);
  if (rc) {
    kg_error("cannot report the connection info to the gateway at %s: %s",
             E->o.response_address, g ? gai_strerror(g) : kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  kg_info("connection info reported to %s", E->o.response_address);
  return 0;
}

/* ------------------------------------------------------------------------
   Serving the communication port. */

static void
s_stop(s_eg_t *E, const char *why)
{
  if (E->stop_deadline)
    return;
  kg_notice("%s: stopping the guarded kernel (SIGTERM)", why);
  kill(E->child, SIGTERM);
  E->stop_deadline = kg_clock_mono_ms() + KG_EG_STOP_GRACE_MS;
}

static void
s_request_done(s_eg_t *E)
{
  char err[256];
  kg_eg_request_t r;
  int rc = E->req_len ? kg_eg_request_parse(E->req, E->req_len, &r, err, sizeof err) : 0;
  close(E->conn);
  E->conn = -1;
  free(E->req);
  E->req = NULL;
  if (E->req_len == 0)
    return;
  E->req_len = 0;
  if (rc) {
    kg_warning("gateway request rejected: %s", err);
    return;
  }
  if (r.signum > 0) {
    kg_info("gateway: signal %d to the guarded kernel", r.signum);
    kill(E->child, r.signum);
  }
  if (r.shutdown) {
    E->shutdown_asked = true;
    s_stop(E, "gateway asked for shutdown");
  }
}

static void
s_on_conn_readable(s_eg_t *E)
{
  char buf[4096];
  ssize_t n = recv(E->conn, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n <= 0) {
    s_request_done(E);
    return;
  }
  if (E->req_len + (size_t) n > KG_EG_REQUEST_MAX) {
    kg_warning("gateway request longer than %d bytes: dropped", KG_EG_REQUEST_MAX);
    E->req_len = 0;
    s_request_done(E);
    return;
  }
  char *g = realloc(E->req, E->req_len + (size_t) n);
  if (!g) {
    kg_warning("gateway request dropped: %s", kg_strerror(KG_ENOMEM));
    E->req_len = 0;
    s_request_done(E);
    return;
  }
  E->req = g;
  memcpy(E->req + E->req_len, buf, (size_t) n);
  E->req_len += (size_t) n;
}

/*  Returns the exit code once the guarded kernel is gone, else -1. */
static int
s_on_signal(s_eg_t *E)
{
  struct signalfd_siginfo si;
  while (read(E->sfd, &si, sizeof si) == (ssize_t) sizeof si) {
    if (si.ssi_signo == SIGINT)
      kill(E->child, SIGINT);
    else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP)
      s_stop(E, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGHUP");
  }
  int st;
  pid_t p = waitpid(E->child, &st, WNOHANG);
  if (p != E->child)
    return -1;
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  kg_notice("guarded kernel exited (%s %d)", WIFEXITED(st) ? "status" : "signal",
            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  return E->shutdown_asked && code != KG_EXIT_SYSTEM ? 0 : code;
}

static int
s_serve(s_eg_t *E)
{
  for (;;) {
    int64_t now = kg_clock_mono_ms(), wake = -1;
    if (E->conn >= 0 && now >= E->req_deadline) {
      kg_warning("gateway request not finished within %d ms: dropped",
                 KG_EG_REQUEST_TIMEOUT_MS);
      E->req_len = 0;
      s_request_done(E);
    }
    if (E->stop_deadline && now >= E->stop_deadline) {
      kg_warning("guarded kernel ignored SIGTERM: SIGKILL");
      kill(E->child, SIGKILL);
      E->stop_deadline = INT64_MAX;
    }
    if (E->conn >= 0)
      wake = E->req_deadline - now;
    if (E->stop_deadline && E->stop_deadline != INT64_MAX
        && (wake < 0 || E->stop_deadline - now < wake))
      wake = E->stop_deadline - now;
    struct pollfd p[3] = {{.fd = E->sfd, .events = POLLIN},
                          {.fd = E->fds[5], .events = POLLIN},
                          {.fd = E->conn, .events = POLLIN}};
    int n = poll(p, E->conn >= 0 ? 3 : 2, wake < 0 ? -1 : (int) (wake > INT32_MAX ? INT32_MAX : wake));
    if (n < 0 && errno != EINTR) {
      kg_error("poll: %s", strerror(errno));
      return KG_EXIT_SYSTEM;
    }
    if (n <= 0)
      continue;
    if (p[0].revents) {
      int code = s_on_signal(E);
      if (code >= 0)
        return code;
    }
    if (E->conn >= 0 && p[2].revents)
      s_on_conn_readable(E);
    if (E->conn < 0 && (p[1].revents & POLLIN)) {
      E->conn = accept4(E->fds[5], NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (E->conn >= 0)
        E->req_deadline = kg_clock_mono_ms() + KG_EG_REQUEST_TIMEOUT_MS;
    }
  }
}

static void
s_cleanup(s_eg_t *E)
{
  for (int i = 0; i < 6; i++)
    if (E->fds[i] >= 0)
      close(E->fds[i]);
  if (E->conn >= 0)
    close(E->conn);
  free(E->req);
  if (E->sfd >= 0)
    close(E->sfd);
  if (E->conn_path[0])
    unlink(E->conn_path);
  if (E->dir[0])
    rmdir(E->dir);
  kg_conninfo_destroy(&E->info);
}

int
kg_eg_launch_main(int argc, char **argv)
{
  s_eg_t E = {.fds = {-1, -1, -1, -1, -1, -1}, .conn = -1, .sfd = -1};
  const char *ignored = NULL;
  char err[512];
  if (kg_eg_args_parse(argc, argv, &E.o, &ignored, err, sizeof err) != 0) {
    fprintf(stderr, "kguard eg-launch: %s\n", err);
    return KG_EXIT_USAGE;
  }
  if (E.o.help || E.o.version) {
    if (E.o.help)
      kg_optdoc_help(&kg_eg_cmd, stdout);
    else
      printf("kguard %s\n", kg_opt_version());
    return KG_EXIT_OK;
  }
  if (!E.o.kguard) {
    kg_error("kguard-eg is run by `kguard eg-launch`; run that instead");
    return KG_EXIT_USAGE;
  }
  if (ignored)
    kg_notice("%s", ignored);
  sigset_t mask, old;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, &old);
  E.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  int rc = E.sfd < 0 ? KG_EXIT_SYSTEM : 0;
  if (rc == 0)
    rc = s_bind_ports(&E);
  if (rc == KG_EUSAGE)
    rc = KG_EXIT_USAGE;
  if (rc == 0)
    rc = s_write_conn(&E);
  char *payload = NULL;
  if (rc == 0)
    rc = s_seal_report(&E, &payload);
  if (rc == 0)
    rc = s_spawn(&E, &old);
  if (rc == 0 && (rc = s_send_report(&E, payload)) != 0) {
    kill(E.child, SIGTERM);
    waitpid(E.child, NULL, 0);
  }
  if (payload) {
    memset(payload, 0, strlen(payload));
    free(payload);
  }
  if (rc == 0)
    rc = s_serve(&E);
  s_cleanup(&E);
  return rc;
}
