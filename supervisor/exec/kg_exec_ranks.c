/*  kg_exec_ranks: the process tree of `kguard exec`: the ranks it starts
    (agent mode) or the one command (plain, wrapper), each in its own
    process group with a keeper (kg_child.h: the group dies with kguard,
    even on SIGKILL); reaping as a subreaper; stopping the tree. */
#include "kg_exec_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_diagnosis.h"
#include "kg_error.h"
#include "kg_log.h"

int
kg_ex_ranks_new(kg_exec_s *E)
{
  E->nranks = E->mode == KG_EXEC_MODE_AGENT ? E->cfg.nproc_per_node : 1;
  E->ranks = calloc((size_t) E->nranks, sizeof *E->ranks);
  if (!E->ranks)
    return KG_ENOMEM;
  for (int r = 0; r < E->nranks; r++) {
    E->ranks[r].standby_fd = -1;
    for (int w = 0; w < 2; w++)
      if (!(E->ranks[r].lines[w] = kg_linebuf_new(KG_DIAG_MAX_LINE)))
        return KG_ENOMEM;
  }
  return 0;
}

void
kg_ex_ranks_destroy(kg_exec_s *E)
{
  for (int r = 0; E->ranks && r < E->nranks; r++) {
    kg_ex_rank_t *k = &E->ranks[r];
    kg_ex_standby_stop(E, r);
    kg_child_destroy(&k->child);
    kg_ex_free_env(&k->envp);
    kg_linebuf_destroy(&k->lines[0]);
    kg_linebuf_destroy(&k->lines[1]);
  }
  free(E->ranks);
  E->ranks = NULL;
}

int
kg_ex_start_command(kg_exec_s *E)
{
  kg_exec_pace_restart(&E->pace);   /* its steps count afresh; the pace stays */
  kg_diagnosis_reset(E->diag);
  cJSON_Delete(E->exits);
  E->exits = cJSON_CreateArray();
  E->leader_reaped = false;
  E->leader_status = 0;
  E->fault_rank = -1;
  if (E->generation > 0)
    kg_exec_log_generation(E->log, E->generation, kg_clock_wall_ms(), E->resume_step);
  if (E->mode == KG_EXEC_MODE_AGENT) {
    /* A fresh rendezvous store each generation (rank 0 serves it, as under
       torchrun's c10d rendezvous): nothing of the last one is in the way.
       Several nodes: the coordinator names the port. */
    E->agent_store = false;
    if (E->cfg.master_port > 0) {
      E->master_port = E->cfg.master_port;
    } else if (E->multi ? E->store_port > 0 : kg_exec_store_ready(E->store)) {
      E->agent_store = true;   /* the kept store, as torchrun's agent store */
      E->master_port = E->multi ? E->store_port : kg_exec_store_port(E->store);
    } else if (!E->multi) {
      E->master_port = kg_exec_store_free_port();
    }
    if (E->master_port <= 0) {
      kg_error("exec: no free port for the ranks' rendezvous (MASTER_PORT); pass --master-port");
      return KG_EUSAGE;
    }
  }
  for (int r = 0; r < E->nranks; r++) {
    kg_ex_rank_t *k = &E->ranks[r];
    kg_ex_free_env(&k->envp);
    snprintf(k->error_file, sizeof k->error_file, "%s/error-%d-%d.json", E->run_dir,
             E->generation, r);
    unlink(k->error_file);
    k->envp = kg_ex_build_env(E, r);
    kg_child_destroy(&k->child);
    k->mid_line[0] = k->mid_line[1] = false;
    k->held_len[0] = k->held_len[1] = 0;
    k->reaped = false;
    k->status = 0;
    k->pgid = -1;
    int rc = k->envp ? 0 : KG_ENOMEM;
    if (rc == 0 && !kg_ex_standby_promote(E, r)) {
      /* The keeper: torchrun's workers (the rank's group) must not
         outlive a kguard that is SIGKILLed (PDEATHSIG takes only the
         agent) and keep the GPU, or seal beside the requeued job: no
         SIGTERM either, which starts a pre-emption seal. */
      kg_child_opts_t opts = {.argv = E->cfg.argv, .envp = k->envp, .capture = true,
                              .keeper = true, .keeper_kill_at_once = true};
      rc = kg_child_spawn(&opts, &k->child);
    }
    if (rc != 0) {
      kg_error("exec: cannot start %s%s: %s", E->cfg.argv[0],
               E->mode == KG_EXEC_MODE_AGENT ? " for a rank" : "", kg_strerror(rc));
      /* The ranks started so far must not run alone. */
      kg_ex_kill_tree(E, SIGKILL);
      for (int q = 0; q < r; q++)
        kg_child_destroy(&E->ranks[q].child);
      return rc;
    }
    k->pgid = kg_child_pid(k->child);
  }
  if (E->mode == KG_EXEC_MODE_AGENT)
    kg_notice("exec: started %d rank%s of %s (ranks %d-%d of %d, generation %d%s)", E->nranks,
              E->nranks == 1 ? "" : "s", E->cfg.argv[0], E->cfg.node_rank * E->nranks,
              (E->cfg.node_rank + 1) * E->nranks - 1, E->cfg.nnodes * E->nranks,
              E->generation, E->resume_step >= 0 ? ", resuming" : "");
  else
    kg_notice("exec: started %s (pid %ld, generation %d%s)", E->cfg.argv[0],
              (long) E->ranks[0].pgid, E->generation, E->resume_step >= 0 ? ", resuming" : "");
  E->generation++;
  E->generation_started = kg_ex_now(E);
  return 0;
}

/*  A process kguard must never signal with the tree: the helper, the
    coordinator, a standby. */
static bool
s_spared(const kg_exec_s *E, pid_t pid)
{
  return (E->helper && pid == kg_child_pid(E->helper))
         || (E->coord && pid == kg_child_pid(E->coord)) || kg_ex_standby_spared(E, pid)
         || kg_exec_store_is(E->store, pid);
}

static bool
s_in_rank_group(const kg_exec_s *E, pid_t pgrp)
{
  for (int r = 0; r < E->nranks; r++)
    if (E->ranks[r].pgid > 0 && E->ranks[r].pgid == pgrp)
      return true;
  return false;
}

/*  Every process whose parent chain leads to kguard and that left the
    ranks' process groups (setsid), other than the spared ones, gets sig
    too. Read from /proc; a process that ends meanwhile is skipped. */
static void
s_kill_descendants(kg_exec_s *E, int sig)
{
  DIR *d = opendir("/proc");
  if (!d)
    return;
  pid_t self = getpid();
  size_t n = 0, alloc = 256;
  pid_t (*pp)[3] = malloc(alloc * sizeof *pp);
  struct dirent *de;
  while (pp && (de = readdir(d))) {
    char *end;
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid <= 0)
      continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0)
      continue;
    buf[r] = '\0';
    char *rp = strrchr(buf, ')');
    long ppid, pgrp;
    char st;
    if (!rp || sscanf(rp + 1, " %c %ld %ld", &st, &ppid, &pgrp) != 3)
      continue;
    if (n == alloc) {
      void *g = realloc(pp, 2 * alloc * sizeof *pp);
      if (!g)
        break;
      pp = g;
      alloc *= 2;
    }
    pp[n][0] = (pid_t) pid;
    pp[n][1] = (pid_t) ppid;
    pp[n][2] = (pid_t) pgrp;
    n++;
  }
  closedir(d);
  for (size_t i = 0; pp && i < n; i++) {
    pid_t p = pp[i][0];
    /* Members of the ranks' groups already have the signal from
       kill(-pgid): a second one would hit, say, the checkpoint seal a rank
       started after the first (its pre-emption handler at work). */
    if (s_spared(E, p) || s_in_rank_group(E, pp[i][2]))
      continue;
    for (int depth = 0; depth < 64 && p > 1; depth++) {
      pid_t parent = -1;
      for (size_t k = 0; k < n; k++)
        if (pp[k][0] == p) {
          parent = pp[k][1];
          break;
        }
      if (parent == self) {
        if (!s_spared(E, p))   /* never below the helper, nor the coordinator */
          kill(pp[i][0], sig);
        break;
      }
      p = parent;
    }
  }
  free(pp);
}

void
kg_ex_kill_rank(kg_exec_s *E, int rank, int sig)
{
  if (rank >= 0 && rank < E->nranks && E->ranks[rank].pgid > 0)
    kill(-E->ranks[rank].pgid, sig);
}

void
kg_ex_kill_tree(kg_exec_s *E, int sig)
{
  for (int r = 0; r < E->nranks; r++)
    kg_ex_kill_rank(E, r, sig);
  s_kill_descendants(E, sig);
}

/*  If pid is the keeper of a rank or of a standby (reparented to kguard,
    the subreaper, once its group's leader ended), reap it: it is no
    process of the command, its end is no news. */
static bool
s_keeper_reaped(kg_exec_s *E, pid_t pid)
{
  for (int r = 0; r < E->nranks; r++) {
    kg_ex_rank_t *k = &E->ranks[r];
    if ((k->child && kg_child_reap_keeper(k->child, pid))
        || (k->standby && kg_child_reap_keeper(k->standby, pid)))
      return true;
  }
  return false;
}

bool
kg_ex_group_gone(kg_exec_s *E)
{
  for (int r = 0; r < E->nranks; r++)
    if (E->ranks[r].child && !E->ranks[r].reaped)
      return false;   /* cheap, before any group is looked for in /proc */
  for (int r = 0; r < E->nranks; r++) {
    kg_ex_rank_t *k = &E->ranks[r];
    /* The group's keeper stays in it until the next generation: it does
       not count. */
    if (k->child ? kg_child_group_alive(k->child) : k->pgid > 0 && kill(-k->pgid, 0) == 0)
      return false;
  }
  /* Any unreaped child other than the spared ones (peek only; an ended
     keeper is reaped on the way, it would hide the others). */
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid <= 0)
      return true;
    if (s_keeper_reaped(E, si.si_pid))
      continue;
    return s_spared(E, si.si_pid);
  }
}

static void
s_record_exit(kg_exec_s *E, pid_t pid, int status, int rank)
{
  char how[64];
  kg_child_describe(status, how, sizeof how);
  if (cJSON_GetArraySize(E->exits) >= 256)
    return;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "pid", pid);
  cJSON_AddStringToObject(o, "status", how);
  if (rank >= 0) {
    cJSON_AddBoolToObject(o, "command", true);
    if (E->mode == KG_EXEC_MODE_AGENT)
      cJSON_AddNumberToObject(o, "rank", E->cfg.node_rank * E->nranks + rank);
  }
  cJSON_AddItemToArray(E->exits, o);
}

static bool
s_failed(int status)
{
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*  A rank (or the command) ended. The command is over at the first rank
    that fails, or when every rank ended well; a rank ending well before
    the others is a process of the tree that ended well. */
static void
s_rank_ended(kg_exec_s *E, int r, int status)
{
  kg_ex_rank_t *k = &E->ranks[r];
  k->reaped = true;
  k->status = status;
  char how[64];
  kg_child_describe(status, how, sizeof how);
  if (E->mode == KG_EXEC_MODE_AGENT)
    kg_info("exec: rank %d (pid %ld) ended: %s", E->cfg.node_rank * E->nranks + r,
            (long) k->pgid, how);
  else
    kg_info("exec: the command (pid %ld) ended: %s", (long) k->pgid, how);
  s_record_exit(E, k->pgid, status, r);
  bool all = true;
  for (int q = 0; q < E->nranks; q++)
    all = all && E->ranks[q].reaped;
  if (!E->leader_reaped && (s_failed(status) || all)) {
    E->leader_reaped = true;
    E->leader_status = status;
    if (s_failed(status) && E->fault_rank < 0)
      E->fault_rank = r;
    kg_ex_fire(E, KG_EXE_LEADER_EXIT, status);
  } else {
    kg_ex_fire(E, KG_EXE_PROC_EXIT, status);
  }
}

/*  Reap every ended child: the ranks and the helper through their kg_child
    (peeked with WNOWAIT first so their status is not stolen), every other
    process of the tree here (kguard is a subreaper). */
void
kg_ex_reap(kg_exec_s *E)
{
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
      break;
    pid_t pid = si.si_pid;
    int r = 0;
    while (r < E->nranks
           && !(E->ranks[r].child && !E->ranks[r].reaped && pid == kg_child_pid(E->ranks[r].child)))
      r++;
    if (r < E->nranks) {
      if (kg_child_reap(E->ranks[r].child) != 1)
        break;
      /* What it wrote before it died is read before its death is judged:
         its SIGCHLD may come in after the poll that did not see the text. */
      kg_ex_read_rank(E, r, 1);
      kg_ex_read_rank(E, r, 2);
      s_rank_ended(E, r, kg_child_status(E->ranks[r].child));
    } else if (E->coord && pid == kg_child_pid(E->coord) && !kg_child_exited(E->coord)) {
      if (kg_child_reap(E->coord) != 1)
        break;
      char how[64];
      int st = kg_child_status(E->coord);
      kg_child_describe(st, how, sizeof how);
      kg_info("exec: the coordinator ended: %s", how);
      /* Its usage code at the start: it could not (its message says
         why); ending node 0's run: its last decision is delivered. */
      kg_ex_fire(E, KG_EXE_COORD_ENDED, st);
    } else if (kg_exec_store_reaped(E->store, pid) || s_keeper_reaped(E, pid)) {
      continue;
    } else if (kg_ex_standby_spared(E, pid)) {
      kg_ex_standby_reaped(E, pid);
    } else if (E->helper && pid == kg_child_pid(E->helper)) {
      if (kg_child_reap(E->helper) != 1)
        break;
      kg_ex_read_helper(E);   /* all of its answer, before it is read */
      kg_ex_fire(E, KG_EXE_HELPER_DONE, 0);
    } else {
      int st = 0;
      if (waitpid(pid, &st, WNOHANG) != pid)
        break;
      char how[64];
      kg_child_describe(st, how, sizeof how);
      kg_info("exec: process %ld of the command ended: %s", (long) pid, how);
      s_record_exit(E, pid, st, -1);
      kg_ex_fire(E, KG_EXE_PROC_EXIT, st);
    }
  }
}
