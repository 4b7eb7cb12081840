/* floor_proxy: the cheapest ZeroMQ relay between a Jupyter frontend and a
 * kernel, used only by bench/relay/bench_relay.py as a benchmark FLOOR. It is
 * not part of kguard.
 *
 *   floor_proxy FRONT.json BACK.json
 *
 * Binds the five channels of FRONT.json, connects to the kernel bound at
 * BACK.json and forwards every multipart message byte for byte in one thread
 * with one zmq_poll loop: no HMAC, no JSON, no routing logic. Both files must
 * carry the same key, so messages stay valid unchanged. Whatever kguard costs
 * beyond this program is kguard's own work; what this program costs over a
 * direct connection is inherent to any libzmq relay on the machine (the extra
 * I/O-thread hops and socket copies).
 *
 * shell/control/stdin: frontend ROUTER <-> kernel DEALER. The ROUTER prefixes
 * the client's identity frame; it travels to the kernel as a routing frame and
 * comes back first in the reply, so the ROUTER routes the reply unchanged. The
 * three DEALERs share one routing id so the kernel's stdin ROUTER reaches us
 * with the identities of the shell request (one client, as jupyter expects).
 * iopub: kernel SUB (all topics) -> frontend PUB. hb: echoed locally by a
 * frontend ROUTER. SIGTERM/SIGINT end the loop (read through a signalfd so
 * that no libzmq thread swallows them).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

enum { SHELL, CONTROL, STDIN, IOPUB, HB, NCHAN };
static const char *const s_port_names[NCHAN] = {
  "shell_port", "control_port", "stdin_port", "iopub_port", "hb_port"};

static cJSON *s_load(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "floor_proxy: cannot open %s: %s\n", path, strerror(errno));
    return NULL;
  }
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  cJSON *j = cJSON_Parse(buf);
  if (!j)
    fprintf(stderr, "floor_proxy: %s is not JSON\n", path);
  return j;
}

/* Writes "tcp://IP:PORT" or "ipc://IP-PORT" for channel ch; 0 or -1. */
static int s_endpoint(const cJSON *cf, const char *file, int ch, char *out, size_t size)
{
  const cJSON *tr = cJSON_GetObjectItemCaseSensitive(cf, "transport");
  const cJSON *ip = cJSON_GetObjectItemCaseSensitive(cf, "ip");
  const cJSON *port = cJSON_GetObjectItemCaseSensitive(cf, s_port_names[ch]);
  const char *t = cJSON_IsString(tr) ? tr->valuestring : "tcp";
  if (!cJSON_IsString(ip) || !cJSON_IsNumber(port)
      || (strcmp(t, "tcp") != 0 && strcmp(t, "ipc") != 0)) {
    fprintf(stderr, "floor_proxy: %s lacks transport/ip/%s\n", file, s_port_names[ch]);
    return -1;
  }
  int n = snprintf(out, size, "%s://%s%c%d", t, ip->valuestring,
                   strcmp(t, "tcp") == 0 ? ':' : '-', port->valueint);
  return n > 0 && (size_t) n < size ? 0 : -1;
}

/* Moves every message waiting on src to dst, frame by frame, without copying
 * (zmq_msg_send takes the frame over). Returns -1 on an unexpected error. */
static int s_forward(void *src, void *dst)
{
  zmq_msg_t m;
  zmq_msg_init(&m);
  for (;;) {
    if (zmq_msg_recv(&m, src, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&m);
      return errno == EAGAIN || errno == EINTR ? 0 : -1;
    }
    /* The first frame arrived, so the rest of the message is already here. */
    for (;;) {
      int more = zmq_msg_more(&m);
      if (zmq_msg_send(&m, dst, more ? ZMQ_SNDMORE : 0) < 0) {
        zmq_msg_close(&m);
        return -1;
      }
      if (!more)
        break;
      if (zmq_msg_recv(&m, src, 0) < 0) {
        zmq_msg_close(&m);
        return -1;
      }
    }
  }
}

static void *s_socket(void *ctx, int type)
{
  void *s = zmq_socket(ctx, type);
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  return s;
}

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: floor_proxy FRONT.json BACK.json\n");
    return 2;
  }
  cJSON *front = s_load(argv[1]), *back = s_load(argv[2]);
  if (!front || !back)
    return 1;

  /* Block the signals before libzmq starts its threads, which inherit the mask. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigprocmask(SIG_BLOCK, &sigs, NULL);
  int sfd = signalfd(-1, &sigs, SFD_CLOEXEC);

  static const int front_type[NCHAN] = {ZMQ_ROUTER, ZMQ_ROUTER, ZMQ_ROUTER, ZMQ_PUB, ZMQ_ROUTER};
  static const int back_type[NCHAN] = {ZMQ_DEALER, ZMQ_DEALER, ZMQ_DEALER, ZMQ_SUB, -1};
  static const char routing_id[] = "floor-proxy";
  void *ctx = zmq_ctx_new();
  void *fs[NCHAN] = {0}, *bs[NCHAN] = {0};
  int rc = 0;
  for (int ch = 0; ch < NCHAN && rc == 0; ch++) {
    char ep[512] = "";
    fs[ch] = s_socket(ctx, front_type[ch]);
    if (s_endpoint(front, argv[1], ch, ep, sizeof ep) < 0 || zmq_bind(fs[ch], ep) < 0) {
      fprintf(stderr, "floor_proxy: cannot bind %s: %s\n", ep, zmq_strerror(errno));
      rc = 1;
      break;
    }
    if (back_type[ch] < 0)
      continue;
    bs[ch] = s_socket(ctx, back_type[ch]);
    if (back_type[ch] == ZMQ_SUB)
      zmq_setsockopt(bs[ch], ZMQ_SUBSCRIBE, "", 0);
    else
      zmq_setsockopt(bs[ch], ZMQ_ROUTING_ID, routing_id, sizeof routing_id - 1);
    if (s_endpoint(back, argv[2], ch, ep, sizeof ep) < 0 || zmq_connect(bs[ch], ep) < 0) {
      fprintf(stderr, "floor_proxy: cannot connect %s: %s\n", ep, zmq_strerror(errno));
      rc = 1;
    }
  }
  cJSON_Delete(front);
  cJSON_Delete(back);

  /* items[i] forwards to dst[i]; the last item is the signalfd. */
  zmq_pollitem_t items[9];
  void *dst[9];
  int n = 0;
  for (int ch = SHELL; ch <= STDIN; ch++) {
    items[n] = (zmq_pollitem_t){fs[ch], 0, ZMQ_POLLIN, 0}, dst[n++] = bs[ch];
    items[n] = (zmq_pollitem_t){bs[ch], 0, ZMQ_POLLIN, 0}, dst[n++] = fs[ch];
  }
  items[n] = (zmq_pollitem_t){bs[IOPUB], 0, ZMQ_POLLIN, 0}, dst[n++] = fs[IOPUB];
  items[n] = (zmq_pollitem_t){fs[HB], 0, ZMQ_POLLIN, 0}, dst[n++] = fs[HB];
  items[n] = (zmq_pollitem_t){NULL, sfd, ZMQ_POLLIN, 0};

  while (rc == 0) {
    if (zmq_poll(items, n + 1, -1) < 0) {
      if (errno == EINTR)
        continue;
      fprintf(stderr, "floor_proxy: zmq_poll: %s\n", zmq_strerror(errno));
      rc = 1;
      break;
    }
    if (items[n].revents & ZMQ_POLLIN)
      break; /* SIGTERM or SIGINT: a clean exit */
    for (int i = 0; i < n; i++)
      if ((items[i].revents & ZMQ_POLLIN) && s_forward(items[i].socket, dst[i]) < 0) {
        fprintf(stderr, "floor_proxy: forward: %s\n", zmq_strerror(errno));
        rc = 1;
      }
  }

  for (int ch = 0; ch < NCHAN; ch++) {
    if (fs[ch])
      zmq_close(fs[ch]);
    if (bs[ch])
      zmq_close(bs[ch]);
  }
  zmq_ctx_term(ctx);
  close(sfd);
  return rc;
}
