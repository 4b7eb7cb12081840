/*  Tables for kg_eg_args: the launcher's arguments and the gateway's
    requests (no sockets, no processes). */
#include "kg_eg_args.h"
#include "kg_eg_conns.h"
#include "kg_error.h"
#include "kg_test.h"

KG_TEST(port_range)
{
  static const struct {
    const char *text;
    int rc, lo, hi;
  } t[] = {
    {"0..0", 0, 0, 0},         {"40000..41000", 0, 40000, 41000}, {"10..15", 0, 10, 15},
    {"10..14", KG_EUSAGE, 0, 0},     {"20..10", KG_EUSAGE, 0, 0},             {"1..70000", KG_EUSAGE, 0, 0},
    {"..", KG_EUSAGE, 0, 0},         {"5", KG_EUSAGE, 0, 0},                  {"-1..10", KG_EUSAGE, 0, 0},
    {"1.. 10", KG_EUSAGE, 0, 0},     {"a..b", KG_EUSAGE, 0, 0},               {"", KG_EUSAGE, 0, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    int lo = -1, hi = -1;
    char err[200] = "";
    KG_CHECK_INT(kg_eg_port_range_parse(t[i].text, &lo, &hi, err, sizeof err), t[i].rc);
    if (t[i].rc == 0) {
      KG_CHECK_INT(lo, t[i].lo);
      KG_CHECK_INT(hi, t[i].hi);
    } else
      KG_CHECK(strstr(err, "--port-range") != NULL);
  }
}

KG_TEST(address)
{
  char host[64];
  int port = 0;
  char err[200];
  KG_CHECK_INT(kg_eg_address_parse("10.0.0.5:8877", host, sizeof host, &port, err, sizeof err), 0);
  KG_CHECK_STR(host, "10.0.0.5");
  KG_CHECK_INT(port, 8877);
  KG_CHECK_INT(kg_eg_address_parse("gw.example:1", host, sizeof host, &port, err, sizeof err), 0);
  const char *bad[] = {"10.0.0.5", ":8877", "h:0", "h:65536", "h:", "h:12x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    KG_CHECK_INT(kg_eg_address_parse(bad[i], host, sizeof host, &port, err, sizeof err),
                 KG_EUSAGE);
}

KG_TEST(args)
{
  char *argv[] = {"eg-launch", "--RemoteProcessProxy.kernel-id", "k1",
                  "--response-address=1.2.3.4:99", "--public-key", "KEY",
                  "--port-range", "100..200", "--spark-context-initialization-mode", "none",
                  "--checkpoints=/vol/ck", "--", "mykernel", "{connection_file}", NULL};
  kg_eg_opts_t o;
  const char *ignored = NULL;
  char err[200];
  KG_CHECK_INT(kg_eg_args_parse(14, argv, &o, &ignored, err, sizeof err), 0);
  KG_CHECK_STR(o.checkpoints, "/vol/ck");
  KG_CHECK_STR(o.kernel_id, "k1");
  KG_CHECK_STR(o.response_address, "1.2.3.4:99");
  KG_CHECK_STR(o.public_key, "KEY");
  KG_CHECK_STR(o.ip, "0.0.0.0");
  KG_CHECK_STR(o.comm_interface, "auto");
  KG_CHECK(!o.allow_rsa_1024);
  KG_CHECK_INT(o.port_lo, 100);
  KG_CHECK_INT(o.port_hi, 200);
  KG_CHECK(ignored != NULL);
  KG_CHECK(o.inner_argv == argv + 12);

  char *missing[] = {"eg-launch", "--kernel-id", "k1", "--public-key", "K", NULL};
  KG_CHECK_INT(kg_eg_args_parse(5, missing, &o, &ignored, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "--response-address") != NULL);
  char *noval[] = {"eg-launch", "--kernel-id", NULL};
  KG_CHECK_INT(kg_eg_args_parse(2, noval, &o, &ignored, err, sizeof err), KG_EUSAGE);
  char *curve[] = {"eg-launch", "--transport-encryption", "required", NULL};
  KG_CHECK_INT(kg_eg_args_parse(3, curve, &o, &ignored, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "CurveZMQ") != NULL);
  char *dash[] = {"eg-launch", "--kernel-id", "k", "--response-address", "h:1",
                  "--public-key", "K", "--", NULL};
  KG_CHECK_INT(kg_eg_args_parse(8, dash, &o, &ignored, err, sizeof err), KG_EUSAGE);
  /* the communication port's interface and the weak-key opt-in (a flag) */
  char *comm[] = {"eg-launch", "--kernel-id", "k", "--response-address", "h:1",
                  "--public-key", "K", "--comm-interface=lo", "--allow-rsa-1024", NULL};
  KG_CHECK_INT(kg_eg_args_parse(9, comm, &o, &ignored, err, sizeof err), 0);
  KG_CHECK_STR(o.comm_interface, "lo");
  KG_CHECK(o.allow_rsa_1024);
  char *flagval[] = {"eg-launch", "--allow-rsa-1024=yes", NULL};
  KG_CHECK_INT(kg_eg_args_parse(2, flagval, &o, &ignored, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "takes no value") != NULL);
  char *badif[] = {"eg-launch", "--comm-interface", "a/b", NULL};
  KG_CHECK_INT(kg_eg_args_parse(3, badif, &o, &ignored, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "--comm-interface") != NULL);
}

KG_TEST(requests)
{
  static const struct {
    const char *json;
    int rc, signum;
    bool shutdown;
  } t[] = {
    {"{\"signum\": 0}", 0, 0, false},     {"{\"signum\": 2}", 0, 2, false},
    {"{\"shutdown\": 1}", 0, -1, true},   {"{\"shutdown\": true}", 0, -1, true},
    {"{\"shutdown\": 0}", 0, -1, false},  {"{\"signum\": 15, \"shutdown\": 1}", 0, 15, true},
    {"{}", 0, -1, false},                 {"{\"other\": 3}", 0, -1, false},
    {"{\"signum\": 9}", 0, 9, false},     {"{\"signum\": 15.0}", 0, 15, false},
    {"[1]", KG_EBADJSON, 0, 0},                 {"{\"signum\"", KG_EBADJSON, 0, 0},
    {"{\"signum\": -1}", KG_EUSAGE, 0, 0},      {"{\"signum\": 2.5}", KG_EUSAGE, 0, 0},
    {"{\"signum\": \"2\"}", KG_EUSAGE, 0, 0},   {"{\"signum\": 99}", KG_EUSAGE, 0, 0},
    {"{\"shutdown\": \"yes\"}", KG_EUSAGE, 0, 0},
    /* signals the gateway never sends: stop, continue, user signals, hangup */
    {"{\"signum\": 19}", KG_EUSAGE, 0, 0},      {"{\"signum\": 18}", KG_EUSAGE, 0, 0},
    {"{\"signum\": 10}", KG_EUSAGE, 0, 0},      {"{\"signum\": 1}", KG_EUSAGE, 0, 0},
    {"{\"signum\": 3}", KG_EUSAGE, 0, 0},       {"{\"signum\": 12}", KG_EUSAGE, 0, 0},
    {"{\"signum\": 19, \"shutdown\": 1}", KG_EUSAGE, 0, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    kg_eg_request_t r;
    char err[200];
    KG_CHECK_INT(kg_eg_request_parse(t[i].json, strlen(t[i].json), &r, err, sizeof err),
                 t[i].rc);
    if (t[i].rc == KG_EUSAGE && strstr(t[i].json, "19"))
      KG_CHECK(strstr(err, "signum 19 refused") != NULL);
    if (t[i].rc == 0) {
      KG_CHECK_INT(r.signum, t[i].signum);
      KG_CHECK_INT(r.shutdown, t[i].shutdown);
    }
  }
}

KG_TEST(peer_policy)
{
  enum { SELF = 1000, GW = 1001, OTHER = 1002 };
  static const struct {
    bool local, uid_known;
    unsigned uid;
    bool gw_known, local_only;
    bool allowed;
  } t[] = {
    {false, false, 0, false, false, true},  /* a network peer: the interface decided */
    {false, false, 0, true, true, false},   /* ... but the gateway is on this host */
    {true, true, SELF, true, true, true},
    {true, true, SELF, false, false, true},   /* the kernel's own user */
    {true, true, 0, false, false, true},      /* root */
    {true, true, OTHER, false, false, false}, /* another local user */
    {true, true, GW, false, false, false},    /* the gateway's user, gateway not local */
    {true, true, GW, true, true, true},       /* the gateway's user, gateway on this host */
    {true, true, OTHER, true, true, false},
    {true, false, 0, true, true, false},      /* local, owner unknown (reset, gone) */
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    kg_eg_peer_t p = {.local = t[i].local, .uid_known = t[i].uid_known, .uid = t[i].uid};
    kg_eg_trust_t tr = {.self_uid = SELF, .gateway_uid_known = t[i].gw_known,
                        .gateway_uid = GW, .local_only = t[i].local_only};
    char why[200] = "";
    KG_CHECK_INT(kg_eg_peer_allowed(&p, &tr, why, sizeof why), t[i].allowed);
    if (!t[i].allowed)
      KG_CHECK(*why != '\0');
  }
}

KG_TEST(conns_bound_and_deadlines)
{
  kg_eg_conns_t *c = kg_eg_conns_new(4, 2000);
  KG_CHECK(c != NULL);
  KG_CHECK(kg_eg_conns_new(0, 2000) == NULL);
  KG_CHECK_INT(kg_eg_conns_deadline(c), 0);
  /* four idle connections fill the table; the fifth takes the oldest's slot */
  for (int fd = 10; fd < 14; fd++)
    KG_CHECK_INT(kg_eg_conns_admit(c, fd, 1000 + fd), -1);
  KG_CHECK_INT(kg_eg_conns_count(c), 4);
  KG_CHECK_INT(kg_eg_conns_admit(c, 20, 1100), 10);
  KG_CHECK_INT(kg_eg_conns_admit(c, 21, 1101), 11);
  KG_CHECK_INT(kg_eg_conns_count(c), 4);
  /* and is served at once, whatever the idle ones do */
  kg_eg_request_t r;
  char err[200];
  KG_CHECK_INT(kg_eg_conns_feed(c, 21, "{\"signum\": 2}", 13, &r, err, sizeof err),
               KG_EG_CONN_REQUEST);
  KG_CHECK_INT(r.signum, 2);
  KG_CHECK_INT(kg_eg_conns_count(c), 3);
  /* deadlines: the earliest first, each connection once */
  KG_CHECK_INT(kg_eg_conns_deadline(c), 1012 + 2000);
  KG_CHECK_INT(kg_eg_conns_expired(c, 3011), -1);
  KG_CHECK_INT(kg_eg_conns_expired(c, 3013), 12);
  KG_CHECK_INT(kg_eg_conns_expired(c, 3013), 13);
  KG_CHECK_INT(kg_eg_conns_expired(c, 3013), -1);
  KG_CHECK_INT(kg_eg_conns_deadline(c), 1100 + 2000);
  int fds[8];
  KG_CHECK_INT(kg_eg_conns_fds(c, fds, 8), 1);
  KG_CHECK_INT(fds[0], 20);
  kg_eg_conns_remove(c, 20);
  KG_CHECK_INT(kg_eg_conns_count(c), 0);
  KG_CHECK_INT(kg_eg_conns_deadline(c), 0);
  kg_eg_conns_destroy(&c);
  KG_CHECK(c == NULL);
  kg_eg_conns_destroy(&c);
}

KG_TEST(conns_requests_whole_or_refused)
{
  kg_eg_conns_t *c = kg_eg_conns_new(2, 1000);
  kg_eg_request_t r;
  char err[200];
  /* a request in pieces: acted on once whole, before EOF */
  kg_eg_conns_admit(c, 5, 0);
  KG_CHECK_INT(kg_eg_conns_feed(c, 5, "{\"sig", 5, &r, err, sizeof err), KG_EG_CONN_MORE);
  KG_CHECK_INT(kg_eg_conns_feed(c, 5, "num\": 1", 7, &r, err, sizeof err), KG_EG_CONN_MORE);
  KG_CHECK_INT(kg_eg_conns_feed(c, 5, "5}", 2, &r, err, sizeof err), KG_EG_CONN_REQUEST);
  KG_CHECK_INT(r.signum, 15);
  /* the gateway's shutdown, then EOF */
  kg_eg_conns_admit(c, 6, 0);
  KG_CHECK_INT(kg_eg_conns_feed(c, 6, "{\"shutdown\": 1", 14, &r, err, sizeof err),
               KG_EG_CONN_MORE);
  KG_CHECK_INT(kg_eg_conns_feed(c, 6, "}", 1, &r, err, sizeof err), KG_EG_CONN_REQUEST);
  KG_CHECK(r.shutdown);
  /* a forbidden signal: refused as soon as it is whole */
  kg_eg_conns_admit(c, 7, 0);
  KG_CHECK_INT(kg_eg_conns_feed(c, 7, "{\"signum\": 19}", 14, &r, err, sizeof err),
               KG_EG_CONN_BAD);
  KG_CHECK(strstr(err, "19") != NULL);
  /* junk: refused at EOF; nothing: empty */
  kg_eg_conns_admit(c, 8, 0);
  KG_CHECK_INT(kg_eg_conns_feed(c, 8, "not json", 8, &r, err, sizeof err), KG_EG_CONN_MORE);
  KG_CHECK_INT(kg_eg_conns_eof(c, 8, &r, err, sizeof err), KG_EG_CONN_BAD);
  kg_eg_conns_admit(c, 9, 0);
  KG_CHECK_INT(kg_eg_conns_eof(c, 9, &r, err, sizeof err), KG_EG_CONN_EMPTY);
  /* oversized: refused, its slot freed */
  kg_eg_conns_admit(c, 10, 0);
  static char big[KG_EG_REQUEST_MAX + 1];
  memset(big, ' ', sizeof big);
  KG_CHECK_INT(kg_eg_conns_feed(c, 10, big, KG_EG_REQUEST_MAX, &r, err, sizeof err),
               KG_EG_CONN_MORE);
  KG_CHECK_INT(kg_eg_conns_feed(c, 10, "{", 1, &r, err, sizeof err), KG_EG_CONN_BAD);
  KG_CHECK(strstr(err, "longer than") != NULL);
  KG_CHECK_INT(kg_eg_conns_count(c), 0);
  /* bytes for a connection never admitted */
  KG_CHECK_INT(kg_eg_conns_feed(c, 99, "{}", 2, &r, err, sizeof err), KG_EG_CONN_BAD);
  kg_eg_conns_destroy(&c);
}

KG_TEST_MAIN(KG_CASE(port_range), KG_CASE(address), KG_CASE(args), KG_CASE(requests),
             KG_CASE(peer_policy), KG_CASE(conns_bound_and_deadlines),
             KG_CASE(conns_requests_whole_or_refused))
