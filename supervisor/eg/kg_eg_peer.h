/*  kg_eg_peer: what the system can tell about the gateway and about who
    connects to the communication port.

    Enterprise Gateway's requests on the communication port carry no
    credential (plain {"signum": N} JSON, no reply read), so the launcher
    judges a request by where it comes from, with what the kernel vouches
    for: whether the gateway is on this host and, if not, which interface
    reaches it (the port is bound to that one only: other networks and this
    host's loopback cannot connect), whether a connection comes from this
    host, and if so which user owns the connecting socket
    (NETLINK_SOCK_DIAG, as `ss -e` shows it). IPv4 only: the gateway
    connects to the port over IPv4.

    What SO_BINDTODEVICE lets through, measured (test_eg_peer): a socket
    bound to eth0 accepts connections arriving on eth0 and this host's own
    connections to eth0's address, never to 127.0.0.1; one bound to lo
    accepts this host's connections to 127.0.0.1 only. So a gateway on this
    host, which may reach the port at 127.0.0.1 or at the host's address
    (whatever its assigned_ip is), gets every interface with network peers
    refused (kg_eg_trust_t.local_only).
*/
#ifndef KG_EG_PEER_H
#define KG_EG_PEER_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

#include "kg_eg_args.h"

/*  The gateway's response address resolved (IPv4), whether it is on this
    host, and if not, the interface this host reaches it through (iface,
    IFNAMSIZ bytes; "" for a gateway on this host). Returns 0, KG_ENOTFOUND
    (host unknown or not IPv4) or -errno (no route), with err. */
int kg_eg_route(const char *host, int port, struct sockaddr_in *gateway, char *iface,
                bool *gateway_local, char *err, size_t errlen);

/*  True if addr is a loopback address or one of this host's addresses
    (also when the addresses cannot be listed: a caller that trusts
    non-local peers more must not be fooled by an error). */
bool kg_eg_addr_is_local(const struct in_addr *addr);

/*  Who is at the other end of the accepted TCP connection fd: local (its
    socket found on this host, or it comes from one of this host's
    addresses) or not, and for a local peer the owner of its socket
    (uid_known false when the socket is gone, e.g. reset before it was
    looked up). Returns 0 or -errno when fd's addresses cannot be read. */
int kg_eg_peer_of(int fd, kg_eg_peer_t *peer);

/*  The owner of the socket listening on addr (port and address; a socket
    listening on 0.0.0.0 with that port matches too). Returns 0 with *uid,
    KG_ENOTFOUND, or -errno. */
int kg_eg_listener_uid(const struct sockaddr_in *addr, unsigned *uid);

#endif
