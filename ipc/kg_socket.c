/*  kg_socket: the channel sockets of the frontend side and the kernel side.
*/
#include "kg_socket.h"

#include <errno.h>
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
