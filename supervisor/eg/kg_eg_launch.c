/*  kg_eg_launch: bind, start, report, then serve the gateway's requests on
    the house's reactor (kg_loop): the signals (kg_sigsrc), the
    communication port's sockets and deadlines (kg_eg_comm), the stop
    timer; never sleeps. */
#include "kg_eg_launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "kg_conninfo.h"
#include "kg_eg_args.h"
#include "kg_eg_comm.h"
#include "kg_eg_peer.h"
#include "kg_eg_report.h"
#include "kg_error.h"
#include "kg_exit.h"
#include "kg_log.h"
#include "kg_loop.h"
#include "kg_optdoc.h"
#include "kg_sigsrc.h"

#define KG_EG_STOP_GRACE_MS 10000       /* SIGTERM, then SIGKILL            */

typedef struct {
  kg_eg_opts_t o;
  int fds[6];                   /*  5 kernel ports, then the comm port      */
  int ports[6];
  char comm_iface[IFNAMSIZ];    /*  the comm port's interface ("" = any)    */
  kg_eg_trust_t trust;          /*  whose local connections it serves       */
  kg_eg_comm_t *comm;           /*  serves fds[5] once the report is sent   */
  char dir[PATH_MAX];           /*  private dir of the connection file      */
  char conn_path[PATH_MAX];
  kg_conninfo_t *info;
  pid_t child;
  kg_loop_t *loop;
  kg_sigsrc_t *sig;             /*  SIGCHLD, SIGINT, SIGTERM, SIGHUP        */
  int stop_timer;               /*  SIGKILL when SIGTERM was not enough     */
  bool stopping;
  int exit_code;                /*  the guarded kernel's, once it is gone   */
  bool shutdown_asked;          /*  the gateway said it is shutting down    */
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
  /* libsodium's unbiased draw rather than glibc's arc4random_uniform, which
     needs glibc 2.36 and so would keep the wheel off Ubuntu 22.04 */
  uint32_t start = hi ? randombytes_uniform(span) : 0;
  for (uint32_t k = 0; n < 6 && (hi == 0 || k < span); k++) {
    int port = hi ? lo + (int) ((start + k) % span) : 0;
    if (hi && port == 0)
      continue;   /* port 0 would be any port, maybe outside the range */
    bool comm = n == 5;
    int fd = comm ? kg_eg_comm_bind(E->comm_iface[0] ? E->comm_iface : NULL, port)
                  : s_bind_one(&addr, port);
    if (hi && (fd == -EADDRINUSE || fd == -EACCES))
      continue;
    if (fd < 0) {
      if (comm)
        kg_error("cannot bind the communication port %d on %s: %s%s", port,
                 E->comm_iface[0] ? E->comm_iface : "every interface", kg_strerror(fd),
                 fd == -EPERM ? " (binding one interface needs Linux 5.7 or CAP_NET_RAW; "
                                "--comm-interface any binds them all)" : "");
      else
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
  return 0;
}

/*  Which interface the communication port listens on, and whose local
    connections it serves (--comm-interface; docs/eg.md). */
static int
s_comm_policy(s_eg_t *E)
{
  E->trust.self_uid = (unsigned) getuid();
  const char *want = E->o.comm_interface;
  if (strcmp(want, "any") == 0) {
    kg_notice("communication port on every interface (--comm-interface any)");
    return 0;
  }
  if (strcmp(want, "auto") != 0) {
    if (if_nametoindex(want) == 0) {
      kg_error("--comm-interface %s: no such network interface here", want);
      return KG_EUSAGE;
    }
    snprintf(E->comm_iface, sizeof E->comm_iface, "%s", want);
    kg_notice("communication port on %s (--comm-interface)", want);
    return 0;
  }
  char host[256], err[300];
  int port;
  struct sockaddr_in gw;
  bool local = false;
  kg_eg_address_parse(E->o.response_address, host, sizeof host, &port, err, sizeof err);
  int rc = kg_eg_route(host, port, &gw, E->comm_iface, &local, err, sizeof err);
  if (rc) {
    kg_error("--comm-interface auto: %s (name the interface with --comm-interface, or "
             "'any')", err);
    return rc == KG_ENOTFOUND ? KG_EUSAGE : KG_EXIT_SYSTEM;
  }
  unsigned uid;
  if (local) {
    /* the gateway may come to 127.0.0.1 or to this host's address: every
       interface, and only this host's connections */
    E->trust.local_only = true;
    if (kg_eg_listener_uid(&gw, &uid) == 0) {
      E->trust.gateway_uid_known = true;
      E->trust.gateway_uid = uid;
    } else
      kg_warning("communication port: no socket listens on %s here, so the gateway's user "
                 "is unknown: only the kernel's user and root may send requests", host);
    kg_notice("communication port on every interface, for this host's connections only "
              "(the gateway %s is on this host)", host);
  } else
    kg_notice("communication port on %s, the interface that reaches the gateway %s",
              E->comm_iface, host);
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
s_spawn(s_eg_t *E)
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
    sigset_t none;                  /* the kernel starts with no signal blocked */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
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
   Serving: signals, the guarded kernel's exit, the communication port. */

static void
s_stop(s_eg_t *E, const char *why)
{
  if (E->stopping)
    return;
  E->stopping = true;
  kg_notice("%s: stopping the guarded kernel (SIGTERM)", why);
  kill(E->child, SIGTERM);
  kg_loop_timer_set(E->loop, E->stop_timer, kg_loop_now(E->loop) + KG_EG_STOP_GRACE_MS);
}

static int
s_on_stop_timer(kg_loop_t *loop, int id, void *arg)
{
  (void) loop;
  (void) id;
  s_eg_t *E = arg;
  kg_warning("guarded kernel ignored SIGTERM: SIGKILL");
  kill(E->child, SIGKILL);
  return KG_LOOP_OK;
}

/*  A request the communication port obeys (kg_eg_comm checked who sent it
    and that the signal is one the gateway sends). */
static void
s_on_request(void *arg, const kg_eg_request_t *r)
{
  s_eg_t *E = arg;
  if (r->signum > 0) {
    if (r->signum == SIGINT)
      kg_info("gateway: interrupt (SIGINT to the guarded kernel)");
    else
      kg_notice("gateway: signal %d to the guarded kernel", r->signum);
    kill(E->child, r->signum);
  }
  if (r->shutdown && !E->shutdown_asked) {
    /* The gateway sends this right after the kernel's shutdown_request on
       the control channel (HMAC-signed): the kernel ends on that one. This
       unsigned line stops nothing by itself; it only says that the
       gateway's own SIGTERM or SIGKILL, if they follow, end a requested
       shutdown. */
    E->shutdown_asked = true;
    kg_notice("gateway: shutdown (the kernel ends on the shutdown_request it was sent)");
  }
}

/*  The launcher's own signals; on SIGCHLD, the guarded kernel's end stops
    the loop with its exit code in E->exit_code. */
static int
s_on_signal(kg_loop_t *loop, int signo, void *arg)
{
  (void) loop;
  s_eg_t *E = arg;
  if (signo == SIGINT)
    kill(E->child, SIGINT);
  else if (signo == SIGTERM || signo == SIGHUP)
    s_stop(E, signo == SIGTERM ? "SIGTERM" : "SIGHUP");
  if (signo != SIGCHLD)
    return KG_LOOP_OK;
  int st;
  if (waitpid(E->child, &st, WNOHANG) != E->child)
    return KG_LOOP_OK;
  kg_notice("guarded kernel exited (%s %d)", WIFEXITED(st) ? "status" : "signal",
            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  if (WIFEXITED(st))
    E->exit_code = WEXITSTATUS(st);
  /* the gateway's own escalation of a shutdown it asked for is no failure */
  else if (E->shutdown_asked && (WTERMSIG(st) == SIGTERM || WTERMSIG(st) == SIGKILL))
    E->exit_code = KG_EXIT_OK;
  else
    E->exit_code = 128 + WTERMSIG(st);
  return KG_LOOP_STOP;
}

/*  Serve until the guarded kernel is gone: its exit code, or
    KG_EXIT_SYSTEM when the loop cannot be set up or fails. Takes fds[5]. */
static int
s_serve(s_eg_t *E)
{
  int listen_fd = E->fds[5], rc = KG_ENOMEM;
  E->fds[5] = -1;
  E->loop = kg_loop_new();
  if (E->loop && kg_loop_signals(E->loop, E->sig, s_on_signal, E) > 0
      && (E->stop_timer = kg_loop_timer(E->loop, 0, s_on_stop_timer, E)) > 0) {
    E->comm = kg_eg_comm_new(E->loop, listen_fd, &E->trust, s_on_request, E);
    listen_fd = -1;                 /* the comm object's now, even when it failed */
    if (E->comm)
      rc = kg_loop_run(E->loop);
  }
  if (listen_fd >= 0)
    close(listen_fd);
  if (rc != 0) {
    kg_error("serving the communication port failed: %s", kg_strerror(rc));
    kill(E->child, SIGKILL);
    waitpid(E->child, NULL, 0);
    return KG_EXIT_SYSTEM;
  }
  return E->exit_code;
}

static void
s_cleanup(s_eg_t *E)
{
  for (int i = 0; i < 6; i++)
    if (E->fds[i] >= 0)
      close(E->fds[i]);
  kg_eg_comm_destroy(&E->comm);
  kg_loop_destroy(&E->loop);
  kg_sigsrc_destroy(&E->sig);
  if (E->conn_path[0])
    unlink(E->conn_path);
  if (E->dir[0])
    rmdir(E->dir);
  kg_conninfo_destroy(&E->info);
}

int
kg_eg_launch_main(int argc, char **argv)
{
  s_eg_t E = {.fds = {-1, -1, -1, -1, -1, -1}};
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
  static const int signals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, 0};
  E.sig = kg_sigsrc_new(signals);   /* before the child: no exit goes unseen */
  if (!E.sig)
    kg_error("cannot set up the signal fd: %s", strerror(errno));
  int rc = E.sig ? 0 : KG_EXIT_SYSTEM;
  if (rc == 0)
    rc = s_comm_policy(&E);
  if (rc == 0)
    rc = s_bind_ports(&E);
  if (rc == KG_EUSAGE)
    rc = KG_EXIT_USAGE;
  if (rc == 0)
    rc = s_write_conn(&E);
  char *payload = NULL;
  if (rc == 0)
    rc = kg_eg_report_seal(&E.o, E.info, E.ports[5], &payload);
  if (rc == 0)
    rc = s_spawn(&E);
  if (rc == 0 && (rc = kg_eg_report_send(E.o.response_address, payload)) != 0) {
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
