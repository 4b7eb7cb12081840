/*  kg_coord: the coordinator process of a multi-node `kguard exec` job
    (protocol in kg_coord.h): its sockets (a CURVE ROUTER on the address
    the nodes were given, the ZAP handler that admits only the job's node
    key, a monitor that sees connections failing the handshake), its files
    in the shared checkpoint directory, and its loop. What it does with the
    nodes' messages: kg_coord_join.c (joining), kg_coord_decide.c (faults
    and decisions); what it says to them: kg_coord_send.c. */
#include "kg_coord.h"
#include "kg_coord_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_exec_rule.h"
#include "kg_exit.h"
#include "kg_log.h"
#include "kg_socket.h"
#include "kg_loop.h"
#include "kg_sigsrc.h"
#include "kg_paths.h"

#define S_MAX_NODES 4096
#define S_MONITOR "inproc://kguard-coord-monitor"

/* ---- receiving ---------------------------------------------------------- */

/*  One message from a node. Returns an exit code when the job is over, -1
    while it goes on. */
static int
s_on_message(kg_coord_s *C, const unsigned char *id, size_t id_len, const char *text,
             size_t len)
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
  kg_coord_node_t *n = &C->nodes[k];
  memcpy(n->id, id, id_len);
  n->id_len = id_len;
  n->seen_ms = kg_coord_now(C);
  const char *t = type->valuestring;
  int rc = -1;
  if (strcmp(t, "beat") == 0) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "beat");
    kg_coord_send(C, k, b);
    cJSON_Delete(b);
    cJSON_Delete(m);
    return -1;
  }
  kg_info("coordinator: %s from node %d", t, k);
  bool handled = false;
  rc = kg_coord_join_message(C, k, t, m, &handled);
  if (!handled)
    rc = kg_coord_run_message(C, k, t, m);
  cJSON_Delete(m);
  return rc;
}

/*  ZAP: admit only the job's node key over CURVE. */
static void
s_zap(kg_coord_s *C)
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

/*  The router's monitor: a connection that fails the CURVE handshake is a
    peer without this job's secret (its HELLO does not decrypt). */
static void
s_monitor(kg_coord_s *C)
{
  for (int n = kg_socket_handshake_failures(C->monitor); n > 0; n--)
    kg_coord_handshake_failed(C, kg_coord_now(C));
}

/*  Listen on HOST:PORT of --bind: every address HOST resolves to (never
    every interface unless HOST is "*" or 0.0.0.0 or ::). Writes what it
    listens on into where. Returns 0, or -1 after an error naming the
    problem (nothing bound). */
static int
s_bind(kg_coord_s *C, char *where, size_t wlen)
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

/* ---- the loop: kg_loop registrations ------------------------------------ */

/*  The job is over with code (-1: it goes on): OVER, and the loop stops. */
static int
s_over(kg_coord_s *C, int code)
{
  if (code >= 0) {
    C->code = code;
    kg_fsm_post(C->fsm, KG_COORD_EV_END, code, kg_coord_now(C));
  }
  return kg_fsm_state(C->fsm) == KG_COORD_OVER ? KG_LOOP_STOP : KG_LOOP_OK;
}

static int
s_on_router(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  kg_coord_s *C = arg;
  for (int n = 0; n < 64; n++) {   /* a bounded batch, then the others' turn */
    unsigned char nid[256];
    int il = zmq_recv(C->router, nid, sizeof nid, ZMQ_DONTWAIT);
    if (il < 0)
      return KG_LOOP_OK;
    zmq_msg_t body;
    zmq_msg_init(&body);
    if (zmq_msg_recv(&body, C->router, 0) < 0) {
      zmq_msg_close(&body);
      return KG_LOOP_OK;
    }
    int rc = s_on_message(C, nid, (size_t) (il > (int) sizeof nid ? (int) sizeof nid : il),
                          zmq_msg_data(&body), zmq_msg_size(&body));
    zmq_msg_close(&body);
    if (rc >= 0)
      return s_over(C, rc);
  }
  return KG_LOOP_MORE;
}

static int
s_on_zap(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  s_zap(arg);
  kg_loop_sent(loop, ((kg_coord_s *) arg)->zap);
  return KG_LOOP_OK;
}

static int
s_on_monitor(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  s_monitor(arg);
  return KG_LOOP_OK;
}

static int
s_store_fd(void *arg)
{
  return kg_exec_store_fd(((kg_coord_s *) arg)->rstore);
}

static int
s_on_store(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  kg_exec_store_read(((kg_coord_s *) arg)->rstore);
  return KG_LOOP_OK;
}

static int
s_on_signal(kg_loop_t *loop, int signo, void *arg)
{
  (void) loop;
  kg_coord_s *C = arg;
  if (signo != SIGCHLD)
    return s_over(C, kg_coord_end(C, KG_EXEC_EXIT_RETRYABLE, "the coordinator was stopped"));
  /* Signals coalesce: whichever child it names, see to the store. */
  kg_exec_store_reaped(C->rstore, kg_exec_store_pid(C->rstore));
  return KG_LOOP_OK;
}

/*  Every quarter of the heartbeat timeout: a node silent for it is lost. */
static int
s_on_beat_check(kg_loop_t *loop, int id, void *arg)
{
  kg_coord_s *C = arg;
  int64_t now = kg_loop_now(loop);
  kg_loop_timer_set(loop, id, now + (C->heartbeat_ms / 4 > 0 ? C->heartbeat_ms / 4 : 250));
  return s_over(C, kg_coord_check_lost(C, now));
}

/*  The state's deadline (kg_coord_states.h): when it passes, the row's
    event is posted. */
static int64_t
s_deadline(void *arg)
{
  return kg_fsm_deadline(((const kg_coord_s *) arg)->fsm);
}

static int
s_on_deadline(kg_loop_t *loop, int id, void *arg)
{
  (void) id;
  kg_coord_s *C = arg;
  kg_fsm_tick(C->fsm, kg_loop_now(loop));
  return s_over(C, -1);
}

static int64_t
s_refusals_when(void *arg)
{
  return kg_ratelog_deadline(((kg_coord_s *) arg)->refusals);
}

static int
s_on_refusals(kg_loop_t *loop, int id, void *arg)
{
  (void) id;
  kg_coord_s *C = arg;
  char *summary = kg_ratelog_summary(C->refusals, kg_loop_now(loop), false);
  if (summary) {
    kg_warning("coordinator: connections refused %s", summary);
    free(summary);
  }
  return KG_LOOP_OK;
}

/* ---- the rows ---------------------------------------------------------- */

/*  JOINING: the join deadline (a failed handshake shortens it). */
static void
s_enter_joining(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_coord_s *C = arg;
  kg_fsm_set_deadline(C->fsm, kg_fsm_now(C->fsm) + C->join_timeout_ms);
}

/*  CHOOSING: every node joined; they are told to start, which first has
    them list their ranks' checkpoints (the step is agreed on their
    listings, kg_coord_start_listed). */
static void
s_enter_choosing(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_coord_join_start(arg);
}

/*  RUNNING: the decision that starts the generation (the start's choice,
    or the restart after a stop) was already sent with the nodes' records
    reset: nothing more to do. */
static void
s_enter_running(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) arg, (void) from, (void) ev;
}

static void
s_enter_stopping(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from;
  kg_coord_stop_all(arg, (int) ev->arg);
}

/*  OVER: the code is known, except when the join deadline ended it. */
static void
s_enter_over(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_coord_s *C = arg;
  if (from == KG_COORD_JOINING && ev->id == KG_COORD_EV_DEADLINE)
    C->code = kg_coord_join_timeout(C);
}

static const kg_fsm_row_t s_rows[KG_COORD_STATE_COUNT] = {
  [KG_COORD_JOINING] = {s_enter_joining, 0, KG_COORD_EV_DEADLINE},
  [KG_COORD_CHOOSING] = {s_enter_choosing, 0, KG_FSM_NONE},
  [KG_COORD_RUNNING] = {s_enter_running, 0, KG_FSM_NONE},
  [KG_COORD_STOPPING] = {s_enter_stopping, 0, KG_FSM_NONE},
  [KG_COORD_OVER] = {s_enter_over, 0, KG_FSM_NONE},
};

static int
s_next(void *arg, int state, const kg_fsm_event_t *ev)
{
  (void) arg;
  return (int) kg_coord_next((kg_coord_state_t) state, (kg_coord_event_t) ev->id);
}

static void
s_trace(void *arg, int from, const kg_fsm_event_t *ev, int to)
{
  (void) arg;
  if (to != KG_FSM_NONE && to != from)
    kg_debug("coordinator: %s -> %s (%s)", kg_coord_state_names[from],
             kg_coord_state_names[to], kg_coord_event_names[ev->id]);
}

static const kg_fsm_def_t s_def = {
  .nstates = KG_COORD_STATE_COUNT,
  .nevents = KG_COORD_EV_COUNT,
  .state_names = kg_coord_state_names,
  .event_names = kg_coord_event_names,
  .rows = s_rows,
  .next = s_next,
  .trace = s_trace,
};

const kg_fsm_def_t *
kg_coord_states(void)
{
  return &s_def;
}

/*  Serve until the job is over; its exit code. */
static int
s_serve(kg_coord_s *C, kg_sigsrc_t *sig)
{
  C->loop = kg_loop_new();
  C->fsm = kg_fsm_new(&s_def, C, 8);
  C->code = KG_EXIT_SYSTEM;
  int64_t now = C->loop ? kg_loop_now(C->loop) : 0;
  bool ok = C->loop && C->fsm && kg_fsm_start(C->fsm, KG_COORD_JOINING, now) == 0
            && kg_loop_socket(C->loop, C->router, KG_LOOP_IN, s_on_router, C) > 0
            && kg_loop_socket(C->loop, C->zap, KG_LOOP_IN, s_on_zap, C) > 0
            && (!C->monitor || kg_loop_socket(C->loop, C->monitor, KG_LOOP_IN, s_on_monitor,
                                              C) > 0)
            && kg_loop_fd_of(C->loop, s_store_fd, KG_LOOP_IN, s_on_store, C) > 0
            && kg_loop_signals(C->loop, sig, s_on_signal, C) > 0
            && kg_loop_timer(C->loop, now + C->heartbeat_ms / 4 + 1, s_on_beat_check, C) > 0
            && kg_loop_timer_of(C->loop, s_deadline, s_on_deadline, C) > 0
            && kg_loop_timer_of(C->loop, s_refusals_when, s_on_refusals, C) > 0;
  int rc = ok ? kg_loop_run(C->loop) : KG_ENOMEM;
  kg_loop_destroy(&C->loop);
  kg_fsm_destroy(&C->fsm);
  if (rc != 0) {
    kg_error("coordinator: its event loop failed: %s", kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  return C->code;
}

/* Ends what kg_coord_main set up, whichever step it reached: this job's
   files in the shared directory (nonce, key probes), the sockets, context,
   node records, policy and signal source. Every pointer may be NULL. */
static void
s_close(kg_coord_s *C, kg_sigsrc_t **sig)
{
  if (C->store) {
    kg_coord_store_remove(C->store, C->nonce_name);
    for (int i = 0; i < C->nnodes; i++) {
      char probe[128];
      kg_coord_store_probe_name(C->nonce, i, probe, sizeof probe);
      kg_coord_store_remove(C->store, probe);
    }
    kg_coord_store_destroy(&C->store);
  }
  if (C->router) {
    int linger = 2000;
    zmq_setsockopt(C->router, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(C->router);
  }
  if (C->monitor)
    zmq_close(C->monitor);
  if (C->zap)
    zmq_close(C->zap);
  if (C->ctx)
    zmq_ctx_term(C->ctx);
  for (int i = 0; C->nodes && i < C->nnodes; i++) {
    cJSON_Delete(C->nodes[i].report);
    cJSON_Delete(C->nodes[i].failed);
    cJSON_Delete(C->nodes[i].problems);
    cJSON_Delete(C->nodes[i].listing);
  }
  free(C->nodes);
  C->nodes = NULL;
  kg_ratelog_destroy(&C->refusals);
  kg_exec_store_destroy(&C->rstore);
  kg_policy_destroy(&C->policy);
  kg_sigsrc_destroy(sig);
}

/*  The coordinator's arguments (from `kguard exec`, not a person: an
    incomplete set is refused in one line). 0 or the exit code. */
static int
s_parse(int argc, char **argv, kg_coord_s *C)
{
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (strcmp(a, "--bind") == 0) C->bind = v;
    else if (strcmp(a, "--secret") == 0) C->secret = v;
    else if (strcmp(a, "--checkpoints") == 0) C->ckpt_dir = v;
    else if (strcmp(a, "--state-dir") == 0) C->state_dir = v;
    else if (strcmp(a, "--nnodes") == 0) C->nnodes = atoi(v);
    else if (strcmp(a, "--nproc-per-node") == 0) C->nproc = atoi(v);
    else if (strcmp(a, "--max-restarts") == 0) C->max_restarts = atoi(v);
    else if (strcmp(a, "--heartbeat-timeout-ms") == 0) C->heartbeat_ms = atoll(v);
    else if (strcmp(a, "--join-timeout-ms") == 0) C->join_timeout_ms = atoll(v);
    else if (strcmp(a, "--store-python") == 0) C->store_python = v;
  }
  if (!C->bind || !C->secret || !C->ckpt_dir || !C->state_dir || C->nnodes < 1
      || C->nnodes > S_MAX_NODES || C->nproc < 1 || C->heartbeat_ms < 100
      || C->join_timeout_ms < 100) {
    fprintf(stderr, "kguard exec --serve-coordinator: incomplete arguments\n");
    return KG_EXIT_USAGE;
  }
  return 0;
}

/*  The job's files in the shared directory: its keys, its store (never
    through a planted link), the generation it goes on with after a
    requeue, the nonce that proves a node sees this directory. 0 or the
    exit code. */
static int
s_open_files(kg_coord_s *C)
{
  char err[512];
  if (kg_coord_keys_load(C->secret, &C->keys, err, sizeof err) != 0) {
    kg_error("coordinator: %s", err);
    return KG_EXIT_USAGE;
  }
  if (kg_coord_store_open(C->ckpt_dir, &C->store, err, sizeof err) != 0) {
    kg_error("coordinator: %s", err);
    return KG_EXIT_USAGE;
  }
  /* A job started again (requeued) goes on numbering its generations
     after the last decision this job's key verifies. */
  cJSON *last = kg_coord_store_read_decisions(C->store, &C->keys, NULL);
  if (last) {
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(last, "gen");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(last, "action");
    C->gen = g->valueint + 1;
    kg_notice("coordinator: this job's last decision was %s for generation %d: the job "
              "goes on with generation %d", act->valuestring, g->valueint, C->gen);
    cJSON_Delete(last);
  }
  unsigned char rnd[16];
  randombytes_buf(rnd, sizeof rnd);
  sodium_bin2hex(C->nonce, sizeof C->nonce, rnd, sizeof rnd);
  snprintf(C->nonce_name, sizeof C->nonce_name, "nonce-%s", C->nonce);
  int nrc = kg_coord_store_create(C->store, C->nonce_name, C->nonce, strlen(C->nonce));
  if (nrc != 0) {
    kg_error("coordinator: cannot write into the checkpoint directory %s/.kguard: %s",
             C->ckpt_dir, kg_strerror(nrc));
    kg_coord_store_destroy(&C->store);
    return KG_EXIT_SYSTEM;
  }
  return 0;
}

/*  Its policy, node table, refusal log, signals (before the ZeroMQ
    context: its threads inherit the blocked mask) and CURVE sockets. 0
    with *sig_p set, or the exit code (what was made is closed). */
static int
s_open_sockets(kg_coord_s *C, kg_sigsrc_t **sig_p)
{
  kg_policy_config_t pc;
  kg_policy_config_default(&pc);
  pc.max_restarts = C->max_restarts;
  C->policy = kg_policy_new(&pc);
  C->nodes = calloc((size_t) C->nnodes, sizeof *C->nodes);
  static const char *const kinds[] = {"failed handshakes"};
  C->refusals = kg_ratelog_new(1, kinds, 3, 10000);
  static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD, 0};
  *sig_p = kg_sigsrc_new(sigs);
  C->ctx = zmq_ctx_new();
  C->zap = zmq_socket(C->ctx, ZMQ_REP);
  C->router = zmq_socket(C->ctx, ZMQ_ROUTER);
  int one = 1, zero = 0;
  if (!C->nodes || !C->policy || !C->refusals || !*sig_p || !C->zap || !C->router
      || zmq_bind(C->zap, "inproc://zeromq.zap.01") != 0
      || zmq_setsockopt(C->router, ZMQ_CURVE_SERVER, &one, sizeof one) != 0
      || zmq_setsockopt(C->router, ZMQ_CURVE_SECRETKEY, C->keys.server_secret, 41) != 0
      || zmq_setsockopt(C->router, ZMQ_ZAP_DOMAIN, "kguard", 6) != 0
      || zmq_setsockopt(C->router, ZMQ_LINGER, &zero, sizeof zero) != 0) {
    kg_error("coordinator: cannot set up its sockets: %s", zmq_strerror(zmq_errno()));
    s_close(C, sig_p);
    return KG_EXEC_EXIT_RETRYABLE;
  }
  C->monitor = kg_socket_handshake_monitor(C->ctx, C->router, S_MONITOR);
  return 0;
}

int
kg_coord_main(int argc, char **argv)
{
  kg_coord_s C = {.nnodes = 0, .nproc = 1, .max_restarts = 3, .heartbeat_ms = 30000,
                  .join_timeout_ms = 600000};
  int rc = s_parse(argc, argv, &C);
  if (rc != 0)
    return rc;
  kg_log_init("kguard-coord");
  kg_sigsrc_t *sig = NULL;
  if ((rc = s_open_files(&C)) != 0 || (rc = s_open_sockets(&C, &sig)) != 0)
    return rc;
  char where[1024];
  if (s_bind(&C, where, sizeof where) != 0) {
    s_close(&C, &sig);
    return KG_EXIT_USAGE;
  }
  /* The ranks' rendezvous store, outside every tree a node stops. */
  if (C.store_python && kg_exec_store_start(C.store_python, &C.rstore) != 0)
    kg_warning("coordinator: cannot start the ranks' rendezvous store: each generation's "
               "rank 0 serves one");
  kg_notice("coordinator: listening on %s for %d nodes (CURVE)", where, C.nnodes);
  int code = s_serve(&C, sig);
  kg_notice("coordinator: the job ends with %d", code);
  s_close(&C, &sig);
  return code;
}
