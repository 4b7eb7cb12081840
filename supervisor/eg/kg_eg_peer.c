/*  kg_eg_peer: routes, local addresses and socket owners (see kg_eg_peer.h). */
#include "kg_eg_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "kg_error.h"

bool
kg_eg_addr_is_local(const struct in_addr *addr)
{
  if ((ntohl(addr->s_addr) >> 24) == 127)
    return true;
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0)
    return true;   /* unknown: count it as local, whose owner must then be found */
  bool local = false;
  for (struct ifaddrs *i = all; i && !local; i = i->ifa_next)
    local = i->ifa_addr && i->ifa_addr->sa_family == AF_INET
            && ((struct sockaddr_in *) i->ifa_addr)->sin_addr.s_addr == addr->s_addr;
  freeifaddrs(all);
  return local;
}

/*  The name of the interface holding local into iface. Returns 0 or
    KG_ENOTFOUND. */
static int
s_iface_of(const struct in_addr *local, char *iface)
{
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0)
    return -errno;
  int rc = KG_ENOTFOUND;
  for (struct ifaddrs *i = all; i && rc; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_name)
      continue;
    bool hit = ((struct sockaddr_in *) i->ifa_addr)->sin_addr.s_addr == local->s_addr;
    if (hit && strlen(i->ifa_name) < IFNAMSIZ) {
      snprintf(iface, IFNAMSIZ, "%s", i->ifa_name);
      rc = 0;
    }
  }
  freeifaddrs(all);
  return rc;
}

int
kg_eg_route(const char *host, int port, struct sockaddr_in *gateway, char *iface,
            bool *gateway_local, char *err, size_t errlen)
{
  char service[16];
  snprintf(service, sizeof service, "%d", port);
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *ai = NULL;
  int g = getaddrinfo(host, service, &hints, &ai);
  if (g != 0) {
    kg_errf(err, errlen, "the gateway's host '%s' has no IPv4 address: %s", host,
            gai_strerror(g));
    return KG_ENOTFOUND;
  }
  *gateway = *(struct sockaddr_in *) ai->ai_addr;
  freeaddrinfo(ai);
  /* A connected UDP socket sends nothing: it only asks the routing table
     which local address would reach the gateway. */
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in local;
  socklen_t sl = sizeof local;
  int rc = fd < 0 ? -errno : 0;
  if (rc == 0 && (connect(fd, (struct sockaddr *) gateway, sizeof *gateway) != 0
                  || getsockname(fd, (struct sockaddr *) &local, &sl) != 0))
    rc = -errno;
  if (fd >= 0)
    close(fd);
  if (rc) {
    kg_errf(err, errlen, "no route to the gateway at %s: %s", host, kg_strerror(rc));
    return rc;
  }
  *iface = '\0';
  *gateway_local = kg_eg_addr_is_local(&gateway->sin_addr);
  if (*gateway_local)
    return 0;
  rc = s_iface_of(&local.sin_addr, iface);
  if (rc) {
    char a[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &local.sin_addr, a, sizeof a);
    kg_errf(err, errlen, "no interface holds %s, the address that reaches the gateway", a);
  }
  return rc;
}

/* ------------------------------------------------------------------------
   NETLINK_SOCK_DIAG queries. */

typedef int (*s_diag_fn)(const struct inet_diag_msg *m, void *arg);

/*  Send req (a lookup, or a dump with dump true) and call fn for each
    socket in the answer until it returns non-zero. Returns fn's non-zero
    value, 0 when the answer ended, or -errno (-ENOENT: no such socket). */
static int
s_diag(const struct inet_diag_req_v2 *req, bool dump, s_diag_fn fn, void *arg)
{
  int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0)
    return -errno;
  struct timeval tv = {.tv_sec = 1};    /* the kernel answers at once; never wait long */
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req_v2 r;
  } msg = {.nlh = {.nlmsg_len = sizeof msg, .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                   .nlmsg_flags = (uint16_t) (NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0))},
           .r = *req};
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  int rc = 0;
  if (sendto(fd, &msg, sizeof msg, 0, (struct sockaddr *) &kernel, sizeof kernel) < 0)
    rc = -errno;
  long buf[2048];   /* aligned for nlmsghdr */
  bool more = rc == 0;
  while (more) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      rc = errno == EINTR ? 0 : -errno;
      more = errno == EINTR;
      continue;
    }
    size_t left = (size_t) n;
    more = dump;
    for (struct nlmsghdr *h = (struct nlmsghdr *) buf; NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) {
        more = false;
        break;
      }
      if (h->nlmsg_type == NLMSG_ERROR) {
        const struct nlmsgerr *e = NLMSG_DATA(h);
        rc = e->error < 0 ? e->error : -EPROTO;
        more = false;
        break;
      }
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY
          || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
        continue;
      rc = fn(NLMSG_DATA(h), arg);
      if (rc) {
        more = false;
        break;
      }
    }
    if (!dump)
      more = false;
  }
  close(fd);
  return rc;
}

typedef struct {
  struct inet_diag_sockid want;
  unsigned uid;
} s_lookup_t;

/*  The exact socket asked for, a full connected one (never a listener the
    lookup may fall back to, nor a time-wait or half-open entry, which have
    no owner): 1 with its owner, else 0. A socket its process has closed
    (orphaned, FIN-WAIT) keeps its owner: the gateway closes right after
    sending, often before the launcher accepts. */
static int
s_on_peer(const struct inet_diag_msg *m, void *arg)
{
  s_lookup_t *l = arg;
  bool ownerless = m->idiag_state == TCP_LISTEN || m->idiag_state == TCP_TIME_WAIT
                   || m->idiag_state == TCP_SYN_RECV || m->idiag_state == TCP_CLOSE;
  if (ownerless || m->id.idiag_sport != l->want.idiag_sport
      || m->id.idiag_dport != l->want.idiag_dport || m->id.idiag_src[0] != l->want.idiag_src[0]
      || m->id.idiag_dst[0] != l->want.idiag_dst[0])
    return 0;
  l->uid = m->idiag_uid;
  return 1;
}

int
kg_eg_peer_of(int fd, kg_eg_peer_t *peer)
{
  struct sockaddr_in mine, theirs;
  socklen_t a = sizeof mine, b = sizeof theirs;
  *peer = (kg_eg_peer_t){0};
  if (getsockname(fd, (struct sockaddr *) &mine, &a) != 0
      || getpeername(fd, (struct sockaddr *) &theirs, &b) != 0)
    return -errno;
  if (mine.sin_family != AF_INET || theirs.sin_family != AF_INET)
    return -EAFNOSUPPORT;
  /* The peer's socket, if it is on this host: its local end is their
     address, its remote end ours. Finding it proves the peer local. */
  struct inet_diag_req_v2 req = {
    .sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u,
    .id = {.idiag_sport = theirs.sin_port, .idiag_dport = mine.sin_port,
           .idiag_src = {theirs.sin_addr.s_addr}, .idiag_dst = {mine.sin_addr.s_addr},
           .idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}};
  s_lookup_t l = {.want = req.id};
  if (s_diag(&req, false, s_on_peer, &l) == 1) {
    peer->local = peer->uid_known = true;
    peer->uid = l.uid;
    return 0;
  }
  /* Not found: a network peer, unless it comes from one of this host's
     addresses (its socket gone, e.g. reset before the lookup: no owner
     known, never trusted). */
  peer->local = kg_eg_addr_is_local(&theirs.sin_addr);
  return 0;
}

static int
s_on_listener(const struct inet_diag_msg *m, void *arg)
{
  s_lookup_t *l = arg;
  if (m->id.idiag_sport != l->want.idiag_sport
      || (m->id.idiag_src[0] != l->want.idiag_src[0] && m->id.idiag_src[0] != 0))
    return 0;
  l->uid = m->idiag_uid;
  return 1;
}

int
kg_eg_listener_uid(const struct sockaddr_in *addr, unsigned *uid)
{
  struct inet_diag_req_v2 req = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP,
                                 .idiag_states = 1u << TCP_LISTEN};
  s_lookup_t l = {.want = {.idiag_sport = addr->sin_port, .idiag_src = {addr->sin_addr.s_addr}}};
  int rc = s_diag(&req, true, s_on_listener, &l);
  if (rc == 1) {
    *uid = l.uid;
    return 0;
  }
  return rc < 0 ? rc : KG_ENOTFOUND;
}
