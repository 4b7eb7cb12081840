/*  kg_exec_join: a node joining a multi-node `kguard exec` job (protocol in
    kg_coord.h): the shared directory's nonce, this node's key probe sealed
    with the key its ranks will use, every node's probe verified, the start;
    a coordinator that refuses this node's handshake (another job secret)
    seen on the link's monitor and said at once. */
#include "kg_exec_priv.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <zmq.h>

#include "kg_coord_store.h"
#include "kg_error.h"
#include "kg_exit.h"
#include "kg_file.h"
#include "kg_log.h"
#include "kg_socket.h"
#include "kg_paths.h"

/*  .kguard/probe-<nonce>-node-<node>.kgckpt.tar in this node's view of the
    shared directory. */
static void
s_probe_path(const kg_exec_s *E, int node, char *buf, size_t len)
{
  char name[128];
  kg_coord_store_probe_name(E->nonce, node, name, sizeof name);
  snprintf(buf, len, "%s/.kguard/%s", E->cfg.ckpt_dir, name);
}

/*  Seal this node's key probe with the key its ranks will sign with (the
    same environment): a tiny archive every node then verifies. */
static int
s_seal_probe(kg_exec_s *E)
{
  char dir[PATH_MAX + 128], file[PATH_MAX + 160], out[PATH_MAX + 96];
  snprintf(dir, sizeof dir, "%s/keyprobe", E->run_dir);
  kg_paths_remove_tree(dir);
  if (kg_paths_mkdirs(dir, 0700) != 0)
    return -1;
  snprintf(file, sizeof file, "%s/node", dir);
  char text[128];
  int n = snprintf(text, sizeof text, "{\"node\": %d, \"nonce\": \"%s\"}\n",
                   E->cfg.node_rank, E->nonce);
  if (kg_file_write_atomic(file, text, (size_t) n, 0600) != 0)
    return -1;
  s_probe_path(E, E->cfg.node_rank, out, sizeof out);
  char *argv[] = {E->exe, "ckpt", "seal", dir, "--step", "0", "--run", "kguard-keyprobe",
                  "-o", out, NULL};
  return kg_ex_start_helper(E, argv);
}

/*  Verify every node's probe (this node's too) in one `kguard ckpt verify`. */
static int
s_verify_probes(kg_exec_s *E)
{
  int n = E->cfg.nnodes;
  char **argv = calloc((size_t) n + 4, sizeof *argv);
  if (!argv)
    return -1;
  argv[0] = E->exe;
  argv[1] = "ckpt";
  argv[2] = "verify";
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    char p[PATH_MAX + 96];
    s_probe_path(E, i, p, sizeof p);
    if (!(argv[3 + i] = strdup(p)))
      rc = -1;
  }
  if (rc == 0)
    rc = kg_ex_start_helper(E, argv);
  for (int i = 0; i < n; i++)
    free(argv[3 + i]);
  free(argv);
  return rc;
}

/*  What `kguard ckpt verify` said of each probe: the ones that are not
    valid, as [{node, reason}]. */
static cJSON *
s_probe_problems(kg_exec_s *E)
{
  cJSON *problems = cJSON_CreateArray();
  const char *out = E->helper_out ? E->helper_out : "";
  for (int i = 0; i < E->cfg.nnodes; i++) {
    char p[PATH_MAX + 96], head[PATH_MAX + 100];
    s_probe_path(E, i, p, sizeof p);
    snprintf(head, sizeof head, "%s: ", p);
    const char *line = out, *verdict = NULL;
    while (line && *line) {
      if (strncmp(line, head, strlen(head)) == 0) {
        verdict = line + strlen(head);
        break;
      }
      line = strchr(line, '\n');
      line = line ? line + 1 : NULL;
    }
    if (verdict && strncmp(verdict, "valid:", 6) == 0)
      continue;
    char why[700];
    size_t wl = verdict ? strcspn(verdict, "\n") : 0;
    snprintf(why, sizeof why, "%.*s", (int) (wl < 600 ? wl : 600),
             verdict ? verdict : "no verdict from kguard ckpt verify");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "node", i);
    cJSON_AddStringToObject(o, "reason", why);
    cJSON_AddItemToArray(problems, o);
    kg_error("exec: this node cannot verify the checkpoints node %d signs: %s", i, why);
  }
  return problems;
}

static void
s_refuse(kg_exec_s *E, const char *reason, kg_exec_outcome_t outcome)
{
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "reason", reason);
  kg_ex_node_send(E, "refused", f);
  kg_ex_done(E, outcome, 0);
}

/* ---- the join's sub-states: what entering each does -------------------- */

/*  SEAL: welcomed; a coordinator's node that does not see the same
    checkpoint directory is refused, else this node's key probe is sealed. */
static void
s_enter_seal(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from;
  kg_exec_s *E = arg;
  if (ev->arg != 1) {
    char why[PATH_MAX + 200];
    snprintf(why, sizeof why, "its checkpoint directory %s is not the one the coordinator's "
             "node sees (the coordinator's nonce file is not readable there): multi-node "
             "mode needs a shared checkpoint directory, one every node sees", E->cfg.ckpt_dir);
    kg_error("exec: %s; refusing", why);
    s_refuse(E, why, KG_EXEC_OUT_USAGE);
  } else if (s_seal_probe(E) != 0) {
    s_refuse(E, "cannot start `kguard ckpt seal` for its key probe", KG_EXEC_OUT_RETRYABLE);
  }
}

/*  JOINED: the probe's seal ended; said to the coordinator if it sealed. */
static void
s_enter_joined(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_exec_s *E = arg;
  int st = kg_child_status(E->helper);
  kg_child_destroy(&E->helper);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    char how[64], why[200];
    kg_child_describe(st, how, sizeof how);
    snprintf(why, sizeof why, "it cannot seal a checkpoint with its signing key "
             "(`kguard ckpt seal`: %s, its message above)", how);
    kg_error("exec: %s", why);
    s_refuse(E, why, WIFEXITED(st) && WEXITSTATUS(st) == KG_EXIT_USAGE
             ? KG_EXEC_OUT_USAGE : KG_EXEC_OUT_RETRYABLE);
    return;
  }
  kg_ex_node_send(E, "joined", NULL);
}

/*  VERIFY: every node joined; every node's probe is verified here. */
static void
s_enter_verify(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_exec_s *E = arg;
  if (s_verify_probes(E) != 0)
    s_refuse(E, "cannot start `kguard ckpt verify` for the key probes", KG_EXEC_OUT_RETRYABLE);
}

/*  CHECKED: what this node could not verify, said to the coordinator. */
static void
s_enter_checked(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from, (void) ev;
  kg_exec_s *E = arg;
  cJSON *f = cJSON_CreateObject();
  cJSON_AddItemToObject(f, "problems", s_probe_problems(E));
  kg_child_destroy(&E->helper);
  kg_ex_node_send(E, "checked", f);
}

/*  LISTING: the start came (rank 0's store port with it). The run
    continues from the newest step every node verifies, so the ranks do
    not start yet: this node lists its ranks' checkpoints of the run and
    sends them, in WAITING; the coordinator's start decision then takes
    the decision path (kg_ex_decision: restore, BACKOFF, RUNNING). */
static void
s_enter_listing(void *arg, int from, const kg_fsm_event_t *ev)
{
  (void) from;
  kg_exec_s *E = arg;
  E->master_port = (int) ev->arg;
  kg_ex_node_list_start(E);
}

static const kg_fsm_row_t s_rows[KG_EX_J_COUNT] = {
  [KG_EX_J_HELLO] = {NULL, 0, KG_FSM_NONE},
  [KG_EX_J_SEAL] = {s_enter_seal, 0, KG_FSM_NONE},
  [KG_EX_J_JOINED] = {s_enter_joined, 0, KG_FSM_NONE},
  [KG_EX_J_VERIFY] = {s_enter_verify, 0, KG_FSM_NONE},
  [KG_EX_J_CHECKED] = {s_enter_checked, 0, KG_FSM_NONE},
  [KG_EX_J_LISTING] = {s_enter_listing, 0, KG_FSM_NONE},
};

static int
s_next(void *arg, int state, const kg_fsm_event_t *ev)
{
  (void) arg;
  return kg_ex_join_next(state, ev->id);
}

static void
s_trace(void *arg, int from, const kg_fsm_event_t *ev, int to)
{
  (void) arg;
  if (to != KG_FSM_NONE)
    kg_debug("exec: join %s -> %s (%s)", kg_ex_join_names[from], kg_ex_join_names[to],
             kg_ex_event_names[ev->id]);
}

/*  The join's sub-states take the run's events (kg_exec_states.h); no
    deadline of their own: JOINING's covers them all. */
static const kg_fsm_def_t s_def = {
  .nstates = KG_EX_J_COUNT,
  .nevents = KG_EXE_COUNT,
  .state_names = kg_ex_join_names,
  .event_names = kg_ex_event_names,
  .rows = s_rows,
  .next = s_next,
  .trace = s_trace,
};

const kg_fsm_def_t *
kg_ex_join_states(void)
{
  return &s_def;
}

int
kg_ex_join_start(kg_exec_s *E)
{
  if (!E->join && !(E->join = kg_fsm_new(&s_def, E, 4)))
    return KG_ENOMEM;
  return kg_fsm_start(E->join, KG_EX_J_HELLO, kg_ex_now(E));
}

void
kg_ex_node_join_step(kg_exec_s *E, kg_ex_event_t ev)
{
  switch (ev.kind) {
  case KG_EXE_REFUSED:
    kg_error("exec: the coordinator %s refuses this node: the CURVE handshake failed, so the "
             "job secret %s is not the one node 0 was started with (every node needs a copy "
             "of the same --secret file), or %s is not this job's coordinator",
             E->cfg.coordinator, E->cfg.secret_file, E->cfg.coordinator);
    kg_ex_done(E, KG_EXEC_OUT_USAGE, 0);
    return;
  case KG_EXE_DECISION: {
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(E->decision, "code");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(E->decision, "reason");
    int c = cJSON_IsNumber(code) ? code->valueint : KG_EXEC_EXIT_RETRYABLE;
    kg_error("exec: the job cannot start: %s", cJSON_IsString(why) ? why->valuestring
                                                                    : "the coordinator ended it");
    kg_ex_done_code(E, c);
    return;
  }
  case KG_EXE_DEADLINE:
    kg_error("exec: no start from the coordinator %s within the join timeout (retryable)",
             E->cfg.coordinator);
    kg_ex_done(E, KG_EXEC_OUT_RETRYABLE, 0);
    return;
  default:
    /* The next step of the join, if the event is the one its sub-state
       waits for (the run's transition is still running: this machine is
       another one, so it applies now). */
    (void) kg_fsm_post(E->join, (int) ev.kind, ev.arg, kg_fsm_now(E->fsm));
    return;
  }
}

void
kg_ex_node_monitor(kg_exec_s *E)
{
  /* Two in a row with nothing heard: not a glitch but keys that do not
     match (libzmq retries the connection every 100 ms or so). */
  for (int n = kg_socket_handshake_failures(E->monitor); n > 0; n--)
    if (!E->heard && ++E->handshake_failures == 2)
      kg_ex_fire(E, KG_EXE_REFUSED, 0);
}
