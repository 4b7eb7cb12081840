/*  kg_rotlog: a log that never exceeds about twice its bound, keeps the
    newest bytes under its name, refuses a planted symlink, and reads its
    bound from the environment with a clear complaint when it cannot. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_rotlog.h"
#include "kg_test.h"

static size_t
s_size(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 ? (size_t) st.st_size : 0;
}

KG_TEST(rotlog_bounded_newest_kept)
{
  char dir[] = "/tmp/kg-rotlog-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char path[256], old[256];
  snprintf(path, sizeof path, "%s/kernel.log", dir);
  snprintf(old, sizeof old, "%s/kernel.log.1", dir);
  kg_rotlog_t *log = kg_rotlog_open(path, KG_ROTLOG_MIN_BYTES);
  KG_CHECK(log != NULL);
  struct stat st;
  KG_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  /* 5 MiB in 4 KiB lines, numbered: far past the 64 KiB bound */
  char line[4096];
  for (int i = 0; i < 1280; i++) {
    memset(line, 'a' + i % 26, sizeof line);
    int n = snprintf(line, sizeof line, "%06d ", i);
    line[n] = ' ';
    line[sizeof line - 1] = '\n';
    kg_rotlog_write(log, line, sizeof line);
    KG_CHECK(s_size(path) <= KG_ROTLOG_MIN_BYTES);
    KG_CHECK(s_size(old) <= KG_ROTLOG_MIN_BYTES);
  }
  KG_CHECK(kg_rotlog_rotations(log) >= 70);
  KG_CHECK_INT(kg_rotlog_size(log), s_size(path));
  /* the newest line is the last one of the current file */
  FILE *f = fopen(path, "r");
  char buf[8192], last[16] = "";
  while (fgets(buf, sizeof buf, f))
    snprintf(last, sizeof last, "%.6s", buf);
  fclose(f);
  KG_CHECK_STR(last, "001279");
  /* a chunk bigger than the bound keeps its end */
  char *big = malloc(3 * KG_ROTLOG_MIN_BYTES);
  memset(big, 'x', 3 * KG_ROTLOG_MIN_BYTES);
  big[3 * KG_ROTLOG_MIN_BYTES - 1] = 'Z';
  kg_rotlog_write(log, big, 3 * KG_ROTLOG_MIN_BYTES);
  KG_CHECK(s_size(path) <= KG_ROTLOG_MIN_BYTES);
  free(big);
  kg_rotlog_close(&log);
  KG_CHECK(log == NULL);
  kg_rotlog_close(&log);
  kg_rotlog_write(NULL, "x", 1);   /* no log: nothing */
  /* a planted symlink is refused, not followed */
  char link[256], target[256];
  snprintf(link, sizeof link, "%s/planted.log", dir);
  snprintf(target, sizeof target, "%s/target", dir);
  KG_CHECK_INT(symlink(target, link), 0);
  errno = 0;
  KG_CHECK(kg_rotlog_open(link, 1u << 20) == NULL);
  KG_CHECK_INT(errno, ELOOP);
  KG_CHECK(access(target, F_OK) != 0);
  unlink(link);
  unlink(path);
  unlink(old);
  rmdir(dir);
}

KG_TEST(rotlog_limit_from_environment)
{
  static const struct {
    const char *value;
    size_t bytes;
  } rows[] = {
    {NULL, 777777}, {"", 777777}, {"1048576", 1048576}, {"1M", 1048576}, {"64K", 65536},
    {"2g", 2147483648u}, {"65535", 777777}, {"1K", 777777}, {"-5M", 777777},
    {"12MB", 777777}, {"lots", 777777}, {"99999999999999999999", 777777},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (rows[i].value)
      setenv("KG_TEST_LOG_BYTES", rows[i].value, 1);
    else
      unsetenv("KG_TEST_LOG_BYTES");
    size_t got = kg_rotlog_limit("KG_TEST_LOG_BYTES", 777777);
    if (got != rows[i].bytes)
      fprintf(stderr, "%s: %zu\n", rows[i].value ? rows[i].value : "(unset)", got);
    KG_CHECK(got == rows[i].bytes);
  }
}

KG_TEST_MAIN(KG_CASE(rotlog_bounded_newest_kept), KG_CASE(rotlog_limit_from_environment))
