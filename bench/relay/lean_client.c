/* lean_client: the least a Jupyter client can do, for bench/relay only (not
 * part of kguard): sign an execute_request, send it, wait for its
 * execute_reply on shell and its idle status on iopub. No JSON parsing, no
 * signature checks (msg ids are found with memmem), so a round trip measures
 * the kernel and the relays in between, not the client.
 *
 *   lean_client CONNECTION.json PINGS [STREAM_RUNS N SIZE]
 *
 * Prints one JSON line: the round trips in microseconds (sorted), and for
 * each stream run ("stream N SIZE" to zero_kernel) its bytes per second.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static unsigned char *s_key;
static size_t s_key_len;
static unsigned long s_seq;

static double s_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void s_execute(void *shell, const char *code, char id[64])
{
  snprintf(id, 64, "lc-%ld-%lu", (long) getpid(), ++s_seq);
  char header[256], content[256];
  int hl = snprintf(header, sizeof header,
                    "{\"msg_id\":\"%s\",\"msg_type\":\"execute_request\",\"session\":\"lc-%ld\","
                    "\"username\":\"lean\",\"date\":\"2026-01-01T00:00:00.000000Z\","
                    "\"version\":\"5.3\"}", id, (long) getpid());
  int cl = snprintf(content, sizeof content,
                    "{\"code\":\"%s\",\"silent\":false,\"store_history\":true,"
                    "\"user_expressions\":{},\"allow_stdin\":false,\"stop_on_error\":true}", code);
  const char *d[4] = {header, "{}", "{}", content};
  size_t l[4] = {(size_t) hl, 2, 2, (size_t) cl};
  char sig[65] = "";
  if (s_key_len) {
    crypto_auth_hmacsha256_state st;
    unsigned char mac[32];
    crypto_auth_hmacsha256_init(&st, s_key, s_key_len);
    for (int i = 0; i < 4; i++)
      crypto_auth_hmacsha256_update(&st, (const unsigned char *) d[i], l[i]);
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_bin2hex(sig, sizeof sig, mac, sizeof mac);
  }
  zmq_send(shell, "<IDS|MSG>", 9, ZMQ_SNDMORE);
  zmq_send(shell, sig, strlen(sig), ZMQ_SNDMORE);
  for (int i = 0; i < 4; i++)
    zmq_send(shell, d[i], l[i], i < 3 ? ZMQ_SNDMORE : 0);
}

/* Receive one message; find the delimiter; return the frame count, with
 * frames in f (caller closes). */
static size_t s_recv(void *sock, zmq_msg_t *f, size_t cap, size_t *delim)
{
  size_t n = 0;
  int more = 1;
  while (more) {
    zmq_msg_t *m = &f[n < cap ? n : cap - 1];
    if (n >= cap)
      zmq_msg_close(m);
    zmq_msg_init(m);
    zmq_msg_recv(m, sock, 0);
    more = zmq_msg_more(m);
    if (n < cap)
      n++;
  }
  *delim = n;
  for (size_t i = 0; i < n; i++)
    if (zmq_msg_size(&f[i]) == 9 && !memcmp(zmq_msg_data(&f[i]), "<IDS|MSG>", 9)) {
      *delim = i;
      break;
    }
  return n;
}

static int s_has(zmq_msg_t *m, const char *s)
{
  return memmem(zmq_msg_data(m), zmq_msg_size(m), s, strlen(s)) != NULL;
}

/* Wait for the reply and the idle of request id, at most timeout s; count
 * the stream bytes meanwhile. Returns 1 if both came. */
static int s_wait(void *shell, void *iopub, const char *id, double timeout, size_t *stream_bytes)
{
  int got_reply = 0, got_idle = 0;
  double end = s_now() + timeout;
  zmq_msg_t f[16];
  while (!(got_reply && got_idle)) {
    double left = end - s_now();
    if (left <= 0)
      return 0;
    zmq_pollitem_t it[2] = {{shell, 0, ZMQ_POLLIN, 0}, {iopub, 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(it, 2, (long) (left * 1000) + 1) <= 0)
      continue;
    for (int k = 0; k < 2; k++) {
      if (!it[k].revents)
        continue;
      size_t d, n = s_recv(k ? iopub : shell, f, 16, &d);
      if (d + 5 < n && s_has(&f[d + 3], id)) {
        if (!k)
          got_reply = 1;
        else if (s_has(&f[d + 2], "\"status\"") && s_has(&f[d + 5], "idle"))
          got_idle = 1;
        else if (s_has(&f[d + 2], "\"stream\""))
          *stream_bytes += zmq_msg_size(&f[d + 5]);
      }
      for (size_t i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
    }
  }
  return 1;
}

static int s_cmp(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
  if ((argc != 3 && argc != 6) || sodium_init() < 0) {
    fprintf(stderr, "usage: lean_client CONNECTION.json PINGS [STREAM_RUNS N SIZE]\n");
    return 2;
  }
  FILE *fp = fopen(argv[1], "rb");
  if (!fp) {
    perror(argv[1]);
    return 2;
  }
  char buf[8192];
  size_t len = fread(buf, 1, sizeof buf - 1, fp);
  fclose(fp);
  buf[len] = '\0';
  cJSON *cf = cJSON_Parse(buf);
  const char *ip = cJSON_GetObjectItem(cf, "ip")->valuestring;
  const char *tr = cJSON_GetObjectItem(cf, "transport")->valuestring;
  s_key = (unsigned char *) strdup(cJSON_GetObjectItem(cf, "key")->valuestring);
  s_key_len = strlen((char *) s_key);
  void *ctx = zmq_ctx_new();
  void *shell = zmq_socket(ctx, ZMQ_DEALER), *iopub = zmq_socket(ctx, ZMQ_SUB);
  int zero = 0;
  zmq_setsockopt(shell, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(iopub, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(iopub, ZMQ_SUBSCRIBE, "", 0);
  char ep[512];
  const char *fmt = strcmp(tr, "ipc") ? "tcp://%s:%d" : "ipc://%s-%d";
  snprintf(ep, sizeof ep, fmt, ip, cJSON_GetObjectItem(cf, "shell_port")->valueint);
  zmq_connect(shell, ep);
  snprintf(ep, sizeof ep, fmt, ip, cJSON_GetObjectItem(cf, "iopub_port")->valueint);
  zmq_connect(iopub, ep);

  /* Until the subscription is through (an idle arrives), then 50 more. */
  char id[64];
  size_t sb = 0;
  int warm = 0;
  for (int tries = 0; warm < 50; tries++) {
    if (tries > 600) {
      fprintf(stderr, "lean_client: no idle on iopub after %d tries\n", tries);
      return 1;
    }
    s_execute(shell, "pass", id);
    if (s_wait(shell, iopub, id, warm ? 30.0 : 0.5, &sb))
      warm++;
  }
  int pings = atoi(argv[2]);
  double *rtt = calloc((size_t) pings + 1, sizeof *rtt);   /* pings may be 0 */
  for (int i = 0; i < pings; i++) {
    double t0 = s_now();
    s_execute(shell, "pass", id);
    if (!s_wait(shell, iopub, id, 30.0, &sb)) {
      fprintf(stderr, "lean_client: round trip %d timed out\n", i);
      return 1;
    }
    rtt[i] = (s_now() - t0) * 1e6;
  }
  qsort(rtt, (size_t) pings, sizeof *rtt, s_cmp);
  printf("{\"rtt_us\":[");
  for (int i = 0; i < pings; i++)
    printf("%s%.1f", i ? "," : "", rtt[i]);
  printf("],\"stream_Bps\":[");
  if (argc == 6) {
    char code[64];
    snprintf(code, sizeof code, "stream %s %s", argv[4], argv[5]);
    for (int r = 0; r < atoi(argv[3]); r++) {
      size_t bytes = 0;
      double t0 = s_now();
      s_execute(shell, code, id);
      if (!s_wait(shell, iopub, id, 120.0, &bytes)) {
        fprintf(stderr, "lean_client: stream run timed out\n");
        return 1;
      }
      printf("%s%.0f", r ? "," : "", (double) bytes / (s_now() - t0));
    }
  }
  printf("]}\n");
  zmq_close(shell);
  zmq_close(iopub);
  zmq_ctx_term(ctx);
  return 0;
}
