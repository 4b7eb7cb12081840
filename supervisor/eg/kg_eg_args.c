/*  kg_eg_args: the launcher's arguments and the gateway's requests. */
#include "kg_eg_args.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_opt.h"

static bool
s_parse_int(const char *s, size_t len, long lo, long hi, long *out)
{
  if (len == 0 || len > 10)
    return false;
  char buf[16];
  for (size_t i = 0; i < len; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  memcpy(buf, s, len);
  buf[len] = '\0';
  char *end = NULL;
  errno = 0;
  long v = strtol(buf, &end, 10);
  if (errno || *end || end == buf || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

int
kg_eg_port_range_parse(const char *text, int *lo, int *hi, char *err, size_t errlen)
{
  const char *dots = strstr(text, "..");
  long a, b;
  if (!dots || !s_parse_int(text, (size_t) (dots - text), 0, 65535, &a)
      || !s_parse_int(dots + 2, strlen(dots + 2), 0, 65535, &b)) {
    kg_errf(err, errlen, "--port-range: expected LOWER..UPPER (ports 0..65535), got '%s'", text);
    return KG_EUSAGE;
  }
  if (a > b || (b != 0 && b - a + 1 < 6)) {
    kg_errf(err, errlen, "--port-range %s: the range must hold the 6 ports a kernel needs "
                         "(or be 0..0 for any port)", text);
    return KG_EUSAGE;
  }
  *lo = (int) a;
  *hi = (int) b;
  return 0;
}

int
kg_eg_address_parse(const char *text, char *host, size_t hostlen, int *port,
                    char *err, size_t errlen)
{
  const char *colon = strrchr(text, ':');
  long p;
  if (!colon || colon == text || (size_t) (colon - text) >= hostlen
      || !s_parse_int(colon + 1, strlen(colon + 1), 1, 65535, &p)) {
    kg_errf(err, errlen, "--response-address: expected HOST:PORT, got '%s'", text);
    return KG_EUSAGE;
  }
  memcpy(host, text, (size_t) (colon - text));
  host[colon - text] = '\0';
  *port = (int) p;
  return 0;
}

enum { O_KERNEL_ID = 1, O_RESPONSE, O_PUBKEY, O_RANGE, O_IP, O_KGUARD, O_CKPT, O_TRANSPORT,
       O_SPARK, O_CLUSTER, O_CLASS, O_COMM_IFACE, O_RSA_1024 };

static const kg_opt_t s_opts[] = {
  {O_KERNEL_ID, 0, "kernel-id", "ID", "the kernel's id, given by the gateway (required)", 0},
  {O_RESPONSE, 0, "response-address", "HOST:PORT",
   "where the gateway waits for the connection info (required)", 0},
  {O_PUBKEY, 0, "public-key", "KEY",
   "the gateway's RSA public key (base64 DER) the report is encrypted with (required)", 0},
  {O_RANGE, 0, "port-range", "LOWER..UPPER",
   "the ports the kernel may bind: six must fit (default 0..0: any)", 0},
  {O_IP, 0, "ip", "ADDR", "IPv4 address the kernel binds (default 0.0.0.0)", 0},
  {O_CKPT, 0, "checkpoints", "DIR",
   "checkpoint directory of the guarded kernel (put it on a volume that outlives the pod; "
   "default ./kguard-checkpoints)", 0},
  {O_COMM_IFACE, 0, "comm-interface", "auto|any|NAME",
   "where the communication port listens: auto (default) on the interface that reaches "
   "--response-address, or, when the gateway runs on this host, on every interface for "
   "this host's connections only; any: every interface; NAME: that interface (lo for the "
   "gateway's ssh tunnels). A connection from this host is served only if it belongs to "
   "the kernel's user, root or the gateway's user", 0},
  {O_RSA_1024, 0, "allow-rsa-1024", NULL,
   "accept a 1024-bit --public-key (Enterprise Gateway and gateway_provisioners make "
   "1024-bit keys; without this, keys under 2048 bits are refused)", 0},
  {O_TRANSPORT, 0, "transport-encryption", "MODE",
   "the gateway's transport setting: only 'required' is refused (CurveZMQ is not "
   "supported)", KG_OPT_HIDDEN},
  {O_KGUARD, 0, "kguard", "PATH", "internal: the kguard program, given by `kguard eg-launch`",
   KG_OPT_HIDDEN},
  {O_SPARK, 0, "spark-context-initialization-mode", "MODE", "ignored", KG_OPT_HIDDEN},
  {O_CLUSTER, 0, "cluster-type", "TYPE", "ignored", KG_OPT_HIDDEN},
  {O_CLASS, 0, "kernel-class-name", "NAME", "ignored", KG_OPT_HIDDEN},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"any", "the guarded kernel's own (0 after a shutdown the gateway asked for, 128+N when "
          "signal N ended it)"},
  {"100", "usage error (bad arguments, a weak or invalid key)"},
  {"111", "ports, report or start failed"},
  {NULL, NULL},
};

const kg_cmd_t kg_eg_cmd = {
  .name = "eg-launch",
  .summary = "kernel launcher for Jupyter Enterprise Gateway (cluster kernels)",
  .usage = "--kernel-id ID --response-address HOST:PORT --public-key KEY [options]\n"
           "[options] -- KERNEL ARGV...",
  .about = "Kernel launcher for Jupyter Enterprise Gateway and gateway_provisioners: binds the "
           "five kernel ports and the communication port inside --port-range, starts `kguard "
           "kernel` guarding KERNEL ARGV (default: python3 -m ipykernel_launcher -f "
           "{connection_file}; python3 is $KGUARD_PYTHON when set), and reports the "
           "connection info to the gateway encrypted with its --public-key. On the "
           "communication port, {\"signum\": N} signals the guarded kernel for N = 0 (the "
           "gateway's poll), 2 (interrupt), 9 and 15; other signals are refused. "
           "{\"shutdown\": 1} stops nothing by itself: the kernel ends on the shutdown_request "
           "the gateway sends it first. The --RemoteProcessProxy.NAME spellings are accepted; "
           "--spark-context-initialization-mode, --cluster-type and --kernel-class-name are "
           "ignored.",
  .opts = s_opts,
  .exits = s_exits,
};

#define S_PROXY "--RemoteProcessProxy."

/*  argv with each --RemoteProcessProxy.NAME spelled --NAME (a new array;
    the changed strings are new too), or NULL (out of memory). */
static char **
s_copy_args(int argc, char **argv)
{
  char **copy = calloc((size_t) argc + 1, sizeof *copy);
  for (int i = 0; copy && i < argc; i++) {
    copy[i] = argv[i];
    if (strncmp(argv[i], S_PROXY, strlen(S_PROXY)) == 0
        && asprintf(&copy[i], "--%s", argv[i] + strlen(S_PROXY)) < 0)
      copy[i] = argv[i];   /* out of memory: the parser says it is unknown */
  }
  return copy;
}

static void
s_free_args(char **copy, int argc, char **argv)
{
  for (int i = 0; copy && i < argc; i++)
    if (copy[i] != argv[i])
      free(copy[i]);
  free(copy);
}

/*  One option with its value (pointing into argv) into o. 0, or KG_EUSAGE
    with err saying what is wrong. */
static int
s_option(kg_eg_opts_t *o, int id, const char *value, const char **ignored, char *err,
         size_t errlen)
{
  switch (id) {
  case O_KERNEL_ID: o->kernel_id = value; break;
  case O_RESPONSE: o->response_address = value; break;
  case O_PUBKEY: o->public_key = value; break;
  case O_IP: o->ip = value; break;
  case O_KGUARD: o->kguard = value; break;
  case O_CKPT: o->checkpoints = value; break;
  case O_RSA_1024: o->allow_rsa_1024 = true; break;
  case O_COMM_IFACE:
    o->comm_interface = value;
    if (!*value || strlen(value) >= 16 || strchr(value, '/')) {
      kg_errf(err, errlen, "--comm-interface: expected auto, any or an interface name "
                           "(like eth0), got '%s'", value);
      return KG_EUSAGE;
    }
    break;
  case O_RANGE: return kg_eg_port_range_parse(value, &o->port_lo, &o->port_hi, err, errlen);
  case O_SPARK:
  case O_CLUSTER:
  case O_CLASS:
    *ignored = "Spark/Dask options of Enterprise Gateway's launchers are ignored: kguard "
               "runs the kernel command it is given";
    break;
  case O_TRANSPORT:
    if (strcmp(value, "required") == 0) {
      kg_errf(err, errlen, "--transport-encryption required: kguard eg-launch does not "
                           "support CurveZMQ transport encryption");
      return KG_EUSAGE;
    }
    break;
  }
  return 0;
}

/*  What the gateway must pass is there and well formed. 0, or KG_EUSAGE
    with err saying what is missing. */
static int
s_check(const kg_eg_opts_t *o, char *err, size_t errlen)
{
  const char *missing = !o->kernel_id ? "--kernel-id"
                        : !o->response_address ? "--response-address"
                        : !o->public_key ? "--public-key" : NULL;
  if (missing) {
    kg_errf(err, errlen, "%s is required (Enterprise Gateway passes it to the launcher)", missing);
    return KG_EUSAGE;
  }
  if (!*o->kernel_id || !*o->public_key || !*o->ip) {
    kg_errf(err, errlen, "--kernel-id, --public-key and --ip must not be empty");
    return KG_EUSAGE;
  }
  char host[256];
  int port;
  return kg_eg_address_parse(o->response_address, host, sizeof host, &port, err, errlen);
}

int
kg_eg_args_parse(int argc, char **argv, kg_eg_opts_t *o, const char **ignored,
                 char *err, size_t errlen)
{
  memset(o, 0, sizeof *o);
  o->ip = "0.0.0.0";
  o->comm_interface = "auto";
  *ignored = NULL;
  /*  The parser reads a copy where --RemoteProcessProxy.NAME is --NAME; the
      values it finds are mapped back into argv (same index, shifted by what
      was cut), so that opts points into argv as promised. */
  char **copy = s_copy_args(argc, argv);
  size_t cut = strlen(S_PROXY) - 2;   /* "RemoteProcessProxy." */
  char *said = NULL, *help = NULL;
  size_t said_len = 0, help_len = 0;
  FILE *errf = open_memstream(&said, &said_len), *outf = open_memstream(&help, &help_len);
  int rc = copy && errf && outf ? 0 : KG_ENOMEM;
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_eg_cmd, argc, copy ? copy : argv);
  p.err = errf;
  p.out = outf;
  int id;
  while (rc == 0 && !o->inner_argv && (id = kg_opt_next(&p)) != KG_OPT_END) {
    int k = p.next - 1;   /* the argument holding the value */
    const char *value = p.value ? argv[k] + (p.value - copy[k]) + (copy[k] != argv[k] ? cut : 0)
                                : NULL;
    switch (id) {
    case KG_OPT_EXIT:
      if (p.code == 0 && strcmp(p.written, "--version") == 0)
        o->version = true;
      else if (p.code == 0)
        o->help = true;
      rc = p.code ? KG_EUSAGE : 0;
      goto done;
    case KG_OPT_OPERAND:
      if (!p.operands_only) {
        kg_errf(err, errlen, "unexpected argument '%s' (the kernel's command goes after '--')",
                p.value);
        rc = KG_EUSAGE;
      } else
        o->inner_argv = argv + k;
      break;
    default: rc = s_option(o, id, value, ignored, err, errlen); break;
    }
  }
  if (rc == 0 && !o->inner_argv && p.operands_only) {
    kg_errf(err, errlen, "'--' must be followed by the kernel's command line");
    rc = KG_EUSAGE;
  }
done:
  if (errf)
    fclose(errf);
  if (outf)
    fclose(outf);
  if (rc == KG_EUSAGE && said && *said) {
    /* the parser's own line, without its "kguard eg-launch: " (the caller's) */
    const char *msg = strncmp(said, "kguard eg-launch: ", 18) == 0 ? said + 18 : said;
    kg_errf(err, errlen, "%.*s", (int) strcspn(msg, "\n"), msg);
  } else if (rc == KG_ENOMEM)
    kg_errf(err, errlen, "out of memory");
  free(said);
  free(help);
  s_free_args(copy, argc, argv);
  if (rc)
    return rc;
  return o->help || o->version ? 0 : s_check(o, err, errlen);
}

int
kg_eg_request_parse(const char *data, size_t len, kg_eg_request_t *req, char *err, size_t errlen)
{
  req->signum = -1;
  req->shutdown = false;
  cJSON *j = cJSON_ParseWithLength(data, len);
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    kg_errf(err, errlen, "request is not a JSON object");
    return KG_EBADJSON;
  }
  int rc = 0;
  const cJSON *sig = cJSON_GetObjectItemCaseSensitive(j, "signum");
  const cJSON *down = cJSON_GetObjectItemCaseSensitive(j, "shutdown");
  if (sig && !cJSON_IsNull(sig)) {
    double v = cJSON_IsNumber(sig) ? sig->valuedouble : -1;
    if (v != 0 && v != 2 && v != 9 && v != 15) {
      if (cJSON_IsNumber(sig) && v == (double) (int) v)
        kg_errf(err, errlen, "signum %d refused: the gateway sends only 0 (poll), 2 "
                             "(interrupt), 9 (kill) and 15 (terminate)", (int) v);
      else
        kg_errf(err, errlen, "signum: expected one of 0, 2, 9, 15");
      rc = KG_EUSAGE;
    } else
      req->signum = (int) v;
  }
  if (rc == 0 && down && !cJSON_IsNull(down)) {
    if (cJSON_IsBool(down))
      req->shutdown = cJSON_IsTrue(down);
    else if (cJSON_IsNumber(down))
      req->shutdown = down->valuedouble != 0;
    else {
      kg_errf(err, errlen, "shutdown: expected a number or a boolean");
      rc = KG_EUSAGE;
    }
  }
  cJSON_Delete(j);
  return rc;
}

bool
kg_eg_peer_allowed(const kg_eg_peer_t *peer, const kg_eg_trust_t *trust, char *why,
                   size_t whylen)
{
  if (!peer->local) {
    if (trust->local_only)
      kg_errf(why, whylen, "a connection from another host (the gateway runs on this one)");
    return !trust->local_only;
  }
  if (!peer->uid_known) {
    kg_errf(why, whylen, "a local connection whose owner cannot be found");
    return false;
  }
  if (peer->uid == 0 || peer->uid == trust->self_uid
      || (trust->gateway_uid_known && peer->uid == trust->gateway_uid))
    return true;
  kg_errf(why, whylen, "a local connection of uid %u (only the kernel's user, root%s may "
                       "send requests)", peer->uid,
          trust->gateway_uid_known ? " and the gateway's user" : "");
  return false;
}
