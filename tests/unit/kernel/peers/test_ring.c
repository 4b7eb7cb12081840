/*  kg_ring: the bounded tail of a kernel's raw output, and the log file
    that gets every byte. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_ring.h"
#include "kg_test.h"

KG_TEST(ring_wraps)
{
  kg_ring_t *r = kg_ring_new(8, NULL);
  kg_ring_append(r, "abcde", 5);
  kg_ring_append(r, "fghij", 5);
  char *t = kg_ring_tail(r, 100);
  KG_CHECK_STR(t, "cdefghij");
  free(t);
  kg_ring_append(r, "0123456789ABC", 13);   /* longer than the ring */
  t = kg_ring_tail(r, 100);
  KG_CHECK_STR(t, "56789ABC");
  free(t);
  KG_CHECK_INT(kg_ring_size(r), 8);
  kg_ring_destroy(&r);
  KG_CHECK(r == NULL);
  kg_ring_destroy(&r);
}

KG_TEST(ring_tail_and_total)
{
  char path[] = "/tmp/kg-ring-XXXXXX";
  int fd = mkstemp(path);
  kg_rotlog_t *log = kg_rotlog_open(path, 1u << 20);
  KG_CHECK(log != NULL);
  kg_ring_t *r = kg_ring_new(16, log);
  kg_ring_append(r, "line one\n", 9);
  kg_ring_append(r, "line two\n", 9);
  char *t = kg_ring_tail(r, 4);
  KG_CHECK_STR(t, "two\n");
  free(t);
  KG_CHECK_INT(kg_ring_total(r), 18);
  kg_ring_clear(r);
  KG_CHECK_INT(kg_ring_size(r), 0);
  kg_ring_destroy(&r);
  /* every byte reached the log file, in order */
  char buf[64] = "";
  int in = open(path, O_RDONLY);
  ssize_t n = read(in, buf, sizeof buf - 1);
  KG_CHECK_INT(n, 18);
  KG_CHECK_STR(buf, "line one\nline two\n");
  close(in);
  close(fd);
  kg_rotlog_close(&log);
  unlink(path);
}

KG_TEST_MAIN(KG_CASE(ring_wraps), KG_CASE(ring_tail_and_total))
