/*  kg_eg_args: the launcher's arguments and the gateway's requests. */
#include "kg_eg_args.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

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

/*  Options that take a value, and what each does. */
enum { O_KERNEL_ID, O_RESPONSE, O_PUBKEY, O_RANGE, O_IP, O_KGUARD, O_CKPT, O_IGNORED,
       O_TRANSPORT, O_COMM_IFACE, O_RSA_1024 };
static const struct {
  const char *name;
  int what;
} s_options[] = {
  {"kernel-id", O_KERNEL_ID},
  {"response-address", O_RESPONSE},
  {"public-key", O_PUBKEY},
  {"port-range", O_RANGE},
  {"ip", O_IP},
  {"kguard", O_KGUARD},
  {"checkpoints", O_CKPT},
  {"spark-context-initialization-mode", O_IGNORED},
  {"cluster-type", O_IGNORED},
  {"kernel-class-name", O_IGNORED},
  {"transport-encryption", O_TRANSPORT},
  {"comm-interface", O_COMM_IFACE},
  {"allow-rsa-1024", O_RSA_1024},     /* a flag: takes no value */
};

int
kg_eg_args_parse(int argc, char **argv, kg_eg_opts_t *o, const char **ignored,
                 char *err, size_t errlen)
{
  memset(o, 0, sizeof *o);
  o->ip = "0.0.0.0";
  o->comm_interface = "auto";
  *ignored = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      if (i + 1 >= argc) {
        kg_errf(err, errlen, "'--' must be followed by the kernel's command line");
        return KG_EUSAGE;
      }
      o->inner_argv = argv + i + 1;
      break;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      o->help = true;
      continue;
    }
    if (strncmp(a, "--", 2) != 0) {
      kg_errf(err, errlen, "unexpected argument '%s' (the kernel's command goes after '--')", a);
      return KG_EUSAGE;
    }
    const char *name = a + 2;
    if (strncmp(name, "RemoteProcessProxy.", 19) == 0)
      name += 19;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t) (eq - name) : strlen(name);
    int what = -1;
    for (size_t k = 0; k < sizeof s_options / sizeof s_options[0]; k++)
      if (strlen(s_options[k].name) == nlen && strncmp(s_options[k].name, name, nlen) == 0)
        what = s_options[k].what;
    if (what < 0) {
      kg_errf(err, errlen, "unknown option '%s' (see kguard eg-launch --help)", a);
      return KG_EUSAGE;
    }
    if (what == O_RSA_1024) {
      if (eq) {
        kg_errf(err, errlen, "option '--allow-rsa-1024' takes no value");
        return KG_EUSAGE;
      }
      o->allow_rsa_1024 = true;
      continue;
    }
    const char *value = eq ? eq + 1 : NULL;
    if (!value) {
      if (i + 1 >= argc) {
        kg_errf(err, errlen, "option '%s' needs a value", a);
        return KG_EUSAGE;
      }
      value = argv[++i];
    }
    int rc = 0;
    switch (what) {
    case O_KERNEL_ID: o->kernel_id = value; break;
    case O_RESPONSE: o->response_address = value; break;
    case O_PUBKEY: o->public_key = value; break;
    case O_IP: o->ip = value; break;
    case O_KGUARD: o->kguard = value; break;
    case O_CKPT: o->checkpoints = value; break;
    case O_COMM_IFACE:
      if (!*value || strlen(value) >= 16 || strchr(value, '/')) {
        kg_errf(err, errlen, "--comm-interface: expected auto, any or an interface name "
                             "(like eth0), got '%s'", value);
        rc = KG_EUSAGE;
      }
      o->comm_interface = value;
      break;
    case O_RANGE: rc = kg_eg_port_range_parse(value, &o->port_lo, &o->port_hi, err, errlen); break;
    case O_IGNORED:
      *ignored = "Spark/Dask options of Enterprise Gateway's launchers are ignored: kguard "
                 "runs the kernel command it is given";
      break;
    case O_TRANSPORT:
      if (strcmp(value, "required") == 0) {
        kg_errf(err, errlen, "--transport-encryption required: kguard eg-launch does not "
                             "support CurveZMQ transport encryption");
        rc = KG_EUSAGE;
      }
      break;
    }
    if (rc)
      return rc;
  }
  if (o->help)
    return 0;
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
