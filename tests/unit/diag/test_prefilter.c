/*  The classifier's prefilter: never "no" where a rule matches (literals in
    any case and position, regex alternatives with optional parts), "no" for
    ordinary output, and the diagnosis still sees signs and step markers in
    large chunks that it skips over. */
#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_classifier.h"
#include "kg_diagnosis.h"
#include "kg_prefilter.h"
#include "kg_prefilter_builder.h"
#include "kg_regex_lit.h"
#include "kg_test.h"
#include "kg_test_rules.h"

static bool
s_naive(const char *const *lits, size_t n, const char *text, size_t len)
{
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(lits[i]);
    for (size_t p = 0; p + l <= len; p++) {
      size_t k = 0;
      while (k < l && tolower((unsigned char) text[p + k]) == tolower((unsigned char) lits[i][k]))
        k++;
      if (k == l)
        return true;
    }
  }
  return false;
}

#define FAM "{\"id\":\"f\",\"title\":\"t\",\"sticky\":true,\"first_check\":\"c\",\"avoid\":\"a\"}"

static kg_classifier_t *
s_load(const char *rules)
{
  char json[4096];
  snprintf(json, sizeof json, "{\"version\":1,\"families\":[" FAM "],\"rules\":[%s]}", rules);
  kg_classifier_t *c = NULL;
  char err[256] = "";
  int rc = kg_classifier_load_string(json, strlen(json), &c, err, sizeof err);
  if (rc)
    fprintf(stderr, "load: %s\n", err);
  KG_CHECK_INT(rc, 0);
  return c;
}

/*  For every text the regex matches, the classifier says it may match and
    matches; texts listed as negatives are turned away by the prefilter. */
static void
s_regex_case(const char *regex_json, const char *regex_c, bool icase, const char *const *pos,
             const char *const *neg)
{
  char rule[1024];
  snprintf(rule, sizeof rule,
           "{\"id\":\"r\",\"family\":\"f\",\"match\":{\"regex\":\"%s\"%s}}", regex_json,
           icase ? ",\"ignore_case\":true" : "");
  kg_classifier_t *c = s_load(rule);
  if (!c)
    return;
  regex_t re;
  KG_CHECK_INT(regcomp(&re, regex_c, REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0)), 0);
  for (const char *const *p = pos; *p; p++) {
    KG_CHECK_INT(regexec(&re, *p, 0, NULL, 0), 0);
    kg_match_t m;
    KG_CHECK(kg_classifier_may_match(c, *p, strlen(*p)));
    KG_CHECK(kg_classifier_match(c, KG_SRC_STREAM, *p, strlen(*p), &m));
  }
  for (const char *const *p = neg; *p; p++)
    KG_CHECK(!kg_classifier_may_match(c, *p, strlen(*p)));
  regfree(&re);
  kg_classifier_destroy(&c);
}

/*  Four literals planted on every byte around the lanes' seams (near each
    eighth of texts from 4 KiB to 40 KiB), at the start and at the end, in
    mixed case: each found; the unplanted text: no. */
static void
s_check_lanes(const char *const *lits)
{
  kg_prefilter_t *pf = kg_prefilter_new(lits, 4);
  KG_CHECK(pf != NULL);
  if (!pf)
    return;
  KG_CHECK(kg_prefilter_plain(pf));
  srand(11);
  for (size_t len = 4096; len < 40000; len = len * 3 + 7) {
    char *text = malloc(len);
    for (size_t i = 0; i < len; i++)
      text[i] = "abcdeUDAhipErr \n:-"[rand() % 18];
    KG_CHECK(!s_naive(lits, 4, text, len));
    KG_CHECK(!kg_prefilter_search(pf, text, len));
    char *planted = malloc(len);
    for (size_t l = 0; l < 4; l++) {
      size_t ll = strlen(lits[l]);
      size_t spots[8 * 33 + 2], n = 0;
      spots[n++] = 0;
      spots[n++] = len - ll;
      for (size_t k = 1; k < 8; k++)
        for (int d = -16; d <= 16; d++)
          spots[n++] = k * len / 8 + (size_t) d;
      for (size_t i = 0; i < n; i++) {
        memcpy(planted, text, len);
        for (size_t c = 0; c < ll; c++)
          planted[spots[i] + c] = (char) (c % 2 ? toupper((unsigned char) lits[l][c]) : lits[l][c]);
        if (!kg_prefilter_search(pf, planted, len))
          fprintf(stderr, "len %zu: '%s' at %zu not found\n", len, lits[l], spots[i]);
        KG_CHECK(kg_prefilter_search(pf, planted, len));
      }
    }
    free(planted);
    free(text);
  }
  kg_prefilter_destroy(&pf);
}

KG_TEST(finds_every_literal)
{
  static const char *sets[][4] = {
    {"CUDA error: device-side assert", "hipErrorAssert", "DistBackendError", NULL},
    {"ab", "xyz", "Q", NULL},       /* short literals: small windows */
    {"aaaa", "aab", NULL, NULL},
  };
  const char alphabet[] = "abxyzQq CUDAerror:-\n\0hipEAs";
  srand(7);
  for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
    size_t n = 0;
    while (n < 4 && sets[s][n])
      n++;
    kg_prefilter_t *pf = kg_prefilter_new(sets[s], n);
    KG_CHECK(pf != NULL);
    if (!pf)
      return;
    char text[300];
    for (int round = 0; round < 3000; round++) {
      size_t len = (size_t) (rand() % 200);
      for (size_t i = 0; i < len; i++)
        text[i] = alphabet[rand() % (int) (sizeof alphabet - 1)];
      if (round % 2 && len > 40) {   /* plant a literal, case scrambled */
        const char *l = sets[s][(size_t) rand() % n];
        size_t at = (size_t) rand() % (len - strlen(l));
        for (size_t k = 0; l[k]; k++)
          text[at + k] = (char) (rand() % 2 ? toupper((unsigned char) l[k])
                                            : tolower((unsigned char) l[k]));
      }
      if (s_naive(sets[s], n, text, len))
        KG_CHECK(kg_prefilter_search(pf, text, len));
    }
    kg_prefilter_destroy(&pf);
    KG_CHECK(pf == NULL);
  }
  const char *none[] = {""};
  KG_CHECK(kg_prefilter_new(none, 1) == NULL);
}

/*  Long texts are searched in several lanes at once: a literal is found
    wherever it starts, across the lanes' seams, at the very start and end,
    in any case; a text without one gives "no". And plainness: literals a
    JSON encoder leaves as they are. */
KG_TEST(long_texts_find_every_literal_across_lanes)
{
  /* 3-byte q-grams (every literal 3 bytes or more: the shipped rules'
     case), and 2-byte ones (a literal of 2 bytes) */
  static const char *three[] = {"CUDA error: device-side assert", "hipErrorAssert",
                                "DistBackendError", "cudaErrorLaunchFailure"};
  static const char *two[] = {"Qz", "hipErrorAssert", "DistBackendError",
                              "cudaErrorLaunchFailure"};
  s_check_lanes(three);
  s_check_lanes(two);
  static const char *quoted[] = {"say \"no\"", "tab\there"}, *slashed[] = {"C:\\path\\x"};
  kg_prefilter_t *pf = kg_prefilter_new(quoted, 2);
  KG_CHECK(pf && !kg_prefilter_plain(pf));
  kg_prefilter_destroy(&pf);
  pf = kg_prefilter_new(slashed, 1);
  KG_CHECK(pf && !kg_prefilter_plain(pf));
  kg_prefilter_destroy(&pf);
}

KG_TEST(regex_literals_keep_matches)
{
  /* optional characters and groups, alternatives, brackets, repetition */
  s_regex_case("^(torch\\\\.(cuda\\\\.)?)?OutOfMemoryError: x?yz",
               "^(torch\\.(cuda\\.)?)?OutOfMemoryError: x?yz", false,
               (const char *[]){"OutOfMemoryError: yz", "torch.cuda.OutOfMemoryError: xyz", NULL},
               (const char *[]){"MemoryError: yz", "loss 0.1", NULL});
  s_regex_case("abc(d|e)fgh|[0-9]+zzzz|Q{0,3}wwww", "abc(d|e)fgh|[0-9]+zzzz|Q{0,3}wwww", false,
               (const char *[]){"..abcefgh..", "12zzzz", "wwww", "QQwwww", NULL},
               (const char *[]){"abxfgh zzz www", NULL});
  s_regex_case("Err(or)?: a+b*c\\\\[x\\\\]", "Err(or)?: a+b*c\\[x\\]", false,
               (const char *[]){"Err: ac[x]", "Error: aaabbc[x]", NULL},
               (const char *[]){"Er: c[", NULL});
  s_regex_case("device FAULT [a-z]+ here", "device FAULT [a-z]+ here", true,
               (const char *[]){"DEVICE fault abc HERE", NULL}, (const char *[]){"device", NULL});
  /* no literal to go by: no prefilter, everything may match */
  s_regex_case("[0-9]+", "[0-9]+", false, (const char *[]){"12", NULL}, (const char *[]){NULL});
  kg_classifier_t *c = s_load("{\"id\":\"r\",\"family\":\"f\",\"match\":{\"regex\":\"[0-9]+\"}}");
  if (c)
    KG_CHECK(kg_classifier_may_match(c, "plain", 5));
  kg_classifier_destroy(&c);
}

KG_TEST(shipped_rules_skip_plain_output)
{
  kg_classifier_t *c = kg_test_rules();
  if (!c)
    return;
  const char *plain = "epoch 3 loss 0.1234 acc 0.98\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
                      "Training finished in 12.3 s; saving to /tmp/model.pt\n";
  KG_CHECK(!kg_classifier_may_match(c, plain, strlen(plain)));
  const char *hits[] = {
    "RuntimeError: CUDA error: device-side assert triggered",
    "x.cu:12: f: block: [0,0,0], thread: [3,0,0] Assertion `t < n` failed.",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB",
    "NotImplementedError: Could not run 'aten::empty.memory_format' with arguments from the "
    "'CUDA' backend.",
    "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) "
    "should be the same",
    "cuda runtime error (59) : device-side assert triggered at x.cu:1"};
  for (size_t i = 0; i < sizeof hits / sizeof hits[0]; i++) {
    KG_CHECK(kg_classifier_may_match(c, hits[i], strlen(hits[i])));
    kg_match_t m;
    KG_CHECK(kg_classifier_match(c, KG_SRC_IOPUB_ERROR, hits[i], strlen(hits[i]), &m));
  }
  kg_classifier_destroy(&c);
}

/*  Large stream chunks of plain lines with a sign split across two chunks
    and a step marker inside one: both are seen. */
KG_TEST(diagnosis_sees_signs_in_large_chunks)
{
  kg_classifier_t *c = kg_test_rules();
  if (!c)
    return;
  kg_diagnosis_t *d = kg_diagnosis_new(c);
  size_t cap = 1 << 20, len = 0;
  char *buf = malloc(cap);
  for (int i = 0; i < 5000; i++)
    len += (size_t) sprintf(buf + len, "line %d of ordinary output\n", i);
  len += (size_t) sprintf(buf + len, "kguard: completed step 41\n");
  for (int i = 0; i < 5000; i++)
    len += (size_t) sprintf(buf + len, "more output %d\n", i);
  size_t split = len + 20;   /* inside the sign's line */
  len += (size_t) sprintf(buf + len, "RuntimeError: CUDA error: device-side assert triggered\n");
  for (int i = 0; i < 5000; i++)
    len += (size_t) sprintf(buf + len, "after %d\n", i);
  KG_CHECK(kg_diagnosis_feed(d, KG_SRC_STREAM, "stdout", "p1", buf, split, 1000)
           == KG_DIAG_NONE);
  KG_CHECK_INT(kg_diagnosis_last_step(d), 41);
  KG_CHECK(kg_diagnosis_feed(d, KG_SRC_STREAM, "stdout", "p1", buf + split, len - split, 1001)
           == KG_DIAG_SUSPECT);   /* printed text: a suspicion */
  KG_CHECK(kg_diagnosis_suspect(d));
  KG_CHECK_STR(kg_diagnosis_suspect_parent(d), "p1");
  free(buf);
  kg_diagnosis_destroy(&d);
  kg_classifier_destroy(&c);
}

KG_TEST_MAIN(KG_CASE(finds_every_literal), KG_CASE(long_texts_find_every_literal_across_lanes), KG_CASE(regex_literals_keep_matches), KG_CASE(shipped_rules_skip_plain_output), KG_CASE(diagnosis_sees_signs_in_large_chunks))
