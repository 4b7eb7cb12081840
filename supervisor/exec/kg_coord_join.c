/*  kg_coord_join: nodes joining a multi-node job (protocol in kg_coord.h).

    The job starts only when every node said hello (same ranks per node),
    sees the shared checkpoint directory, sealed a key probe there, and
    verified every node's probe with its own keys: a node that could not
    verify another's archives could not resume from them after a fault,
    so that is refused at the start, naming the key, rather than found out
    as a silent start over. Until then the join deadline runs; a failed
    CURVE handshake (a node with another secret) shortens it to the
    heartbeat timeout. */
#include "kg_coord.h"
#include "kg_coord_priv.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kg_exec_rule.h"
#include "kg_exit.h"
#include "kg_log.h"

static bool
s_all(const kg_coord_s *C, size_t field)
{
  for (int i = 0; i < C->nnodes; i++)
    if (!*(const bool *) ((const char *) &C->nodes[i] + field))
      return false;
  return true;
}

static void
s_send_type(kg_coord_s *C, int node, const char *type, cJSON *m)
{
  cJSON_AddStringToObject(m, "type", type);
  cJSON_AddNumberToObject(m, "gen", C->gen);
  if (node < 0)
    kg_coord_broadcast(C, m);
  else
    kg_coord_send(C, node, m);
  cJSON_Delete(m);
}

/*  Every node checked: start, or end naming what one node cannot verify. */
static int
s_all_checked(kg_coord_s *C)
{
  for (int i = 0; i < C->nnodes; i++) {
    const cJSON *p = cJSON_GetArrayItem(C->nodes[i].problems, 0);
    if (!p)
      continue;
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(p, "node");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(p, "reason");
    char reason[1024];
    snprintf(reason, sizeof reason,
             "node %d cannot verify the checkpoints node %d signs (%s): after a fault no "
             "node could resume from them. Give every node the same checkpoint signing key "
             "(the ckpt-ed25519.* files of KGUARD_KEY_DIR), or make every node trust every "
             "node's public key", i, cJSON_IsNumber(of) ? of->valueint : -1,
             cJSON_IsString(why) ? why->valuestring : "no reason given");
    kg_error("coordinator: %s", reason);
    return kg_coord_end(C, KG_EXIT_USAGE, reason);
  }
  kg_fsm_post(C->fsm, KG_COORD_EV_CHECKED, 0, kg_coord_now(C));
  return -1;
}

void
kg_coord_join_start(kg_coord_s *C)
{
  int64_t now = kg_fsm_now(C->fsm);
  for (int i = 0; i < C->nnodes; i++)
    C->nodes[i].seen_ms = now;
  cJSON *m = cJSON_CreateObject();
  kg_coord_add_ports(C, m);
  kg_notice("coordinator: every node joined and verifies every node's checkpoints: "
            "generation %d starts from the newest step every node verifies", C->gen);
  s_send_type(C, -1, "start", m);
}

int
kg_coord_join_message(kg_coord_s *C, int k, const char *t, const cJSON *msg, bool *handled)
{
  kg_coord_node_t *n = &C->nodes[k];
  *handled = true;
  if (strcmp(t, "hello") == 0) {
    if (kg_fsm_state(C->fsm) != KG_COORD_JOINING) {
      char why[160];
      snprintf(why, sizeof why, "node %d joined again while the job ran (its kguard started "
               "anew)", k);
      kg_error("coordinator: %s; the job ends retryable", why);
      return kg_coord_end(C, KG_EXEC_EXIT_RETRYABLE, why);
    }
    const cJSON *np = cJSON_GetObjectItemCaseSensitive(msg, "nproc");
    if (cJSON_IsNumber(np) && np->valueint != C->nproc) {
      char why[200];
      snprintf(why, sizeof why, "node %d runs %d ranks, node 0 runs %d: every node needs the "
               "same --nproc-per-node", k, np->valueint, C->nproc);
      kg_error("coordinator: %s", why);
      return kg_coord_end(C, KG_EXIT_USAGE, why);
    }
    n->hello = true;
    cJSON *w = cJSON_CreateObject();
    cJSON_AddStringToObject(w, "nonce", C->nonce);
    s_send_type(C, k, "welcome", w);
  } else if (strcmp(t, "refused") == 0) {
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(msg, "reason");
    char reason[700];
    snprintf(reason, sizeof reason, "node %d cannot take part: %s", k,
             cJSON_IsString(why) ? why->valuestring : "no reason given");
    kg_error("coordinator: %s", reason);
    return kg_coord_end(C, KG_EXIT_USAGE, reason);
  } else if (strcmp(t, "joined") == 0) {
    n->joined = true;
    if (s_all(C, offsetof(kg_coord_node_t, joined)))
      s_send_type(C, -1, "check", cJSON_CreateObject());
  } else if (strcmp(t, "checked") == 0) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(msg, "problems");
    cJSON_Delete(n->problems);
    n->problems = cJSON_IsArray(p) ? cJSON_Duplicate(p, true) : NULL;
    n->checked = true;
    if (kg_fsm_state(C->fsm) == KG_COORD_JOINING
        && s_all(C, offsetof(kg_coord_node_t, checked)))
      return s_all_checked(C);
  } else {
    *handled = false;
  }
  return -1;
}

int
kg_coord_join_timeout(kg_coord_s *C)
{
  /* The nodes that never joined; when every node did, the ones that did
     not finish checking. */
  bool all_joined = s_all(C, offsetof(kg_coord_node_t, joined));
  char missing[256] = "";
  size_t len = 0;
  for (int i = 0; i < C->nnodes && len < sizeof missing - 16; i++)
    if (all_joined ? !C->nodes[i].checked : !C->nodes[i].joined)
      len += (size_t) snprintf(missing + len, sizeof missing - len, "%s%d", len ? ", " : "", i);
  char why[700];
  int code = C->handshake_failures ? KG_EXIT_USAGE : KG_EXEC_EXIT_RETRYABLE;
  if (C->handshake_failures)
    snprintf(why, sizeof why, "node(s) %s did not join, and %lu connection(s) to the "
             "coordinator failed the CURVE handshake: a node was started with another --secret "
             "file than node 0 (every node needs a copy of the same file)", missing,
             C->handshake_failures);
  else
    snprintf(why, sizeof why, "node(s) %s did not join within %lld s (--join-timeout)",
             missing, (long long) (C->join_timeout_ms / 1000));
  kg_error("coordinator: %s; the job ends", why);
  return kg_coord_end(C, code, why);
}

void
kg_coord_handshake_failed(kg_coord_s *C, int64_t now)
{
  C->handshake_failures++;
  if (kg_ratelog_note(C->refusals, 0, now) == KG_RATELOG_FULL)
    kg_warning("coordinator: a connection failed the CURVE handshake: it does not hold this "
               "job's secret (a node started with another --secret file?)");
  /* Evidence of a misconfigured node: wait for the missing ones no longer
     than the heartbeat rule would. */
  if (kg_fsm_state(C->fsm) == KG_COORD_JOINING
      && kg_fsm_deadline(C->fsm) > now + C->heartbeat_ms)
    kg_fsm_set_deadline(C->fsm, now + C->heartbeat_ms);
}
