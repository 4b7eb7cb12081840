/*  kg_eg_args: what `kguard eg-launch` is told by Jupyter Enterprise Gateway
    or gateway_provisioners (the kernel-launcher contract), and what the
    gateway later sends on the communication port. Pure parsing: no sockets,
    no processes; every rejection names the argument and the problem. */
#ifndef KG_EG_ARGS_H
#define KG_EG_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "kg_opt.h"

/*  The command's option table (its --help, man page and reference). */
extern const kg_cmd_t kg_eg_cmd;

typedef struct {
  const char *kernel_id;        /*  --kernel-id (required)                    */
  const char *response_address; /*  --response-address HOST:PORT (required)   */
  const char *public_key;       /*  --public-key: base64 DER of the RSA key   */
  int port_lo, port_hi;         /*  --port-range LO..HI; 0..0 = any port      */
  const char *ip;               /*  --ip: address the kernel binds (0.0.0.0)  */
  const char *comm_interface;   /*  --comm-interface: "auto" (default: the
                                    interface that reaches the gateway),
                                    "any", or an interface name             */
  bool allow_rsa_1024;          /*  --allow-rsa-1024: accept the 1024-bit
                                    keys Enterprise Gateway generates       */
  const char *kguard;           /*  --kguard PATH, given by `kguard eg-launch` */
  const char *checkpoints;      /*  --checkpoints DIR for kguard kernel, or NULL */
  char **inner_argv;            /*  after "--"; NULL = ipykernel's default    */
  bool help;                    /*  --help                                    */
  bool version;                 /*  --version                                 */
} kg_eg_opts_t;

/*  Parse argv (argv[0] is the command name, not parsed) into opts; its
    strings point into argv. Accepts "--name value" and "--name=value", and
    the older "--RemoteProcessProxy.name" spellings. Ignores what only
    concerns Spark/Dask launchers (--spark-context-initialization-mode,
    --cluster-type, --kernel-class-name) with a notice in *ignored (a static
    description, NULL if nothing was ignored). Rejects --transport-encryption
    required (CURVE is not supported) and anything unknown, by kguard's one
    grammar (kg_opt.h; nothing is printed: --help and --version set
    opts->help, opts->version). Returns 0, or KG_EUSAGE with the reason in
    err. */
int kg_eg_args_parse(int argc, char **argv, kg_eg_opts_t *opts, const char **ignored,
                     char *err, size_t errlen);

/*  "LO..HI" with 0 <= LO <= HI <= 65535, and HI - LO + 1 >= 6 unless both
    are 0 (six ports must fit). Returns 0 or KG_EUSAGE with err. */
int kg_eg_port_range_parse(const char *text, int *lo, int *hi, char *err, size_t errlen);

/*  "HOST:PORT" (the last colon separates; PORT in 1..65535, HOST not empty)
    into host (hostlen bytes). Returns 0 or KG_EUSAGE with err. */
int kg_eg_address_parse(const char *text, char *host, size_t hostlen, int *port,
                        char *err, size_t errlen);

/*  One request on the communication port: {"signum": N} and/or
    {"shutdown": 1}. The gateway sends only signals 0 (its liveness poll),
    2 (interrupt), 9 (kill) and 15 (terminate): no other is accepted. */
typedef struct {
  int signum;                   /*  -1 when absent; 0 is the gateway's poll   */
  bool shutdown;
} kg_eg_request_t;

/*  Parse a request of len bytes (not NUL-terminated). Returns 0, or
    KG_EBADJSON for something that is not (yet) a whole JSON object,
    KG_EUSAGE for a signum other than 0, 2, 9, 15 or a non-numeric field,
    with err. */
int kg_eg_request_parse(const char *data, size_t len, kg_eg_request_t *req,
                        char *err, size_t errlen);

/*  Who connected to the communication port, as far as the system can tell
    (kg_eg_peer.h finds it out). */
typedef struct {
  bool local;                   /*  from an address of this host            */
  bool uid_known;               /*  local, and the owner of its socket found */
  unsigned uid;                 /*  that owner                              */
} kg_eg_peer_t;

/*  Whose requests are obeyed: the kernel's own user and root (who can
    signal the kernel anyway), and the gateway's user when the gateway runs
    on this host (gateway_uid_known); network peers unless local_only (the
    gateway is on this host: every request it sends is local). */
typedef struct {
  unsigned self_uid;
  bool gateway_uid_known;
  unsigned gateway_uid;
  bool local_only;
} kg_eg_trust_t;

/*  May this peer's requests be obeyed? A network peer may unless
    local_only (the interface the port is bound to decides which network);
    a local one only if its socket's owner is trusted, never when the owner
    is unknown. On false, why names the reason (for the log). */
bool kg_eg_peer_allowed(const kg_eg_peer_t *peer, const kg_eg_trust_t *trust, char *why,
                        size_t whylen);

#endif
