/*  kg_socket: the channel sockets of the frontend side and the kernel side.
*/
#include "kg_socket.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_log.h"

/*  Long enough for "tcp://" + 255-byte ip + ":65535" and for ipc paths. */
#define KG_ENDPOINT_MAX 300

static int
s_set_int(void *socket, int option, int value)
{
  return zmq_setsockopt(socket, option, &value, sizeof value) == 0 ? 0 : -errno;
}

static void *
s_fail(void *socket, int code, int *err)
{
  if (socket)
    zmq_close(socket);
  if (err)
    *err = code;
  return NULL;
}

void *
kg_socket_bind(void *ctx, const kg_conninfo_t *info, kg_channel_t channel, int *err)
{
  if (err)
    *err = 0;
  char endpoint[KG_ENDPOINT_MAX];
  int rc = kg_conninfo_endpoint(info, channel, endpoint, sizeof endpoint);
  if (rc != 0) {
    kg_error("unable to bind the %s channel: endpoint too long", kg_channel_name(channel));
    return s_fail(NULL, rc, err);
  }
  int type = channel == KG_CH_IOPUB ? ZMQ_PUB : ZMQ_ROUTER;
  void *socket = zmq_socket(ctx, type);
  if (!socket) {
    rc = -errno;
    kg_error("unable to create the %s socket: %s", kg_channel_name(channel),
             zmq_strerror(errno));
    return s_fail(NULL, rc, err);
  }
  rc = s_set_int(socket, ZMQ_LINGER, 0);
  /*  A client that reconnects with the same identity (jupyter_server
      re-opening a channel with the session id as routing id) takes over
      the old connection instead of being ignored. Not for the heartbeat:
      REQ clients there have anonymous, unique identities. */
  if (rc == 0 && type == ZMQ_ROUTER && channel != KG_CH_HB)
    rc = s_set_int(socket, ZMQ_ROUTER_HANDOVER, 1);
  if (rc == 0 && zmq_bind(socket, endpoint) != 0) {
    rc = -errno;
    kg_error("unable to bind %s: %s", endpoint, zmq_strerror(errno));
  }
  else if (rc != 0)
    kg_error("unable to configure the %s socket: %s", kg_channel_name(channel),
             zmq_strerror(-rc));
  if (rc != 0)
    return s_fail(socket, rc, err);
  return socket;
}

void *
kg_socket_connect(void *ctx, const kg_conninfo_t *info, kg_channel_t channel,
                  const char *routing_id, int *err)
{
  if (err)
    *err = 0;
  char endpoint[KG_ENDPOINT_MAX];
  int rc = kg_conninfo_endpoint(info, channel, endpoint, sizeof endpoint);
  if (rc != 0) {
    kg_error("unable to connect the %s channel: endpoint too long",
             kg_channel_name(channel));
    return s_fail(NULL, rc, err);
  }
  int type = channel == KG_CH_IOPUB ? ZMQ_SUB : channel == KG_CH_HB ? ZMQ_REQ : ZMQ_DEALER;
  void *socket = zmq_socket(ctx, type);
  if (!socket) {
    rc = -errno;
    kg_error("unable to create the %s socket: %s", kg_channel_name(channel),
             zmq_strerror(errno));
    return s_fail(NULL, rc, err);
  }
  rc = s_set_int(socket, ZMQ_LINGER, 0);
  if (rc == 0 && type == ZMQ_DEALER && routing_id && routing_id[0]
      && zmq_setsockopt(socket, ZMQ_ROUTING_ID, routing_id, strlen(routing_id)) != 0)
    rc = -errno;
  if (rc == 0 && type == ZMQ_SUB && zmq_setsockopt(socket, ZMQ_SUBSCRIBE, "", 0) != 0)
    rc = -errno;
  if (rc != 0) {
    kg_error("unable to configure the %s socket: %s", kg_channel_name(channel),
             zmq_strerror(-rc));
    return s_fail(socket, rc, err);
  }
  if (zmq_connect(socket, endpoint) != 0) {
    rc = -errno;
    kg_error("unable to connect %s: %s", endpoint, zmq_strerror(errno));
    return s_fail(socket, rc, err);
  }
  return socket;
}

void
kg_socket_close(void **socket_p)
{
  if (!socket_p || !*socket_p)
    return;
  zmq_close(*socket_p);
  *socket_p = NULL;
}

void *
kg_socket_handshake_monitor(void *ctx, void *socket, const char *endpoint)
{
  if (zmq_socket_monitor(socket, endpoint, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
                                               | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                                               | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0)
    return NULL;
  void *monitor = zmq_socket(ctx, ZMQ_PAIR);
  if (monitor && zmq_connect(monitor, endpoint) != 0)
    kg_socket_close(&monitor);
  return monitor;
}

int
kg_socket_handshake_failures(void *monitor)
{
  int failures = 0;
  for (;;) {
    /* An event is two frames: 6 bytes (event, value), then the endpoint. */
    zmq_msg_t f;
    zmq_msg_init(&f);
    if (zmq_msg_recv(&f, monitor, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&f);
      return failures;
    }
    uint16_t event = 0;
    if (zmq_msg_size(&f) >= 6)
      memcpy(&event, zmq_msg_data(&f), sizeof event);
    bool more = zmq_msg_more(&f);
    zmq_msg_close(&f);
    while (more) {
      zmq_msg_init(&f);
      more = zmq_msg_recv(&f, monitor, 0) >= 0 && zmq_msg_more(&f);
      zmq_msg_close(&f);
    }
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
        || event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
        || event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
      failures++;
  }
}
