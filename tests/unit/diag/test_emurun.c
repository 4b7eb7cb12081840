/*  kg_emurun: the kind a KGUARD_EMULATE spec names, by table; the words at
    the end of a run; and the run directory a child writes into, on a real
    temporary directory. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_emurun.h"
#include "kg_test.h"

KG_TEST(kind_table)
{
  static const struct {
    const char *spec;
    const char *kind;   /*  NULL: nothing to watch */
  } rows[] = {
    {NULL, NULL},
    {"", NULL},
    {"::", NULL},
    {"preflight-fail", NULL},
    {"preflight-hang:preflight-fail", NULL},
    {"cuda-assert", "cuda-assert"},
    {"cuda-assert:step=60:once", "cuda-assert"},
    {" rocm-oom :once", "rocm-oom"},
    {"preflight-fail:cuda-assert:once", "cuda-assert"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char kind[64] = "junk";
    bool got = kg_emurun_kind(rows[i].spec, kind, sizeof kind);
    KG_CHECK_INT(got, rows[i].kind != NULL);
    KG_CHECK_STR(kind, rows[i].kind ? rows[i].kind : "");
  }
}

KG_TEST(message_says_why_and_what_to_do)
{
  char buf[1024];
  kg_emurun_message("cuda-assert:step=5", NULL, buf, sizeof buf);
  KG_CHECK(strstr(buf, "KGUARD_EMULATE=cuda-assert:step=5 was set but never fired") != NULL);
  KG_CHECK(strstr(buf, "kguard.emulate.step(n)") != NULL);
  KG_CHECK(strstr(buf, "docs/testing-without-a-gpu.md") != NULL);
  kg_emurun_message("cuda-oom:once", "/s/emulate-once-cuda-oom", buf, sizeof buf);
  KG_CHECK(strstr(buf, "did not fire") != NULL);
  KG_CHECK(strstr(buf, "/s/emulate-once-cuda-oom exists") != NULL);
  KG_CHECK(strstr(buf, "delete that file") != NULL);
}

static void
s_write(const char *dir, const char *name, const char *text)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  KG_CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

KG_TEST(run_directory_fired_blocked_and_removed)
{
  char tmp[] = "/tmp/kg-test-emurun-XXXXXX";
  KG_CHECK(mkdtemp(tmp) != NULL);
  setenv("TMPDIR", tmp, 1);
  unsetenv("KGUARD_EMULATE_RUN_DIR");

  KG_CHECK(kg_emurun_new(NULL) == NULL);
  KG_CHECK(kg_emurun_new("preflight-fail") == NULL);
  KG_CHECK(getenv("KGUARD_EMULATE_RUN_DIR") == NULL);
  char buf[4096];
  KG_CHECK(kg_emurun_fired(NULL, buf, sizeof buf));

  /* Never reached: the words say so. */
  kg_emurun_t *emu = kg_emurun_new("cuda-assert:step=3");
  KG_CHECK(emu != NULL);
  const char *env = getenv("KGUARD_EMULATE_RUN_DIR");
  KG_CHECK(env != NULL && strncmp(env, tmp, strlen(tmp)) == 0);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", env ? env : "");
  KG_CHECK(!kg_emurun_fired(emu, buf, sizeof buf));
  KG_CHECK(strstr(buf, "never fired") != NULL);

  /* A marker stopped it: named. */
  s_write(dir, "emulate-once-cuda-assert", "kguard emulation: fired once\n");
  s_write(dir, "blocked", "/x/emulate-once-cuda-assert\n");
  KG_CHECK(!kg_emurun_fired(emu, buf, sizeof buf));
  KG_CHECK(strstr(buf, "/x/emulate-once-cuda-assert exists") != NULL);

  /* Fired: nothing to say. */
  s_write(dir, "fired", "cuda-assert at step 3\n");
  KG_CHECK(kg_emurun_fired(emu, buf, sizeof buf));

  kg_emurun_destroy(&emu);
  KG_CHECK(emu == NULL);
  struct stat st;
  KG_CHECK(stat(dir, &st) != 0);
  KG_CHECK(getenv("KGUARD_EMULATE_RUN_DIR") == NULL);
  KG_CHECK_INT(rmdir(tmp), 0);
}

KG_TEST_MAIN(KG_CASE(kind_table), KG_CASE(message_says_why_and_what_to_do),
             KG_CASE(run_directory_fired_blocked_and_removed))
