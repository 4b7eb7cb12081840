/*  kg_coord: the coordinator process of a multi-node `kguard exec` job
    (protocol in kg_coord.h). It waits for every node's report before it
    decides, so the decision sees every incident of the generation. The
    checkpoint commands it runs (list, quarantine) block it; that is fine:
    it is its own process and nodes wait for its decision anyway. */
#include "kg_coord.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include <cjson/cJSON.h>

#include "kg_exit.h"
#include "kg_clock.h"
#include "kg_coord_ckpt.h"
#include "kg_coord_keys.h"
#include "kg_coord_rule.h"
#include "kg_coord_store.h"
#include "kg_error.h"
#include "kg_exec_rule.h"
#include "kg_file.h"
#include "kg_incident.h"
#include "kg_log.h"
#include "kg_paths.h"
#include "kg_policy.h"

#define S_MAX_NODES 4096

typedef struct {
  unsigned char id[256];
  size_t id_len;              /* 0: never heard from                         */
  bool stopped, done;
  int64_t seen_ms;            /* monotonic time of its last message          */
  cJSON *report;              /* its fault fields, or NULL                   */
  cJSON *failed;              /* {"status"} when its command failed          */
} s_node_t;

typedef struct {
  const char *bind, *secret, *ckpt_dir, *state_dir;
  int nnodes, nproc, max_restarts;
  int64_t heartbeat_ms;       /* a node silent this long is lost              */
  char exe[PATH_MAX];
  kg_coord_keys_t keys;
  void *ctx, *router, *zap;
  s_node_t *nodes;
  int gen;
  bool stopping;              /* a stop was broadcast for this generation    */
  bool preempted;
  char nonce[65], nonce_name[80];
  kg_coord_store_t *store;    /* CKPT_DIR/.kguard                            */
  kg_policy_t *policy;
} s_coord_t;

/* ---- sending ------------------------------------------------------------ */

static void
s_send(s_coord_t *C, int node, cJSON *msg)
{
  s_node_t *n = &C->nodes[node];
  if (!n->id_len)
    return;
  char *text = cJSON_PrintUnformatted(msg);
  if (!text)
    return;
  zmq_send(C->router, n->id, n->id_len, ZMQ_SNDMORE);
  zmq_send(C->router, text, strlen(text), 0);
  free(text);
}

static void
s_broadcast(s_coord_t *C, cJSON *msg)
{
  for (int i = 0; i < C->nnodes; i++)
    s_send(C, i, msg);
}

/*  Write the decision, MAC'd with the job's key, to shared storage. */
static void
s_write_decision(s_coord_t *C, cJSON *decision)
{
  int rc = kg_coord_store_write_decision(C->store, &C->keys, decision);
  if (rc != 0)
    kg_warning("coordinator: cannot write the decision into %s/.kguard/decisions: %s",
               C->ckpt_dir, kg_strerror(rc));
}

/* ---- the decision ------------------------------------------------------ */

static int
s_decide(s_coord_t *C)
{
  int world = C->nnodes * C->nproc;
  size_t nn = C->nnodes > 0 ? (size_t) C->nnodes : 1;
  kg_coord_report_t *rep = calloc(nn, sizeof *rep);
  if (!rep)
    return KG_EXIT_SYSTEM;
  for (int i = 0; i < C->nnodes; i++) {
    cJSON *r = C->nodes[i].report;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "fault_ms");
    rep[i].sticky = r != NULL;
    rep[i].fault_ms = cJSON_IsNumber(t) ? (int64_t) t->valuedouble : INT64_MAX;
  }
  int root = kg_coord_root(rep, C->nnodes);
  free(rep);
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "type", "decision");
  int exit_code = 0;
  if (C->preempted) {
    cJSON_AddStringToObject(d, "action", "end");
    cJSON_AddNumberToObject(d, "code", KG_EXEC_EXIT_RETRYABLE);
    exit_code = KG_EXEC_EXIT_RETRYABLE;
  } else if (root < 0) {
    /* No sticky fault anywhere: the command's own failure ends the job. */
    int code = 1;
    for (int i = 0; i < C->nnodes; i++) {
      const cJSON *c = cJSON_GetObjectItemCaseSensitive(C->nodes[i].failed, "code");
      if (cJSON_IsNumber(c)) {
        code = c->valueint;
        break;
      }
    }
    cJSON_AddStringToObject(d, "action", "end");
    cJSON_AddNumberToObject(d, "code", code);
    exit_code = code;
  }
  if (root < 0 || C->preempted) {
    cJSON_AddNumberToObject(d, "gen", C->gen);
    s_broadcast(C, d);
    s_write_decision(C, d);
    cJSON_Delete(d);
    return exit_code;
  }
  cJSON *rr = C->nodes[root].report;
  const cJSON *sig = cJSON_GetObjectItemCaseSensitive(rr, "signature");
  const cJSON *ls = cJSON_GetObjectItemCaseSensitive(rr, "last_step");
  const cJSON *fm = cJSON_GetObjectItemCaseSensitive(rr, "fault_ms");
  int64_t delay = 0;
  const char *reason = NULL;
  kg_policy_action_t act = kg_policy_decide(C->policy, kg_clock_mono_ms(),
                                            cJSON_IsString(sig) ? sig->valuestring : NULL,
                                            &delay, &reason);
  kg_incident_t *inc = kg_incident_new(kg_clock_wall_ms());
  cJSON *ij = kg_incident_json(inc);
  kg_incident_set_fault_time(inc, cJSON_IsNumber(fm) ? (int64_t) fm->valuedouble : 0);
  cJSON *job = cJSON_AddObjectToObject(ij, "job");
  cJSON_AddNumberToObject(job, "generation", C->gen);
  cJSON_AddItemToObject(job, "root_cause", cJSON_Duplicate(rr, true));
  cJSON *cons = cJSON_AddArrayToObject(job, "consequences");
  for (int i = 0; i < C->nnodes; i++) {
    if (i == root)
      continue;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "node", i);
    cJSON_AddItemToObject(o, "report", C->nodes[i].report ? cJSON_Duplicate(C->nodes[i].report, true)
                                                           : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "failed", C->nodes[i].failed ? cJSON_Duplicate(C->nodes[i].failed, true)
                                                           : cJSON_CreateNull());
    cJSON_AddItemToArray(cons, o);
  }
  kg_incident_set_restarts(inc, kg_policy_restart_count(C->policy));
  kg_incident_set_policy(inc, act == KG_POLICY_RESTART ? "restart" : "give-up", reason, delay);
  cJSON_AddNumberToObject(d, "gen", C->gen + 1);
  cJSON_AddStringToObject(d, "incident", kg_incident_id(inc));
  cJSON *rootj = cJSON_AddObjectToObject(d, "root");
  cJSON_AddNumberToObject(rootj, "node", root);
  const char *keys[] = {"host", "family", "line", "rank", NULL};
  for (int k = 0; keys[k]; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rr, keys[k]);
    if (v)
      cJSON_AddItemToObject(rootj, keys[k], cJSON_Duplicate(v, true));
  }
  kg_notice("coordinator: root cause on node %d: %s", root,
            cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rr, "line"))
            ? cJSON_GetObjectItemCaseSensitive(rr, "line")->valuestring : "?");
  if (act == KG_POLICY_GIVE_UP) {
    cJSON_AddStringToObject(d, "action", "give-up");
    cJSON_AddNumberToObject(d, "code", KG_EXEC_EXIT_GAVE_UP);
    exit_code = KG_EXEC_EXIT_GAVE_UP;
  } else {
    kg_coord_archive_t *a = NULL;
    cJSON *listing = kg_coord_ckpt_listing(C->exe, C->ckpt_dir, world);
    int n = kg_coord_ckpt_archives(listing, world, &a);
    bool *fr = calloc(world > 0 ? (size_t) world : 1, sizeof *fr);
    for (int r = root * C->nproc; fr && r < (root + 1) * C->nproc; r++)
      fr[r] = true;
    int64_t s = kg_coord_pick_step(a, n, world, cJSON_IsNumber(ls) ? (int64_t) ls->valuedouble : -1,
                                   fr, cJSON_IsNumber(fm) ? (int64_t) fm->valuedouble : INT64_MAX);
    kg_coord_ckpt_quarantine(C->exe, C->ckpt_dir, listing, world, s, kg_incident_id(inc));
    cJSON_AddStringToObject(d, "action", "restart");
    cJSON_AddNumberToObject(d, "delay_ms", (double) delay);
    cJSON *arch = cJSON_AddObjectToObject(d, "archives");
    if (s >= 0) {
      cJSON_AddNumberToObject(d, "step", (double) s);
      for (int r = 0; r < world; r++) {
        char key[16];
        snprintf(key, sizeof key, "%d", r);
        const char *p = kg_coord_ckpt_archive(listing, world, r, s);
        cJSON_AddItemToObject(arch, key, p ? cJSON_CreateString(p) : cJSON_CreateNull());
      }
    } else {
      cJSON_AddNullToObject(d, "step");
    }
    kg_notice("coordinator: generation %d resumes from step %lld", C->gen + 1, (long long) s);
    cJSON_ReplaceItemInObject(ij, "checkpoint", cJSON_Duplicate(d, true));
    free(fr);
    free(a);
    cJSON_Delete(listing);
  }
  char idir[PATH_MAX + 16];
  snprintf(idir, sizeof idir, "%s/incidents", C->state_dir);
  kg_incident_write(inc, idir, NULL);
  kg_incident_destroy(&inc);
  s_write_decision(C, d);
  s_broadcast(C, d);
  cJSON_Delete(d);
  C->gen++;
  C->stopping = false;
  int64_t now = kg_clock_mono_ms();   /* the coordinator was busy, not the nodes */
  for (int i = 0; i < C->nnodes; i++) {
    C->nodes[i].stopped = false;
    C->nodes[i].seen_ms = now;
    cJSON_Delete(C->nodes[i].report);
    cJSON_Delete(C->nodes[i].failed);
    C->nodes[i].report = C->nodes[i].failed = NULL;
  }
  return exit_code;   /* 0: the job goes on */
}

/* ---- receiving ---------------------------------------------------------- */

static void
s_stop_all(s_coord_t *C, int by)
{
  if (C->stopping)
    return;
  C->stopping = true;
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "type", "stop");
  cJSON_AddNumberToObject(m, "gen", C->gen);
  cJSON_AddNumberToObject(m, "by", by);
  s_broadcast(C, m);
  cJSON_Delete(m);
}

/*  One message from a node. Returns an exit code when the job is over, -1
    while it goes on. */
static int
s_on_message(s_coord_t *C, const unsigned char *id, size_t id_len, const char *text, size_t len)
{
  cJSON *m = cJSON_ParseWithLength(text, len);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
  const cJSON *node = cJSON_GetObjectItemCaseSensitive(m, "node");
  if (!cJSON_IsString(type) || !cJSON_IsNumber(node) || node->valueint < 0
      || node->valueint >= C->nnodes || id_len > sizeof C->nodes[0].id) {
    kg_warning("coordinator: malformed message ignored");
    cJSON_Delete(m);
    return -1;
  }
  int k = node->valueint;
  s_node_t *n = &C->nodes[k];
  memcpy(n->id, id, id_len);
  n->id_len = id_len;
  n->seen_ms = kg_clock_mono_ms();
  const char *t = type->valuestring;
  int rc = -1;
  if (strcmp(t, "beat") == 0) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "beat");
    s_send(C, k, b);
    cJSON_Delete(b);
    cJSON_Delete(m);
    return -1;
  }
  kg_info("coordinator: %s from node %d", t, k);
  if (strcmp(t, "hello") == 0) {
    cJSON *w = cJSON_CreateObject();
    cJSON_AddStringToObject(w, "type", "welcome");
    cJSON_AddNumberToObject(w, "gen", C->gen);
    cJSON_AddStringToObject(w, "nonce", C->nonce);
    s_send(C, k, w);
    cJSON_Delete(w);
  } else if (strcmp(t, "fault") == 0) {
    cJSON_Delete(n->report);
    n->report = cJSON_Duplicate(m, true);
    s_stop_all(C, k);
  } else if (strcmp(t, "failed") == 0) {
    cJSON_Delete(n->failed);
    n->failed = cJSON_Duplicate(m, true);
    s_stop_all(C, k);
  } else if (strcmp(t, "preempted") == 0) {
    C->preempted = true;
    s_stop_all(C, k);
  } else if (strcmp(t, "stopped") == 0) {
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "report");
    if (cJSON_IsObject(r) && !n->report)
      n->report = cJSON_Duplicate(r, true);
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
  }
  cJSON_Delete(m);
  return rc;
}

/*  ZAP: admit only the job's node key over CURVE. */
static void
s_zap(s_coord_t *C)
{
  zmq_msg_t f[7];
  int n = 0;
  for (; n < 7; n++) {
    zmq_msg_init(&f[n]);
    if (zmq_msg_recv(&f[n], C->zap, 0) < 0)
      break;
    if (!zmq_msg_more(&f[n])) {
      n++;
      break;
    }
  }
  bool ok = n >= 7 && zmq_msg_size(&f[5]) == 5 && memcmp(zmq_msg_data(&f[5]), "CURVE", 5) == 0
            && zmq_msg_size(&f[6]) == 32
            && sodium_memcmp(zmq_msg_data(&f[6]), C->keys.client_public_raw, 32) == 0;
  if (!ok)
    kg_warning("coordinator: a connection without the job's key was refused");
  const char *code = ok ? "200" : "400";
  zmq_send(C->zap, "1.0", 3, ZMQ_SNDMORE);
  zmq_send(C->zap, n > 1 ? zmq_msg_data(&f[1]) : "", n > 1 ? zmq_msg_size(&f[1]) : 0,
           ZMQ_SNDMORE);
  zmq_send(C->zap, code, 3, ZMQ_SNDMORE);
  zmq_send(C->zap, ok ? "OK" : "no", 2, ZMQ_SNDMORE);
  zmq_send(C->zap, ok ? "node" : "", ok ? 4 : 0, ZMQ_SNDMORE);
  zmq_send(C->zap, "", 0, 0);
  while (n < 7 && zmq_msg_more(&f[n > 0 ? n - 1 : 0])) {   /* drain a longer request */
    zmq_msg_t x;
    zmq_msg_init(&x);
    if (zmq_msg_recv(&x, C->zap, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&x);
      break;
    }
    zmq_msg_close(&x);
  }
  for (int i = 0; i < n && i < 7; i++)
    zmq_msg_close(&f[i]);
}

/*  A node that said hello and fell silent for the heartbeat timeout is
    lost (its host, or the network to it): the job ends retryable, an
    infrastructure failure, not a GPU one. Returns the exit code, or -1. */
static int
s_check_lost(s_coord_t *C)
{
  int64_t now = kg_clock_mono_ms();
  for (int i = 0; i < C->nnodes; i++) {
    s_node_t *n = &C->nodes[i];
    if (!n->id_len || n->done || now - n->seen_ms <= C->heartbeat_ms)
      continue;
    char why[128];
    snprintf(why, sizeof why, "node %d lost (no message for %lld ms): infrastructure, "
             "not a GPU fault", i, (long long) (now - n->seen_ms));
    kg_error("coordinator: %s; the job ends retryable", why);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "type", "decision");
    cJSON_AddStringToObject(d, "action", "end");
    cJSON_AddNumberToObject(d, "code", KG_EXEC_EXIT_RETRYABLE);
    cJSON_AddNumberToObject(d, "gen", C->gen);
    cJSON_AddStringToObject(d, "reason", why);
    n->id_len = 0;   /* no more sends to it */
    s_broadcast(C, d);
    s_write_decision(C, d);
    cJSON_Delete(d);
    return KG_EXEC_EXIT_RETRYABLE;
  }
  return -1;
}

/*  Listen on HOST:PORT of --bind: every address HOST resolves to (never
    every interface unless HOST is "*" or 0.0.0.0 or ::). Writes what it
    listens on into where. Returns 0, or -1 after an error naming the
    problem (nothing bound). */
static int
s_bind(s_coord_t *C, char *where, size_t wlen)
{
  char host[512];
  const char *colon = strrchr(C->bind, ':');
  size_t hl = colon ? (size_t) (colon - C->bind) : 0;
  if (!colon || hl == 0 || hl >= sizeof host || !colon[1]) {
    kg_error("coordinator: --bind must be HOST:PORT, got %s", C->bind);
    return -1;
  }
  memcpy(host, C->bind, hl);
  host[hl] = '\0';
  if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {   /* [v6]:port */
    memmove(host, host + 1, hl - 2);
    host[hl - 2] = '\0';
  }
  const char *port = colon + 1;
  where[0] = '\0';
  char ep[600];
  if (strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0) {
    snprintf(ep, sizeof ep, "tcp://*:%s", port);
    if (zmq_bind(C->router, ep) != 0) {
      kg_error("coordinator: cannot listen on %s: %s", ep, zmq_strerror(zmq_errno()));
      return -1;
    }
    snprintf(where, wlen, "%s (every interface)", ep);
    return 0;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int gai = getaddrinfo(host, port, &hints, &res);
  if (gai != 0) {
    kg_error("coordinator: cannot resolve %s: %s", host, gai_strerror(gai));
    return -1;
  }
  int bound = 0, loopback = 0;
  char tried[512] = "";
  for (struct addrinfo *a = res; a; a = a->ai_next) {
    char addr[INET6_ADDRSTRLEN] = "";
    const void *in = a->ai_family == AF_INET6
                     ? (const void *) &((struct sockaddr_in6 *) a->ai_addr)->sin6_addr
                     : (const void *) &((struct sockaddr_in *) a->ai_addr)->sin_addr;
    if ((a->ai_family != AF_INET && a->ai_family != AF_INET6)
        || !inet_ntop(a->ai_family, in, addr, sizeof addr))
      continue;
    if (a->ai_family == AF_INET6) {
      int one = 1;
      zmq_setsockopt(C->router, ZMQ_IPV6, &one, sizeof one);
      snprintf(ep, sizeof ep, "tcp://[%s]:%s", addr, port);
    } else {
      snprintf(ep, sizeof ep, "tcp://%s:%s", addr, port);
    }
    if (strstr(where, ep))
      continue;   /* getaddrinfo repeats an address per protocol */
    size_t tl = strlen(tried);
    snprintf(tried + tl, sizeof tried - tl, "%s%s", tl ? ", " : "", addr);
    if (zmq_bind(C->router, ep) != 0) {
      kg_info("coordinator: %s: %s", ep, zmq_strerror(zmq_errno()));
      continue;
    }
    bound++;
    loopback += a->ai_family == AF_INET ? (ntohl(((struct sockaddr_in *) a->ai_addr)
                                                  ->sin_addr.s_addr) >> 24) == 127
                                        : IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)
                                                                 a->ai_addr)->sin6_addr);
    size_t wl = strlen(where);
    snprintf(where + wl, wlen - wl, "%s%s", wl ? " " : "", ep);
  }
  freeaddrinfo(res);
  if (!bound) {
    kg_error("coordinator: cannot listen on %s: it resolves to %s, not an address of this "
             "host; pass --coordinator-bind ADDR (an address of this host, or 0.0.0.0 for "
             "every interface)", C->bind, tried[0] ? tried : "nothing usable");
    return -1;
  }
  if (loopback == bound && C->nnodes > 1)
    kg_warning("coordinator: %s resolves to a loopback address here (%s): nodes on other "
               "hosts cannot reach it; name the address they use (or --coordinator-bind)",
               host, tried);
  return 0;
}

static int
s_serve(s_coord_t *C, int sigfd)
{
  for (;;) {
    zmq_pollitem_t it[3] = {{C->router, 0, ZMQ_POLLIN, 0}, {C->zap, 0, ZMQ_POLLIN, 0},
                            {NULL, sigfd, ZMQ_POLLIN, 0}};
    long timeout = C->heartbeat_ms / 4 > 0 ? (long) (C->heartbeat_ms / 4) : 250;
    if (zmq_poll(it, 3, timeout) < 0) {
      if (errno == EINTR)
        continue;
      return KG_EXIT_SYSTEM;
    }
    if (it[2].revents) {
      struct signalfd_siginfo si;
      if (read(sigfd, &si, sizeof si) == (ssize_t) sizeof si && si.ssi_signo != SIGCHLD)
        return KG_EXEC_EXIT_RETRYABLE;
    }
    if (it[1].revents)
      s_zap(C);
    while (it[0].revents) {
      unsigned char id[256];
      int il = zmq_recv(C->router, id, sizeof id, ZMQ_DONTWAIT);
      if (il < 0)
        break;
      zmq_msg_t body;
      zmq_msg_init(&body);
      if (zmq_msg_recv(&body, C->router, 0) < 0) {
        zmq_msg_close(&body);
        break;
      }
      int rc = s_on_message(C, id, (size_t) (il > (int) sizeof id ? (int) sizeof id : il),
                            zmq_msg_data(&body), zmq_msg_size(&body));
      zmq_msg_close(&body);
      if (rc >= 0)
        return rc;
    }
    int lost = s_check_lost(C);   /* after reading what the nodes said */
    if (lost >= 0)
      return lost;
  }
}

int
kg_coord_main(int argc, char **argv)
{
  s_coord_t C = {.nnodes = 0, .nproc = 1, .max_restarts = 3, .heartbeat_ms = 30000};
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (strcmp(a, "--bind") == 0) C.bind = v;
    else if (strcmp(a, "--secret") == 0) C.secret = v;
    else if (strcmp(a, "--checkpoints") == 0) C.ckpt_dir = v;
    else if (strcmp(a, "--state-dir") == 0) C.state_dir = v;
    else if (strcmp(a, "--nnodes") == 0) C.nnodes = atoi(v);
    else if (strcmp(a, "--nproc-per-node") == 0) C.nproc = atoi(v);
    else if (strcmp(a, "--max-restarts") == 0) C.max_restarts = atoi(v);
    else if (strcmp(a, "--heartbeat-timeout-ms") == 0) C.heartbeat_ms = atoll(v);
  }
  if (!C.bind || !C.secret || !C.ckpt_dir || !C.state_dir || C.nnodes < 1
      || C.nnodes > S_MAX_NODES || C.nproc < 1 || C.heartbeat_ms < 100) {
    fprintf(stderr, "kguard exec --serve-coordinator: incomplete arguments\n");
    return KG_EXIT_USAGE;
  }
  kg_log_init("kguard-coord");
  char err[512];
  if (kg_coord_keys_load(C.secret, &C.keys, err, sizeof err) != 0) {
    kg_error("coordinator: %s", err);
    return KG_EXIT_USAGE;
  }
  if (kg_paths_exe(C.exe, sizeof C.exe) != 0)
    return KG_EXIT_SYSTEM;
  /* Its own files in the shared directory, never through a planted link. */
  if (kg_coord_store_open(C.ckpt_dir, &C.store, err, sizeof err) != 0) {
    kg_error("coordinator: %s", err);
    return KG_EXIT_USAGE;
  }
  /* A job started again (requeued) goes on numbering its generations
     after the last decision this job's key verifies. */
  cJSON *last = kg_coord_store_read_decisions(C.store, &C.keys, NULL);
  if (last) {
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(last, "gen");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(last, "action");
    C.gen = g->valueint + 1;
    kg_notice("coordinator: this job's last decision was %s for generation %d: the job "
              "goes on with generation %d", act->valuestring, g->valueint, C.gen);
    cJSON_Delete(last);
  }
  /* The nonce that proves a node sees this directory (shared storage). */
  unsigned char rnd[16];
  randombytes_buf(rnd, sizeof rnd);
  sodium_bin2hex(C.nonce, sizeof C.nonce, rnd, sizeof rnd);
  snprintf(C.nonce_name, sizeof C.nonce_name, "nonce-%s", C.nonce);
  int nrc = kg_coord_store_create(C.store, C.nonce_name, C.nonce, strlen(C.nonce));
  if (nrc != 0) {
    kg_error("coordinator: cannot write into the checkpoint directory %s/.kguard: %s",
             C.ckpt_dir, kg_strerror(nrc));
    kg_coord_store_destroy(&C.store);
    return KG_EXIT_SYSTEM;
  }
  kg_policy_config_t pc;
  kg_policy_config_default(&pc);
  pc.max_restarts = C.max_restarts;
  C.policy = kg_policy_new(&pc);
  C.nodes = calloc((size_t) C.nnodes, sizeof *C.nodes);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  C.ctx = zmq_ctx_new();
  C.zap = zmq_socket(C.ctx, ZMQ_REP);
  C.router = zmq_socket(C.ctx, ZMQ_ROUTER);
  int one = 1, zero = 0;
  if (!C.nodes || !C.policy || sigfd < 0 || !C.zap || !C.router
      || zmq_bind(C.zap, "inproc://zeromq.zap.01") != 0
      || zmq_setsockopt(C.router, ZMQ_CURVE_SERVER, &one, sizeof one) != 0
      || zmq_setsockopt(C.router, ZMQ_CURVE_SECRETKEY, C.keys.server_secret, 41) != 0
      || zmq_setsockopt(C.router, ZMQ_ZAP_DOMAIN, "kguard", 6) != 0
      || zmq_setsockopt(C.router, ZMQ_LINGER, &zero, sizeof zero) != 0) {
    kg_error("coordinator: cannot set up its sockets: %s", zmq_strerror(zmq_errno()));
    return KG_EXEC_EXIT_RETRYABLE;
  }
  char where[1024];
  if (s_bind(&C, where, sizeof where) != 0)
    return KG_EXIT_USAGE;
  kg_notice("coordinator: listening on %s for %d nodes (CURVE)", where, C.nnodes);
  int code = s_serve(&C, sigfd);
  kg_notice("coordinator: the job ends with %d", code);
  kg_coord_store_remove(C.store, C.nonce_name);
  kg_coord_store_destroy(&C.store);
  int linger = 2000;
  zmq_setsockopt(C.router, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(C.router);
  zmq_close(C.zap);
  zmq_ctx_term(C.ctx);
  for (int i = 0; i < C.nnodes; i++) {
    cJSON_Delete(C.nodes[i].report);
    cJSON_Delete(C.nodes[i].failed);
  }
  free(C.nodes);
  kg_policy_destroy(&C.policy);
  close(sigfd);
  return code;
}
