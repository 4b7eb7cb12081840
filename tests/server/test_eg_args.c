/*  Tables for kg_eg_args: the launcher's arguments and the gateway's
    requests (no sockets, no processes). */
#include "kg_eg_args.h"
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
    {"[1]", KG_EBADJSON, 0, 0},                 {"{\"signum\"", KG_EBADJSON, 0, 0},
    {"{\"signum\": -1}", KG_EUSAGE, 0, 0},      {"{\"signum\": 2.5}", KG_EUSAGE, 0, 0},
    {"{\"signum\": \"2\"}", KG_EUSAGE, 0, 0},   {"{\"signum\": 99}", KG_EUSAGE, 0, 0},
    {"{\"shutdown\": \"yes\"}", KG_EUSAGE, 0, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    kg_eg_request_t r;
    char err[200];
    KG_CHECK_INT(kg_eg_request_parse(t[i].json, strlen(t[i].json), &r, err, sizeof err),
                 t[i].rc);
    if (t[i].rc == 0) {
      KG_CHECK_INT(r.signum, t[i].signum);
      KG_CHECK_INT(r.shutdown, t[i].shutdown);
    }
  }
}

KG_TEST_MAIN(KG_CASE(port_range), KG_CASE(address), KG_CASE(args), KG_CASE(requests))
