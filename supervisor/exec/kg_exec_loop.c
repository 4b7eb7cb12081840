/*  kg_exec_loop: the one poll loop of `kguard exec`, the process tree
    (start, reap as a subreaper, stop) and the group's output. */
#include "kg_exec_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"
#include "kg_exit.h"
#include "kg_paths.h"

#define S_HELPER_OUT_MAX (1 << 20)

/* ---- the process tree ---------------------------------------------------- */

int
kg_ex_start_command(kg_exec_s *E)
{
  kg_ex_free_env(&E->envp);
  snprintf(E->error_file, sizeof E->error_file, "%s/error-%d.json", E->run_dir, E->generation);
  unlink(E->error_file);
  E->envp = kg_ex_build_env(E);
  if (!E->envp)
    return KG_ENOMEM;
  kg_child_opts_t opts = {.argv = E->cfg.argv, .envp = E->envp, .capture = true};
  kg_exec_pace_restart(&E->pace);   /* its steps count afresh; the pace stays */
  kg_child_destroy(&E->leader);
  int rc = kg_child_spawn(&opts, &E->leader);
  if (rc != 0) {
    kg_error("exec: cannot start %s: %s", E->cfg.argv[0], kg_strerror(rc));
    return rc;
  }
  E->pgid = kg_child_pid(E->leader);
  E->leader_reaped = false;
  E->leader_status = 0;
  cJSON_Delete(E->exits);
  E->exits = cJSON_CreateArray();
  kg_diagnosis_reset(E->diag);
  if (E->generation > 0)
    kg_exec_log_generation(E->log, E->generation, kg_clock_wall_ms(), E->resume_step);
  kg_notice("exec: started %s (pid %ld, generation %d%s)", E->cfg.argv[0], (long) E->pgid,
            E->generation, E->resume_step >= 0 ? ", resuming" : "");
  E->generation++;
  return 0;
}

/*  Every process whose parent chain leads to kguard and that left the
    command's process group (setsid), other than the checkpoint helper and
    the coordinator, gets sig too. Read from /proc; a process that ends
    meanwhile is skipped. */
static void
s_kill_descendants(kg_exec_s *E, int sig)
{
  DIR *d = opendir("/proc");
  if (!d)
    return;
  pid_t self = getpid(), helper = E->helper ? kg_child_pid(E->helper) : -1;
  pid_t coord = E->coord ? kg_child_pid(E->coord) : -1;
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
    /* Members of the group already have the signal from kill(-pgid): a
       second one would hit, say, the checkpoint seal a rank started after
       the first (its pre-emption handler at work). */
    if (p == helper || p == coord || (E->pgid > 0 && pp[i][2] == E->pgid))
      continue;
    for (int depth = 0; depth < 64 && p > 1; depth++) {
      pid_t parent = -1;
      for (size_t k = 0; k < n; k++)
        if (pp[k][0] == p) {
          parent = pp[k][1];
          break;
        }
      if (parent == self) {
        if (p != helper && p != coord)   /* never the helper, nor the coordinator */
          kill(pp[i][0], sig);
        break;
      }
      p = parent;
    }
  }
  free(pp);
}

void
kg_ex_kill_tree(kg_exec_s *E, int sig)
{
  if (E->pgid > 0)
    kill(-E->pgid, sig);
  s_kill_descendants(E, sig);
}

/*  Nothing of the command is left: its leader reaped, no member of its
    process group, and no other child of kguard but the helper. */
bool
kg_ex_group_gone(kg_exec_s *E)
{
  if (!E->leader_reaped)
    return false;
  if (E->pgid > 0 && kill(-E->pgid, 0) == 0)
    return false;
  siginfo_t si;
  memset(&si, 0, sizeof si);
  pid_t helper = E->helper ? kg_child_pid(E->helper) : -1;
  pid_t coord = E->coord ? kg_child_pid(E->coord) : -1;
  /* Any unreaped child other than the helper (peek only). */
  if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid > 0
      && si.si_pid != helper && si.si_pid != coord)
    return false;
  return true;
}

int
kg_ex_start_helper(kg_exec_s *E, char **argv)
{
  kg_child_opts_t opts = {.argv = argv, .capture = true};
  free(E->helper_out);
  E->helper_out = NULL;
  E->helper_len = 0;
  return kg_child_spawn(&opts, &E->helper);
}

/*  Reap every ended child: the command's leader and the helper through
    their kg_child (peeked with WNOWAIT first so their status is not
    stolen), every other process of the tree here (kguard is a subreaper). */
static void
s_reap(kg_exec_s *E)
{
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
      break;
    pid_t pid = si.si_pid;
    if (E->leader && !E->leader_reaped && pid == kg_child_pid(E->leader)) {
      if (kg_child_reap(E->leader) != 1)
        break;
      E->leader_reaped = true;
      E->leader_status = kg_child_status(E->leader);
      char how[64];
      kg_child_describe(E->leader_status, how, sizeof how);
      kg_info("exec: the command (pid %ld) ended: %s", (long) pid, how);
      cJSON *o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "pid", pid);
      cJSON_AddStringToObject(o, "status", how);
      cJSON_AddBoolToObject(o, "command", true);
      cJSON_AddItemToArray(E->exits, o);
      kg_ex_fire(E, KG_EXE_LEADER_EXIT, E->leader_status);
    } else if (E->coord && pid == kg_child_pid(E->coord) && !kg_child_exited(E->coord)) {
      if (kg_child_reap(E->coord) != 1)
        break;
      char how[64];
      int st = kg_child_status(E->coord);
      kg_child_describe(st, how, sizeof how);
      kg_info("exec: the coordinator ended: %s", how);
      /* It ends with the usage code only when it cannot start (its message
         says why); any other end is judged by the heartbeat rule. */
      if (WIFEXITED(st) && WEXITSTATUS(st) == KG_EXIT_USAGE)
        kg_ex_fire(E, KG_EXE_COORD_FAILED, 0);
    } else if (E->helper && pid == kg_child_pid(E->helper)) {
      if (kg_child_reap(E->helper) != 1)
        break;
      kg_ex_fire(E, KG_EXE_HELPER_DONE, 0);
    } else {
      int st = 0;
      if (waitpid(pid, &st, WNOHANG) != pid)
        break;
      char how[64];
      kg_child_describe(st, how, sizeof how);
      kg_info("exec: process %ld of the command ended: %s", (long) pid, how);
      if (cJSON_GetArraySize(E->exits) < 256) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "pid", pid);
        cJSON_AddStringToObject(o, "status", how);
        cJSON_AddItemToArray(E->exits, o);
      }
      kg_ex_fire(E, KG_EXE_PROC_EXIT, st);
    }
  }
}

/* ---- output ------------------------------------------------------------ */

static void
s_write_all(int fd, const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t w = write(fd, buf, len);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, 1000);
        continue;
      }
      return;   /* a closed terminal does not stop the supervision */
    }
    buf += w;
    len -= (size_t) w;
  }
}

/*  Pass one pipe's available output through, keep it, and diagnose it. */
static void
s_read_group(kg_exec_s *E, int which)
{
  char buf[65536];
  for (int rounds = 0; rounds < 16; rounds++) {
    ssize_t n = kg_child_read(E->leader, which, buf, sizeof buf);
    if (n <= 0)
      return;
    s_write_all(which == 1 ? STDOUT_FILENO : STDERR_FILENO, buf, (size_t) n);
    kg_exec_log_output(E->log, buf, (size_t) n);
    kg_source_t src = which == 1 ? KG_SRC_RAW_STDOUT : KG_SRC_RAW_STDERR;
    kg_diag_event_t d = kg_diagnosis_feed(E->diag, src, NULL, NULL, buf, (size_t) n,
                                          kg_clock_wall_ms());
    int64_t step = kg_diagnosis_last_step(E->diag);
    if (kg_exec_pace_step(&E->pace, step, kg_clock_mono_ms()))
      kg_ex_fire(E, KG_EXE_STEP, step);
    /* Text on the group's pipes proves nothing by itself (a suspicion,
       issue 16): the proof is a failure or a stall after it (kg_exec.c). */
    if (d == KG_DIAG_SUSPECT || d == KG_DIAG_STICKY)
      kg_ex_fire(E, KG_EXE_STICKY, 0);
  }
}

static void
s_read_helper(kg_exec_s *E)
{
  char buf[8192];
  for (;;) {
    ssize_t n = kg_child_read(E->helper, 1, buf, sizeof buf);
    if (n <= 0)
      break;
    if (E->helper_len + (size_t) n > S_HELPER_OUT_MAX)
      continue;
    char *g = realloc(E->helper_out, E->helper_len + (size_t) n + 1);
    if (!g)
      continue;
    E->helper_out = g;
    memcpy(g + E->helper_len, buf, (size_t) n);
    E->helper_len += (size_t) n;
    g[E->helper_len] = '\0';
  }
  for (;;) {
    ssize_t n = kg_child_read(E->helper, 2, buf, sizeof buf);
    if (n <= 0)
      break;
    s_write_all(STDERR_FILENO, buf, (size_t) n);
  }
}

/* ---- the loop ---------------------------------------------------------- */

static void
s_read_signals(kg_exec_s *E)
{
  struct signalfd_siginfo si;
  while (read(E->sigfd, &si, sizeof si) == (ssize_t) sizeof si) {
    if (si.ssi_signo == SIGCHLD)
      s_reap(E);
    else
      kg_ex_fire(E, KG_EXE_SIGNAL, (int64_t) si.ssi_signo);
  }
}

int
kg_ex_loop(kg_exec_s *E)
{
  while (E->state != KG_EX_DONE) {
    int out = E->leader ? kg_child_stdout_fd(E->leader) : -1;
    int err = E->leader ? kg_child_stderr_fd(E->leader) : -1;
    int hout = E->helper ? kg_child_stdout_fd(E->helper) : -1;
    int herr = E->helper ? kg_child_stderr_fd(E->helper) : -1;
    /* zmq_poll takes plain fds (fd < 0 is never ready) and the link. */
    zmq_pollitem_t p[7] = {
      {NULL, E->sigfd, ZMQ_POLLIN, 0}, {NULL, out, out >= 0 ? ZMQ_POLLIN : 0, 0},
      {NULL, err, err >= 0 ? ZMQ_POLLIN : 0, 0}, {NULL, hout, hout >= 0 ? ZMQ_POLLIN : 0, 0},
      {NULL, herr, herr >= 0 ? ZMQ_POLLIN : 0, 0}, {E->link, -1, ZMQ_POLLIN, 0},
      {E->monitor, -1, ZMQ_POLLIN, 0}};
    int n = !E->link ? 5 : E->monitor ? 7 : 6;
    int64_t wake = E->deadline;
    if (E->link) {
      int64_t t = kg_ex_node_timers(E);
      kg_ex_run_queue(E);
      if (E->state == KG_EX_DONE)
        break;
      if (wake < 0 || t < wake)
        wake = t;
    }
    long timeout = -1;
    if (wake >= 0) {
      int64_t left = wake - kg_clock_mono_ms();
      timeout = left < 0 ? 0 : left > 60000 ? 60000 : (long) left;
    }
    int rc = zmq_poll(p, n, timeout);
    if (rc < 0 && zmq_errno() != EINTR) {
      kg_error("exec: poll: %s", zmq_strerror(zmq_errno()));
      return KG_EXIT_SYSTEM;
    }
    /* Output before exits, so the text that explains a death is seen first. */
    if (rc > 0 && p[1].revents)
      s_read_group(E, 1);
    if (rc > 0 && p[2].revents)
      s_read_group(E, 2);
    if (rc > 0 && (p[3].revents || p[4].revents))
      s_read_helper(E);
    if (rc > 0 && p[0].revents)
      s_read_signals(E);
    if (rc > 0 && n >= 6 && p[5].revents)
      kg_ex_node_recv(E);
    if (rc > 0 && n == 7 && p[6].revents)
      kg_ex_node_monitor(E);
    if (E->deadline >= 0 && kg_clock_mono_ms() >= E->deadline) {
      E->deadline = -1;
      kg_ex_fire(E, KG_EXE_DEADLINE, 0);
    }
    kg_ex_run_queue(E);
    if (E->state == KG_EX_STOPPING && kg_ex_group_gone(E)) {
      kg_ex_fire(E, KG_EXE_GROUP_GONE, 0);
      kg_ex_run_queue(E);
    }
  }
  /* What the group still had in its pipes. */
  if (E->leader) {
    s_read_group(E, 1);
    s_read_group(E, 2);
  }
  return E->exit_code;
}
