/*  kg_eg_peer and kg_eg_comm_bind against real sockets: the interface that
    reaches the gateway, the owner of a local peer's socket (another user's,
    made by a child that drops to nobody), a gateway's listener, and what
    SO_BINDTODEVICE lets through. Needs root (other users, a private network
    namespace with a veth pair); skipped (77) otherwise. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_eg_comm.h"
#include "kg_eg_peer.h"
#include "kg_error.h"
#include "kg_test.h"

#define NOBODY 65534

static void
s_need_root(void)
{
  if (geteuid() != 0) {
    printf("skipped: needs root (other users, network namespaces)\n");
    exit(77);
  }
}

static int
s_port_of(int fd)
{
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  getsockname(fd, (struct sockaddr *) &sa, &sl);
  return ntohs(sa.sin_port);
}

/*  Connect to addr:port as uid, send msg, close; the child's exit status is
    0 when the connection was accepted by the kernel, 1 when refused. */
static pid_t
s_client(const char *addr, int port, unsigned uid, const char *msg)
{
  pid_t pid = fork();
  if (pid == 0) {
    if (uid && setresuid(uid, uid, uid) != 0)
      _exit(3);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
    inet_pton(AF_INET, addr, &sa.sin_addr);
    if (connect(fd, (struct sockaddr *) &sa, sizeof sa) != 0)
      _exit(errno == ECONNREFUSED ? 1 : 2);
    if (msg)
      (void) !write(fd, msg, strlen(msg));
    close(fd);
    _exit(0);
  }
  return pid;
}

static int
s_wait(pid_t pid)
{
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

KG_TEST(peer_owner_of_local_connections)
{
  s_need_root();
  int lfd = kg_eg_comm_bind("lo", 0);
  KG_CHECK(lfd >= 0);
  int port = s_port_of(lfd);
  static const unsigned uids[] = {0, NOBODY};
  for (size_t i = 0; i < 2; i++) {
    /* the client has connected, sent, closed and exited before the accept:
       its socket is orphaned (FIN-WAIT-2) but still has its owner */
    KG_CHECK_INT(s_wait(s_client("127.0.0.1", port, uids[i], "{\"signum\": 0}")), 0);
    int fd = accept(lfd, NULL, NULL);
    KG_CHECK(fd >= 0);
    kg_eg_peer_t peer;
    KG_CHECK_INT(kg_eg_peer_of(fd, &peer), 0);
    KG_CHECK(peer.local);
    KG_CHECK(peer.uid_known);
    KG_CHECK_INT(peer.uid, uids[i]);
    close(fd);
  }
  close(lfd);
}

KG_TEST(peer_reset_before_lookup_has_no_owner)
{
  s_need_root();
  int lfd = kg_eg_comm_bind("lo", 0);
  int port = s_port_of(lfd);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  KG_CHECK_INT(connect(c, (struct sockaddr *) &sa, sizeof sa), 0);
  (void) !write(c, "{\"signum\": 9}", 13);
  struct linger lg = {.l_onoff = 1, .l_linger = 0};   /* close with a reset */
  setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(c);
  int fd = accept(lfd, NULL, NULL);
  if (fd >= 0) {
    kg_eg_peer_t peer = {.uid_known = true};
    int rc = kg_eg_peer_of(fd, &peer);
    /* gone: either its addresses cannot be read or its owner is unknown */
    KG_CHECK(rc != 0 || (peer.local && !peer.uid_known));
    kg_eg_trust_t trust = {.self_uid = 0};
    KG_CHECK(rc != 0 || !kg_eg_peer_allowed(&peer, &trust, NULL, 0));
    close(fd);
  }
  close(lfd);
}

KG_TEST(listener_owner)
{
  s_need_root();
  int pipefd[2];
  KG_CHECK_INT(pipe(pipefd), 0);
  pid_t pid = fork();
  if (pid == 0) {   /* a "gateway" of another user, listening on loopback */
    if (setresuid(NOBODY, NOBODY, NOBODY) != 0)
      _exit(3);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (bind(fd, (struct sockaddr *) &sa, sizeof sa) != 0 || listen(fd, 1) != 0)
      _exit(4);
    int port = s_port_of(fd);
    (void) !write(pipefd[1], &port, sizeof port);
    pause();
    _exit(0);
  }
  int port = 0;
  KG_CHECK_INT(read(pipefd[0], &port, sizeof port), (int) sizeof port);
  struct sockaddr_in gw = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
  inet_pton(AF_INET, "127.0.0.1", &gw.sin_addr);
  unsigned uid = 1;
  KG_CHECK_INT(kg_eg_listener_uid(&gw, &uid), 0);
  KG_CHECK_INT(uid, NOBODY);
  kill(pid, SIGKILL);
  s_wait(pid);
  KG_CHECK_INT(kg_eg_listener_uid(&gw, &uid), KG_ENOTFOUND);
  close(pipefd[0]);
  close(pipefd[1]);
}

/*  In a private network namespace: lo and a veth pair, kgd0 holding
    10.77.9.1/24 (its peer kgd1 up, so the link has carrier). The checks run in a child; its exit status is the count
    of failed checks. */
KG_TEST(route_and_interface_binding)
{
  s_need_root();
  pid_t pid = fork();
  if (pid == 0) {
    if (unshare(CLONE_NEWNET) != 0
        || system("ip link set lo up && ip link add kgd0 type veth peer name kgd1 && "
                  "ip addr add 10.77.9.1/24 dev kgd0 && ip link set kgd1 up && "
                  "ip link set kgd0 up") != 0)
      _exit(100);
    struct sockaddr_in gw;
    char iface[IFNAMSIZ] = "", err[300];
    bool local = true;
    /* a gateway on the dummy's network: reached through kgd0 */
    KG_CHECK_INT(kg_eg_route("10.77.9.5", 8877, &gw, iface, &local, err, sizeof err), 0);
    KG_CHECK_STR(iface, "kgd0");
    KG_CHECK(!local);
    /* a gateway at this host's own addresses: local, no one interface */
    KG_CHECK_INT(kg_eg_route("10.77.9.1", 8877, &gw, iface, &local, err, sizeof err), 0);
    KG_CHECK_STR(iface, "");
    KG_CHECK(local);
    KG_CHECK_INT(kg_eg_route("127.0.0.1", 8877, &gw, iface, &local, err, sizeof err), 0);
    KG_CHECK_STR(iface, "");
    KG_CHECK(local);
    /* no route at all */
    KG_CHECK(kg_eg_route("192.0.2.1", 1, &gw, iface, &local, err, sizeof err) != 0);
    KG_CHECK(strstr(err, "no route") != NULL);
    /* What the design relies on. Bound to kgd0: this host's connections to
       kgd0's address get through (their owner is checked then), to
       127.0.0.1 never. */
    int fd = kg_eg_comm_bind("kgd0", 0);
    KG_CHECK(fd >= 0);
    KG_CHECK_INT(s_wait(s_client("10.77.9.1", s_port_of(fd), 0, NULL)), 0);
    KG_CHECK_INT(s_wait(s_client("127.0.0.1", s_port_of(fd), 0, NULL)), 1);
    close(fd);
    /* bound to lo: 127.0.0.1 only, not the host's other addresses (so a
       gateway on this host gets every interface, network peers refused) */
    fd = kg_eg_comm_bind("lo", 0);
    KG_CHECK_INT(s_wait(s_client("127.0.0.1", s_port_of(fd), 0, NULL)), 0);
    KG_CHECK_INT(s_wait(s_client("10.77.9.1", s_port_of(fd), 0, NULL)), 1);
    close(fd);
    KG_CHECK_INT(kg_eg_comm_bind("nosuchif0", 0), -ENODEV);
    _exit(kg_test__failed);
  }
  KG_CHECK_INT(s_wait(pid), 0);
}

/*  The communication port on the loop, with the loop's clock in the test's
    hands: more idle connections than slots, then the gateway's request. */
static int64_t s_now = 1000000;

static int64_t
s_clock(void *arg)
{
  (void) arg;
  return s_now;
}

static int s_signum = -1, s_requests;

static void
s_on_request(void *arg, const kg_eg_request_t *r)
{
  (void) arg;
  s_signum = r->signum;
  s_requests++;
}

static int
s_connect(int port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  return connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0 ? fd : -1;
}

/*  Has the other end closed fd (EOF or reset)? Looks for 100 ms of real
    time: loopback delivers a close at once. */
static bool
s_closed_by_peer(int fd)
{
  struct pollfd p = {.fd = fd, .events = POLLIN};
  char c;
  return poll(&p, 1, 100) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/*  Turn the loop until it has closed fd, at most n times: each turn has
    something to do, so none waits for a deadline on the frozen clock. */
static bool
s_turn_until_closed(kg_loop_t *loop, int fd, int n)
{
  for (int k = 0; k < n; k++) {
    if (s_closed_by_peer(fd))
      return true;
    kg_loop_once(loop);
  }
  return s_closed_by_peer(fd);
}

KG_TEST(comm_idle_connections_give_way_and_expire)
{
  s_need_root();   /* as the other cases; the test's own user is the trusted one */
  kg_loop_t *loop = kg_loop_new();
  kg_loop_set_clock(loop, s_clock, NULL);
  int lfd = kg_eg_comm_bind("lo", 0);
  int port = s_port_of(lfd);
  kg_eg_trust_t trust = {.self_uid = (unsigned) getuid()};
  kg_eg_comm_t *comm = kg_eg_comm_new(loop, lfd, &trust, s_on_request, NULL);
  KG_CHECK(comm != NULL);
  int idle[KG_EG_COMM_MAX + 8];
  size_t nidle = sizeof idle / sizeof idle[0];
  for (size_t i = 0; i < nidle; i++) {
    idle[i] = s_connect(port);
    KG_CHECK(idle[i] >= 0);
  }
  /* all accepted in one turn; the 8 oldest gave way to the newer ones */
  KG_CHECK(s_turn_until_closed(loop, idle[7], 2));
  for (size_t i = 0; i < 8; i++)
    KG_CHECK(s_closed_by_peer(idle[i]));
  KG_CHECK(!s_closed_by_peer(idle[8]));
  /* the gateway's request: served at once (its admission closes idle[8]) */
  int gw = s_connect(port);
  KG_CHECK(write(gw, "{\"signum\": 2}", 13) == 13);
  KG_CHECK(s_turn_until_closed(loop, gw, 3));   /* answered by closing, as the gateway expects */
  KG_CHECK_INT(s_requests, 1);
  KG_CHECK_INT(s_signum, 2);
  /* the idle ones expire on the loop's clock, not before */
  KG_CHECK(!s_closed_by_peer(idle[9]));
  KG_CHECK(kg_loop_timeout(loop) > 0 && kg_loop_timeout(loop) <= KG_EG_COMM_TIMEOUT_MS);
  s_now += KG_EG_COMM_TIMEOUT_MS + 1;
  kg_loop_once(loop);
  for (size_t i = 8; i < nidle; i++)
    KG_CHECK(s_closed_by_peer(idle[i]));
  /* a forbidden signal: refused and closed, nothing handed over */
  int bad = s_connect(port);
  KG_CHECK(write(bad, "{\"signum\": 19}", 14) == 14);
  KG_CHECK(s_turn_until_closed(loop, bad, 3));
  KG_CHECK_INT(s_requests, 1);
  kg_eg_comm_destroy(&comm);
  KG_CHECK(comm == NULL);
  for (size_t i = 0; i < nidle; i++)
    close(idle[i]);
  close(gw);
  close(bad);
  kg_loop_destroy(&loop);
}

KG_TEST_MAIN(KG_CASE(comm_idle_connections_give_way_and_expire), KG_CASE(peer_owner_of_local_connections), KG_CASE(peer_reset_before_lookup_has_no_owner),
             KG_CASE(listener_owner), KG_CASE(route_and_interface_binding))
