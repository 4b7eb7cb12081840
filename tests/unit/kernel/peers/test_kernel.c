/*  kg_kernel: the inner kernel object, with /bin/sh as a tiny fake kernel:
    start (private connection file, sockets), raw output handed back and
    kept in the rings, the exit status, idempotent destroy, TERM then KILL
    of a process that ignores SIGTERM, and a spawn failure with a clear
    reason. Every wait polls the pipes or the process up to a deadline. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_kernel.h"
#include "kg_test.h"

static int64_t
s_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*  What the kernel wrote, as handed back by kg_kernel_drain. */
typedef struct {
  char out[4096], err[4096];
  size_t out_len, err_len;
} s_seen_t;

static void
s_collect(void *arg, int which, const char *data, size_t len)
{
  s_seen_t *seen = arg;
  char *buf = which == 1 ? seen->out : seen->err;
  size_t *n = which == 1 ? &seen->out_len : &seen->err_len;
  size_t room = sizeof seen->out - 1 - *n;
  if (len > room)
    len = room;
  memcpy(buf + *n, data, len);
  *n += len;
  buf[*n] = '\0';
}

/*  Poll the kernel's pipes (as kguard's loop does) and drain them until
    done(seen) holds or limit_ms passes. */
static bool
s_pump_until(kg_kernel_t *k, s_seen_t *seen, bool (*done)(kg_kernel_t *, s_seen_t *),
             int64_t limit_ms)
{
  int64_t end = s_now() + limit_ms;
  while (s_now() < end) {
    if (done(k, seen))
      return true;
    struct pollfd p[2];
    nfds_t n = 0;
    for (int which = 1; which <= 2; which++)
      if (kg_kernel_output_fd(k, which) >= 0)
        p[n++] = (struct pollfd){.fd = kg_kernel_output_fd(k, which), .events = POLLIN};
    poll(p, n, 20);   /* bounded: also wakes to look at the process */
    kg_kernel_drain(k, s_collect, seen);
  }
  return done(k, seen);
}

static bool
s_exited_and_drained(kg_kernel_t *k, s_seen_t *seen)
{
  (void) seen;
  return kg_kernel_reap(k) == 1 && kg_kernel_output_fd(k, 1) < 0
         && kg_kernel_output_fd(k, 2) < 0;
}

static bool
s_said_ready(kg_kernel_t *k, s_seen_t *seen)
{
  (void) k;
  return strstr(seen->out, "ready\n") != NULL;
}

static bool
s_exited(kg_kernel_t *k, s_seen_t *seen)
{
  (void) seen;
  return kg_kernel_reap(k) == 1;
}

typedef struct {
  void *ctx;
  char dir[64];
  char conn[128];
  kg_conninfo_t *front;
  kg_kernel_t *k;
} s_fixture_t;

static void
s_setup(s_fixture_t *f)
{
  memset(f, 0, sizeof *f);
  f->ctx = zmq_ctx_new();
  snprintf(f->dir, sizeof f->dir, "/tmp/kg-test-kernel-XXXXXX");
  KG_CHECK(mkdtemp(f->dir) != NULL);
  snprintf(f->conn, sizeof f->conn, "%s/kernel.json", f->dir);
  f->front = kg_conninfo_new();
  KG_CHECK(f->front && kg_conninfo_set_random_key(f->front) == 0);
  kg_kernel_opts_t opts = {.ctx = f->ctx, .runtime_dir = f->dir, .conn_path = f->conn,
                           .key_from = f->front, .log = NULL, .ring_bytes = 1024};
  f->k = kg_kernel_new(&opts);
  KG_CHECK(f->k != NULL);
}

static void
s_teardown(s_fixture_t *f)
{
  kg_kernel_destroy(&f->k);
  kg_conninfo_destroy(&f->front);
  zmq_ctx_term(f->ctx);
  unlink(f->conn);
  rmdir(f->dir);
}

KG_TEST(kernel_start_output_exit_status)
{
  s_fixture_t f;
  s_setup(&f);
  KG_CHECK(!kg_kernel_present(f.k) && kg_kernel_pid(f.k) == -1);
  KG_CHECK(kg_kernel_socket(f.k, KG_CH_SHELL) == NULL);   /* nothing before a start */
  /* The fake kernel shows the connection file it was given, writes to
     both streams, and exits 3. */
  char *argv[] = {"sh", "-c", "cat \"$1\"; echo; echo out-line; echo err-line >&2; exit 3",
                  "sh", f.conn, NULL};
  KG_CHECK_INT(kg_kernel_start(f.k, argv, NULL, NULL), 0);
  KG_CHECK_STR(kg_kernel_reason(f.k), "");
  KG_CHECK_INT(kg_kernel_generation(f.k), 1);
  KG_CHECK(kg_kernel_present(f.k) && kg_kernel_pid(f.k) > 0);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    KG_CHECK((kg_kernel_socket(f.k, (kg_channel_t) ch) != NULL) == (ch != KG_CH_HB));
  KG_CHECK(kg_kernel_signer(f.k) != NULL);

  s_seen_t seen = {0};
  KG_CHECK(s_pump_until(f.k, &seen, s_exited_and_drained, 10000));
  /* RAW_OUTPUT handed back per stream, and kept in the rings. */
  KG_CHECK(strstr(seen.out, "out-line\n") != NULL);
  KG_CHECK_STR(seen.err, "err-line\n");
  char *tail = kg_ring_tail(kg_kernel_ring(f.k, 2), 100);
  KG_CHECK_STR(tail, "err-line\n");
  free(tail);
  /* The private connection file: ipc endpoints in the runtime directory and
     the frontend's key, as the kernel read it. */
  KG_CHECK(strstr(seen.out, "\"transport\"") && strstr(seen.out, "ipc"));
  KG_CHECK(strstr(seen.out, f.dir) != NULL);
  char key[256];
  snprintf(key, sizeof key, "%.*s", (int) f.front->key_len, (const char *) f.front->key);
  KG_CHECK(strstr(seen.out, key) != NULL);
  /* EXITED with its wait status. */
  KG_CHECK(!kg_kernel_alive(f.k));
  int st = kg_kernel_status(f.k);
  KG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
  bool exited = false, signalled = true;
  KG_CHECK_INT(kg_kernel_release(f.k, &exited, &signalled), st);
  KG_CHECK(exited && !signalled);
  KG_CHECK(!kg_kernel_present(f.k));
  s_teardown(&f);
}

KG_TEST(kernel_destroy_is_idempotent_and_kills)
{
  s_fixture_t f;
  s_setup(&f);
  char *argv[] = {"sh", "-c", "echo ready; exec sleep 60", NULL};
  KG_CHECK_INT(kg_kernel_start(f.k, argv, NULL, NULL), 0);
  pid_t pid = kg_kernel_pid(f.k);
  s_seen_t seen = {0};
  KG_CHECK(s_pump_until(f.k, &seen, s_said_ready, 10000));
  kg_kernel_destroy(&f.k);   /* kills its group and reaps it */
  KG_CHECK(f.k == NULL);
  KG_CHECK(kill(pid, 0) == -1 && errno == ESRCH);
  kg_kernel_destroy(&f.k);   /* again: nothing */
  kg_kernel_destroy(NULL);
  /* Never started: destroyed as well. */
  kg_kernel_opts_t opts = {.ctx = f.ctx, .runtime_dir = f.dir, .conn_path = f.conn,
                           .log = NULL, .ring_bytes = 16};
  kg_kernel_t *idle = kg_kernel_new(&opts);
  KG_CHECK(idle != NULL);
  kg_kernel_destroy(&idle);
  KG_CHECK(idle == NULL);
  s_teardown(&f);
}

KG_TEST(kernel_term_then_kill)
{
  s_fixture_t f;
  s_setup(&f);
  /* SIG_IGN survives exec: the whole kernel ignores SIGTERM. */
  char *argv[] = {"sh", "-c", "trap '' TERM; echo ready; exec sleep 60", NULL};
  KG_CHECK_INT(kg_kernel_start(f.k, argv, NULL, NULL), 0);
  s_seen_t seen = {0};
  KG_CHECK(s_pump_until(f.k, &seen, s_said_ready, 10000));
  KG_CHECK_INT(kg_kernel_signal(f.k, SIGTERM), 0);
  /* It is still there when the grace period (here 300 ms) runs out ... */
  KG_CHECK(!s_pump_until(f.k, &seen, s_exited, 300));
  KG_CHECK(kg_kernel_alive(f.k));
  /* ... so SIGKILL, which it cannot ignore. */
  KG_CHECK_INT(kg_kernel_signal(f.k, SIGKILL), 0);
  KG_CHECK(s_pump_until(f.k, &seen, s_exited, 10000));
  int st = kg_kernel_status(f.k);
  KG_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  bool exited = false, signalled = false;
  kg_kernel_release(f.k, &exited, &signalled);
  KG_CHECK(exited && signalled);   /* kguard stopped it: not a death of its own */
  s_teardown(&f);
}

KG_TEST(kernel_spawn_failure_is_named)
{
  s_fixture_t f;
  s_setup(&f);
  char *bad[] = {"/nonexistent/kguard-no-such-kernel", "-f", "x", NULL};
  KG_CHECK_INT(kg_kernel_start(f.k, bad, NULL, NULL), KG_ESPAWN);
  KG_CHECK_STR(kg_kernel_reason(f.k),
               "unable to start the kernel `/nonexistent/kguard-no-such-kernel`: "
               "No such file or directory");
  KG_CHECK(!kg_kernel_present(f.k) && !kg_kernel_alive(f.k) && kg_kernel_pid(f.k) == -1);
  KG_CHECK_INT(kg_kernel_signal(f.k, SIGTERM), KG_ENOKERNEL);
  KG_CHECK_INT(kg_kernel_reap(f.k), KG_ENOKERNEL);
  /* The object stays usable: the next start works. */
  char *good[] = {"sh", "-c", "exit 0", NULL};
  KG_CHECK_INT(kg_kernel_start(f.k, good, NULL, NULL), 0);
  KG_CHECK_INT(kg_kernel_generation(f.k), 2);
  KG_CHECK_STR(kg_kernel_reason(f.k), "");
  s_seen_t seen = {0};
  KG_CHECK(s_pump_until(f.k, &seen, s_exited_and_drained, 10000));
  /* A start while a process is still held is refused, not leaked. */
  KG_CHECK(kg_kernel_start(f.k, good, NULL, NULL) != 0);
  KG_CHECK(strstr(kg_kernel_reason(f.k), "not released") != NULL);
  s_teardown(&f);
}

KG_TEST_MAIN(KG_CASE(kernel_start_output_exit_status),
             KG_CASE(kernel_destroy_is_idempotent_and_kills), KG_CASE(kernel_term_then_kill),
             KG_CASE(kernel_spawn_failure_is_named))
