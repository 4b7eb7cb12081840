/*  kg_coord_decide: a running job's faults and decisions (protocol in
    kg_coord.h). The coordinator waits for every node's report before it
    decides, so the decision sees every incident of the generation. The
    checkpoint commands it runs (list, quarantine) block it; that is fine:
    nodes wait for its decision anyway. */
#include "kg_coord.h"
#include "kg_coord_priv.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_coord_ckpt.h"
#include "kg_coord_rule.h"
#include "kg_exec_rule.h"
#include "kg_exit.h"
#include "kg_incident.h"
#include "kg_log.h"
#include "kg_throughput.h"

/*  The root cause's incident: the report, every other node's as a
    consequence, the policy's verdict. Caller destroys it. */
static kg_incident_t *
s_incident(kg_coord_s *C, int root, bool restart, const char *reason, int64_t delay)
{
  cJSON *rr = C->nodes[root].report;
  const cJSON *fm = cJSON_GetObjectItemCaseSensitive(rr, "fault_ms");
  kg_incident_t *inc = kg_incident_new(kg_clock_wall_ms());
  if (!inc)
    return NULL;
  cJSON *ij = kg_incident_json(inc);
  kg_incident_set_fault_time(inc, cJSON_IsNumber(fm) ? (int64_t) fm->valuedouble : 0);
  cJSON *job = cJSON_AddObjectToObject(ij, "job");
  cJSON_AddNumberToObject(job, "generation", C->gen);
  cJSON_AddItemToObject(job, "root_cause", cJSON_Duplicate(rr, true));
  cJSON *cons = cJSON_AddArrayToObject(job, "consequences");
  for (int i = 0; i < C->nnodes; i++) {
    if (i == root)
      continue;
    kg_coord_node_t *n = &C->nodes[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "node", i);
    cJSON_AddItemToObject(o, "report", n->report ? cJSON_Duplicate(n->report, true)
                                                 : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "failed", n->failed ? cJSON_Duplicate(n->failed, true)
                                                 : cJSON_CreateNull());
    cJSON_AddItemToArray(cons, o);
  }
  kg_incident_set_restarts(inc, kg_policy_restart_count(C->policy));
  kg_incident_set_policy(inc, restart ? "restart" : "give-up", reason, delay);
  return inc;
}

/*  The listing of every rank, an array indexed by rank, from the nodes'
    own listings (node k lists ranks k * nproc ..); NULL when a node could
    not list its ranks. */
static cJSON *
s_merged_listing(kg_coord_s *C, int world)
{
  cJSON *listing = cJSON_CreateArray();
  for (int r = 0; r < world; r++) {
    const kg_coord_node_t *n = &C->nodes[r / C->nproc];
    char key[16];
    snprintf(key, sizeof key, "%d", r);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(n->listing, key);
    if (!n->done && !cJSON_IsArray(rows)) {
      cJSON_Delete(listing);
      return NULL;
    }
    cJSON_AddItemToArray(listing, rows ? cJSON_Duplicate(rows, true) : cJSON_CreateArray());
  }
  return listing;
}

/*  The restart point after the root cause's fault: s*, the newer archives
    quarantined on every rank, each rank's archive, into decision d. When
    checkpoints sealed before the fault exist but no step verifies on every
    rank, d becomes a give-up instead (never a silent start over). Returns
    the exit code the decision carries (0: the job goes on). */
static int
s_restart_point(kg_coord_s *C, int root, cJSON *d, kg_incident_t *inc)
{
  int world = C->nnodes * C->nproc;
  cJSON *rr = C->nodes[root].report;
  const cJSON *ls = cJSON_GetObjectItemCaseSensitive(rr, "last_step");
  const cJSON *fm = cJSON_GetObjectItemCaseSensitive(rr, "fault_ms");
  int64_t fstep = cJSON_IsNumber(ls) ? (int64_t) ls->valuedouble : -1;
  kg_coord_archive_t *a = NULL;
  cJSON *listing = s_merged_listing(C, world);
  if (!listing) {
    char reason[160];
    snprintf(reason, sizeof reason, "a node could not list its ranks' checkpoints (its message "
             "above): infrastructure, the job ends retryable");
    kg_error("coordinator: %s", reason);
    cJSON_AddStringToObject(d, "action", "end");
    cJSON_AddNumberToObject(d, "code", KG_EXEC_EXIT_RETRYABLE);
    cJSON_AddStringToObject(d, "reason", reason);
    return KG_EXEC_EXIT_RETRYABLE;
  }
  int n = kg_coord_ckpt_archives(listing, world, &a);
  bool *fr = calloc(world > 0 ? (size_t) world : 1, sizeof *fr);
  for (int r = root * C->nproc; fr && r < (root + 1) * C->nproc; r++)
    fr[r] = true;
  int64_t s = kg_coord_pick_step(a, n, world, fstep, fr,
                                 cJSON_IsNumber(fm) ? (int64_t) fm->valuedouble : INT64_MAX);
  free(fr);
  free(a);
  char why[1024];
  int unusable = s < 0 ? kg_coord_ckpt_unusable(listing, world, fstep, why, sizeof why) : 0;
  int code = 0;
  if (unusable > 0) {
    char reason[1400];
    snprintf(reason, sizeof reason, "%d checkpoint(s) sealed before the fault exist, but no "
             "step verifies on every rank (first: %s): the job does not start over and lose "
             "them; make every node verify them (keys), or move them away to start over",
             unusable, why);
    kg_error("coordinator: %s", reason);
    cJSON_AddStringToObject(d, "action", "give-up");
    cJSON_AddNumberToObject(d, "code", KG_EXEC_EXIT_GAVE_UP);
    cJSON_AddStringToObject(d, "reason", reason);
    kg_incident_set_policy(inc, "give-up", reason, 0);
    code = KG_EXEC_EXIT_GAVE_UP;
  } else {
    /* Every node moves its own ranks' newer archives and snapshots to
       quarantine, and restores each rank from memory or disk. */
    kg_coord_ckpt_add_restore(d, listing, world, s, true);
    cJSON_AddStringToObject(d, "action", "restart");
    kg_coord_add_ports(C, d);
    if (s >= 0)
      kg_notice("coordinator: generation %d resumes from step %lld", C->gen + 1, (long long) s);
    else
      kg_notice("coordinator: generation %d starts over (no checkpoint sealed before the "
                "fault)", C->gen + 1);
  }
  cJSON_ReplaceItemInObject(kg_incident_json(inc), "checkpoint", cJSON_Duplicate(d, true));
  cJSON_Delete(listing);
  return code;
}

/*  Node k's GPU needs a reset: the job ends with 200 on every node (run it
    again on other hardware), never restarted on that GPU; the incident
    names the node to drain and the GPU. Returns the exit code. */
static int
s_drain(kg_coord_s *C, int k)
{
  const cJSON *rr = C->nodes[k].report;
  const cJSON *gh = cJSON_GetObjectItemCaseSensitive(rr, "gpu_health");
  const cJSON *line = cJSON_GetObjectItemCaseSensitive(gh, "line");
  const cJSON *host = cJSON_GetObjectItemCaseSensitive(rr, "host");
  char reason[768];
  snprintf(reason, sizeof reason, "drain node %d%s%s%s: %.600s", k,
           cJSON_IsString(host) ? " (host " : "", cJSON_IsString(host) ? host->valuestring : "",
           cJSON_IsString(host) ? ")" : "",
           cJSON_IsString(line) ? line->valuestring : "a GPU needs a reset");
  kg_error("coordinator: %s; the job ends with %d so the scheduler runs it on other hardware "
           "(no restart on this GPU)", reason, KG_EXEC_EXIT_RETRYABLE);
  kg_incident_t *inc = s_incident(C, k, false, reason, 0);
  if (inc) {
    kg_incident_set_policy(inc, "hardware", reason, 0);
    cJSON *ij = kg_incident_json(inc);
    cJSON_AddStringToObject(ij, "action", "drain this node");
    cJSON_AddNumberToObject(ij, "drain_node", k);
    if (cJSON_IsString(host))
      cJSON_AddStringToObject(ij, "drain_host", host->valuestring);
    if (gh)
      cJSON_AddItemToObject(ij, "gpu_health", cJSON_Duplicate(gh, true));
    char idir[PATH_MAX + 16];
    snprintf(idir, sizeof idir, "%s/incidents", C->state_dir);
    kg_incident_write(inc, idir, NULL);
    kg_incident_destroy(&inc);
  }
  /* kg_coord_end's decision, with the node to drain named apart so that
     every node's exit summary says it. */
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "type", "decision");
  cJSON_AddStringToObject(d, "action", "end");
  cJSON_AddNumberToObject(d, "code", KG_EXEC_EXIT_RETRYABLE);
  cJSON_AddNumberToObject(d, "gen", C->gen);
  cJSON_AddStringToObject(d, "reason", reason);
  cJSON *dr = cJSON_AddObjectToObject(d, "drain");
  cJSON_AddNumberToObject(dr, "node", k);
  if (cJSON_IsString(host))
    cJSON_AddStringToObject(dr, "host", host->valuestring);
  kg_coord_broadcast(C, d);
  kg_coord_write_decision(C, d);
  cJSON_Delete(d);
  return KG_EXEC_EXIT_RETRYABLE;
}

/*  The nodes' reports as the pure rules read them: *root the root cause
    (-1: no sticky fault), *drain the node whose GPU needs a reset (-1
    none). Returns 0, or KG_EXIT_SYSTEM without memory. */
static int
s_judge_reports(kg_coord_s *C, int *root, int *drain)
{
  size_t nn = C->nnodes > 0 ? (size_t) C->nnodes : 1;
  kg_coord_report_t *rep = calloc(nn, sizeof *rep);
  if (!rep)
    return KG_EXIT_SYSTEM;
  for (int i = 0; i < C->nnodes; i++) {
    cJSON *r = C->nodes[i].report;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "fault_ms");
    rep[i].sticky = r != NULL;
    rep[i].fault_ms = cJSON_IsNumber(t) ? (int64_t) t->valuedouble : INT64_MAX;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(r, "gpu_health"), "verdict");
    rep[i].needs_reset = cJSON_IsString(v) && strcmp(v->valuestring, "needs-reset") == 0;
  }
  *root = kg_coord_root(rep, C->nnodes);
  *drain = kg_coord_drain(rep, C->nnodes, *root);
  free(rep);
  return 0;
}

/*  The decision's record of the root cause's node (its host, family, line
    and rank as its report gave them) under d's "root". */
static void
s_add_root(cJSON *d, int root, const cJSON *rr)
{
  cJSON *rootj = cJSON_AddObjectToObject(d, "root");
  cJSON_AddNumberToObject(rootj, "node", root);
  const char *keys[] = {"host", "family", "line", "rank", NULL};
  for (int k = 0; keys[k]; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rr, keys[k]);
    if (v)
      cJSON_AddItemToObject(rootj, keys[k], cJSON_Duplicate(v, true));
  }
}

/*  A generation decided: every node's reports forgotten, their silence
    counted from now (the coordinator was busy, not the nodes). */
static void
s_next_generation(kg_coord_s *C, int64_t now)
{
  C->gen++;
  for (int i = 0; i < C->nnodes; i++) {
    C->nodes[i].stopped = false;
    C->nodes[i].seen_ms = now;
    cJSON_Delete(C->nodes[i].report);
    cJSON_Delete(C->nodes[i].failed);
    cJSON_Delete(C->nodes[i].listing);
    C->nodes[i].report = C->nodes[i].failed = C->nodes[i].listing = NULL;
  }
}

/*  Every node stopped (or finished): decide for the job. Returns the exit
    code when the job ends, 0 when it goes on. */
static int
s_decide(kg_coord_s *C)
{
  int root, drain;
  if (s_judge_reports(C, &root, &drain) != 0)
    return KG_EXIT_SYSTEM;
  if (C->preempted)
    return kg_coord_end(C, KG_EXEC_EXIT_RETRYABLE, "a node was pre-empted");
  if (drain >= 0)
    return s_drain(C, drain);
  if (root < 0) {
    /* No sticky fault anywhere: the command's own failure ends the job. */
    int code = 1;
    for (int i = 0; i < C->nnodes; i++) {
      const cJSON *c = cJSON_GetObjectItemCaseSensitive(C->nodes[i].failed, "code");
      if (cJSON_IsNumber(c)) {
        code = c->valueint;
        break;
      }
    }
    return kg_coord_end(C, code, "the command failed, no sticky GPU fault");
  }
  cJSON *rr = C->nodes[root].report;
  const cJSON *sig = cJSON_GetObjectItemCaseSensitive(rr, "signature");
  const cJSON *line = cJSON_GetObjectItemCaseSensitive(rr, "line");
  int64_t delay = 0;
  const char *reason = NULL;
  kg_policy_action_t act = kg_policy_decide(C->policy, kg_coord_now(C),
                                            cJSON_IsString(sig) ? sig->valuestring : NULL,
                                            &delay, &reason);
  const char *signature = cJSON_IsString(sig) ? sig->valuestring : "";
  delay = kg_exec_backoff(delay, C->last_signature, signature);
  snprintf(C->last_signature, sizeof C->last_signature, "%s", signature);
  kg_notice("coordinator: root cause on node %d: %s", root,
            cJSON_IsString(line) ? line->valuestring : "?");
  kg_incident_t *inc = s_incident(C, root, act == KG_POLICY_RESTART, reason, delay);
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "type", "decision");
  cJSON_AddNumberToObject(d, "gen", C->gen + 1);
  cJSON_AddStringToObject(d, "incident", inc ? kg_incident_id(inc) : "");
  cJSON_AddNumberToObject(d, "delay_ms", (double) delay);
  s_add_root(d, root, rr);
  int exit_code;
  if (act == KG_POLICY_GIVE_UP || !inc) {
    cJSON_AddStringToObject(d, "action", "give-up");
    cJSON_AddNumberToObject(d, "code", KG_EXEC_EXIT_GAVE_UP);
    exit_code = KG_EXEC_EXIT_GAVE_UP;
  } else {
    exit_code = s_restart_point(C, root, d, inc);
  }
  if (inc) {
    char idir[PATH_MAX + 16];
    snprintf(idir, sizeof idir, "%s/incidents", C->state_dir);
    kg_incident_write(inc, idir, NULL);
    kg_incident_destroy(&inc);
  }
  kg_coord_write_decision(C, d);
  kg_coord_broadcast(C, d);
  cJSON_Delete(d);
  int64_t now = kg_coord_now(C);
  s_next_generation(C, now);
  if (exit_code == 0)
    kg_fsm_post(C->fsm, KG_COORD_EV_RESUMED, 0, now);
  return exit_code;   /* 0: the job goes on */
}

/*  Every node listed its ranks' checkpoints at the start: agree where the
    job starts, as after a fault but with no fault, no incident and no
    restart counted. The decision is not written to the shared directory:
    it starts no generation. Once it is sent, CHOSEN: the job runs.
    Returns an exit code when the job ends, -1 while it goes on. */
static int
s_start_decision(kg_coord_s *C)
{
  int world = C->nnodes * C->nproc, fresh_node = -1;
  for (int i = 0; i < C->nnodes && fresh_node < 0; i++)
    if (C->nodes[i].fresh)
      fresh_node = i;
  cJSON *listing = fresh_node >= 0 ? cJSON_CreateArray() : s_merged_listing(C, world);
  if (!listing)
    return kg_coord_end(C, KG_EXEC_EXIT_RETRYABLE, "a node could not list its ranks' "
                        "checkpoints (its message above): infrastructure, the job ends "
                        "retryable");
  int64_t s;
  char line[1600];
  kg_coord_start_t v = kg_coord_ckpt_start(listing, world, C->nnodes,
                                           C->run[0] ? C->run : "?",
                                           fresh_node, &s, line, sizeof line);
  int code = -1;
  if (v == KG_COORD_START_UNVERIFIED) {
    kg_error("coordinator: %s", line);
    code = kg_coord_end(C, KG_EXEC_EXIT_GAVE_UP, line);
  } else {
    kg_notice("coordinator: %s", line);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "type", "decision");
    cJSON_AddStringToObject(d, "action", "restart");
    cJSON_AddBoolToObject(d, "start", true);
    cJSON_AddNumberToObject(d, "gen", C->gen);
    cJSON_AddNumberToObject(d, "delay_ms", 0);
    cJSON_AddStringToObject(d, "reason", line);
    kg_coord_add_ports(C, d);
    if (s >= 0) {
      /* The id the nodes quarantine newer archives under and restore into:
         one per start, so that a requeue never meets the last one's. */
      char id[48];
      snprintf(id, sizeof id, "exec-start-%lld", (long long) kg_clock_wall_ms());
      cJSON_AddStringToObject(d, "incident", id);
    }
    kg_coord_ckpt_add_restore(d, listing, world, s, s >= 0);
    kg_coord_broadcast(C, d);
    cJSON_Delete(d);
  }
  cJSON_Delete(listing);
  int64_t now = kg_coord_now(C);   /* the coordinator was busy, not the nodes */
  for (int i = 0; i < C->nnodes; i++) {
    C->nodes[i].stopped = false;
    C->nodes[i].seen_ms = now;
    cJSON_Delete(C->nodes[i].listing);
    C->nodes[i].listing = NULL;
  }
  if (code < 0)
    kg_fsm_post(C->fsm, KG_COORD_EV_CHOSEN, 0, now);
  return code;
}

int
kg_coord_start_listed(kg_coord_s *C, int k, const cJSON *m)
{
  kg_coord_node_t *n = &C->nodes[k];
  const cJSON *l = cJSON_GetObjectItemCaseSensitive(m, "listing");
  cJSON_Delete(n->listing);
  n->listing = cJSON_IsObject(l) ? cJSON_Duplicate(l, true) : NULL;
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(m, "run");
  if (k == 0 && cJSON_IsString(run))   /* node 0's name says the run */
    snprintf(C->run, sizeof C->run, "%s", run->valuestring);
  n->fresh = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "fresh"));
  n->stopped = true;
  for (int i = 0; i < C->nnodes; i++)
    if (!C->nodes[i].stopped)
      return -1;
  return s_start_decision(C);
}

/*  A report that stops this generation (ignored once it stops). */
static void
s_stop_all(kg_coord_s *C, int by)
{
  kg_fsm_post(C->fsm, KG_COORD_EV_STOP, by, kg_coord_now(C));
}

void
kg_coord_stop_all(kg_coord_s *C, int by)
{
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "type", "stop");
  cJSON_AddNumberToObject(m, "gen", C->gen);
  cJSON_AddNumberToObject(m, "by", by);
  kg_coord_broadcast(C, m);
  cJSON_Delete(m);
}

int
kg_coord_run_message(kg_coord_s *C, int k, const char *t, const cJSON *m)
{
  kg_coord_node_t *n = &C->nodes[k];
  /* The nodes list their ranks' checkpoints: their "stopped" carries it. */
  bool choosing = kg_fsm_state(C->fsm) == KG_COORD_CHOOSING;
  int rc = -1;
  if (strcmp(t, "fault") == 0) {
    cJSON_Delete(n->report);
    n->report = cJSON_Duplicate(m, true);
    s_stop_all(C, k);
  } else if (strcmp(t, "failed") == 0) {
    cJSON_Delete(n->failed);
    n->failed = cJSON_Duplicate(m, true);
    s_stop_all(C, k);
  } else if (strcmp(t, "preempted") == 0 && choosing) {
    /* Its listing will not come: nothing ran yet, nothing to stop. */
    rc = kg_coord_end(C, KG_EXEC_EXIT_RETRYABLE, "a node was pre-empted before the job "
                      "started");
  } else if (strcmp(t, "preempted") == 0) {
    C->preempted = true;
    s_stop_all(C, k);
  } else if (strcmp(t, "stopped") == 0 && choosing) {
    rc = kg_coord_start_listed(C, k, m);
  } else if (strcmp(t, "stopped") == 0) {
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "report");
    if (cJSON_IsObject(r) && !n->report)
      n->report = cJSON_Duplicate(r, true);
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(m, "listing");
    cJSON_Delete(n->listing);
    n->listing = cJSON_IsObject(l) ? cJSON_Duplicate(l, true) : NULL;
    n->stopped = true;
    s_stop_all(C, k);
    bool all = true;
    for (int i = 0; i < C->nnodes; i++)
      all = all && (C->nodes[i].stopped || C->nodes[i].done);
    if (all) {
      int code = s_decide(C);
      if (code != 0)
        rc = code;
    }
  } else if (strcmp(t, "done") == 0) {
    n->done = true;
    bool all = true;
    for (int i = 0; i < C->nnodes; i++)
      all = all && C->nodes[i].done;
    if (all)
      rc = 0;
  } else {
    kg_info("coordinator: %s from node %d ignored", t, k);
  }
  return rc;
}

int
kg_coord_check_lost(kg_coord_s *C, int64_t now)
{
  if (kg_fsm_state(C->fsm) == KG_COORD_JOINING)
    return -1;   /* the join deadline rules until then */
  for (int i = 0; i < C->nnodes; i++) {
    kg_coord_node_t *n = &C->nodes[i];
    if (!n->id_len || n->done || now - n->seen_ms <= C->heartbeat_ms)
      continue;
    char why[128], quiet[32];
    snprintf(why, sizeof why, "node %d lost (no message for %s): infrastructure, "
             "not a GPU fault", i, kg_throughput_duration(now - n->seen_ms, quiet, sizeof quiet));
    kg_error("coordinator: %s; the job ends retryable", why);
    n->id_len = 0;   /* no more sends to it */
    return kg_coord_end(C, KG_EXEC_EXIT_RETRYABLE, why);
  }
  return -1;
}
