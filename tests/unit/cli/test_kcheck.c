/*  kg_kcheck's judgement of whether a kernelspec can start here: which
    specs are kguard's own, a missing program named with why, a bare name
    looked up in the spec's own PATH, and for a guarded spec both its kguard
    program and the kernel after `--`. The specs are parsed from text; the
    programs are /bin/sh and a link named kguard to it in a temporary
    directory (no Python is asked: none of these argvs is `python -m`). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_kcheck.h"
#include "kg_kernelspec.h"
#include "kg_test.h"

/*  A spec of argv (a JSON array's text) and env (an object's text or NULL). */
static kg_kernelspec_t *
s_spec(const char *argv_json, const char *env_json)
{
  char text[2048];
  snprintf(text, sizeof text, "{\"argv\": %s, \"display_name\": \"t\"%s%s}", argv_json,
           env_json ? ", \"env\": " : "", env_json ? env_json : "");
  kg_kernelspec_t *spec = NULL;
  char err[256] = "";
  KG_CHECK_INT(kg_kernelspec_parse("t", text, strlen(text), &spec, err, sizeof err), 0);
  return spec;
}

KG_TEST(kcheck_guarded_table)
{
  static const struct {
    const char *argv;
    bool guarded;
  } rows[] = {
    {"[\"/usr/bin/kguard\", \"kernel\", \"-f\", \"{connection_file}\", \"--\", \"python3\"]",
     true},
    {"[\"kguard\", \"kernel\"]", true},
    {"[\"/usr/bin/kguard\", \"run\", \"nb.ipynb\"]", false},
    {"[\"/usr/bin/python3\", \"-m\", \"ipykernel_launcher\"]", false},
    {"[\"/opt/kernel\", \"kguard\", \"kernel\"]", false},
    {"[\"/usr/bin/kguard\"]", false},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_kernelspec_t *spec = s_spec(rows[i].argv, NULL);
    if (!spec)
      continue;
    if (kg_kcheck_guarded(spec) != rows[i].guarded)
      fprintf(stderr, "row %zu: %s\n", i, rows[i].argv);
    KG_CHECK(kg_kcheck_guarded(spec) == rows[i].guarded);
    kg_kernelspec_destroy(&spec);
  }
}

KG_TEST(kcheck_plain_spec_program)
{
  kg_kcheck_t kc;
  char err[512] = "";
  kg_kernelspec_t *spec = s_spec("[\"/bin/sh\", \"-c\", \"exit 0\"]", NULL);
  KG_CHECK_INT(kg_kcheck_run(spec, NULL, &kc, err, sizeof err), 0);
  KG_CHECK(!kc.guarded);
  kg_kernelspec_destroy(&spec);

  err[0] = '\0';
  spec = s_spec("[\"/nonexistent-kguard-test/bin/python3\", \"-m\", \"ipykernel\"]", NULL);
  KG_CHECK_INT(kg_kcheck_run(spec, NULL, &kc, err, sizeof err), KG_ESPAWN);
  KG_CHECK(strstr(err, "/nonexistent-kguard-test/bin/python3") != NULL);
  kg_kernelspec_destroy(&spec);

  /* a bare name is looked up in the PATH the kernel will see: the spec's */
  err[0] = '\0';
  spec = s_spec("[\"sh\", \"-c\", \"exit 0\"]", "{\"PATH\": \"/nonexistent-kguard-test\"}");
  KG_CHECK_INT(kg_kcheck_run(spec, NULL, &kc, err, sizeof err), KG_ESPAWN);
  KG_CHECK(strstr(err, "not in PATH") != NULL);
  KG_CHECK(strstr(err, "/nonexistent-kguard-test") != NULL);
  kg_kernelspec_destroy(&spec);
  spec = s_spec("[\"sh\", \"-c\", \"exit 0\"]", "{\"PATH\": \"/nonexistent-kguard-test:/bin\"}");
  KG_CHECK_INT(kg_kcheck_run(spec, NULL, &kc, err, sizeof err), 0);
  kg_kernelspec_destroy(&spec);
}

KG_TEST(kcheck_guarded_spec_needs_kguard_and_inner)
{
  char dir[] = "/tmp/kg-kcheck-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char kguard[PATH_MAX], argv[PATH_MAX + 256];
  snprintf(kguard, sizeof kguard, "%s/kguard", dir);
  KG_CHECK_INT(symlink("/bin/sh", kguard), 0);
  kg_kcheck_t kc;
  char err[512] = "";

  /* its kguard program gone (a build tree moved) */
  kg_kernelspec_t *spec =
    s_spec("[\"/nonexistent-kguard-test/kguard\", \"kernel\", \"--\", \"/bin/sh\"]", NULL);
  KG_CHECK_INT(kg_kcheck_run(spec, NULL, &kc, err, sizeof err), KG_ESPAWN);
  KG_CHECK(kc.guarded && kc.kguard_missing);
  KG_CHECK_STR(kc.kguard, "/nonexistent-kguard-test/kguard");
  kg_kernelspec_destroy(&spec);

  /* kguard there, no kernel after `--` */
  snprintf(argv, sizeof argv, "[\"%s\", \"kernel\", \"-f\", \"x\"]", kguard);
  spec = s_spec(argv, NULL);
  KG_CHECK_INT(kg_kcheck_run(spec, NULL, &kc, err, sizeof err), KG_ESPAWN);
  KG_CHECK(kc.guarded && !kc.kguard_missing);
  KG_CHECK(strstr(err, "`--`") != NULL);
  kg_kernelspec_destroy(&spec);

  /* the inner kernel missing */
  snprintf(argv, sizeof argv, "[\"%s\", \"kernel\", \"--\", \"/nonexistent-kguard-test/k\"]",
           kguard);
  spec = s_spec(argv, NULL);
  KG_CHECK_INT(kg_kcheck_run(spec, NULL, &kc, err, sizeof err), KG_ESPAWN);
  KG_CHECK(strstr(err, "wrapped kernel") != NULL);
  KG_CHECK(strstr(err, "/nonexistent-kguard-test/k") != NULL);
  kg_kernelspec_destroy(&spec);

  /* both there: it starts; other_kguard compares resolved programs */
  snprintf(argv, sizeof argv, "[\"%s\", \"kernel\", \"--\", \"/bin/sh\"]", kguard);
  spec = s_spec(argv, NULL);
  KG_CHECK_INT(kg_kcheck_run(spec, "/bin/sh", &kc, err, sizeof err), 0);
  KG_CHECK(kc.guarded && !kc.other_kguard);
  KG_CHECK_INT(kg_kcheck_run(spec, "/bin/cat", &kc, err, sizeof err), 0);
  KG_CHECK(kc.other_kguard);
  kg_kernelspec_destroy(&spec);

  unlink(kguard);
  rmdir(dir);
}

KG_TEST_MAIN(KG_CASE(kcheck_guarded_table), KG_CASE(kcheck_plain_spec_program),
             KG_CASE(kcheck_guarded_spec_needs_kguard_and_inner))
