/*  kg_error: every project code has its own message and name; -errno values
    and unknown numbers are described too; kg_errf's bounded formatting. */
#include <errno.h>
#include <string.h>

#include "kg_error.h"
#include "kg_test.h"

/*  Each code between the first and the last: a message that is neither the
    fallback nor shared with another code, and its KG_E name. */
KG_TEST(every_code_has_its_own_message_and_name)
{
  int n = 0;
  for (int c = KG_E__FIRST + 1; c < KG_E__LAST; c++, n++) {
    const char *msg = kg_strerror(c), *name = kg_errname(c);
    KG_CHECK(msg[0] != '\0' && strcmp(msg, "unknown error") != 0);
    KG_CHECK(strncmp(name, "KG_E", 4) == 0 && name[4] != '\0');
    for (int d = KG_E__FIRST + 1; d < c; d++) {
      if (strcmp(kg_strerror(d), msg) == 0 || strcmp(kg_errname(d), name) == 0)
        fprintf(stderr, "codes %d and %d share \"%s\" / %s\n", d, c, msg, name);
      KG_CHECK(strcmp(kg_strerror(d), msg) != 0);
      KG_CHECK(strcmp(kg_errname(d), name) != 0);
    }
  }
  KG_CHECK(n > 10);
  KG_CHECK_STR(kg_errname(KG_EUSAGE), "KG_EUSAGE");
  KG_CHECK_STR(kg_strerror(KG_EUSAGE), "invalid usage");
}

/*  0, a negative errno, and numbers that are neither. */
KG_TEST(errno_and_unknown_codes)
{
  static const struct {
    int code;
    const char *msg, *name;
  } t[] = {
    {0, "success", "OK"},
    {-ENOENT, NULL, "ENOENT"},
    {-EACCES, NULL, "EACCES"},
    {5, "unknown error", "error 5"},
    {KG_ERROR_BASE - 1, "unknown error", "error -10001"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    KG_CHECK_STR(kg_strerror(t[i].code), t[i].msg ? t[i].msg : strerror(-t[i].code));
    KG_CHECK_STR(kg_errname(t[i].code), t[i].name);
  }
}

/*  Formatted and cut to the buffer, always terminated; NULL or 0 writes
    nothing. */
KG_TEST(errf_bounded)
{
  char err[8];
  kg_errf(err, sizeof err, "%s %d", "field", 12345);
  KG_CHECK_STR(err, "field 1");
  memset(err, 'x', sizeof err);
  kg_errf(err, 0, "%s", "nothing");
  KG_CHECK(err[0] == 'x');
  kg_errf(NULL, 100, "%s", "nothing");
  kg_errf(err, sizeof err, "ok");
  KG_CHECK_STR(err, "ok");
}

KG_TEST_MAIN(KG_CASE(every_code_has_its_own_message_and_name), KG_CASE(errno_and_unknown_codes),
             KG_CASE(errf_bounded))
