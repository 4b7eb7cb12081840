/*  Classifier: the shipped rules over a corpus of real error texts, and the
    validation of broken rule files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_classifier.h"
#include "kg_error.h"
#include "kg_test.h"
#include "kg_test_rules.h"

static char *
s_slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  static char buf[1 << 16];
  *len = fread(buf, 1, sizeof buf - 1, f);
  buf[*len] = '\0';
  fclose(f);
  return buf;
}

static kg_source_t
s_source(const char *name)
{
  if (!strcmp(name, "iopub_error")) return KG_SRC_IOPUB_ERROR;
  if (!strcmp(name, "execute_reply")) return KG_SRC_EXECUTE_REPLY;
  if (!strcmp(name, "stream")) return KG_SRC_STREAM;
  if (!strcmp(name, "raw_stdout")) return KG_SRC_RAW_STDOUT;
  if (!strcmp(name, "raw_stderr")) return KG_SRC_RAW_STDERR;
  return KG_SRC_EXIT;
}

KG_TEST(corpus)
{
  kg_classifier_t *c = kg_test_rules();
  if (!c)
    return;
  FILE *m = fopen(KG_CORPUS_DIR "/manifest.txt", "r");
  KG_CHECK(m != NULL);
  if (!m)
    return;
  char line[512];
  int n = 0, negatives = 0;
  while (fgets(line, sizeof line, m)) {
    char file[128], source[32], family[64], backend[16];
    if (line[0] == '#' || sscanf(line, "%127s %31s %63s %15s", file, source, family, backend) != 4)
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", KG_CORPUS_DIR, file);
    size_t len = 0;
    const char *text = s_slurp(path, &len);
    KG_CHECK(text != NULL);
    if (!text)
      continue;
    kg_match_t match;
    bool hit = kg_classifier_match(c, s_source(source), text, len, &match);
    n++;
    if (!strcmp(family, "none")) {
      negatives++;
      if (hit)
        fprintf(stderr, "%s: unexpectedly matched %s (rule %s)\n", file, match.family->id,
                match.rule_id);
      KG_CHECK(!hit);
      continue;
    }
    if (!hit) {
      fprintf(stderr, "%s: no match, expected %s\n", file, family);
      KG_CHECK(hit);
      continue;
    }
    if (strcmp(match.family->id, family) != 0)
      fprintf(stderr, "%s: rule %s\n", file, match.rule_id);
    KG_CHECK_STR(match.family->id, family);
    KG_CHECK_STR(kg_backend_name(match.backend), backend);
    KG_CHECK(match.line[0] != '\0' && strstr(text, match.line) != NULL);
  }
  fclose(m);
  KG_CHECK(n >= 30);
  KG_CHECK(negatives >= 3);
  kg_classifier_destroy(&c);
  KG_CHECK(c == NULL);
}

KG_TEST(rocm_719_is_presented_as_likely_assert)
{
  kg_classifier_t *c = kg_test_rules();
  if (!c)
    return;
  const char *t = "RuntimeError: HIP error: unspecified launch failure\n";
  kg_match_t m;
  KG_CHECK(kg_classifier_match(c, KG_SRC_IOPUB_ERROR, t, strlen(t), &m));
  KG_CHECK_STR(m.family->id, "launch-failure");
  KG_CHECK(m.family->sticky);
  KG_CHECK_INT(m.error_code, 719);
  KG_CHECK(m.note && strstr(m.note, "ROCm form of a device-side assert likely"));
  KG_CHECK_STR(m.line, "RuntimeError: HIP error: unspecified launch failure");
  kg_classifier_destroy(&c);
}

KG_TEST(sources_restrict_rules)
{
  kg_classifier_t *c = kg_test_rules();
  if (!c)
    return;
  /* The ename rule for OOM applies to error contents only. */
  const char *t = "OutOfMemoryError: something\n";
  kg_match_t m;
  KG_CHECK(kg_classifier_match(c, KG_SRC_IOPUB_ERROR, t, strlen(t), &m));
  KG_CHECK(!kg_classifier_match(c, KG_SRC_STREAM, t, strlen(t), &m));
  KG_CHECK(m.family == NULL);
  kg_classifier_destroy(&c);
}

KG_TEST(backend_detection)
{
  const struct { const char *text; kg_backend_t b; } cases[] = {
    {"RuntimeError: CUDA error: foo", KG_BACKEND_CUDA},
    {"RuntimeError: HIP error: foo", KG_BACKEND_ROCM},
    {"torch.OutOfMemoryError: HIP out of memory. Tried", KG_BACKEND_ROCM},
    {"For debugging consider passing AMD_SERIALIZE_KERNEL=3", KG_BACKEND_ROCM},
    {"hipErrorLaunchFailure", KG_BACKEND_ROCM},
    {"... HSA_STATUS_ERROR_EXCEPTION ...", KG_BACKEND_ROCM},
    {"Memory access fault by GPU node-1 (Agent handle: 0x1)", KG_BACKEND_ROCM},
    {"For debugging consider passing CUDA_LAUNCH_BLOCKING=1", KG_BACKEND_CUDA},
    {"KeyError: 'cuda'", KG_BACKEND_UNKNOWN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    KG_CHECK_INT(kg_backend_detect(cases[i].text, strlen(cases[i].text)), cases[i].b);
}

KG_TEST(hints_never_nvidia_on_rocm)
{
  kg_classifier_t *c = kg_test_rules();
  if (!c)
    return;
  const char *ids[] = {"device-assert", "illegal-address", "launch-failure", "other-sticky",
                       "ecc-hardware", "nccl-abort", "out-of-memory", "no-kernel-image",
                       "operator-unavailable", "device-mismatch", "cublas-cudnn"};
  KG_CHECK_INT(kg_classifier_family_count(c), 11);
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    const kg_family_t *f = kg_classifier_family(c, ids[i]);
    KG_CHECK(f != NULL);
    if (!f)
      continue;
    KG_CHECK(f->first_check[0] && f->avoid[0]);
    const char *h = kg_family_hint(f, KG_BACKEND_ROCM);
    KG_CHECK(!h || !strstr(h, "CUDA_LAUNCH_BLOCKING"));
  }
  const kg_family_t *f = kg_classifier_family(c, "device-assert");
  KG_CHECK(strstr(kg_family_hint(f, KG_BACKEND_ROCM), "AMD_SERIALIZE_KERNEL=3"));
  KG_CHECK(strstr(kg_family_hint(f, KG_BACKEND_CUDA), "CUDA_LAUNCH_BLOCKING=1"));
  /* the seed's table, translated */
  KG_CHECK(strstr(f->first_check, "The operator's clue, the targets, the condition"));
  KG_CHECK(strstr(f->avoid, "The GPU must be broken"));
  KG_CHECK(strstr(kg_classifier_family(c, "out-of-memory")->avoid,
                  "Every CUDA error is a VRAM shortage"));
  KG_CHECK(strstr(kg_classifier_family(c, "device-mismatch")->first_check,
                  "Where the model and each input are placed"));
  kg_classifier_destroy(&c);
}

/*  Load text; expect KG_ERULES and every needle in the message. */
static void
s_bad(const char *json, const char *needle1, const char *needle2)
{
  kg_classifier_t *c = NULL;
  char err[512] = "";
  int rc = kg_classifier_load_string(json, strlen(json), &c, err, sizeof err);
  KG_CHECK_INT(rc, KG_ERULES);
  KG_CHECK(c == NULL);
  if (!strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
    fprintf(stderr, "message was: %s\n", err);
  KG_CHECK(strstr(err, needle1) != NULL);
  KG_CHECK(!needle2 || strstr(err, needle2) != NULL);
}

#define FAM "{\"id\":\"f\",\"title\":\"T\",\"sticky\":true,\"first_check\":\"c\",\"avoid\":\"a\"}"

KG_TEST(validation_names_the_field)
{
  s_bad("{", "not valid JSON", NULL);
  s_bad("{\"version\":2,\"families\":[" FAM "],\"rules\":[]}", "\"version\"", NULL);
  s_bad("{\"version\":1,\"families\":[{\"id\":\"f\",\"title\":\"T\",\"first_check\":\"c\","
        "\"avoid\":\"a\"}],\"rules\":[{}]}", "families[0]", "\"sticky\"");
  s_bad("{\"version\":1,\"families\":[" FAM "],\"rules\":[{\"id\":\"r0\",\"family\":\"f\","
        "\"match\":{\"any\":[\"x\"]}},{\"id\":\"r1\",\"family\":\"nope\",\"match\":{\"any\":[\"x\"]}}]}",
        "rules[1]", "\"family\"");
  s_bad("{\"version\":1,\"families\":[" FAM "],\"rules\":[{\"id\":\"r0\",\"family\":\"f\","
        "\"backend\":\"metal\",\"match\":{\"any\":[\"x\"]}}]}", "rules[0]", "\"backend\"");
  s_bad("{\"version\":1,\"families\":[" FAM "],\"rules\":[{\"id\":\"r0\",\"family\":\"f\","
        "\"match\":{\"regex\":\"(unclosed\"}}]}", "rules[0]", "\"match.regex\"");
  s_bad("{\"version\":1,\"families\":[" FAM "],\"rules\":[{\"id\":\"r0\",\"family\":\"f\","
        "\"sources\":[\"stdin\"],\"match\":{\"any\":[\"x\"]}}]}", "rules[0]", "\"sources\"[0]");
  s_bad("{\"version\":1,\"families\":[" FAM "],\"rules\":[{\"id\":\"r0\",\"family\":\"f\","
        "\"match\":{\"any\":[]}}]}", "rules[0]", "\"match.any\"");
  s_bad("{\"version\":1,\"families\":[" FAM "],\"rules\":[{\"id\":\"r0\",\"family\":\"f\","
        "\"match\":{}}]}", "rules[0]", "\"match\"");
  s_bad("{\"version\":1,\"families\":[{\"id\":\"f\",\"title\":\"T\",\"sticky\":true,"
        "\"first_check\":\"c\",\"avoid\":\"a\",\"hints\":{\"rocm\":\"set CUDA_LAUNCH_BLOCKING=1\"}}],"
        "\"rules\":[{\"id\":\"r0\",\"family\":\"f\",\"match\":{\"any\":[\"x\"]}}]}",
        "families[0].hints", "\"rocm\"");
  s_bad("{\"version\":1,\"families\":[" FAM "],\"rules\":[{\"id\":\"r0\",\"family\":\"f\","
        "\"match\":{\"any\":[\"x\"]}},{\"id\":\"r0\",\"family\":\"f\",\"match\":{\"any\":[\"y\"]}}]}",
        "rules[1]", "repeats");
}

KG_TEST(override_file)
{
  char dir[] = "/tmp/kg-rules-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/gpu-errors.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{\"version\":1,\"families\":[" FAM "],\"rules\":[{\"id\":\"mine\",\"family\":\"f\","
        "\"backend\":\"cuda\",\"sources\":[\"raw_stderr\"],\"match\":{\"any\":[\"MY_ERROR\"],"
        "\"ignore_case\":true},\"error_code\":5}]}", f);
  fclose(f);
  kg_classifier_t *c = NULL;
  char err[256];
  KG_CHECK_INT(kg_classifier_load_file(path, &c, err, sizeof err), 0);
  kg_match_t m;
  KG_CHECK(kg_classifier_match(c, KG_SRC_RAW_STDERR, "a\nsaw my_error here\n", 19, &m));
  KG_CHECK_STR(m.rule_id, "mine");
  KG_CHECK_STR(m.line, "saw my_error here");
  KG_CHECK_INT(m.error_code, 5);
  KG_CHECK(!kg_classifier_match(c, KG_SRC_STREAM, "MY_ERROR", 8, &m));
  kg_classifier_destroy(&c);
  /* a broken override: the message names the file and the field */
  f = fopen(path, "w");
  fputs("{\"version\":1,\"families\":[" FAM "],\"rules\":[{\"id\":\"mine\",\"family\":\"f\","
        "\"match\":{\"any\":[\"x\"]},\"error_code\":\"710\"}]}", f);
  fclose(f);
  KG_CHECK_INT(kg_classifier_load_file(path, &c, err, sizeof err), KG_ERULES);
  KG_CHECK(strstr(err, path) && strstr(err, "rules[0]") && strstr(err, "\"error_code\""));
  unlink(path);
  KG_CHECK(kg_classifier_load_file(path, &c, err, sizeof err) < 0);
  KG_CHECK(strstr(err, path) != NULL);
  rmdir(dir);
}

KG_TEST(default_path)
{
  char buf[4096];
  KG_CHECK_INT(kg_classifier_default_path(buf, sizeof buf), 0);
  KG_CHECK(strstr(buf, "gpu-errors.json") != NULL);
}

KG_TEST_MAIN(KG_CASE(corpus), KG_CASE(rocm_719_is_presented_as_likely_assert),
             KG_CASE(sources_restrict_rules), KG_CASE(backend_detection),
             KG_CASE(hints_never_nvidia_on_rocm), KG_CASE(validation_names_the_field),
             KG_CASE(override_file), KG_CASE(default_path))
