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
#include <unistd.h>

#include "kg_exec.h"
#include "kg_exit.h"
#include "kg_clock.h"
#include "kg_coord.h"
#include "kg_error.h"
#include "kg_log.h"
#include "kg_opt.h"
#include "kg_paths.h"

enum { O_CKPT = 1, O_MAXR, O_STATE, O_NAME, O_STALL, O_KILL_GRACE, O_PREEMPT_GRACE, O_RULES,
       O_NNODES, O_NODE_RANK, O_COORD, O_SECRET, O_NPROC, O_HEARTBEAT };

static const kg_opt_t s_opts[] = {
  {O_CKPT, 0, "checkpoints", "DIR",
   "checkpoint directory (KGUARD_CKPT_DIR of the command); without it a restart starts "
   "over", 0},
  {O_MAXR, 0, "max-restarts", "N",
   "restarts within 10 minutes before giving up (default 3)", 0},
  {O_STATE, 0, "state-dir", "DIR",
   "incidents, restored checkpoints, logs (default $KGUARD_STATE_DIR, else "
   "~/.local/state/kguard)", 0},
  {O_NAME, 0, "name", "NAME", "run name: log file, KGUARD_RUN_ID (default: exec)", 0},
  {O_STALL, 0, "stall-timeout", "S",
   "seconds without progress after a sticky error text that prove the fault (default: 4 x "
   "the longest gap between two completed steps of the run, 1.5 to 60; 60 before two steps "
   "were seen)", 0},
  {O_KILL_GRACE, 0, "kill-grace", "S", "SIGTERM to SIGKILL after a fault (default 10)", 0},
  {O_PREEMPT_GRACE, 0, "preempt-grace", "S",
   "after SIGTERM/SIGUSR1 from a scheduler, seconds the command has to seal and exit before "
   "SIGKILL (default 25)", 0},
  {O_RULES, 0, "rules", "FILE", "classification rules (default: the shipped ones)", 0},
  {0, 0, NULL, NULL, "multi-node (one kguard exec per node, outside torchrun)", 0},
  {O_NNODES, 0, "nnodes", "N", "nodes of the job; with 2 or more, the options below apply",
   0},
  {O_NODE_RANK, 0, "node-rank", "R", "this node's rank, 0 .. N-1", 0},
  {O_COORD, 0, "coordinator", "HOST:PORT",
   "node 0 runs the coordinator on HOST:PORT (CURVE, keys derived from the job's secret); "
   "--checkpoints must be a directory every node shares", 0},
  {O_SECRET, 0, "secret", "FILE", "the job's secret file, 32 bytes or more", 0},
  {O_NPROC, 0, "nproc-per-node", "P",
   "ranks per node (default 1); rank r checkpoints into DIR/rank-r and is restored into "
   "KGUARD_RESUME_DIR/rank-r (kguard.save/resume do both: KGUARD_CKPT_LAYOUT=rank-dirs)", 0},
  {O_HEARTBEAT, 0, "heartbeat-timeout", "S",
   "a coordinator or node silent this long is lost: the job ends with 200 (infrastructure; "
   "default 30)", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"0", "the command succeeded"},
  {"1-", "the command's own failure, passed through (128+N: killed by signal N; a code "
         "equal to one below is reported as 1)"},
  {"86", "permanent: sticky faults kept coming (same failure twice, budget spent)"},
  {"100", "usage error"},
  {"111", "system failure in kguard"},
  {"127", "COMMAND cannot be run"},
  {"200", "retryable: pre-empted by SIGTERM/SIGINT/SIGUSR1, or an infrastructure failure "
          "(checkpoint helper, a peer node or the coordinator lost)"},
  {NULL, NULL},
};

const kg_cmd_t kg_exec_cmd = {
  .name = "exec",
  .summary = "run a training script or torchrun, surviving sticky device errors",
  .usage = "[options] [--] COMMAND [ARGS...]",
  .about = "Run a training command (a Python script, or torchrun ...) in its own process "
           "group under kguard: its output is passed through unchanged and kept; on a proven "
           "sticky GPU error the whole group is stopped, an incident is written, the last "
           "checkpoint sealed before the fault is verified and restored (newer ones are "
           "quarantined), and COMMAND starts again with KGUARD_RESUME_* set for "
           "kguard.resume(). kguard's options end at COMMAND: what follows is COMMAND's.",
  .opts = s_opts,
  .more = "A sticky error text is proof only when a process of the group then fails, or when "
          "no newer `kguard: completed step N` line (two steps on) follows within "
          "--stall-timeout; a command that carries on or succeeds is left alone.",
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
    switch (id) {
    case KG_OPT_EXIT: return p.code == 0 ? 1 : -1;
    case KG_OPT_OPERAND: c->argv = p.argv + p.next - 1; break;   /* COMMAND and its args */
    case O_CKPT: c->ckpt_dir = v; break;
    case O_STATE: c->state_dir = v; break;
    case O_NAME: c->name = v; break;
    case O_RULES: c->rules_path = v; break;
    case O_COORD: c->coordinator = v; break;
    case O_SECRET: c->secret_file = v; break;
    case O_MAXR:
      if (s_int(v, 0, 1000, &c->max_restarts) < 0)
        return s_usage(&p, "--max-restarts needs an integer 0-1000", v);
      break;
    case O_NNODES:
      if (s_int(v, 1, 4096, &c->nnodes) < 0)
        return s_usage(&p, "--nnodes needs an integer 1-4096", v);
      break;
    case O_NPROC:
      if (s_int(v, 1, 1024, &c->nproc_per_node) < 0)
        return s_usage(&p, "--nproc-per-node needs an integer 1-1024", v);
      break;
    case O_NODE_RANK:
      if (s_int(v, 0, 4095, &c->node_rank) < 0)
        return s_usage(&p, "--node-rank needs an integer 0-4095", v);
      break;
    case O_STALL:
      if (s_seconds(v, &c->stall_ms) < 0)
        return s_usage(&p, "--stall-timeout needs seconds", v);
      break;
    case O_KILL_GRACE:
      if (s_seconds(v, &c->kill_grace_ms) < 0)
        return s_usage(&p, "--kill-grace needs seconds", v);
      break;
    case O_HEARTBEAT:
      if (s_seconds(v, &c->heartbeat_ms) < 0 || c->heartbeat_ms < 100)
        return s_usage(&p, "--heartbeat-timeout needs seconds (at least 0.1)", v);
      break;
    case O_PREEMPT_GRACE:
      if (s_seconds(v, &c->preempt_grace_ms) < 0)
        return s_usage(&p, "--preempt-grace needs seconds", v);
      break;
    }
  }
  if (!c->argv)
    return s_usage(&p, "no COMMAND given", NULL);
  if (!c->name)
    c->name = "exec";
  if (!*c->name || strchr(c->name, '/') || c->name[0] == '.')
    return s_usage(&p, "--name must be a plain name", c->name);
  if (c->nnodes > 1) {
    if (c->node_rank >= c->nnodes)
      return s_usage(&p, "--node-rank must be below --nnodes", NULL);
    if (!c->coordinator || !c->secret_file || !c->ckpt_dir)
      return s_usage(&p, "multi-node mode needs --coordinator, --secret and --checkpoints",
                     NULL);
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
  E->log = fopen(E->log_path, "ae");
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
  sigset_t set;
  sigemptyset(&set);
  int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1};
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
    sigaddset(&set, sigs[k]);
  signal(SIGPIPE, SIG_IGN);
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0
      || (E->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
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
    while (!kg_child_exited(E->coord) && kg_clock_mono_ms() < end) {
      struct signalfd_siginfo si;
      struct pollfd p = {.fd = E->sigfd, .events = POLLIN};
      if (poll(&p, 1, 200) > 0)
        while (read(E->sigfd, &si, sizeof si) == (ssize_t) sizeof si) {
        }
      kg_child_reap(E->coord);
    }
    kg_child_destroy(&E->coord);
  }
  kg_child_destroy(&E->leader);
  kg_child_destroy(&E->helper);
  kg_ex_free_env(&E->envp);
  cJSON_Delete(E->exits);
  kg_incident_destroy(&E->incident);
  kg_policy_destroy(&E->policy);
  kg_diagnosis_destroy(&E->diag);
  kg_classifier_destroy(&E->rules);
  free(E->helper_out);
  free(E->resume_dir);
  free(E->resume_archive);
  if (E->log)
    fclose(E->log);
  if (E->sigfd >= 0)
    close(E->sigfd);
}

int
kg_exec_run(const kg_exec_config_t *config)
{
  kg_exec_s *E = calloc(1, sizeof *E);
  if (!E)
    return KG_EXIT_SYSTEM;
  E->cfg = *config;
  E->sigfd = -1;
  E->last_step = -1;
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
      E->deadline = kg_clock_mono_ms() + 120000;
      code = kg_ex_loop(E);
    }
  } else if (code == 0) {
    int rc = kg_ex_start_command(E);
    if (rc != 0)
      code = rc == -ENOENT || rc == -EACCES ? 127 : KG_EXIT_SYSTEM;
    else
      code = kg_ex_loop(E);
  }
  if (code == E->exit_code && E->state == KG_EX_DONE)
    kg_notice("exec: exit %d (%s)", code,
              E->outcome == KG_EXEC_OUT_SUCCESS ? "success"
              : E->outcome == KG_EXEC_OUT_GAVE_UP ? "gave up: permanent"
              : E->outcome == KG_EXEC_OUT_RETRYABLE ? "retryable"
              : "the command's own failure");
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
