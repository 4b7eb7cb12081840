/*  kg_language by tables: the kernel's language from its kernel_info_reply,
    the kernelspec, or argv (in that order), and the interpreter kguard's
    Python helpers run with. */
#include <stdio.h>
#include <string.h>

#include "kg_language.h"
#include "kg_test.h"

KG_TEST(language_table)
{
  cJSON *py = cJSON_Parse("{\"language_info\":{\"name\":\"python\"}}");
  cJSON *r = cJSON_Parse("{\"language_info\":{\"name\":\"R\"}}");
  cJSON *noname = cJSON_Parse("{\"language_info\":{}}");
  char *python_argv[] = {"/usr/bin/python3", "-m", "ipykernel_launcher", NULL};
  char *wrapper_argv[] = {"/opt/conda/bin/conda", "run", "-n", "t", "python", NULL};
  char *r_argv[] = {"R", "--slave", NULL};
  char *py_named_r[] = {"python3", "-m", "rpy_kernel", NULL};
  struct {
    const cJSON *info;
    const char *spec;
    char *const *argv;
    const char *language;      /* kg_language_of */
    const char *interpreter;   /* kg_language_interpreter, NULL = no probe */
  } rows[] = {
    /* the kernel's own word wins over the kernelspec and argv */
    {py, NULL, wrapper_argv, "python", "python3"},
    {py, "r", r_argv, "python", "python3"},
    {r, "python", python_argv, "R", NULL},
    {r, NULL, py_named_r, "R", NULL},   /* a program named python running R */
    /* then the kernelspec's language */
    {NULL, "python", wrapper_argv, "python", "python3"},
    {noname, "python", python_argv, "python", "/usr/bin/python3"},
    {NULL, "julia", python_argv, "julia", NULL},
    {NULL, "Python3", python_argv, "Python3", "/usr/bin/python3"},
    /* last, the program's name */
    {NULL, NULL, python_argv, "python", "/usr/bin/python3"},
    {NULL, "", python_argv, "python", "/usr/bin/python3"},
    {NULL, NULL, wrapper_argv, "unknown", NULL},
    {NULL, NULL, r_argv, "unknown", NULL},
    {NULL, NULL, NULL, "unknown", NULL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *lang = kg_language_of(rows[i].info, rows[i].spec, rows[i].argv);
    const char *interp = kg_language_interpreter(lang, rows[i].argv);
    if (strcmp(lang, rows[i].language) != 0
        || (interp == NULL) != (rows[i].interpreter == NULL)
        || (interp && strcmp(interp, rows[i].interpreter) != 0))
      fprintf(stderr, "row %zu: language %s interpreter %s\n", i, lang, interp ? interp : "-");
    KG_CHECK_STR(lang, rows[i].language);
    KG_CHECK((interp == NULL) == (rows[i].interpreter == NULL));
    if (interp && rows[i].interpreter)
      KG_CHECK_STR(interp, rows[i].interpreter);
  }
  KG_CHECK(!kg_language_is_python("unknown"));
  KG_CHECK(!kg_language_is_python(NULL));
  cJSON_Delete(py);
  cJSON_Delete(r);
  cJSON_Delete(noname);
}

KG_TEST_MAIN(KG_CASE(language_table))
