/*  kg_exec_cli: `kguard exec`: arguments, setup, and the run. */
#include "kg_exec_priv.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_exec.h"
#include "kg_exit.h"
#include "kg_clock.h"
#include "kg_coord.h"
#include "kg_emurun.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"
#include "kg_opt.h"
#include "kg_paths.h"

enum { O_CKPT = 1, O_MAXR, O_STATE, O_NAME, O_STALL, O_KILL_GRACE, O_PREEMPT_GRACE, O_RULES,
       O_NNODES, O_NODE_RANK, O_COORD, O_SECRET, O_NPROC, O_HEARTBEAT, O_MASTER_ADDR,
       O_MASTER_PORT, O_STANDBY, O_STANDBY_IMPORTS, O_STANDBY_MAX_AGE, O_COORD_BIND,
       O_JOIN_TIMEOUT, O_FRESH, O_KEEP, O_PERSIST_EVERY };

/*  What each of kguard's stdout and stderr may hold while its reader does
    not read; beyond it the job's output is dropped (and said), never the
    supervision's time. */
#define S_OUT_MAX (8u << 20)

/*  kg_log's lines for stderr, into its queue (kg_log_set_sink). */
static void
s_log_line(void *arg, const char *line, size_t len)
{
  kg_fdq_write(arg, line, len);
}

static const kg_opt_t s_opts[] = {
  {O_CKPT, 0, "checkpoints", "DIR",
   "the run's checkpoint directory (KGUARD_CKPT_DIR of the command; default: where "
   "kguard.save seals by default, $KGUARD_CKPT_DIR, else ./kguard-checkpoints). Before the "
   "first start kguard restores the last checkpoint of the run (--name) that verifies, and "
   "kguard.resume() returns it: the same command again continues the run", 0},
  {O_FRESH, 0, "fresh", NULL,
   "start the run at step 0 instead; its existing checkpoints stay (the new ones are newer, "
   "and a restart of this run never goes back to one sealed before it); with several nodes, "
   "on any node: every node starts at step 0", 0},
  {O_KEEP, 0, "keep", "N",
   "the ranks keep the newest N checkpoints of the run (KGUARD_KEEP=N for kguard.save, which "
   "removes older ones after each seal, never one a resume or an open incident needs)", 0},
  {O_PERSIST_EVERY, 0, "persist-every", "K",
   "kguard.snapshot (the state in kguard's memory, restored first after a fault) also "
   "writes every snapshot whose step is a multiple of K to DIR as a sealed checkpoint, in "
   "the background (KGUARD_PERSIST_EVERY=K); snapshots end with kguard, checkpoints stay",
   0},
  {O_NPROC, 0, "nproc-per-node", "N",
   "kguard starts N ranks of COMMAND on this node, each its own process group, with "
   "torchrun's environment; with torchrun as COMMAND: its ranks per node, for the checkpoint "
   "layout. Rank r checkpoints into DIR/rank-r and is restored into KGUARD_RESUME_DIR/rank-r "
   "(kguard.save/resume do both)", 0},
  {O_MASTER_ADDR, 0, "master-addr", "ADDR",
   "the ranks' MASTER_ADDR (default 127.0.0.1; several nodes: the coordinator's HOST)", 0},
  {O_MASTER_PORT, 0, "master-port", "PORT",
   "a fixed MASTER_PORT (default: kguard keeps the ranks' rendezvous store across restarts, "
   "as torchrun's agent)", 0},
  {O_STANDBY, 0, "standby", NULL,
   "keep a warm Python per rank that has imported --standby-imports (no device touched); a "
   "restart hands it the rank instead of a cold start (COMMAND must be python [OPTIONS] "
   "SCRIPT|-m MODULE [ARGS])", 0},
  {O_STANDBY_IMPORTS, 0, "standby-imports", "M,..", "what a standby imports (default torch)",
   0},
  {O_STANDBY_MAX_AGE, 0, "standby-max-age", "S",
   "an older standby is replaced by a cold start (default 3600)", 0},
  {O_MAXR, 0, "max-restarts", "N",
   "restarts within 10 minutes before giving up (default 3)", 0},
  {O_STATE, 0, "state-dir", "DIR",
   "incidents, restored checkpoints, logs (default $KGUARD_STATE_DIR, else "
   "$XDG_STATE_HOME/kguard, else ~/.local/state/kguard)", 0},
  {O_NAME, 0, "name", "NAME", "run name: log file, KGUARD_RUN_ID (default: exec)", 0},
  {O_STALL, 0, "stall-timeout", "S",
   "seconds without progress after a sticky error text that prove the fault (default: 4 x "
   "the longest gap between two steps the job reported, kept across restarts, 1.5 to "
   "60; 60 before two steps were seen)", 0},
  {O_KILL_GRACE, 0, "kill-grace", "S",
   "a peer node's tree (stopped because of a fault elsewhere): SIGTERM to SIGKILL (default "
   "10); a proven fault's own tree is killed at once", 0},
  {O_PREEMPT_GRACE, 0, "preempt-grace", "S",
   "after SIGTERM/SIGUSR1 from a scheduler, seconds the command has to seal and exit before "
   "SIGKILL (default 25); a second signal kills at once", 0},
  {O_RULES, 0, "rules", "FILE", "classification rules (default: the shipped ones)", 0},
  {0, 0, NULL, NULL, "multi-node (one kguard exec per node)", 0},
  {O_NNODES, 0, "nnodes", "N", "nodes of the job; with 2 or more, the options below apply",
   0},
  {O_NODE_RANK, 0, "node-rank", "R", "this node's rank, 0 .. N-1", 0},
  {O_COORD, 0, "coordinator", "HOST:PORT",
   "node 0 runs the coordinator on HOST:PORT (CURVE, keys derived from the job's secret); "
   "--checkpoints must be a directory every node shares; the coordinator listens only on "
   "the addresses HOST resolves to on node 0", 0},
  {O_COORD_BIND, 0, "coordinator-bind", "ADDR",
   "node 0: listen on ADDR instead (an address of this host, e.g. when HOST is a service "
   "name; 0.0.0.0: every interface)", 0},
  {O_SECRET, 0, "secret", "FILE", "the job's secret file, 32 bytes or more", 0},
  {O_HEARTBEAT, 0, "heartbeat-timeout", "S",
   "a coordinator or node silent this long is lost: the job ends with 200 (infrastructure; "
   "default 30)", 0},
  {O_JOIN_TIMEOUT, 0, "join-timeout", "S",
   "every node must have joined within this of node 0's start (default 600, as torchrun's "
   "rendezvous), else the job ends with 200; once a connection failed the CURVE handshake "
   "(a node with another --secret), the heartbeat timeout instead, and 100. A node refused "
   "that way exits 100 at once. Before the start every node verifies a probe each node "
   "signed with its checkpoint key: a node that cannot verify another's ends the job with "
   "100, naming the key", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"0", "the command succeeded"},
  {"1-", "the command's own failure, passed through (128+N: killed by signal N; a code "
         "equal to one below is reported as 1, the original in the log)"},
  {"86", "permanent: sticky faults kept coming (same failure twice, budget spent), or "
         "checkpoints exist that no restart can verify (never a silent start over)"},
  {"100", "usage or configuration error (also: nodes that cannot verify each other's "
          "checkpoints, a node with another --secret)"},
  {"111", "system failure in kguard"},
  {"127", "COMMAND cannot be run"},
  {"200", "retryable: pre-empted by SIGTERM/SIGINT/SIGUSR1, an infrastructure failure "
          "(checkpoint helper, a peer node or the coordinator lost), or a GPU that needs a "
          "reset (NVML: retired pages or row remapping pending, uncorrectable ECC errors "
          "grown, the GPU lost): retry on other hardware and drain this node"},
  {NULL, NULL},
};

const kg_cmd_t kg_exec_cmd = {
  .name = "exec",
  .summary = "run a training script or torchrun, surviving sticky device errors",
  .usage = "[options] [--] COMMAND [ARGS...]\n"
           "--nproc-per-node N [options] [--] python train.py [ARGS...]",
  .about = "Run a training command under kguard: its output is passed through unchanged and "
           "kept (never waiting for a reader that stops: what a stopped reader misses is in "
           "the log, and a reader that goes away ends nothing); on a proven sticky GPU error the tree is killed at once, an incident is "
           "written, the last checkpoint sealed before the fault is verified and restored "
           "(newer ones are quarantined), and the ranks start again with KGUARD_RESUME_* set "
           "for kguard.resume(). With --nproc-per-node kguard starts the N ranks itself, with "
           "torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, "
           "GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT, ...), so the "
           "script runs as under torchrun; a restart replaces the ranks, never kguard. "
           "COMMAND may also be torchrun itself (the slower path: torchrun's agent and "
           "rendezvous start again at every restart). kguard's options end at COMMAND: what "
           "follows is COMMAND's.",
  .opts = s_opts,
  .more = "A sticky error text is proof only when a process of the group then fails, or when "
          "no newer step (two steps on) is reported within --stall-timeout; a command that "
          "carries on or succeeds is left alone. The ranks report steps with kguard.step(n) "
          "or kguard.save (a private channel, KGUARD_STEP_SOCKET; nothing printed), or print "
          "`kguard: completed step N`. With several ranks each line is led by [rankN]: . See "
          "docs/exec.md.",
  .exits = s_exits,
  .flags = KG_CMD_STOP,
};

static int
s_usage(kg_opt_parser_t *p, const char *msg, const char *arg)
{
  kg_opt_usage(p, "%s%s%s", msg, arg ? ": " : "", arg ? arg : "");
  return -1;
}

static int
s_seconds(const char *text, int64_t *ms)
{
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || v < 0 || v > 86400)
    return -1;
  *ms = (int64_t) (v * 1000.0);
  return 0;
}

static int
s_int(const char *text, int lo, int hi, int *out)
{
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi)
    return -1;
  *out = (int) v;
  return 0;
}

/*  The options that take a number: where it goes in the configuration, its
    bounds and the words of its usage error. Integers are ints; seconds are
    read into int64_t milliseconds, at least min_ms. */
typedef struct {
  int id;
  bool seconds;
  int lo, hi;                   /*  integers                                   */
  int64_t min_ms;               /*  seconds                                    */
  size_t at;                    /*  offsetof(kg_exec_config_t, field)          */
  const char *words;
} s_number_t;

static const s_number_t s_numbers[] = {
  {O_KEEP, false, 1, 1000000, 0, offsetof(kg_exec_config_t, keep),
   "--keep needs a positive number of checkpoints, 1-1000000"},
  {O_PERSIST_EVERY, false, 1, 100000000, 0, offsetof(kg_exec_config_t, persist_every),
   "--persist-every needs a positive number of steps"},
  {O_MASTER_PORT, false, 1, 65535, 0, offsetof(kg_exec_config_t, master_port),
   "--master-port needs a port number 1-65535"},
  {O_MAXR, false, 0, 1000, 0, offsetof(kg_exec_config_t, max_restarts),
   "--max-restarts needs an integer 0-1000"},
  {O_NNODES, false, 1, 4096, 0, offsetof(kg_exec_config_t, nnodes),
   "--nnodes needs an integer 1-4096"},
  {O_NPROC, false, 1, 1024, 0, offsetof(kg_exec_config_t, nproc_per_node),
   "--nproc-per-node needs an integer 1-1024"},
  {O_NODE_RANK, false, 0, 4095, 0, offsetof(kg_exec_config_t, node_rank),
   "--node-rank needs an integer 0-4095"},
  {O_STANDBY_MAX_AGE, true, 0, 0, 0, offsetof(kg_exec_config_t, standby_max_age_ms),
   "--standby-max-age needs seconds"},
  {O_JOIN_TIMEOUT, true, 0, 0, 100, offsetof(kg_exec_config_t, join_timeout_ms),
   "--join-timeout needs seconds (at least 0.1)"},
  {O_STALL, true, 0, 0, 0, offsetof(kg_exec_config_t, stall_ms),
   "--stall-timeout needs seconds"},
  {O_KILL_GRACE, true, 0, 0, 0, offsetof(kg_exec_config_t, kill_grace_ms),
   "--kill-grace needs seconds"},
  {O_HEARTBEAT, true, 0, 0, 100, offsetof(kg_exec_config_t, heartbeat_ms),
   "--heartbeat-timeout needs seconds (at least 0.1)"},
  {O_PREEMPT_GRACE, true, 0, 0, 0, offsetof(kg_exec_config_t, preempt_grace_ms),
   "--preempt-grace needs seconds"},
};

/*  Option id's number from text v into c: 1 when id takes no number, 0
    when read, -1 after its usage error (printed). */
static int
s_number(kg_opt_parser_t *p, int id, const char *v, kg_exec_config_t *c)
{
  for (size_t i = 0; i < sizeof s_numbers / sizeof *s_numbers; i++) {
    const s_number_t *n = &s_numbers[i];
    if (n->id != id)
      continue;
    char *field = (char *) c + n->at;
    int64_t ms;
    int iv;
    if (n->seconds ? s_seconds(v, &ms) < 0 || ms < n->min_ms : s_int(v, n->lo, n->hi, &iv) < 0)
      return s_usage(p, n->words, v);
    if (n->seconds)
      memcpy(field, &ms, sizeof ms);
    else
      memcpy(field, &iv, sizeof iv);
    return 0;
  }
  return 1;
}

/*  What the options say together: a name, the multi-node options, the
    default checkpoint directory. 0, or -1 after a usage error. */
static int
s_check(kg_opt_parser_t *p, kg_exec_config_t *c)
{
  if (!c->argv)
    return s_usage(p, "no COMMAND given", NULL);
  if (!c->name)
    c->name = "exec";
  if (!*c->name || strchr(c->name, '/') || c->name[0] == '.')
    return s_usage(p, "--name must be a plain name", c->name);
  if (c->nnodes > 1) {
    if (c->node_rank >= c->nnodes)
      return s_usage(p, "--node-rank must be below --nnodes", NULL);
    if (!c->coordinator || !c->secret_file || !c->ckpt_dir)
      return s_usage(p, "multi-node mode needs --coordinator, --secret and --checkpoints",
                     NULL);
  }
  /* The directory kguard.save seals into when the script names none
     (python/kguard/checkpoint.py): faults and requeues find its seals. */
  if (!c->ckpt_dir) {
    const char *env = getenv("KGUARD_CKPT_DIR");
    c->ckpt_dir = env && *env ? env : "kguard-checkpoints";
    c->ckpt_default = true;
  }
  return 0;
}

/*  Fills c from argv. 0, 1 after --help or --version, -1 after a usage
    error (its message printed). */
static int
s_parse(int argc, char **argv, kg_exec_config_t *c)
{
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_exec_cmd, argc, argv);
  int id;
  while (!c->argv && (id = kg_opt_next(&p)) != KG_OPT_END) {
    const char *v = p.value;
    int rc = s_number(&p, id, v, c);
    if (rc < 0)
      return -1;
    if (rc == 0) {
      c->nproc_given = c->nproc_given || id == O_NPROC;
      continue;
    }
    switch (id) {
    case KG_OPT_EXIT: return p.code == 0 ? 1 : -1;
    case KG_OPT_OPERAND: c->argv = p.argv + p.next - 1; break;   /* COMMAND and its args */
    case O_CKPT: c->ckpt_dir = v; break;
    case O_STATE: c->state_dir = v; break;
    case O_NAME: c->name = v; break;
    case O_RULES: c->rules_path = v; break;
    case O_COORD: c->coordinator = v; break;
    case O_COORD_BIND: c->coordinator_bind = v; break;
    case O_SECRET: c->secret_file = v; break;
    case O_STANDBY: c->standby = true; break;
    case O_FRESH: c->fresh = true; break;
    case O_STANDBY_IMPORTS: c->standby_imports = v; break;
    case O_MASTER_ADDR: c->master_addr = v; break;
    }
  }
  return s_check(&p, c);
}

/*  kguard's own directories and the run's log: the state directory, the
    run's directory (without the last run's drain file), the checkpoint
    directory when named, the log. 0 or the exit code. */
static int
s_setup_files(kg_exec_s *E)
{
  if (E->cfg.state_dir && setenv("KGUARD_STATE_DIR", E->cfg.state_dir, 1) != 0)
    return KG_EXIT_SYSTEM;
  int rc = kg_paths_state_dir(E->state_dir, sizeof E->state_dir);
  if (rc != 0) {
    kg_error("exec: cannot create the state directory: %s", kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  if (kg_paths_exe(E->exe, sizeof E->exe) != 0)
    return KG_EXIT_SYSTEM;
  if (kg_paths_python_dir(E->python_dir, sizeof E->python_dir) != 0)
    E->python_dir[0] = '\0';
  snprintf(E->run_dir, sizeof E->run_dir, "%s/exec/%s", E->state_dir, E->cfg.name);
  if ((rc = kg_paths_mkdirs(E->run_dir, 0700)) != 0) {
    kg_error("exec: cannot create %s: %s", E->run_dir, kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  if (E->cfg.ckpt_dir && !E->cfg.ckpt_default
      && (rc = kg_paths_mkdirs(E->cfg.ckpt_dir, 0700)) != 0) {
    kg_error("exec: cannot create the checkpoint directory %s: %s", E->cfg.ckpt_dir,
             kg_strerror(rc));
    return KG_EXIT_USAGE;
  }
  /* A drain file is about the run that wrote it: a requeued run starts
     without one. */
  char drain[PATH_MAX + 80];
  snprintf(drain, sizeof drain, "%s/drain", E->run_dir);
  if (unlink(drain) != 0 && errno != ENOENT)
    kg_warning("exec: cannot remove the last run's %s: %s", drain, strerror(errno));
  snprintf(E->log_path, sizeof E->log_path, "%s/logs/exec-%s.log", E->state_dir, E->cfg.name);
  char lerr[PATH_MAX + 200];
  if ((rc = kg_exec_log_open(E->log_path, E->cfg.name, &E->log, lerr, sizeof lerr)) != 0) {
    kg_error("exec: %s", lerr);
    return rc == KG_EUSAGE ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  kg_exec_log_run_started(E->log, kg_clock_wall_ms(), E->cfg.argv);
  return 0;
}

/*  What judges the job: the rules and the diagnosis, the mode, the device
    memory check, the step channel, the GPUs' health baseline, the
    rendezvous store, the standbys and ranks, the ranks' master address,
    the restart policy. 0 or the exit code. */
static int
s_setup_judges(kg_exec_s *E)
{
  char rules_path[PATH_MAX], err[512] = "";
  if (E->cfg.rules_path)
    snprintf(rules_path, sizeof rules_path, "%s", E->cfg.rules_path);
  else
    kg_classifier_default_path(rules_path, sizeof rules_path);
  if (kg_classifier_load_file(rules_path, &E->rules, err, sizeof err) != 0) {
    kg_error("exec: %s", err);
    return KG_EXIT_USAGE;
  }
  E->diag = kg_diagnosis_new(E->rules);
  E->mode = kg_exec_mode(E->cfg.argv, E->cfg.nproc_given, E->cfg.nnodes);
  E->devmem = kg_exec_devmem_new();
  int sock_rc = kg_exec_stepsock_new(&E->steps);
  if (sock_rc != 0)
    kg_warning("exec: no channel for kguard.step and kguard.save (%s): only printed "
               "`kguard: completed step N` lines tell the job's pace", kg_strerror(sock_rc));
  /* kguard.snapshot's memory, owned by this process: it outlives every
     rank and generation of the job on this node. */
  E->snapdir = kg_snapdir_open(E->cfg.name, "exec: ");
  /* The ranks see kguard's CUDA_VISIBLE_DEVICES: their GPUs' baseline,
     before any of them runs. */
  E->gpuwatch = kg_gpuwatch_new(getenv("CUDA_VISIBLE_DEVICES"));
  if (E->gpuwatch && kg_gpuwatch_baseline(E->gpuwatch))
    kg_info("exec: GPU health baseline read through NVML");
  /* One node of ranks kguard starts: their rendezvous store outlives the
     restarts (several nodes: the coordinator hosts it). */
  if (E->mode == KG_EXEC_MODE_AGENT && E->cfg.nnodes == 1 && E->cfg.master_port == 0) {
    bool module;
    const char *py = kg_exec_python_program(E->cfg.argv, &module) >= 0 ? E->cfg.argv[0]
                                                                       : "python3";
    int src = kg_exec_store_start(py, &E->store);
    if (src != 0)
      kg_warning("exec: cannot start the ranks' rendezvous store (%s): each generation's "
                 "rank 0 serves one", kg_strerror(src));
  }
  char why[256];
  if (E->cfg.standby && !kg_ex_standby_possible(E, why, sizeof why)) {
    kg_error("exec: %s", why);
    return KG_EXIT_USAGE;
  }
  if (kg_ex_ranks_new(E) != 0)
    return KG_EXIT_SYSTEM;
  if (E->cfg.master_addr) {
    snprintf(E->master_addr, sizeof E->master_addr, "%s", E->cfg.master_addr);
  } else if (E->cfg.nnodes > 1 && E->cfg.coordinator) {
    /* Rank 0 runs on node 0, reached where the coordinator is. */
    const char *colon = strrchr(E->cfg.coordinator, ':');
    size_t hl = colon ? (size_t) (colon - E->cfg.coordinator) : strlen(E->cfg.coordinator);
    snprintf(E->master_addr, sizeof E->master_addr, "%.*s", (int) hl, E->cfg.coordinator);
  } else {
    snprintf(E->master_addr, sizeof E->master_addr, "127.0.0.1");
  }
  kg_policy_config_t pc;
  kg_policy_config_default(&pc);
  pc.max_restarts = E->cfg.max_restarts;
  pc.backoff_initial_ms = E->cfg.backoff_initial_ms;
  E->policy = kg_policy_new(&pc);
  return E->diag && E->policy ? 0 : KG_EXIT_SYSTEM;
}

/*  kguard as the tree's parent: a subreaper, its signals as an fd, output
    queues that never wait for a reader. 0 or the exit code. */
static int
s_setup_process(kg_exec_s *E)
{
  /* Orphaned processes of the tree (torchrun's workers after their agent
     died) are reparented to kguard, which reaps them and sees their status. */
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    kg_warning("exec: not a subreaper (%s): orphans go to init", strerror(errno));
  /* Before any ZeroMQ context: its threads inherit the blocked mask. */
  static const int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, 0};
  if (!(E->sig = kg_sigsrc_new(sigs)))
    return KG_EXIT_SYSTEM;
  /* The job's output and kguard's own lines never wait on a reader of
     kguard's stdout or stderr; a reader that is gone (`| head`) is a write
     error, not the end of the supervision (the ranks get SIG_DFL back). */
  signal(SIGPIPE, SIG_IGN);
  E->out[0] = kg_fdq_new(STDOUT_FILENO, S_OUT_MAX);
  E->out[1] = kg_fdq_new(STDERR_FILENO, S_OUT_MAX);
  if (!E->out[0] || !E->out[1])
    return KG_EXIT_SYSTEM;
  kg_log_set_sink(s_log_line, E->out[1]);
  return 0;
}

/*  Everything the loop needs, before the command starts. 0 or the exit
    code. */
static int
s_setup(kg_exec_s *E)
{
  int code = s_setup_files(E);
  if (code == 0)
    code = s_setup_judges(E);
  if (code == 0)
    code = s_setup_process(E);
  return code;
}

static void
s_teardown(kg_exec_s *E)
{
  kg_ex_node_close(E);
  /* Ended, or given its time to deliver its last decision (ENDING): a
     coordinator still there is killed. */
  kg_child_destroy(&E->coord);
  kg_ex_ranks_destroy(E);
  kg_exec_devmem_destroy(&E->devmem);
  kg_exec_stepsock_destroy(&E->steps);
  kg_snapdir_destroy(&E->snapdir);
  kg_gpuwatch_destroy(&E->gpuwatch);
  kg_exec_store_destroy(&E->store);
  kg_child_destroy(&E->helper);
  cJSON_Delete(E->exits);
  kg_incident_destroy(&E->incident);
  kg_policy_destroy(&E->policy);
  kg_diagnosis_destroy(&E->diag);
  kg_classifier_destroy(&E->rules);
  free(E->helper_out);
  free(E->resume_dir);
  free(E->resume_archive);
  kg_ex_output_drain(E);   /* all that was said, the teardown's own lines last,
                              while the log can still take a note about it */
  kg_exec_log_destroy(&E->log);
  kg_sigsrc_destroy(&E->sig);
  kg_fsm_destroy(&E->fsm);
  kg_fsm_destroy(&E->after);
  kg_fsm_destroy(&E->join);
  kg_loop_destroy(&E->loop);
  kg_log_set_sink(NULL, NULL);
  kg_fdq_destroy(&E->out[0]);
  kg_fdq_destroy(&E->out[1]);
}

/*  A GPU needs a reset: STATE/exec/NAME/drain names the host to take out
    of service (the first line, for a batch script's requeue with that
    node excluded) and says why (the second): this node, or the one the
    coordinator's decision names. */
static void
s_write_drain(const kg_exec_s *E)
{
  char host[256] = "";
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(
    cJSON_GetObjectItemCaseSensitive(E->decision, "drain"), "host");
  if (E->multi && cJSON_IsString(h))
    snprintf(host, sizeof host, "%s", h->valuestring);
  else if (!E->multi)
    gethostname(host, sizeof host - 1);
  if (!host[0] || strchr(host, '\n'))
    return;
  char path[PATH_MAX + 80], text[1024];
  snprintf(path, sizeof path, "%s/drain", E->run_dir);
  int n = snprintf(text, sizeof text, "%s\n%.700s\n", host, E->hw_line);
  int rc = kg_file_write_atomic(path, text, (size_t) n < sizeof text ? (size_t) n
                                                                     : sizeof text - 1, 0600);
  if (rc != 0)
    kg_warning("exec: cannot write %s: %s", path, kg_strerror(rc));
  else
    kg_notice("exec: %s names the node to drain: %s", path, host);
}

/*  What the exit code stands for, in words; a command's own code that
    kguard reported as another (one of kguard's own) is named. */
static void
s_summary(const kg_exec_s *E, char *buf, size_t len)
{
  switch (E->outcome) {
  case KG_EXEC_OUT_SUCCESS:
    snprintf(buf, len, "success");
    return;
  case KG_EXEC_OUT_GAVE_UP:
    snprintf(buf, len, "gave up: permanent");
    return;
  case KG_EXEC_OUT_RETRYABLE:
    snprintf(buf, len, "retryable");
    return;
  case KG_EXEC_OUT_USAGE:
    snprintf(buf, len, "refused: the job's configuration (see above)");
    return;
  case KG_EXEC_OUT_HARDWARE:
    /* Several nodes: the coordinator's words name the node to drain. */
    snprintf(buf, len, "retryable on other hardware: %.600s%s", E->hw_line,
             E->multi ? "" : "; drain this node");
    return;
  case KG_EXEC_OUT_COMMAND_FAILED:
    break;
  }
  char how[64];
  kg_child_describe(E->outcome_status, how, sizeof how);
  int st = E->outcome_status;
  int own = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
  if (own != E->exit_code)
    snprintf(buf, len, "the command's own failure: it ended with %s, a code kguard reserves, "
             "reported as %d", how, E->exit_code);
  else
    snprintf(buf, len, "the command's own failure: %s", how);
}

int
kg_exec_run(const kg_exec_config_t *config)
{
  kg_exec_s *E = calloc(1, sizeof *E);
  if (!E)
    return KG_EXIT_SYSTEM;
  E->cfg = *config;
  E->to = KG_FSM_NONE;
  kg_exec_pace_init(&E->pace);
  E->resume_step = -1;
  E->started_wall_ms = kg_clock_wall_ms();
  E->multi = E->cfg.nnodes > 1;
  /* The one reactor, and its clock: every handler's time, from the setup
     to the last output drained in the teardown. */
  E->loop = kg_loop_new();
  int code = E->loop ? s_setup(E) : KG_EXIT_SYSTEM;
  kg_emurun_t *emu = code == 0 ? kg_emurun_new(getenv("KGUARD_EMULATE")) : NULL;
  if (code == 0 && E->multi) {
    int rc = kg_ex_node_open(E);
    if (rc != 0)
      code = rc == KG_EUSAGE ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
    else if (kg_ex_states_start(E, KG_EX_JOINING) != 0)
      code = KG_EXIT_SYSTEM;
    else
      code = kg_ex_loop(E);
  } else if (code == 0 && !E->cfg.fresh) {
    /* The run continues from its last consistent checkpoint: chosen first,
       then the ranks start (kg_ex_start_choose). */
    if (kg_ex_states_start(E, KG_EX_RESTORING) != 0) {
      code = KG_EXIT_SYSTEM;
    } else {
      kg_ex_fire(E, KG_EXE_BEGIN, 0);   /* a transition: it may end the run */
      code = kg_ex_loop(E);
    }
  } else if (code == 0) {
    kg_notice("exec: --fresh: run %s starts at step 0; the checkpoints already in %s stay "
              "(what this run seals is newer)", E->cfg.name, E->cfg.ckpt_dir);
    int rc = kg_ex_states_start(E, KG_EX_RUNNING);
    if (rc == 0)
      rc = kg_ex_start_command(E);
    if (rc != 0)
      code = rc == -ENOENT || rc == -EACCES ? 127 : KG_EXIT_SYSTEM;
    else
      code = kg_ex_loop(E);
  }
  if (code == E->exit_code && E->fsm && kg_fsm_state(E->fsm) == KG_EX_DONE) {
    char summary[768];
    s_summary(E, summary, sizeof summary);
    kg_notice("exec: exit %d (%s)", code, summary);
    kg_exec_log_run_ended(E->log, kg_clock_wall_ms(), code, summary);
    if (E->outcome == KG_EXEC_OUT_HARDWARE)
      s_write_drain(E);
  }
  char emu_words[PATH_MAX + 512];
  if (!kg_emurun_fired(emu, emu_words, sizeof emu_words))
    kg_warning("exec: %s", emu_words);
  kg_emurun_destroy(&emu);
  s_teardown(E);
  free(E);
  return code;
}

int
kg_exec_main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "--serve-coordinator") == 0)
    return kg_coord_main(argc - 1, argv + 1);
  kg_exec_config_t c;
  kg_exec_config_default(&c);
  int rc = s_parse(argc, argv, &c);
  if (rc != 0)
    return rc > 0 ? KG_EXIT_OK : KG_EXIT_USAGE;
  return kg_exec_run(&c);
}
