/*  kg_exec_loop: `kguard exec` on the house's reactor (kg_loop): the
    ranks' and the helpers' output, the coordinator's link, the signals
    and the state's deadlines as its registrations; every handler ends by
    running the queued events (kg_exec.c, on kg_fsm). The top of exec's
    files: what the handlers read is kg_exec_output.c, the process tree
    kg_exec_ranks.c. */
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

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_log.h"
#include "kg_exit.h"
#include "kg_paths.h"

/* ---- the loop: every source a registration of kg_loop ------------------ */

/*  After every handler: the queued events run, a tree that is gone says
    so, and a run that is done stops the loop. */
static int
s_after(kg_exec_s *E)
{
  kg_ex_run_queue(E);
  if (kg_ex_state(E) == KG_EX_STOPPING && kg_ex_group_gone(E)) {
    kg_ex_fire(E, KG_EXE_GROUP_GONE, 0);
    kg_ex_run_queue(E);
  }
  return kg_ex_state(E) == KG_EX_DONE ? KG_LOOP_STOP : KG_LOOP_OK;
}

/*  One of a rank's (or its standby's) two pipes. */
typedef struct {
  kg_exec_s *E;
  int rank, which;
  bool standby;
} s_pipe_t;

static int
s_pipe_fd(void *arg)
{
  s_pipe_t *p = arg;
  kg_ex_rank_t *k = &p->E->ranks[p->rank];
  kg_child_t *c = p->standby ? k->standby : k->child;
  return !c ? -1 : p->which == 1 ? kg_child_stdout_fd(c) : kg_child_stderr_fd(c);
}

static int
s_on_pipe(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  s_pipe_t *p = arg;
  if (p->standby)
    kg_ex_standby_read(p->E, p->rank, p->which);
  else
    kg_ex_read_rank(p->E, p->rank, p->which);
  return s_after(p->E);
}

static int
s_steps_fd(void *arg)
{
  return kg_exec_stepsock_fd(((kg_exec_s *) arg)->steps);
}

static int
s_on_steps(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  kg_ex_read_steps(arg);
  return s_after(arg);
}

static int
s_helper_fd(void *arg)
{
  kg_exec_s *E = arg;
  return E->helper ? kg_child_stdout_fd(E->helper) : -1;
}

static int
s_helper_err_fd(void *arg)
{
  kg_exec_s *E = arg;
  return E->helper ? kg_child_stderr_fd(E->helper) : -1;
}

static int
s_on_helper(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  kg_ex_read_helper(arg);
  return s_after(arg);
}

static int
s_store_fd(void *arg)
{
  return kg_exec_store_fd(((kg_exec_s *) arg)->store);
}

static int
s_on_store(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  kg_exec_store_read(((kg_exec_s *) arg)->store);
  return s_after(arg);
}

static void *
s_link(void *arg)
{
  return ((kg_exec_s *) arg)->link;
}

static void *
s_monitor(void *arg)
{
  return ((kg_exec_s *) arg)->monitor;
}

static int
s_on_link(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  kg_ex_node_recv(arg);
  return s_after(arg);
}

static int
s_on_monitor(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  kg_ex_node_monitor(arg);
  return s_after(arg);
}

static int
s_on_signal(kg_loop_t *loop, int signo, void *arg)
{
  (void) loop;
  kg_exec_s *E = arg;
  if (signo == SIGCHLD)
    kg_ex_reap(E);
  else
    kg_ex_fire(E, KG_EXE_SIGNAL, signo);
  return s_after(E);
}

/*  kguard's stdout (1) or stderr (2), watched only while its queue holds
    something. */
typedef struct {
  kg_exec_s *E;
  int which;
} s_out_t;

static int
s_out_fd(void *arg)
{
  s_out_t *o = arg;
  kg_fdq_t *q = o->E->out[o->which - 1];
  return kg_fdq_pending(q) ? kg_fdq_fd(q) : -1;
}

static int
s_on_out(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop, (void) id, (void) events;
  s_out_t *o = arg;
  kg_ex_output_flush(o->E, o->which);
  return s_after(o->E);
}

/*  The state's deadline (kg_exec_states.h): when it passes, the row's
    event is posted. */
static int64_t
s_deadline(void *arg)
{
  return kg_fsm_deadline(((const kg_exec_s *) arg)->fsm);
}

static int
s_on_deadline(kg_loop_t *loop, int id, void *arg)
{
  (void) id;
  kg_exec_s *E = arg;
  kg_fsm_tick(E->fsm, kg_loop_now(loop));
  return s_after(E);
}

static int64_t
s_node_when(void *arg)
{
  const kg_exec_s *E = arg;
  return E->link ? kg_ex_node_when(E) : 0;
}

static int
s_on_node_timer(kg_loop_t *loop, int id, void *arg)
{
  (void) loop, (void) id;
  kg_ex_node_timers(arg);
  return s_after(arg);
}

static int64_t
s_standby_due(void *arg)
{
  return kg_ex_standby_due(arg);
}

static int
s_on_standby(kg_loop_t *loop, int id, void *arg)
{
  (void) loop, (void) id;
  kg_ex_standby_tick(arg);
  return s_after(arg);
}

int
kg_ex_loop(kg_exec_s *E)
{
  /* Registered in the order their handlers run in one iteration: the
     ranks' output before the signals, so the text that explains a death
     is read before the death is. */
  s_pipe_t *pipes = calloc(4 * (size_t) E->nranks, sizeof *pipes);
  s_out_t outs[2] = {{E, 1}, {E, 2}};
  bool ok = pipes && E->loop;
  for (int k = 0; ok && k < 4 * E->nranks; k++) {
    pipes[k] = (s_pipe_t){E, k / 4 % E->nranks, k % 2 + 1, k % 4 >= 2};
    ok = kg_loop_fd_of(E->loop, s_pipe_fd, KG_LOOP_IN, s_on_pipe, &pipes[k]) > 0;
  }
  ok = ok && kg_loop_fd_of(E->loop, s_steps_fd, KG_LOOP_IN, s_on_steps, E) > 0
       && kg_loop_fd_of(E->loop, s_helper_fd, KG_LOOP_IN, s_on_helper, E) > 0
       && kg_loop_fd_of(E->loop, s_helper_err_fd, KG_LOOP_IN, s_on_helper, E) > 0
       && kg_loop_fd_of(E->loop, s_store_fd, KG_LOOP_IN, s_on_store, E) > 0
       && kg_loop_socket_of(E->loop, s_link, KG_LOOP_IN, s_on_link, E) > 0
       && kg_loop_socket_of(E->loop, s_monitor, KG_LOOP_IN, s_on_monitor, E) > 0
       && kg_loop_signals(E->loop, E->sig, s_on_signal, E) > 0
       && kg_loop_timer_of(E->loop, s_deadline, s_on_deadline, E) > 0
       && kg_loop_timer_of(E->loop, s_node_when, s_on_node_timer, E) > 0
       && kg_loop_timer_of(E->loop, s_standby_due, s_on_standby, E) > 0
       && kg_loop_fd_of(E->loop, s_out_fd, KG_LOOP_OUT, s_on_out, &outs[0]) > 0
       && kg_loop_fd_of(E->loop, s_out_fd, KG_LOOP_OUT, s_on_out, &outs[1]) > 0;
  int rc = ok ? 0 : KG_ENOMEM;
  if (ok && s_after(E) != KG_LOOP_STOP)
    rc = kg_loop_run(E->loop);
  free(pipes);
  if (rc != 0) {
    kg_error("exec: the event loop failed: %s", kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  /* What the ranks still had in their pipes. */
  for (int r = 0; r < E->nranks; r++) {
    kg_ex_read_rank(E, r, 1);
    kg_ex_read_rank(E, r, 2);
  }
  return E->exit_code;
}
