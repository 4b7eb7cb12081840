/*  kg_eg_comm: the launcher's communication port, where the gateway sends
    {"signum": N} and {"shutdown": 1}.

    What it promises (docs/SECURITY.md, "Enterprise Gateway"):
    - the port is bound to one interface (kg_eg_comm_bind): the one that
      reaches the gateway, unless the operator names another or "any";
    - a local connection is served only if its socket belongs to the
      kernel's user, root or the gateway's user (kg_eg_peer_allowed); the
      others are closed at once, unread;
    - only the signals the gateway sends (0, 2, 9, 15) are obeyed;
    - connections are served concurrently, at most KG_EG_COMM_MAX at a
      time, each for at most KG_EG_COMM_TIMEOUT_MS (kg_eg_conns): idle
      connections cannot hold the gateway's requests back;
    - refusals are logged at a bounded rate (kg_ratelog).

    Requests it obeys are handed to the owner's callback; the object never
    signals anything itself. Event-driven: the owner polls kg_eg_comm_fds
    (the listening socket first) and calls accept / read / tick.
    Ownership: self owns the listening socket and every accepted one.
*/
#ifndef KG_EG_COMM_H
#define KG_EG_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "kg_eg_args.h"

#define KG_EG_COMM_MAX 16
#define KG_EG_COMM_TIMEOUT_MS 2000   /* the gateway sends right after connecting */

/*  A listening TCP socket on port (0: any) of every IPv4 address, bound to
    the interface iface (NULL: every interface) with SO_BINDTODEVICE.
    Returns the fd, or -errno (-EADDRINUSE: taken; -ENODEV: no such
    interface; -EPERM: the kernel refuses SO_BINDTODEVICE to this user). */
int kg_eg_comm_bind(const char *iface, int port);

typedef struct kg_eg_comm_t kg_eg_comm_t;

/*  Called for each request obeyed. */
typedef void(kg_eg_comm_fn)(void *arg, const kg_eg_request_t *req);

/*  Serve listen_fd (taken: closed by destroy) for the users trust names,
    calling fn(arg, request) for each request obeyed. NULL on allocation
    failure (listen_fd is then closed). */
kg_eg_comm_t *kg_eg_comm_new(int listen_fd, const kg_eg_trust_t *trust, kg_eg_comm_fn *fn,
                             void *arg);

/*  Close every socket, free self and set *self_p to NULL. Safe on NULL. */
void kg_eg_comm_destroy(kg_eg_comm_t **self_p);

/*  The fds to poll for input: the listening socket first, then the open
    connections. Returns how many were written (at most n). */
size_t kg_eg_comm_fds(const kg_eg_comm_t *self, int *out, size_t n);

/*  The listening socket is readable: accept what is waiting. */
void kg_eg_comm_accept(kg_eg_comm_t *self, int64_t now);

/*  Connection fd is readable (or closed, or in error). */
void kg_eg_comm_read(kg_eg_comm_t *self, int fd, int64_t now);

/*  Close connections past their deadline and log what the rate limit held
    back. Call at kg_eg_comm_deadline; at exit with force true. */
void kg_eg_comm_tick(kg_eg_comm_t *self, int64_t now, bool force);

/*  When kg_eg_comm_tick is next due, or 0 if nothing is pending. */
int64_t kg_eg_comm_deadline(const kg_eg_comm_t *self);

#endif
