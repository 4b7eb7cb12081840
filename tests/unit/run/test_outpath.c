/*  kg_outpath: the -o path checked before any cell runs. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_outpath.h"
#include "kg_test.h"

/*  Where the executed notebook goes is checked before anything runs: a
    directory, a missing directory, a parent that is a file, and a writable
    place (which is left as it was). */
KG_TEST(outpath_check)
{
  char dir[] = "/tmp/kg-nbw-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char path[128], file[128];
  char err[512];
  KG_CHECK_INT(kg_outpath_check(dir, err, sizeof err), -EISDIR);
  KG_CHECK(strstr(err, "is a directory") != NULL && strstr(err, "out.ipynb") != NULL);
  snprintf(path, sizeof path, "%s/missing/deeper/out.ipynb", dir);
  KG_CHECK_INT(kg_outpath_check(path, err, sizeof err), -ENOENT);
  KG_CHECK(strstr(err, "missing/deeper does not exist") != NULL);
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE *f = fopen(file, "w");
  KG_CHECK(f != NULL);
  fclose(f);
  snprintf(path, sizeof path, "%s/plain/out.ipynb", dir);
  KG_CHECK(kg_outpath_check(path, err, sizeof err) < 0);
  snprintf(path, sizeof path, "%s/out.ipynb", dir);
  KG_CHECK_INT(kg_outpath_check(path, err, sizeof err), 0);
  /*  Nothing was left behind: the directory holds only "plain". */
  DIR *d = opendir(dir);
  int entries = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    entries += e->d_name[0] != '.';
  closedir(d);
  KG_CHECK_INT(entries, 1);
  unlink(file);
  rmdir(dir);
}

KG_TEST_MAIN(KG_CASE(outpath_check))
