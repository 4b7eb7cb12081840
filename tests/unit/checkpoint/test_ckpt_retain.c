/*  kg_ckpt_retain's removal: an archive whose shared lock a reader holds
    (kg_ckpt_verify, restore, kguard.archive) is kept; a free one goes, and
    a reader opening it afterwards finds nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_retain.h"
#include "kg_test.h"

static char s_dir[] = "/tmp/kg-retain-XXXXXX";

static void
s_file(char *path, size_t size, const char *name)
{
  snprintf(path, size, "%s/%s", s_dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  KG_CHECK(fd >= 0);
  KG_CHECK(write(fd, "x", 1) == 1);
  close(fd);
}

KG_TEST(remove_keeps_an_archive_being_read)
{
  KG_CHECK(mkdtemp(s_dir) != NULL);
  char path[4200];
  s_file(path, sizeof path, "step-0000000001-20250101T000000000Z.kgckpt.tar");
  struct stat st;
  /* Table: the reader's lock at removal time, and what removal answers. */
  static const struct {
    int lock;      /* 0: no reader; else the flock the reader holds */
    int want;
    bool stays;
  } rows[] = {
    {LOCK_SH, -EBUSY, true},   /* a reader in progress */
    {LOCK_EX, -EBUSY, true},   /* any holder, even another pruner */
    {0, 0, false},             /* nobody reads: removed */
    {0, -ENOENT, false},       /* already gone */
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    int reader = -1;
    if (rows[i].lock) {
      reader = open(path, O_RDONLY | O_CLOEXEC);
      KG_CHECK(reader >= 0);
      KG_CHECK(flock(reader, rows[i].lock) == 0);
    }
    KG_CHECK_INT(kg_ckpt_retain_remove(path), rows[i].want);
    KG_CHECK_INT(stat(path, &st) == 0, rows[i].stays);
    if (reader >= 0)
      close(reader);
  }
  rmdir(s_dir);
}

KG_TEST(remove_refuses_a_link)
{
  memcpy(s_dir + strlen(s_dir) - 6, "XXXXXX", 6);
  KG_CHECK(mkdtemp(s_dir) != NULL);
  char target[4200], link[4200];
  s_file(target, sizeof target, "elsewhere");
  snprintf(link, sizeof link, "%s/step-0000000002-20250101T000000000Z.kgckpt.tar", s_dir);
  KG_CHECK(symlink(target, link) == 0);
  KG_CHECK_INT(kg_ckpt_retain_remove(link), -ELOOP);
  KG_CHECK(access(target, F_OK) == 0);
  unlink(link);
  unlink(target);
  rmdir(s_dir);
}

KG_TEST_MAIN(KG_CASE(remove_keeps_an_archive_being_read), KG_CASE(remove_refuses_a_link))
