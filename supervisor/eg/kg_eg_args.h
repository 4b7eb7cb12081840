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
    {"shutdown": 1}. */
typedef struct {
  int signum;                   /*  -1 when absent; 0 is the gateway's poll   */
  bool shutdown;
} kg_eg_request_t;

/*  Parse a request of len bytes (not NUL-terminated). Returns 0, or
    KG_EBADJSON for something that is not a JSON object, KG_EUSAGE for a
    signum outside 0..64 or a non-numeric field, with err. */
int kg_eg_request_parse(const char *data, size_t len, kg_eg_request_t *req,
                        char *err, size_t errlen);

#endif
