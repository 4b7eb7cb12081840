/*  kg_file: bounded reads, atomic writes with an exact mode, mkdir -p. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_file.h"
#include "kg_test.h"

static char s_dir[] = "/tmp/kg-file-test-XXXXXX";

static const char *
s_path(const char *name)
{
  static char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", s_dir, name);
  return p;
}

/*  A file at the limit is read whole (NUL-terminated); one byte more, an
    endless device and a missing file are refused with nothing returned. */
KG_TEST(read_bounded)
{
  KG_CHECK(mkdtemp(s_dir) != NULL);
  KG_CHECK_INT(kg_file_write_atomic(s_path("f"), "hello", 5, 0600), 0);
  char *data = (char *) 1;
  size_t size = 99;
  KG_CHECK_INT(kg_file_read(s_path("f"), 5, &data, &size), 0);
  KG_CHECK_INT(size, 5);
  KG_CHECK_STR(data, "hello");
  free(data);
  KG_CHECK_INT(kg_file_read(s_path("f"), 4, &data, &size), KG_ETOOBIG);
  KG_CHECK(data == NULL);
  KG_CHECK_INT(kg_file_read("/dev/zero", 1000, &data, &size), KG_ETOOBIG);
  KG_CHECK(data == NULL);
  KG_CHECK_INT(kg_file_read(s_path("missing"), 100, &data, &size), -ENOENT);
  KG_CHECK(data == NULL);
  unlink(s_path("f"));
  rmdir(s_dir);
}

/*  The new file has exactly the mode asked for, whatever the umask; a
    replacement keeps no trace of the old content; nothing else is left in
    the folder; a missing folder fails and leaves nothing. */
KG_TEST(write_atomic_exact_mode)
{
  KG_CHECK(mkdtemp(s_dir) != NULL);
  mode_t old = umask(0077);
  KG_CHECK_INT(kg_file_umask(), 0077);
  KG_CHECK_INT(kg_file_write_atomic(s_path("f"), "first, longer", 13, 0644), 0);
  umask(old);
  struct stat st;
  KG_CHECK_INT(stat(s_path("f"), &st), 0);
  KG_CHECK_INT(st.st_mode & 07777, 0644);
  KG_CHECK_INT(kg_file_write_atomic(s_path("f"), "2nd", 3, 0600), 0);
  char *data;
  size_t size;
  KG_CHECK_INT(kg_file_read(s_path("f"), 100, &data, &size), 0);
  KG_CHECK_INT(size, 3);
  KG_CHECK_STR(data, "2nd");
  free(data);
  KG_CHECK_INT(stat(s_path("f"), &st), 0);
  KG_CHECK_INT(st.st_mode & 07777, 0600);
  KG_CHECK(kg_file_write_atomic(s_path("no/f"), "x", 1, 0600) < 0);
  KG_CHECK_INT(unlink(s_path("f")), 0);
  KG_CHECK_INT(rmdir(s_dir), 0);   /* no temporary left */
}

/*  Parents created with their mode, the leaf with its own; existing
    folders are fine; a path through a file fails. */
KG_TEST(mkdirs_parents_and_leaf)
{
  KG_CHECK(mkdtemp(s_dir) != NULL);
  mode_t old = umask(0);
  KG_CHECK_INT(kg_file_mkdirs(s_path("a/b/c"), 0755, 0700), 0);
  KG_CHECK_INT(kg_file_mkdirs(s_path("a/b/c"), 0755, 0700), 0);
  umask(old);
  struct stat st;
  KG_CHECK_INT(stat(s_path("a/b"), &st), 0);
  KG_CHECK_INT(st.st_mode & 07777, 0755);
  KG_CHECK_INT(stat(s_path("a/b/c"), &st), 0);
  KG_CHECK_INT(st.st_mode & 07777, 0700);
  KG_CHECK_INT(kg_file_write_atomic(s_path("file"), "x", 1, 0600), 0);
  KG_CHECK(kg_file_mkdirs(s_path("file/sub"), 0755, 0755) < 0);
  char longp[PATH_MAX + 16];
  memset(longp, 'd', sizeof longp - 1);
  longp[0] = '/';
  longp[sizeof longp - 1] = '\0';
  KG_CHECK_INT(kg_file_mkdirs(longp, 0755, 0755), KG_ETOOBIG);
  rmdir(s_path("a/b/c"));
  rmdir(s_path("a/b"));
  rmdir(s_path("a"));
  unlink(s_path("file"));
  KG_CHECK_INT(rmdir(s_dir), 0);
}

KG_TEST_MAIN(KG_CASE(read_bounded), KG_CASE(write_atomic_exact_mode),
             KG_CASE(mkdirs_parents_and_leaf))
