/*  kg_fdq against real pipes whose reader the test controls: a stopped
    reader never makes a write wait, order is kept, the bound drops whole
    chunks and counts them, a reader that is gone is a failure (not a
    SIGPIPE), and regular files are written at once. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_fdq.h"
#include "kg_test.h"

/*  A pipe that holds one page: the writer's end stays blocking, as a
    terminal's or a shell pipe's does. */
static void
s_small_pipe(int fds[2])
{
  KG_CHECK(pipe(fds) == 0);
  fcntl(fds[1], F_SETPIPE_SZ, 4096);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);   /* the test's reads never wait */
}

/*  Read what the pipe has into out at *got. */
static void
s_read_some(int fd, char *out, size_t cap, size_t *got)
{
  ssize_t n;
  while (*got < cap && (n = read(fd, out + *got, cap - *got)) > 0)
    *got += (size_t) n;
}

static void
s_fill(char *buf, size_t len, unsigned seed)
{
  for (size_t i = 0; i < len; i++)
    buf[i] = (char) ('a' + (i * 7 + seed) % 26);
}

KG_TEST(stopped_reader_keeps_order)
{
  int fds[2];
  s_small_pipe(fds);
  kg_fdq_t *q = kg_fdq_new(fds[1], 1 << 20);
  KG_CHECK(q != NULL);
  enum { N = 3, CHUNK = 9000 };
  static char want[N * CHUNK], got[N * CHUNK];
  s_fill(want, sizeof want, 3);
  /* Nobody reads: each write returns at once (the test would hang here
     if one waited for the reader). */
  for (int i = 0; i < N; i++)
    kg_fdq_write(q, want + i * CHUNK, CHUNK);
  KG_CHECK(kg_fdq_pending(q));
  size_t have = 0;
  for (int rounds = 0; rounds < 1000 && have < sizeof got; rounds++) {
    s_read_some(fds[0], got, sizeof got, &have);
    kg_fdq_flush(q);
  }
  KG_CHECK_INT((long long) have, (long long) sizeof want);
  KG_CHECK(memcmp(got, want, sizeof want) == 0);
  KG_CHECK(!kg_fdq_pending(q));
  KG_CHECK_INT((long long) kg_fdq_take_dropped(q), 0);
  kg_fdq_destroy(&q);
  KG_CHECK(q == NULL);
  close(fds[0]);
  close(fds[1]);
}

KG_TEST(bound_drops_whole_chunks_and_says_so_after)
{
  int fds[2];
  s_small_pipe(fds);
  kg_fdq_t *q = kg_fdq_new(fds[1], 8192);
  static char a[4096], b[6000], c[3000], d[100];
  s_fill(a, sizeof a, 1);
  s_fill(b, sizeof b, 2);
  s_fill(c, sizeof c, 3);
  s_fill(d, sizeof d, 4);
  kg_fdq_write(q, a, sizeof a);   /* fills the pipe */
  kg_fdq_write(q, b, sizeof b);   /* queued */
  kg_fdq_write(q, c, sizeof c);   /* 6000 + 3000 > 8192: dropped whole */
  /* The note about what was dropped waits until what was shown is out. */
  KG_CHECK_INT((long long) kg_fdq_take_dropped(q), 0);
  static char got[sizeof a + sizeof b + sizeof d];
  size_t have = 0;
  for (int rounds = 0; rounds < 1000 && kg_fdq_pending(q); rounds++) {
    s_read_some(fds[0], got, sizeof got, &have);
    kg_fdq_flush(q);
  }
  KG_CHECK_INT((long long) kg_fdq_take_dropped(q), 3000);
  KG_CHECK_INT((long long) kg_fdq_take_dropped(q), 0);
  kg_fdq_write(q, d, sizeof d);   /* under the bound again */
  for (int rounds = 0; rounds < 1000 && have < sizeof got; rounds++) {
    s_read_some(fds[0], got, sizeof got, &have);
    kg_fdq_flush(q);
  }
  KG_CHECK_INT((long long) have, (long long) sizeof got);
  KG_CHECK(memcmp(got, a, sizeof a) == 0);
  KG_CHECK(memcmp(got + sizeof a, b, sizeof b) == 0);
  KG_CHECK(memcmp(got + sizeof a + sizeof b, d, sizeof d) == 0);
  kg_fdq_destroy(&q);
  close(fds[0]);
  close(fds[1]);
}

KG_TEST(reader_gone_is_a_failure_not_a_signal)
{
  signal(SIGPIPE, SIG_IGN);
  int fds[2];
  s_small_pipe(fds);
  kg_fdq_t *q = kg_fdq_new(fds[1], 1 << 16);
  static char buf[10000];
  s_fill(buf, sizeof buf, 5);
  kg_fdq_write(q, buf, sizeof buf);   /* 4096 in the pipe, the rest queued */
  close(fds[0]);
  kg_fdq_flush(q);
  KG_CHECK(kg_fdq_failed(q));
  KG_CHECK(!kg_fdq_pending(q));
  kg_fdq_write(q, buf, 10);
  KG_CHECK_INT((long long) kg_fdq_take_dropped(q), (long long) (sizeof buf - 4096 + 10));
  KG_CHECK_INT((long long) kg_fdq_drain(q, 1000), 0);
  kg_fdq_destroy(&q);
  close(fds[1]);
}

KG_TEST(regular_file_is_written_at_once)
{
  FILE *f = tmpfile();
  KG_CHECK(f != NULL);
  kg_fdq_t *q = kg_fdq_new(fileno(f), 4096);   /* a bound far below what is written */
  static char buf[1 << 20];
  s_fill(buf, sizeof buf, 6);
  kg_fdq_write(q, buf, sizeof buf);
  KG_CHECK(!kg_fdq_pending(q));
  KG_CHECK_INT((long long) kg_fdq_take_dropped(q), 0);
  KG_CHECK_INT((long long) lseek(fileno(f), 0, SEEK_CUR), (long long) sizeof buf);
  kg_fdq_destroy(&q);
  fclose(f);
}

KG_TEST(drain_gives_up_on_a_reader_that_never_reads)
{
  int fds[2];
  s_small_pipe(fds);
  kg_fdq_t *q = kg_fdq_new(fds[1], 1 << 16);
  static char buf[8192];
  kg_fdq_write(q, buf, sizeof buf);
  KG_CHECK_INT((long long) kg_fdq_drain(q, 50), (long long) (sizeof buf - 4096));
  KG_CHECK(kg_fdq_new(fds[1], 0) == NULL);
  kg_fdq_destroy(&q);
  kg_fdq_destroy(&q);   /* safe on NULL */
  close(fds[0]);
  close(fds[1]);
}

KG_TEST_MAIN(KG_CASE(stopped_reader_keeps_order), KG_CASE(bound_drops_whole_chunks_and_says_so_after),
             KG_CASE(reader_gone_is_a_failure_not_a_signal), KG_CASE(regular_file_is_written_at_once),
             KG_CASE(drain_gives_up_on_a_reader_that_never_reads))
