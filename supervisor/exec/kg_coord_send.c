/*  kg_coord_send: what the coordinator says to the nodes (contracts in
    kg_coord_priv.h): one message, every node, the decision file, the end
    of the job, and the ports a start names. Below its decision files
    (kg_coord_join.c, kg_coord_decide.c) and its process (kg_coord.c),
    which all send through it; it calls none of them. */
#include "kg_coord_priv.h"

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_log.h"

void
kg_coord_send(kg_coord_s *C, int node, const cJSON *msg)
{
  kg_coord_node_t *n = &C->nodes[node];
  if (!n->id_len)
    return;
  char *text = cJSON_PrintUnformatted(msg);
  if (!text)
    return;
  /* Never block the loop on a node that stopped reading. */
  if (zmq_send(C->router, n->id, n->id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
    zmq_send(C->router, text, strlen(text), ZMQ_DONTWAIT);
  if (C->loop)
    kg_loop_sent(C->loop, C->router);   /* the send may have taken the input's edge */
  free(text);
}

void
kg_coord_broadcast(kg_coord_s *C, const cJSON *msg)
{
  for (int i = 0; i < C->nnodes; i++)
    kg_coord_send(C, i, msg);
}

void
kg_coord_write_decision(kg_coord_s *C, const cJSON *decision)
{
  int rc = kg_coord_store_write_decision(C->store, &C->keys, decision);
  if (rc != 0)
    kg_warning("coordinator: cannot write the decision into %s/.kguard/decisions: %s",
               C->ckpt_dir, kg_strerror(rc));
}

int
kg_coord_end(kg_coord_s *C, int code, const char *reason)
{
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "type", "decision");
  cJSON_AddStringToObject(d, "action", "end");
  cJSON_AddNumberToObject(d, "code", code);
  cJSON_AddNumberToObject(d, "gen", C->gen);
  cJSON_AddStringToObject(d, "reason", reason);
  kg_coord_broadcast(C, d);
  kg_coord_write_decision(C, d);
  cJSON_Delete(d);
  return code;
}

void
kg_coord_add_ports(kg_coord_s *C, cJSON *msg)
{
  int port = kg_exec_store_free_port();
  if (port > 0)
    cJSON_AddNumberToObject(msg, "master_port", port);
  if (kg_exec_store_ready(C->rstore))
    cJSON_AddNumberToObject(msg, "store_port", kg_exec_store_port(C->rstore));
}

int64_t
kg_coord_now(const kg_coord_s *C)
{
  return kg_loop_now(C->loop);
}
