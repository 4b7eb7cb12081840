/*  kg_eg_report: the connection info the gateway waits for (see
    kg_eg_report.h). */
#include "kg_eg_report.h"

#include <cJSON.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_eg_seal.h"
#include "kg_error.h"
#include "kg_exit.h"
#include "kg_log.h"

#define KG_EG_REPORT_TIMEOUT_MS 30000   /* the gateway's own launch timeout */

static char *
s_report_json(const kg_eg_opts_t *opts, const kg_conninfo_t *ci, int comm_port)
{
  static const char *names[KG_CH_COUNT] = {"shell_port", "iopub_port", "stdin_port",
                                           "control_port", "hb_port"};
  cJSON *o = cJSON_CreateObject();
  char *key = ci->key_len < SIZE_MAX ? malloc(ci->key_len + 1) : NULL;
  bool ok = o && key;
  if (ok) {
    memcpy(key, ci->key, ci->key_len);
    key[ci->key_len] = '\0';
    for (int c = 0; c < KG_CH_COUNT && ok; c++)
      ok = cJSON_AddNumberToObject(o, names[c], ci->ports[c]) != NULL;
    ok = ok && cJSON_AddStringToObject(o, "ip", ci->ip) && cJSON_AddStringToObject(o, "key", key)
         && cJSON_AddStringToObject(o, "transport", "tcp")
         && cJSON_AddStringToObject(o, "signature_scheme", ci->scheme)
         && cJSON_AddStringToObject(o, "kernel_name", "")
         && cJSON_AddNumberToObject(o, "pid", getpid())
         && cJSON_AddNumberToObject(o, "pgid", getpgrp())
         && cJSON_AddNumberToObject(o, "comm_port", comm_port)
         && cJSON_AddStringToObject(o, "kernel_id", opts->kernel_id);
  }
  char *s = ok ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  if (key) {
    memset(key, 0, ci->key_len);
    free(key);
  }
  return s;
}

/*  Wait until fd is ready for events or the deadline passes. 0, or
    KG_ETIMEOUT / -errno. */
static int
s_wait_fd(int fd, short events, int64_t deadline)
{
  for (;;) {
    int64_t left = deadline - kg_clock_mono_ms();
    if (left <= 0)
      return KG_ETIMEOUT;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, (int) left);
    if (n > 0)
      return 0;
    if (n < 0 && errno != EINTR)
      return -errno;
  }
}

int
kg_eg_report_seal(const kg_eg_opts_t *opts, const kg_conninfo_t *ci, int comm_port,
                  char **payload_p)
{
  char err[512];
  char *json = s_report_json(opts, ci, comm_port);
  unsigned min_bits = opts->allow_rsa_1024 ? 1024 : 2048;
  int rc = json ? kg_eg_seal(opts->public_key, min_bits, json, strlen(json), payload_p, err,
                             sizeof err)
                : KG_ENOMEM;
  if (json) {
    memset(json, 0, strlen(json));
    free(json);
  }
  if (rc)
    kg_error("%s", rc == KG_ENOMEM ? kg_strerror(rc) : err);
  return rc == 0 ? 0 : rc == KG_EUSAGE ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
}

int
kg_eg_report_send(const char *response_address, const char *payload)
{
  char host[256], port[16], err[256];
  int p;
  kg_eg_address_parse(response_address, host, sizeof host, &p, err, sizeof err);
  snprintf(port, sizeof port, "%d", p);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  int g = getaddrinfo(host, port, &hints, &ai);
  int fd = -1;
  int64_t deadline = kg_clock_mono_ms() + KG_EG_REPORT_TIMEOUT_MS;
  int rc = g ? KG_ENOTFOUND : 0;
  if (rc == 0) {
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS))
      rc = -errno;
  }
  if (rc == 0 && (rc = s_wait_fd(fd, POLLOUT, deadline)) == 0) {
    int so = 0;
    socklen_t sl = sizeof so;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
    rc = -so;
  }
  for (size_t off = 0, len = strlen(payload); rc == 0 && off < len;) {
    ssize_t w = send(fd, payload + off, len - off, MSG_NOSIGNAL);
    if (w > 0)
      off += (size_t) w;
    else if (w < 0 && errno == EAGAIN)
      rc = s_wait_fd(fd, POLLOUT, deadline);
    else if (w < 0 && errno != EINTR)
      rc = -errno;
  }
  if (ai)
    freeaddrinfo(ai);
  if (fd >= 0)
    close(fd);
  if (rc) {
    kg_error("cannot report the connection info to the gateway at %s: %s",
             response_address, g ? gai_strerror(g) : kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  kg_info("connection info reported to %s", response_address);
  return 0;
}

