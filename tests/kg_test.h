/*  kg_test: a minimal test harness for kguard's C unit tests.

    Each test program defines its cases with KG_TEST(name) and lists them in
    KG_TEST_MAIN(...). `prog` runs all of them; `prog NAME` runs one (ctest
    registers one entry per case). A failed check prints file:line, the
    expression and both values, and marks the case failed; the case goes on so
    one run reports every broken check.
*/
#ifndef KG_TEST_H
#define KG_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kg_test__failed;

#define KG_CHECK(cond)                                                        \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      kg_test__failed = 1;                                                    \
    }                                                                         \
  } while (0)

#define KG_CHECK_INT(a, b)                                                    \
  do {                                                                        \
    long long kg__a = (long long) (a), kg__b = (long long) (b);               \
    if (kg__a != kg__b) {                                                     \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__,     \
              __LINE__, #a, #b, kg__a, kg__b);                                \
      kg_test__failed = 1;                                                    \
    }                                                                         \
  } while (0)

#define KG_CHECK_STR(a, b)                                                    \
  do {                                                                        \
    const char *kg__a = (a), *kg__b = (b);                                    \
    if (!kg__a || !kg__b || strcmp(kg__a, kg__b) != 0) {                      \
      fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, \
              __LINE__, #a, #b, kg__a ? kg__a : "(null)",                     \
              kg__b ? kg__b : "(null)");                                      \
      kg_test__failed = 1;                                                    \
    }                                                                         \
  } while (0)

#define KG_TEST(name) static void test_##name(void)

typedef struct {
  const char *name;
  void (*fn)(void);
} kg_test_case_t;

#define KG_CASE(name) {#name, test_##name}

#define KG_TEST_MAIN(...)                                                     \
  int main(int argc, char **argv)                                             \
  {                                                                           \
    static const kg_test_case_t cases[] = {__VA_ARGS__};                      \
    size_t n = sizeof cases / sizeof cases[0];                                \
    int failed = 0, ran = 0;                                                  \
    for (size_t i = 0; i < n; i++) {                                          \
      if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)                    \
        continue;                                                             \
      kg_test__failed = 0;                                                    \
      cases[i].fn();                                                          \
      ran++;                                                                  \
      printf("%s %s\n", kg_test__failed ? "FAIL" : "ok  ", cases[i].name);    \
      failed += kg_test__failed;                                              \
    }                                                                         \
    if (ran == 0) {                                                           \
      fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "");         \
      return 2;                                                               \
    }                                                                         \
    return failed ? 1 : 0;                                                    \
  }

/*  Register each case of a test program as its own ctest entry:
      kg_add_c_tests(TARGET test_wire LABELS "unit;ipc" TIMEOUT 30 CASES a b c) */
#endif
