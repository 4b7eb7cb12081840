/*  kg_ipc_peer: a small program the jupyter_client interop test drives.

      kg_ipc_peer echo CONNFILE REPLY_KEY
        Load CONNFILE (written by jupyter_client), connect a DEALER with
        routing id "kguard-peer" to its shell endpoint, send a "peer_hello"
        made by kg_msg_new signed with REPLY_KEY, then for each message:
        verify it with the connection file's key (replay history 65536) and
        relay it back unchanged but re-signed with REPLY_KEY, as kguard's
        relay does. A message that fails gets a "peer_error" reply whose
        content.error is the kg_errname of the failure; "peer_quit" gets
        "peer_bye" and ends the program (exit 0).
      kg_ipc_peer save PATH IP
        Write an ipc connection file (ports 1..5, random key) to PATH.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_conninfo.h"
#include "kg_error.h"
#include "kg_msg.h"
#include "kg_socket.h"

static int
s_reply(void *sock, kg_signer_t *signer, kg_msg_t *parent, const char *type,
        const char *key, const char *value)
{
  cJSON *content = cJSON_CreateObject();
  if (key)
    cJSON_AddStringToObject(content, key, value);
  kg_msg_t *m = kg_msg_new(type, "peer-session",
                           parent ? kg_msg_json(parent, KG_PART_HEADER) : NULL, &content);
  if (!m)
    return KG_ENOMEM;
  int rc = kg_msg_send(m, sock, signer, 0);
  kg_msg_destroy(&m);
  return rc;
}

static int
s_echo(const char *connfile, const char *reply_key)
{
  kg_conninfo_t *ci = kg_conninfo_new();
  char err[256];
  int rc = kg_conninfo_load(ci, connfile, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "kg_ipc_peer: %s: %s\n", kg_errname(rc), err);
    return 2;
  }
  kg_signer_t *in = kg_signer_new(ci->key, ci->key_len);
  kg_signer_t *out = kg_signer_new(reply_key, strlen(reply_key));
  void *ctx = zmq_ctx_new();
  void *shell = kg_socket_connect(ctx, ci, KG_CH_SHELL, "kguard-peer", &rc);
  if (!shell)
    return 2;
  rc = s_reply(shell, out, NULL, "peer_hello", "hello", "world");
  int status = 3;
  while (rc == 0) {
    zmq_pollitem_t item = {shell, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 20000) != 1) {
      fprintf(stderr, "kg_ipc_peer: nothing received for 20 s\n");
      break;
    }
    kg_msg_t *m = NULL;
    rc = kg_msg_recv(shell, 0, &m);
    if (rc != 0)
      break;
    int prc = kg_msg_parse(m, in);
    if (prc == 0)
      prc = kg_msg_check_header(m);
    if (prc != 0)
      rc = s_reply(shell, out, NULL, "peer_error", "error", kg_errname(prc));
    else if (strcmp(kg_msg_type(m), "peer_quit") == 0) {
      rc = s_reply(shell, out, m, "peer_bye", NULL, NULL);
      status = rc == 0 ? 0 : 3;
      kg_msg_destroy(&m);
      break;
    }
    else
      rc = kg_msg_send(m, shell, out, 0);
    kg_msg_destroy(&m);
  }
  if (rc != 0)
    fprintf(stderr, "kg_ipc_peer: %s\n", kg_strerror(rc));
  kg_socket_close(&shell);
  zmq_ctx_term(ctx);
  kg_signer_destroy(&in);
  kg_signer_destroy(&out);
  kg_conninfo_destroy(&ci);
  return status;
}

static int
s_save(const char *path, const char *ip)
{
  kg_conninfo_t *ci = kg_conninfo_new();
  strcpy(ci->transport, "ipc");
  snprintf(ci->ip, sizeof ci->ip, "%s", ip);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    ci->ports[ch] = ch + 1;
  strcpy(ci->kernel_name, "kguard-test");
  int rc = kg_conninfo_set_random_key(ci);
  if (rc == 0)
    rc = kg_conninfo_save(ci, path);
  kg_conninfo_destroy(&ci);
  if (rc != 0)
    fprintf(stderr, "kg_ipc_peer: %s\n", kg_strerror(rc));
  return rc == 0 ? 0 : 2;
}

int
main(int argc, char **argv)
{
  if (argc == 4 && strcmp(argv[1], "echo") == 0)
    return s_echo(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "save") == 0)
    return s_save(argv[2], argv[3]);
  fprintf(stderr, "usage: kg_ipc_peer echo CONNFILE REPLY_KEY | save PATH IP\n");
  return 64;
}
