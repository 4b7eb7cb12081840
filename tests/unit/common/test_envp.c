/*  kg_envp: a child's environment built entry by entry, copied and freed. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kg_envp.h"
#include "kg_test.h"

/*  Pushed past any first allocation: every entry "name=value" in order,
    the array NULL-terminated after each push. */
KG_TEST(push_grows_and_stays_terminated)
{
  char **env = NULL;
  size_t n = 0, alloc = 0;
  char name[16], value[16];
  for (int i = 0; i < 40; i++) {
    snprintf(name, sizeof name, "V%d", i);
    snprintf(value, sizeof value, "%d", i * i);
    KG_CHECK_INT(kg_envp_push(&env, &n, &alloc, name, value), 0);
    KG_CHECK_INT(n, i + 1);
    KG_CHECK(alloc > n && env[n] == NULL);
  }
  KG_CHECK_STR(env[0], "V0=0");
  KG_CHECK_STR(env[39], "V39=1521");
  KG_CHECK_INT(kg_envp_push(&env, &n, &alloc, "EMPTY", ""), 0);
  KG_CHECK_STR(env[40], "EMPTY=");
  kg_envp_free(&env);
  KG_CHECK(env == NULL);
  kg_envp_free(&env);   /* safe on NULL */
  kg_envp_free(NULL);
}

/*  A copy owns its own strings and ends with NULL; zero words give an
    empty, terminated array. */
KG_TEST(copy_is_deep_and_terminated)
{
  char a[] = "A=1", b[] = "B=2";
  const char *words[] = {a, b};
  char **c = kg_envp_copy(words, 2);
  KG_CHECK(c != NULL && c[2] == NULL);
  a[2] = '9';
  KG_CHECK_STR(c[0], "A=1");
  KG_CHECK(c[1] != b);
  KG_CHECK_STR(c[1], "B=2");
  kg_envp_free(&c);
  c = kg_envp_copy(words, 0);
  KG_CHECK(c != NULL && c[0] == NULL);
  kg_envp_free(&c);
}

/*  A name matches only up to its '=': no prefix and no suffix matches. */
KG_TEST(names_one_of_table)
{
  static const char *const names[] = {"CUDA_VISIBLE_DEVICES", "PATH", NULL};
  static const struct {
    const char *entry;
    bool want;
  } t[] = {
    {"PATH=/bin", true},
    {"PATH=", true},
    {"CUDA_VISIBLE_DEVICES=0,1", true},
    {"PATHX=/bin", false},
    {"PAT=/bin", false},
    {"PATH", false},
    {"MYPATH=/bin", false},
    {"", false},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (kg_envp_names_one_of(t[i].entry, names) != t[i].want)
      fprintf(stderr, "entry \"%s\": want %d\n", t[i].entry, t[i].want);
    KG_CHECK(kg_envp_names_one_of(t[i].entry, names) == t[i].want);
  }
  static const char *const none[] = {NULL};
  KG_CHECK(!kg_envp_names_one_of("PATH=/bin", none));
}

KG_TEST_MAIN(KG_CASE(push_grows_and_stays_terminated), KG_CASE(copy_is_deep_and_terminated),
             KG_CASE(names_one_of_table))
