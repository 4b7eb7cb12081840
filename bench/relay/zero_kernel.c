/* zero_kernel: a Jupyter kernel that does no work, for bench/relay only (not
 * part of kguard). It answers every execute_request at once (busy, reply,
 * idle; no code runs), so a round trip through it measures the wire and
 * whatever relays sit on it, not Python.
 *
 *   zero_kernel CONNECTION.json
 *
 * shell/control ROUTER, iopub PUB, stdin ROUTER (unused), hb ROUTER echo.
 * Replies are HMAC-SHA256 signed with the file's key (relays check them);
 * requests are not checked (zero work). Code "stream N SIZE" publishes N
 * stream messages of SIZE bytes before the reply: the throughput of a relay
 * without ipykernel's cost (SIZE bytes of JSON text: lines of 99 'x' and an
 * escaped newline). kernel_info_request is answered (relays wait for
 * it); shutdown_request ends the process.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

enum { SHELL, CONTROL, STDIN, IOPUB, HB, NCHAN };
static const char *const s_ports[NCHAN] = {"shell_port", "control_port", "stdin_port",
                                           "iopub_port", "hb_port"};
static unsigned char *s_key;
static size_t s_key_len;
static unsigned long s_seq;
static char s_session[40];

static void s_sign(const char *const dicts[4], const size_t lens[4], char out[65])
{
  out[0] = '\0';
  if (!s_key_len)
    return;
  crypto_auth_hmacsha256_state st;
  unsigned char mac[32];
  crypto_auth_hmacsha256_init(&st, s_key, s_key_len);
  for (int i = 0; i < 4; i++)
    crypto_auth_hmacsha256_update(&st, (const unsigned char *) dicts[i], lens[i]);
  crypto_auth_hmacsha256_final(&st, mac);
  sodium_bin2hex(out, 65, mac, sizeof mac);
}

/* Send idents[0..nid), delimiter, signature, header(type), parent, {}, content. */
static void s_send(void *sock, zmq_msg_t *idents, size_t nid, const char *type,
                   const char *parent, size_t parent_len, const char *content)
{
  char header[256];
  int hl = snprintf(header, sizeof header,
                    "{\"msg_id\":\"zk-%s-%lu\",\"msg_type\":\"%s\",\"session\":\"%s\","
                    "\"username\":\"zero\",\"date\":\"2026-01-01T00:00:00.000000Z\","
                    "\"version\":\"5.3\"}", s_session, ++s_seq, type, s_session);
  const char *dicts[4] = {header, parent, "{}", content};
  size_t lens[4] = {(size_t) hl, parent_len, 2, strlen(content)};
  char sig[65];
  s_sign(dicts, lens, sig);
  for (size_t i = 0; i < nid; i++) {
    zmq_msg_t c;
    zmq_msg_init(&c);
    zmq_msg_copy(&c, &idents[i]);
    zmq_msg_send(&c, sock, ZMQ_SNDMORE);
  }
  zmq_send(sock, "<IDS|MSG>", 9, ZMQ_SNDMORE);
  zmq_send(sock, sig, strlen(sig), ZMQ_SNDMORE);
  for (int i = 0; i < 4; i++)
    zmq_send(sock, dicts[i], lens[i], i < 3 ? ZMQ_SNDMORE : 0);
}

static void s_status(void *iopub, const char *state, const char *parent, size_t plen)
{
  char content[64];
  snprintf(content, sizeof content, "{\"execution_state\":\"%s\"}", state);
  zmq_msg_t topic;
  zmq_msg_init_size(&topic, 13);
  memcpy(zmq_msg_data(&topic), "kernel.status", 13);
  s_send(iopub, &topic, 1, "status", parent, plen, content);
  zmq_msg_close(&topic);
}

/* One request on a ROUTER: answer it. Returns 0, or 1 after shutdown. */
static int s_request(void *sock, void *iopub, unsigned long *count)
{
  zmq_msg_t f[64];
  size_t n = 0;
  int more = 1;
  while (more && n < 64) {
    zmq_msg_init(&f[n]);
    if (zmq_msg_recv(&f[n], sock, 0) < 0)
      return 0;
    more = zmq_msg_more(&f[n]);
    n++;
  }
  size_t d = 0;
  while (d < n && !(zmq_msg_size(&f[d]) == 9 && !memcmp(zmq_msg_data(&f[d]), "<IDS|MSG>", 9)))
    d++;
  int rc = 0;
  if (d + 5 < n) {
    const char *hdr = zmq_msg_data(&f[d + 2]);
    size_t hl = zmq_msg_size(&f[d + 2]);
    char type[64] = "";
    const char *t = memmem(hdr, hl, "\"msg_type\"", 10);
    if (t) {
      t = memchr(t + 10, '"', hl - (size_t) (t + 10 - hdr));
      const char *e = t ? memchr(t + 1, '"', hl - (size_t) (t + 1 - hdr)) : NULL;
      if (t && e && (size_t) (e - t - 1) < sizeof type)
        snprintf(type, sizeof type, "%.*s", (int) (e - t - 1), t + 1);
    }
    s_status(iopub, "busy", hdr, hl);
    if (!strcmp(type, "execute_request")) {
      const char *code = zmq_msg_data(&f[d + 5]);
      size_t cl = zmq_msg_size(&f[d + 5]);
      const char *s = memmem(code, cl, "stream ", 7);
      if (s) {
        long count_n = 0, size = 0;
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*s", (int) (cl - (size_t) (s - code) < 63 ? cl - (size_t) (s - code) : 63), s);
        sscanf(tmp, "stream %ld %ld", &count_n, &size);
        char *text = malloc((size_t) size + 64);
        int k = sprintf(text, "{\"name\":\"stdout\",\"text\":\"");
        /* printed lines of 100 bytes (99 x and a newline, escaped in JSON) */
        for (long i = 0; i < size; i++)
          text[k + i] = i % 101 == 99 ? '\\' : i % 101 == 100 ? 'n' : 'x';
        strcpy(text + k + size, "\"}");
        zmq_msg_t topic;
        zmq_msg_init_size(&topic, 13);
        memcpy(zmq_msg_data(&topic), "kernel.stream", 13);
        for (long i = 0; i < count_n; i++)
          s_send(iopub, &topic, 1, "stream", hdr, hl, text);
        zmq_msg_close(&topic);
        free(text);
      }
      char content[128];
      snprintf(content, sizeof content,
               "{\"status\":\"ok\",\"execution_count\":%lu,\"user_expressions\":{}}", ++*count);
      s_send(sock, f, d, "execute_reply", hdr, hl, content);
    } else if (!strcmp(type, "kernel_info_request")) {
      s_send(sock, f, d, "kernel_info_reply", hdr, hl,
             "{\"status\":\"ok\",\"protocol_version\":\"5.3\",\"implementation\":\"zero\","
             "\"implementation_version\":\"1\",\"language_info\":{\"name\":\"zero\"},"
             "\"banner\":\"\"}");
    } else if (!strcmp(type, "shutdown_request")) {
      s_send(sock, f, d, "shutdown_reply", hdr, hl, "{\"status\":\"ok\",\"restart\":false}");
      rc = 1;
    } else {
      char reply[80];
      snprintf(reply, sizeof reply, "%.*s_reply",
               (int) (strlen(type) > 8 ? strlen(type) - 8 : 0), type);
      s_send(sock, f, d, reply, hdr, hl, "{\"status\":\"ok\"}");
    }
    s_status(iopub, "idle", hdr, hl);
  }
  for (size_t i = 0; i < n; i++)
    zmq_msg_close(&f[i]);
  return rc;
}

int main(int argc, char **argv)
{
  if (argc != 2 || sodium_init() < 0) {
    fprintf(stderr, "usage: zero_kernel CONNECTION.json\n");
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
  const cJSON *key = cJSON_GetObjectItem(cf, "key");
  const cJSON *tr = cJSON_GetObjectItem(cf, "transport");
  const cJSON *ip = cJSON_GetObjectItem(cf, "ip");
  if (!cf || !cJSON_IsString(key) || !cJSON_IsString(tr) || !cJSON_IsString(ip)) {
    fprintf(stderr, "zero_kernel: bad connection file\n");
    return 2;
  }
  s_key_len = strlen(key->valuestring);
  s_key = (unsigned char *) strdup(key->valuestring);
  unsigned char r[8];
  randombytes_buf(r, sizeof r);
  sodium_bin2hex(s_session, sizeof s_session, r, sizeof r);
  void *ctx = zmq_ctx_new();
  static const int types[NCHAN] = {ZMQ_ROUTER, ZMQ_ROUTER, ZMQ_ROUTER, ZMQ_PUB, ZMQ_ROUTER};
  void *s[NCHAN];
  for (int c = 0; c < NCHAN; c++) {
    char ep[512];
    int port = cJSON_GetObjectItem(cf, s_ports[c])->valueint;
    if (!strcmp(tr->valuestring, "ipc"))
      snprintf(ep, sizeof ep, "ipc://%s-%d", ip->valuestring, port);
    else
      snprintf(ep, sizeof ep, "tcp://%s:%d", ip->valuestring, port);
    s[c] = zmq_socket(ctx, types[c]);
    int zero = 0;
    zmq_setsockopt(s[c], ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_bind(s[c], ep) != 0) {
      fprintf(stderr, "zero_kernel: bind %s: %s\n", ep, zmq_strerror(zmq_errno()));
      return 1;
    }
  }
  unsigned long count = 0;
  int done = 0;
  while (!done) {
    zmq_pollitem_t items[3] = {{s[SHELL], 0, ZMQ_POLLIN, 0}, {s[CONTROL], 0, ZMQ_POLLIN, 0},
                               {s[HB], 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(items, 3, -1) < 0)
      break;
    for (int i = 0; i < 2 && !done; i++)
      if (items[i].revents)
        done = s_request(i ? s[CONTROL] : s[SHELL], s[IOPUB], &count);
    if (items[2].revents) {
      zmq_msg_t m;
      int more = 1;
      while (more) {
        zmq_msg_init(&m);
        zmq_msg_recv(&m, s[HB], 0);
        more = zmq_msg_more(&m);
        zmq_msg_send(&m, s[HB], more ? ZMQ_SNDMORE : 0);
      }
    }
  }
  for (int c = 0; c < NCHAN; c++)
    zmq_close(s[c]);
  zmq_ctx_term(ctx);
  return 0;
}
