/*  kg_exec_cli: `kguard exec`: arguments, setup, and the run. */
#include "kg_exec_priv.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
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
#include "kg_error.h"
#include "kg_log.h"
#include "kg_paths.h"

static const char s_help[] =
  "usage: kguard exec [OPTIONS] -- COMMAND [ARGS...]\n"
  "       kguard exec --nproc-per-node N [OPTIONS] -- python train.py [ARGS...]\n"
  "\n"
  "Run a training command under kguard: its output is passed through unchanged and\n"
  "kept; on a proven sticky GPU error the tree is killed at once, an incident is\n"
  "written, the last checkpoint sealed before the fault is verified and restored\n"
  "(newer ones are quarantined), and the ranks start again with KGUARD_RESUME_*\n"
  "set for kguard.resume(). With --nproc-per-node kguard starts the N ranks itself,\n"
  "with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
  "GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT, ...), so the\n"
  "script runs as under torchrun; a restart replaces the ranks, never kguard.\n"
  "COMMAND may also be torchrun itself (the slower path: torchrun's agent and\n"
  "rendezvous start again at every restart).\n"
  "\n"
  "options:\n"
  "  --checkpoints DIR     checkpoint directory (KGUARD_CKPT_DIR of the command);\n"
  "                        without it a restart starts over\n"
  "  --nproc-per-node N    kguard starts N ranks of COMMAND on this node (each its\n"
  "                        own process group; with torchrun as COMMAND: its ranks\n"
  "                        per node, for the checkpoint layout)\n"
  "  --master-addr ADDR    the ranks' MASTER_ADDR (default 127.0.0.1; several\n"
  "                        nodes: the coordinator's HOST)\n"
  "  --master-port PORT    a fixed MASTER_PORT (default: kguard keeps the ranks'\n"
  "                        rendezvous store across restarts, as torchrun's agent)\n"
  "  --standby             keep a warm Python per rank that has imported\n"
  "                        --standby-imports (no device touched); a restart hands\n"
  "                        it the rank instead of a cold start (COMMAND must be\n"
  "                        python [OPTIONS] SCRIPT|-m MODULE [ARGS])\n"
  "  --standby-imports M,..  what a standby imports (default torch)\n"
  "  --standby-max-age S   an older standby is replaced by a cold start (default\n"
  "                        3600)\n"
  "  --max-restarts N      restarts within 10 minutes before giving up (default 3)\n"
  "  --state-dir DIR       incidents, restored checkpoints, logs (default\n"
  "                        $KGUARD_STATE_DIR, else ~/.local/state/kguard)\n"
  "  --name NAME           run name: log file, KGUARD_RUN_ID (default: exec)\n"
  "  --stall-timeout S     seconds without progress after a sticky error text that\n"
  "                        prove the fault (default: 4 x the longest gap between\n"
  "                        two completed steps of the job, kept across restarts,\n"
  "                        1.5 to 60; 60 before two steps were seen)\n"
  "  --kill-grace S        a peer node's tree (stopped because of a fault\n"
  "                        elsewhere): SIGTERM to SIGKILL (default 10); a proven\n"
  "                        fault's own tree is killed at once\n"
  "  --preempt-grace S     after SIGTERM/SIGUSR1 from a scheduler, seconds the\n"
  "                        command has to seal and exit before SIGKILL (default 25)\n"
  "  --rules FILE          classification rules (default: the shipped ones)\n"
  "multi-node (one kguard exec per node):\n"
  "  --nnodes N --node-rank R --coordinator HOST:PORT --secret FILE\n"
  "                        node 0 runs the coordinator on HOST:PORT (CURVE, keys\n"
  "                        derived from the job's secret file of 32+ bytes);\n"
  "                        --checkpoints must be a directory every node shares;\n"
  "                        the coordinator listens only on the addresses HOST\n"
  "                        resolves to on node 0\n"
  "  --coordinator-bind ADDR node 0: listen on ADDR instead (an address of this\n"
  "                        host, e.g. when HOST is a service name; 0.0.0.0: every\n"
  "                        interface)\n"
  "  --heartbeat-timeout S a coordinator or node silent this long is lost: the\n"
  "                        job ends with 200 (infrastructure; default 30)\n"
  "  --join-timeout S      every node must have joined within this of node 0's\n"
  "                        start (default 600, as torchrun's rendezvous), else the\n"
  "                        job ends with 200; once a connection failed the CURVE\n"
  "                        handshake (a node with another --secret), the heartbeat\n"
  "                        timeout instead, and 100. A node refused that way exits\n"
  "                        100 at once. Before the start every node verifies a\n"
  "                        probe each node signed with its checkpoint key: a node\n"
  "                        that cannot verify another's ends the job with 100,\n"
  "                        naming the key\n"
  "\n"
  "A sticky error text is proof only when a process of the group then fails, or\n"
  "when no newer `kguard: completed step N` line (two steps on) follows within\n"
  "--stall-timeout; a command that carries on or succeeds is left alone.\n"
  "\n"
  "exit codes (for schedulers):\n"
  "  0    the command succeeded\n"
  "  1-   the command's own failure, passed through (128+N: killed by signal N;\n"
  "       a code equal to one below is reported as 1, the original in the log)\n"
  "  86   permanent: sticky faults kept coming (same failure twice, budget spent),\n"
  "       or checkpoints exist that no restart can verify (never a silent start\n"
  "       over)\n"
  "  100  usage or configuration error (also: nodes that cannot verify each\n"
  "       other's checkpoints, a node with another --secret); 111 system failure\n"
  "       in kguard; 127 COMMAND cannot be run\n"
  "  200  retryable: pre-empted by SIGTERM/SIGINT/SIGUSR1, or an infrastructure\n"
  "       failure (checkpoint helper, a peer node or the coordinator lost)\n"
  "\n"
  "docs: docs/exec.md\n";

static int
s_usage(const char *msg, const char *arg)
{
  fprintf(stderr, "kguard exec: %s%s%s (see kguard exec --help)\n", msg, arg ? ": " : "",
          arg ? arg : "");
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

static int
s_parse(int argc, char **argv, kg_exec_config_t *c)
{
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(s_help, stdout);
      return 1;
    }
    if (a[0] != '-')
      break;
    if (strcmp(a, "--standby") == 0) {
      c->standby = true;
      continue;
    }
    if (!v)
      return s_usage("option needs a value", a);
    i++;
    if (strcmp(a, "--checkpoints") == 0)
      c->ckpt_dir = v;
    else if (strcmp(a, "--state-dir") == 0)
      c->state_dir = v;
    else if (strcmp(a, "--name") == 0)
      c->name = v;
    else if (strcmp(a, "--rules") == 0)
      c->rules_path = v;
    else if (strcmp(a, "--coordinator") == 0)
      c->coordinator = v;
    else if (strcmp(a, "--standby-imports") == 0)
      c->standby_imports = v;
    else if (strcmp(a, "--master-addr") == 0)
      c->master_addr = v;
    else if (strcmp(a, "--coordinator-bind") == 0)
      c->coordinator_bind = v;
    else if (strcmp(a, "--secret") == 0)
      c->secret_file = v;
    else if (strcmp(a, "--max-restarts") == 0) {
      if (s_int(v, 0, 1000, &c->max_restarts) < 0)
        return s_usage("--max-restarts needs an integer 0-1000", v);
    } else if (strcmp(a, "--nnodes") == 0) {
      if (s_int(v, 1, 4096, &c->nnodes) < 0)
        return s_usage("--nnodes needs an integer 1-4096", v);
    } else if (strcmp(a, "--nproc-per-node") == 0) {
      if (s_int(v, 1, 1024, &c->nproc_per_node) < 0)
        return s_usage("--nproc-per-node needs an integer 1-1024", v);
      c->nproc_given = true;
    } else if (strcmp(a, "--master-port") == 0) {
      if (s_int(v, 1, 65535, &c->master_port) < 0)
        return s_usage("--master-port needs a port number 1-65535", v);
    } else if (strcmp(a, "--node-rank") == 0) {
      if (s_int(v, 0, 4095, &c->node_rank) < 0)
        return s_usage("--node-rank needs an integer 0-4095", v);
    } else if (strcmp(a, "--stall-timeout") == 0) {
      if (s_seconds(v, &c->stall_ms) < 0)
        return s_usage("--stall-timeout needs seconds", v);
    } else if (strcmp(a, "--kill-grace") == 0) {
      if (s_seconds(v, &c->kill_grace_ms) < 0)
        return s_usage("--kill-grace needs seconds", v);
    } else if (strcmp(a, "--heartbeat-timeout") == 0) {
      if (s_seconds(v, &c->heartbeat_ms) < 0 || c->heartbeat_ms < 100)
        return s_usage("--heartbeat-timeout needs seconds (at least 0.1)", v);
    } else if (strcmp(a, "--standby-max-age") == 0) {
      if (s_seconds(v, &c->standby_max_age_ms) < 0)
        return s_usage("--standby-max-age needs seconds", v);
    } else if (strcmp(a, "--join-timeout") == 0) {
      if (s_seconds(v, &c->join_timeout_ms) < 0 || c->join_timeout_ms < 100)
        return s_usage("--join-timeout needs seconds (at least 0.1)", v);
    } else if (strcmp(a, "--preempt-grace") == 0) {
      if (s_seconds(v, &c->preempt_grace_ms) < 0)
        return s_usage("--preempt-grace needs seconds", v);
    } else {
      return s_usage("unknown option", a);
    }
  }
  if (i >= argc)
    return s_usage("no COMMAND given", NULL);
  c->argv = argv + i;
  if (!c->name)
    c->name = "exec";
  if (!*c->name || strchr(c->name, '/') || c->name[0] == '.')
    return s_usage("--name must be a plain name", c->name);
  if (c->nnodes > 1) {
    if (c->node_rank >= c->nnodes)
      return s_usage("--node-rank must be below --nnodes", NULL);
    if (!c->coordinator || !c->secret_file || !c->ckpt_dir)
      return s_usage("multi-node mode needs --coordinator, --secret and --checkpoints", NULL);
  }
  return 0;
}

/*  Everything the loop needs, before the command starts. */
static int
s_setup(kg_exec_s *E)
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
  if (E->cfg.ckpt_dir && (rc = kg_paths_mkdirs(E->cfg.ckpt_dir, 0700)) != 0) {
    kg_error("exec: cannot create the checkpoint directory %s: %s", E->cfg.ckpt_dir,
             kg_strerror(rc));
    return KG_EXIT_USAGE;
  }
  snprintf(E->log_path, sizeof E->log_path, "%s/logs/exec-%s.log", E->state_dir, E->cfg.name);
  char lerr[PATH_MAX + 200];
  if ((rc = kg_exec_log_open(E->log_path, E->cfg.name, &E->log, lerr, sizeof lerr)) != 0) {
    kg_error("exec: %s", lerr);
    return rc == KG_EUSAGE ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  kg_exec_log_run_started(E->log, kg_clock_wall_ms(), E->cfg.argv);
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
  if (!E->diag || !E->policy)
    return KG_EXIT_SYSTEM;
  /* Orphaned processes of the tree (torchrun's workers after their agent
     died) are reparented to kguard, which reaps them and sees their status. */
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    kg_warning("exec: not a subreaper (%s): orphans go to init", strerror(errno));
  /* Before any ZeroMQ context: its threads inherit the blocked mask. */
  static const int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, 0};
  if (!(E->sig = kg_sigsrc_new(sigs)))
    return KG_EXIT_SYSTEM;
  return 0;
}

static void
s_teardown(kg_exec_s *E)
{
  kg_ex_node_close(E);
  if (E->coord) {
    /* The coordinator ends once every node reported; give it a moment to
       deliver its last decision (SIGKILL through kg_child_destroy after). */
    int64_t end = kg_clock_mono_ms() + 5000;
    while (E->sig && !kg_child_exited(E->coord) && kg_clock_mono_ms() < end) {
      struct pollfd p = {.fd = kg_sigsrc_fd(E->sig), .events = POLLIN};
      if (poll(&p, 1, 200) > 0)
        while (kg_sigsrc_read(E->sig) > 0) {
        }
      kg_child_reap(E->coord);
    }
    kg_child_destroy(&E->coord);
  }
  kg_ex_ranks_destroy(E);
  kg_exec_devmem_destroy(&E->devmem);
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
  kg_exec_log_destroy(&E->log);
  kg_sigsrc_destroy(&E->sig);
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
  kg_exec_pace_init(&E->pace);
  E->resume_step = -1;
  E->deadline = -1;
  int code = s_setup(E);
  E->multi = E->cfg.nnodes > 1;
  if (code == 0 && E->multi) {
    int rc = kg_ex_node_open(E);
    if (rc != 0) {
      code = rc == KG_EUSAGE ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
    } else {
      E->state = KG_EX_JOINING;
      E->deadline = kg_clock_mono_ms() + E->cfg.join_timeout_ms + E->cfg.heartbeat_ms;
      code = kg_ex_loop(E);
    }
  } else if (code == 0) {
    int rc = kg_ex_start_command(E);
    if (rc != 0)
      code = rc == -ENOENT || rc == -EACCES ? 127 : KG_EXIT_SYSTEM;
    else
      code = kg_ex_loop(E);
  }
  if (code == E->exit_code && E->state == KG_EX_DONE) {
    char summary[256];
    s_summary(E, summary, sizeof summary);
    kg_notice("exec: exit %d (%s)", code, summary);
    kg_exec_log_run_ended(E->log, kg_clock_wall_ms(), code, summary);
  }
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
