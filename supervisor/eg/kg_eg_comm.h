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
    signals anything itself. It registers its own sources with the owner's
    kg_loop: the listening socket, one reader per connection slot (the
    slot's current fd, kg_loop_fd_of), and a timer for the connections'
    deadlines and the rate limit's summaries (kg_loop_timer_of).
    Ownership: self owns the listening socket, every accepted one and its
    registrations; the loop stays the caller's and must outlive self.
*/
#ifndef KG_EG_COMM_H
#define KG_EG_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "kg_eg_args.h"
#include "kg_loop.h"

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

/*  Serve listen_fd (taken: closed by destroy) on loop for the users trust
    names, calling fn(arg, request) for each request obeyed. NULL on
    allocation failure (listen_fd is then closed). */
kg_eg_comm_t *kg_eg_comm_new(kg_loop_t *loop, int listen_fd, const kg_eg_trust_t *trust,
                             kg_eg_comm_fn *fn, void *arg);

/*  Remove its sources from the loop, close every socket, log what the
    rate limit still held back, free self and set *self_p to NULL. Safe on
    NULL. */
void kg_eg_comm_destroy(kg_eg_comm_t **self_p);

#endif
