/*  kg_loop: the reactor, on an injected clock (no sleeps): timers fire at
    their deadline and in registration order, readers and writers by fd and
    by ZeroMQ socket (with ZMQ_FD's edge: a socket is looked at again after
    a batch cut short and after a send), sources whose fd or socket changes,
    signals by list, removal inside a handler, stopping, and more sources
    than the old fixed table held. An iteration that must not block has a
    timer that is always due. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_loop.h"
#include "kg_sigsrc.h"
#include "kg_test.h"

static int64_t s_now;   /* the injected clock */

static int64_t
s_clock(void *arg)
{
  (void) arg;
  return s_now;
}

static kg_loop_t *
s_loop(void)
{
  kg_loop_t *loop = kg_loop_new();
  KG_CHECK(loop != NULL);
  kg_loop_set_clock(loop, s_clock, NULL);
  s_now = 1000;
  return loop;
}

/*  A record of calls: "a" for the handler with arg "a"... */
static char s_log[256];

static void
s_note(const char *what)
{
  size_t n = strlen(s_log);
  snprintf(s_log + n, sizeof s_log - n, "%s%s", n ? " " : "", what);
}

static int
s_timer_note(kg_loop_t *loop, int id, void *arg)
{
  (void) loop;
  (void) id;
  s_note(arg);
  return KG_LOOP_OK;
}

/*  Always due: keeps an iteration from blocking. */
static int64_t
s_when_now(void *arg)
{
  (void) arg;
  return s_now;
}

static int
s_tick(kg_loop_t *loop, int id, void *arg)
{
  (void) loop;
  (void) id;
  (void) arg;
  return KG_LOOP_OK;
}

KG_TEST(timer_fires_at_its_deadline)
{
  kg_loop_t *loop = s_loop();
  s_log[0] = '\0';
  int id = kg_loop_timer(loop, 1500, s_timer_note, "t");
  KG_CHECK(id > 0);
  KG_CHECK_INT(kg_loop_timeout(loop), 500);
  s_now = 1499;
  KG_CHECK_INT(kg_loop_timeout(loop), 1);
  s_now = 1500;
  KG_CHECK_INT(kg_loop_timeout(loop), 0);
  KG_CHECK_INT(kg_loop_once(loop), 0);
  KG_CHECK_STR(s_log, "t");
  /* one shot: disarmed until set again */
  KG_CHECK_INT(kg_loop_timeout(loop), -1);
  KG_CHECK_INT(kg_loop_timer_set(loop, id, 1700), 0);
  KG_CHECK_INT(kg_loop_timeout(loop), 200);
  KG_CHECK_INT(kg_loop_timer_set(loop, id, 0), 0);
  KG_CHECK_INT(kg_loop_timeout(loop), -1);
  KG_CHECK_INT(kg_loop_timer_set(loop, 999, 1), KG_ENOTFOUND);
  kg_loop_destroy(&loop);
  KG_CHECK(loop == NULL);
  kg_loop_destroy(&loop);   /* harmless */
}

/*  A source whose deadline its own state says. */
typedef struct {
  int64_t deadline;
  int fired;
} s_due_t;

static int64_t
s_due_when(void *arg)
{
  return ((s_due_t *) arg)->deadline;
}

static int
s_due_fire(kg_loop_t *loop, int id, void *arg)
{
  (void) id;
  s_due_t *d = arg;
  d->fired++;
  d->deadline = kg_loop_now(loop) + 100;   /* acting moves it */
  return KG_LOOP_OK;
}

KG_TEST(timer_of_asks_each_wait)
{
  kg_loop_t *loop = s_loop();
  s_due_t d = {.deadline = 0};
  int id = kg_loop_timer_of(loop, s_due_when, s_due_fire, &d);
  KG_CHECK_INT(kg_loop_timeout(loop), -1);
  d.deadline = 1300;   /* the source's state changed: no call to the loop */
  KG_CHECK_INT(kg_loop_timeout(loop), 300);
  s_now = 1300;
  kg_loop_once(loop);
  KG_CHECK_INT(d.fired, 1);
  KG_CHECK_INT(kg_loop_timeout(loop), 100);
  KG_CHECK_INT(kg_loop_timer_set(loop, id, 5), KG_ENOTFOUND);   /* its deadline is its own */
  kg_loop_remove(loop, id);
  KG_CHECK_INT(kg_loop_timeout(loop), -1);
  kg_loop_destroy(&loop);
}

KG_TEST(timers_fire_in_registration_order)
{
  kg_loop_t *loop = s_loop();
  s_log[0] = '\0';
  kg_loop_timer(loop, 1003, s_timer_note, "first");
  kg_loop_timer(loop, 1001, s_timer_note, "second");
  kg_loop_timer(loop, 1900, s_timer_note, "later");
  kg_loop_timer(loop, 1002, s_timer_note, "third");
  s_now = 1010;
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "first second third");
  KG_CHECK_INT(kg_loop_timeout(loop), 890);
  kg_loop_destroy(&loop);
}

/*  A reader that reads what the pipe holds and notes its arg. */
static int
s_read_note(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop;
  (void) id;
  const char **p = arg;   /* {name, fd as text} */
  char buf[64];
  int fd = atoi(p[1]);
  (void) !read(fd, buf, sizeof buf);
  s_note(events == KG_LOOP_IN ? p[0] : "?");
  return KG_LOOP_OK;
}

static int
s_write_note(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop;
  (void) id;
  s_note(events == KG_LOOP_OUT ? arg : "?");
  return KG_LOOP_OK;
}

KG_TEST(fd_reader_and_writer)
{
  kg_loop_t *loop = s_loop();
  kg_loop_timer_of(loop, s_when_now, s_tick, NULL);
  int p[2];
  KG_CHECK(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
  char fdtext[16];
  snprintf(fdtext, sizeof fdtext, "%d", p[0]);
  const char *r[2] = {"r", fdtext};
  s_log[0] = '\0';
  kg_loop_fd(loop, p[0], KG_LOOP_IN, s_read_note, r);
  int w = kg_loop_fd(loop, p[1], 0, s_write_note, "w");
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "");   /* nothing to read; the writer asked for nothing */
  KG_CHECK(write(p[1], "x", 1) == 1);
  KG_CHECK_INT(kg_loop_set_events(loop, w, KG_LOOP_OUT), 0);
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "r w");
  kg_loop_set_events(loop, w, 0);
  s_log[0] = '\0';
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "");
  /* at end of file the reader is called (it reads the EOF) */
  close(p[1]);
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "r");
  kg_loop_destroy(&loop);
  close(p[0]);
}

static int s_current_fd = -1;

static int
s_fd_now(void *arg)
{
  (void) arg;
  return s_current_fd;
}

KG_TEST(fd_of_follows_the_descriptor)
{
  kg_loop_t *loop = s_loop();
  kg_loop_timer_of(loop, s_when_now, s_tick, NULL);
  int p[2];
  KG_CHECK(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
  char fdtext[16];
  snprintf(fdtext, sizeof fdtext, "%d", p[0]);
  const char *r[2] = {"r", fdtext};
  s_log[0] = '\0';
  s_current_fd = -1;
  kg_loop_fd_of(loop, s_fd_now, KG_LOOP_IN, s_read_note, r);
  KG_CHECK(write(p[1], "x", 1) == 1);
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "");   /* no descriptor yet */
  s_current_fd = p[0];
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "r");
  kg_loop_destroy(&loop);
  close(p[0]);
  close(p[1]);
}

static void *s_ctx, *s_a, *s_b;   /* a connected PAIR: b sends to a */

static void
s_pair(void)
{
  static int n;
  char ep[64];
  snprintf(ep, sizeof ep, "inproc://loop-%d", n++);
  s_ctx = zmq_ctx_new();
  s_a = zmq_socket(s_ctx, ZMQ_PAIR);
  s_b = zmq_socket(s_ctx, ZMQ_PAIR);
  int zero = 0;
  zmq_setsockopt(s_a, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(s_b, ZMQ_LINGER, &zero, sizeof zero);
  if (zmq_bind(s_a, ep) != 0 || zmq_connect(s_b, ep) != 0)
    abort();
}

static void
s_unpair(void)
{
  zmq_close(s_a);
  zmq_close(s_b);
  zmq_ctx_term(s_ctx);
}

/*  Takes at most one message per call (a batch of one): MORE unless the
    receive found the socket empty. */
static int
s_take_one(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop;
  (void) id;
  (void) events;
  char buf[16];
  int n = zmq_recv(arg, buf, sizeof buf - 1, ZMQ_DONTWAIT);
  if (n < 0)
    return KG_LOOP_OK;
  buf[n] = '\0';
  s_note(buf);
  return KG_LOOP_MORE;
}

/*  True if fd polls readable now. */
static bool
s_fd_readable(void *socket)
{
  int fd;
  size_t len = sizeof fd;
  zmq_getsockopt(socket, ZMQ_FD, &fd, &len);
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, 0) == 1;
}

KG_TEST(socket_reader_batches)
{
  s_pair();
  kg_loop_t *loop = s_loop();
  kg_loop_timer_of(loop, s_when_now, s_tick, NULL);
  s_log[0] = '\0';
  kg_loop_socket(loop, s_a, KG_LOOP_IN, s_take_one, s_a);
  zmq_send(s_b, "1", 1, 0);
  zmq_send(s_b, "2", 1, 0);
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "1");
  kg_loop_once(loop);   /* MORE: looked at again, no edge needed */
  KG_CHECK_STR(s_log, "1 2");
  kg_loop_once(loop);   /* the receive found it empty */
  KG_CHECK_STR(s_log, "1 2");
  kg_loop_destroy(&loop);
  s_unpair();
}

KG_TEST(a_send_is_told_or_its_input_waits)
{
  s_pair();
  kg_loop_t *loop = s_loop();
  s_log[0] = '\0';
  kg_loop_socket(loop, s_a, KG_LOOP_IN, s_take_one, s_a);
  int t = kg_loop_timer(loop, 1, s_tick, NULL);   /* one iteration that does not block */
  kg_loop_once(loop);   /* the new socket is looked at: nothing yet */
  zmq_send(s_b, "m", 1, 0);
  KG_CHECK(s_fd_readable(s_a));
  /* What a send on a does to its commands (ZMQ_EVENTS does the same,
     without throttling): the edge that announced "m" is consumed. */
  int ev;
  size_t len = sizeof ev;
  zmq_getsockopt(s_a, ZMQ_EVENTS, &ev, &len);
  KG_CHECK(ev & ZMQ_POLLIN);
  KG_CHECK(!s_fd_readable(s_a));
  KG_CHECK_INT(kg_loop_timeout(loop), -1);   /* nothing would wake the loop */
  kg_loop_sent(loop, s_a);
  KG_CHECK_INT(kg_loop_timeout(loop), 0);
  kg_loop_timer_set(loop, t, 1);   /* in case, the iteration does not block */
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "m");
  kg_loop_destroy(&loop);
  s_unpair();
}

static void *s_socket_now;

static void *
s_socket_of(void *arg)
{
  (void) arg;
  return s_socket_now;
}

KG_TEST(socket_of_a_new_socket_is_looked_at)
{
  s_pair();
  kg_loop_t *loop = s_loop();
  s_log[0] = '\0';
  s_socket_now = NULL;
  kg_loop_socket_of(loop, s_socket_of, KG_LOOP_IN, s_take_one, s_a);
  KG_CHECK_INT(kg_loop_timeout(loop), -1);
  zmq_send(s_b, "n", 1, 0);
  int ev;
  size_t len = sizeof ev;
  zmq_getsockopt(s_a, ZMQ_EVENTS, &ev, &len);   /* its edge is gone */
  s_socket_now = s_a;                           /* ... but it is new */
  KG_CHECK_INT(kg_loop_timeout(loop), 0);
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "n");
  kg_loop_destroy(&loop);
  s_unpair();
}

static int
s_writer(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) arg;
  s_note(events == KG_LOOP_OUT ? "out" : "?");
  kg_loop_set_events(loop, id, 0);   /* nothing more to write */
  return KG_LOOP_OK;
}

KG_TEST(socket_writer)
{
  s_pair();
  kg_loop_t *loop = s_loop();
  kg_loop_timer_of(loop, s_when_now, s_tick, NULL);
  s_log[0] = '\0';
  int w = kg_loop_socket(loop, s_b, 0, s_writer, NULL);
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "");
  kg_loop_set_events(loop, w, KG_LOOP_OUT);   /* armed: looked at without an edge */
  kg_loop_once(loop);
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "out");
  kg_loop_destroy(&loop);
  s_unpair();
}

static int
s_on_signal(kg_loop_t *loop, int signo, void *arg)
{
  (void) loop;
  (void) arg;
  s_note(signo == SIGUSR1 ? "usr1" : signo == SIGUSR2 ? "usr2" : "?");
  return KG_LOOP_OK;
}

KG_TEST(signals_by_list)
{
  static const int none[] = {0};
  KG_CHECK(kg_sigsrc_new(none) == NULL && errno == EINVAL);
  static const int sigs[] = {SIGUSR1, SIGUSR2, 0};
  kg_sigsrc_t *sig = kg_sigsrc_new(sigs);
  KG_CHECK(sig != NULL);
  kg_loop_t *loop = s_loop();
  kg_loop_timer_of(loop, s_when_now, s_tick, NULL);
  s_log[0] = '\0';
  kg_loop_signals(loop, sig, s_on_signal, NULL);
  raise(SIGUSR2);   /* blocked: pending, read through the fd */
  raise(SIGUSR1);
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "usr1 usr2");   /* the signalfd gives the lower number first */
  kg_loop_destroy(&loop);
  kg_sigsrc_destroy(&sig);
  KG_CHECK(sig == NULL);
}

static int s_victim;

static int
s_remover(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) id;
  (void) events;
  s_note(arg);
  kg_loop_remove(loop, s_victim);
  return KG_LOOP_OK;
}

KG_TEST(a_source_removed_in_a_handler_is_not_called)
{
  kg_loop_t *loop = s_loop();
  kg_loop_timer_of(loop, s_when_now, s_tick, NULL);
  int p[2], q[2];
  KG_CHECK(pipe2(p, O_CLOEXEC) == 0 && pipe2(q, O_CLOEXEC) == 0);
  KG_CHECK(write(p[1], "x", 1) == 1 && write(q[1], "x", 1) == 1);
  s_log[0] = '\0';
  kg_loop_fd(loop, p[0], KG_LOOP_IN, s_remover, "first");
  s_victim = kg_loop_fd(loop, q[0], KG_LOOP_IN, s_write_note, "second");
  kg_loop_once(loop);
  KG_CHECK_STR(s_log, "first");
  kg_loop_destroy(&loop);
  close(p[0]);
  close(p[1]);
  close(q[0]);
  close(q[1]);
}

static int
s_stopper(kg_loop_t *loop, int id, void *arg)
{
  (void) loop;
  (void) id;
  (*(int *) arg)++;
  return KG_LOOP_STOP;
}

KG_TEST(stop_ends_the_run)
{
  kg_loop_t *loop = s_loop();
  int calls = 0;
  kg_loop_timer(loop, 1000, s_stopper, &calls);
  KG_CHECK_INT(kg_loop_run(loop), 0);
  KG_CHECK_INT(calls, 1);
  kg_loop_stop(loop);   /* asked between iterations: the next one ends at once */
  KG_CHECK_INT(kg_loop_once(loop), 1);
  KG_CHECK_INT(kg_loop_timeout(loop), -1);
  kg_loop_destroy(&loop);
}

static int s_calls;

static int
s_count(kg_loop_t *loop, int id, int events, void *arg)
{
  (void) loop;
  (void) id;
  (void) events;
  (void) arg;
  s_calls++;
  return KG_LOOP_OK;
}

KG_TEST(more_sources_than_the_old_table)
{
  kg_loop_t *loop = s_loop();
  kg_loop_timer_of(loop, s_when_now, s_tick, NULL);
  enum { N = 40 };
  int p[N][2];
  s_calls = 0;
  for (int i = 0; i < N; i++) {
    KG_CHECK(pipe2(p[i], O_CLOEXEC) == 0);
    KG_CHECK(write(p[i][1], "x", 1) == 1);
    KG_CHECK(kg_loop_fd(loop, p[i][0], KG_LOOP_IN, s_count, NULL) > 0);
  }
  kg_loop_once(loop);
  KG_CHECK_INT(s_calls, N);
  kg_loop_destroy(&loop);
  for (int i = 0; i < N; i++) {
    close(p[i][0]);
    close(p[i][1]);
  }
}

KG_TEST_MAIN(KG_CASE(timer_fires_at_its_deadline), KG_CASE(timer_of_asks_each_wait),
             KG_CASE(timers_fire_in_registration_order), KG_CASE(fd_reader_and_writer),
             KG_CASE(fd_of_follows_the_descriptor), KG_CASE(socket_reader_batches),
             KG_CASE(a_send_is_told_or_its_input_waits),
             KG_CASE(socket_of_a_new_socket_is_looked_at), KG_CASE(socket_writer),
             KG_CASE(signals_by_list), KG_CASE(a_source_removed_in_a_handler_is_not_called),
             KG_CASE(stop_ends_the_run), KG_CASE(more_sources_than_the_old_table))
