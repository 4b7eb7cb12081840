/*  The kg_msg tests' fixture: a connected inproc PAIR (s_a sends, s_b
    receives) and helpers that put raw or signed frames on a socket and read
    them back with plain zmq. Included by test_msg_parse.c, test_msg_send.c
    and test_msg_forward.c; each test program gets its own copy (static). */
#ifndef KG_MSG_FIXTURE_H
#define KG_MSG_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_msg.h"
#include "kg_signer.h"

static void *s_ctx;
static void *s_a, *s_b;          /*  a connected PAIR: a sends, b receives */

static inline void
s_pair(void)
{
  static int n;
  char ep[64];
  snprintf(ep, sizeof ep, "inproc://pair-%d", n++);
  s_ctx = zmq_ctx_new();
  s_a = zmq_socket(s_ctx, ZMQ_PAIR);
  s_b = zmq_socket(s_ctx, ZMQ_PAIR);
  int zero = 0;
  zmq_setsockopt(s_a, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(s_b, ZMQ_LINGER, &zero, sizeof zero);
  if (zmq_bind(s_b, ep) != 0 || zmq_connect(s_a, ep) != 0)
    abort();
}

static inline void
s_unpair(void)
{
  zmq_close(s_a);
  zmq_close(s_b);
  zmq_ctx_term(s_ctx);
}

/*  Send n raw frames (NUL-terminated strings) on sock. */
static inline void
s_send_strs(void *sock, size_t n, const char *const *frames)
{
  for (size_t i = 0; i < n; i++)
    zmq_send(sock, frames[i], strlen(frames[i]), i + 1 < n ? ZMQ_SNDMORE : 0);
}

/*  Send a signed message: idents..., delim, sig(dicts), dicts[4], then
    buffers (as strings). */
static inline void
s_send_signed(void *sock, kg_signer_t *signer, size_t nid, const char *const *ids,
              const char *const dicts[4], size_t nbuf, const char *const *bufs)
{
  kg_frame_t parts[4];
  for (int i = 0; i < 4; i++)
    parts[i] = (kg_frame_t) {dicts[i], strlen(dicts[i])};
  char sig[65];
  kg_signer_sign(signer, parts, sig);
  const char *frames[32];
  size_t n = 0;
  for (size_t i = 0; i < nid; i++)
    frames[n++] = ids[i];
  frames[n++] = "<IDS|MSG>";
  frames[n++] = sig;
  for (int i = 0; i < 4; i++)
    frames[n++] = dicts[i];
  for (size_t i = 0; i < nbuf; i++)
    frames[n++] = bufs[i];
  s_send_strs(sock, n, frames);
}

static const char *const s_dicts[4] = {
  "{\"msg_id\":\"m1\",\"msg_type\":\"execute_request\",\"session\":\"s1\","
  "\"username\":\"u\",\"date\":\"2024-01-01T00:00:00.000000Z\",\"version\":\"5.3\"}",
  "{\"msg_id\":\"p1\"}",
  "{}",
  "{\"code\":\"1+1\",\"silent\":false}",
};

static inline int
s_frame_is(kg_frame_t f, const char *s)
{
  return f.size == strlen(s) && memcmp(f.data, s, f.size) == 0;
}

/*  Receive a whole message as raw frames with plain zmq (for checking what
    kg_msg_send put on the wire). Returns the frame count. */
static inline size_t
s_recv_raw(void *sock, zmq_msg_t *frames, size_t max)
{
  size_t n = 0;
  int more = 1;
  while (more && n < max) {
    zmq_msg_init(&frames[n]);
    if (zmq_msg_recv(&frames[n], sock, 0) < 0)
      abort();
    more = zmq_msg_more(&frames[n]);
    n++;
  }
  return n;
}

#endif
