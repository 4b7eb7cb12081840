/*  kg_exec_loop: the one poll loop of `kguard exec` and the ranks'
    output (the process tree: kg_exec_ranks.c). */
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

int
kg_ex_start_helper(kg_exec_s *E, char **argv)
{
  kg_child_opts_t opts = {.argv = argv, .capture = true};
  free(E->helper_out);
  E->helper_out = NULL;
  E->helper_len = 0;
  return kg_child_spawn(&opts, &E->helper);
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

struct s_line_ctx {
  kg_exec_s *E;
  int rank;
  kg_source_t src;
};

/*  One whole line of one rank's stream, to the diagnosis: ranks' lines
    never mix there, whatever the pipes' reads cut. */
static void
s_diag_line(void *arg, const char *line, size_t len, bool truncated, int64_t first_ms)
{
  (void) truncated;
  struct s_line_ctx *c = arg;
  kg_exec_s *E = c->E;
  char buf[KG_DIAG_MAX_LINE + 2];
  if (len > KG_DIAG_MAX_LINE)
    len = KG_DIAG_MAX_LINE;
  memcpy(buf, line, len);
  buf[len] = '\n';
  kg_diag_event_t d = kg_diagnosis_feed(E->diag, c->src, NULL, NULL, buf, len + 1, first_ms);
  int64_t step = kg_diagnosis_last_step(E->diag);
  if (step >= 0 && kg_exec_pace_step(&E->pace, step, kg_clock_mono_ms()))
    kg_ex_fire(E, KG_EXE_STEP, step);
  /* Text on the group's pipes proves nothing by itself (a suspicion):
     the proof is a failure or a stall after it (kg_exec.c). */
  if (d == KG_DIAG_SUSPECT || d == KG_DIAG_STICKY) {
    if (E->fault_rank < 0)
      E->fault_rank = c->rank;
    kg_ex_fire(E, KG_EXE_STICKY, 0);
  }
}

/*  Pass one rank's pipe through as it comes, keep it, and diagnose it line
    by line. */
static void
s_read_rank(kg_exec_s *E, int r, int which)
{
  kg_ex_rank_t *k = &E->ranks[r];
  char buf[65536];
  struct s_line_ctx ctx = {E, r, which == 1 ? KG_SRC_RAW_STDOUT : KG_SRC_RAW_STDERR};
  for (int rounds = 0; rounds < 16 && k->child; rounds++) {
    ssize_t n = kg_child_read(k->child, which, buf, sizeof buf);
    if (n == 0)
      kg_linebuf_flush(k->lines[which - 1], s_diag_line, &ctx);
    if (n <= 0)
      return;
    s_write_all(which == 1 ? STDOUT_FILENO : STDERR_FILENO, buf, (size_t) n);
    kg_exec_log_output(E->log, buf, (size_t) n);
    kg_linebuf_feed(k->lines[which - 1], buf, (size_t) n, kg_clock_wall_ms(), s_diag_line, &ctx);
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
    /* Its words pass; its machine progress lines (kguard-progress DONE
       TOTAL) are for programs, not for the job's log. */
    for (char *line = buf, *end = buf + n; line < end;) {
      char *nl = memchr(line, '\n', (size_t) (end - line));
      size_t len = nl ? (size_t) (nl - line) + 1 : (size_t) (end - line);
      if (len < 16 || strncmp(line, "kguard-progress ", 16) != 0)
        s_write_all(STDERR_FILENO, line, len);
      line += len;
    }
  }
}

/* ---- the loop ---------------------------------------------------------- */

static void
s_read_signals(kg_exec_s *E)
{
  struct signalfd_siginfo si;
  while (read(E->sigfd, &si, sizeof si) == (ssize_t) sizeof si) {
    if (si.ssi_signo == SIGCHLD)
      kg_ex_reap(E);
    else
      kg_ex_fire(E, KG_EXE_SIGNAL, (int64_t) si.ssi_signo);
  }
}

/*  Fixed poll items first, then two per rank. */
enum { S_SIG = 0, S_HOUT, S_HERR, S_LINK, S_MON, S_STORE, S_FIXED };

int
kg_ex_loop(kg_exec_s *E)
{
  size_t cap = S_FIXED + 4 * (size_t) E->nranks;   /* each rank, each standby */
  zmq_pollitem_t *p = calloc(cap, sizeof *p);
  if (!p)
    return KG_EXIT_SYSTEM;
  while (E->state != KG_EX_DONE) {
    int hout = E->helper ? kg_child_stdout_fd(E->helper) : -1;
    int herr = E->helper ? kg_child_stderr_fd(E->helper) : -1;
    /* zmq_poll takes plain fds (fd < 0 is never ready) and the link. */
    p[S_SIG] = (zmq_pollitem_t){NULL, E->sigfd, ZMQ_POLLIN, 0};
    p[S_HOUT] = (zmq_pollitem_t){NULL, hout, hout >= 0 ? ZMQ_POLLIN : 0, 0};
    p[S_HERR] = (zmq_pollitem_t){NULL, herr, herr >= 0 ? ZMQ_POLLIN : 0, 0};
    /* A socket item must name a socket: an idle fd stands in without one. */
    p[S_LINK] = E->link ? (zmq_pollitem_t){E->link, -1, ZMQ_POLLIN, 0}
                        : (zmq_pollitem_t){NULL, -1, 0, 0};
    p[S_MON] = E->monitor ? (zmq_pollitem_t){E->monitor, -1, ZMQ_POLLIN, 0}
                          : (zmq_pollitem_t){NULL, -1, 0, 0};
    int sfd = kg_exec_store_fd(E->store);
    p[S_STORE] = (zmq_pollitem_t){NULL, sfd, sfd >= 0 ? ZMQ_POLLIN : 0, 0};
    for (int r = 0; r < E->nranks; r++)
      for (int w = 0; w < 2; w++) {
        kg_child_t *c = E->ranks[r].child;
        int fd = !c ? -1 : w == 0 ? kg_child_stdout_fd(c) : kg_child_stderr_fd(c);
        p[S_FIXED + 2 * r + w] = (zmq_pollitem_t){NULL, fd, fd >= 0 ? ZMQ_POLLIN : 0, 0};
        kg_child_t *sb = E->ranks[r].standby;
        fd = !sb ? -1 : w == 0 ? kg_child_stdout_fd(sb) : kg_child_stderr_fd(sb);
        p[S_FIXED + 2 * (E->nranks + r) + w] =
          (zmq_pollitem_t){NULL, fd, fd >= 0 ? ZMQ_POLLIN : 0, 0};
      }
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
    int rc = zmq_poll(p, (int) cap, timeout);
    if (rc < 0 && zmq_errno() != EINTR) {
      kg_error("exec: poll: %s", zmq_strerror(zmq_errno()));
      free(p);
      return KG_EXIT_SYSTEM;
    }
    /* Output before exits, so the text that explains a death is seen first. */
    for (int r = 0; rc > 0 && r < E->nranks; r++)
      for (int w = 0; w < 2; w++)
        if (p[S_FIXED + 2 * r + w].revents)
          s_read_rank(E, r, w + 1);
    for (int r = 0; rc > 0 && r < E->nranks; r++)
      for (int w = 0; w < 2; w++)
        if (p[S_FIXED + 2 * (E->nranks + r) + w].revents)
          kg_ex_standby_read(E, r, w + 1);
    if (rc > 0 && p[S_STORE].revents)
      kg_exec_store_read(E->store);
    if (rc > 0 && (p[S_HOUT].revents || p[S_HERR].revents))
      s_read_helper(E);
    if (rc > 0 && p[S_SIG].revents)
      s_read_signals(E);
    if (rc > 0 && E->link && p[S_LINK].revents)
      kg_ex_node_recv(E);
    if (rc > 0 && E->monitor && p[S_MON].revents)
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
    kg_ex_standby_tick(E);
  }
  free(p);
  /* What the ranks still had in their pipes. */
  for (int r = 0; r < E->nranks; r++) {
    s_read_rank(E, r, 1);
    s_read_rank(E, r, 2);
  }
  return E->exit_code;
}
