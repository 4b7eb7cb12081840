/*  kg_kernelspec: kernel.json parsed and checked field by field, found
    along JUPYTER_PATH, the name rules and argv placeholders shared by
    `kguard install` and `kguard run`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_kernelspec.h"
#include "kg_test.h"

KG_TEST(kernelspec_parse_ok)
{
  const char *text = "{\"argv\": [\"/usr/bin/python3\", \"-m\", \"ipykernel_launcher\", \"-f\","
                     " \"{connection_file}\"], \"display_name\": \"Python 3 (ipykernel)\","
                     " \"language\": \"python\", \"env\": {\"A\": \"1\"},"
                     " \"interrupt_mode\": \"message\", \"metadata\": {\"debugger\": true}}";
  kg_kernelspec_t *s = NULL;
  char err[256] = "";
  KG_CHECK_INT(kg_kernelspec_parse("python3", text, strlen(text), &s, err, sizeof err), 0);
  KG_CHECK_STR(s->display_name, "Python 3 (ipykernel)");
  KG_CHECK_STR(s->language, "python");
  KG_CHECK_STR(s->interrupt_mode, "message");
  KG_CHECK_INT(cJSON_GetArraySize(s->argv), 5);
  KG_CHECK(s->env && s->metadata);
  kg_kernelspec_destroy(&s);
  KG_CHECK(s == NULL);
  const char *min = "{\"argv\": [\"k\"], \"display_name\": \"K\"}";
  KG_CHECK_INT(kg_kernelspec_parse("k", min, strlen(min), &s, err, sizeof err), 0);
  KG_CHECK_STR(s->interrupt_mode, "signal");
  KG_CHECK_STR(s->language, "");
  kg_kernelspec_destroy(&s);
}

KG_TEST(kernelspec_parse_errors)
{
  struct { const char *text, *field; } cases[] = {
    {"[]", "not a JSON object"},
    {"{\"display_name\": \"x\"}", "argv"},
    {"{\"argv\": [], \"display_name\": \"x\"}", "argv"},
    {"{\"argv\": [1], \"display_name\": \"x\"}", "argv"},
    {"{\"argv\": [\"a\"]}", "display_name"},
    {"{\"argv\": [\"a\"], \"display_name\": \"x\", \"env\": {\"A\": 1}}", "env"},
    {"{\"argv\": [\"a\"], \"display_name\": \"x\", \"interrupt_mode\": \"sigint\"}",
     "interrupt_mode"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kg_kernelspec_t *s = NULL;
    char err[256] = "";
    int rc = kg_kernelspec_parse("bad", cases[i].text, strlen(cases[i].text), &s, err,
                                 sizeof err);
    KG_CHECK_INT(rc, KG_EKERNELSPEC);
    KG_CHECK(s == NULL);
    KG_CHECK(strstr(err, cases[i].field) != NULL);
  }
}

KG_TEST(kernelspec_find_search_path)
{
  char root[] = "/tmp/kg-ks-XXXXXX";
  KG_CHECK(mkdtemp(root) != NULL);
  char d[512], f[600];
  snprintf(d, sizeof d, "%s/a/kernels/mine", root);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "mkdir -p %s %s/b/kernels/mine", d, root);
  KG_CHECK_INT(system(cmd), 0);
  snprintf(f, sizeof f, "%s/kernel.json", d);
  FILE *o = fopen(f, "w");
  fputs("{\"argv\": [\"first\"], \"display_name\": \"A\"}", o);
  fclose(o);
  snprintf(f, sizeof f, "%s/b/kernels/mine/kernel.json", root);
  o = fopen(f, "w");
  fputs("{\"argv\": [\"second\"], \"display_name\": \"B\"}", o);
  fclose(o);
  char jp[600];
  snprintf(jp, sizeof jp, "%s/a:%s/b", root, root);
  setenv("JUPYTER_PATH", jp, 1);
  kg_kernelspec_t *s = NULL;
  char err[2048] = "";
  KG_CHECK_INT(kg_kernelspec_find("mine", NULL, &s, err, sizeof err), 0);
  KG_CHECK_STR(s ? s->display_name : NULL, "A");   /* first entry wins */
  KG_CHECK(s && strstr(s->dir, "/a/kernels/mine") != NULL);
  kg_kernelspec_destroy(&s);
  KG_CHECK_INT(kg_kernelspec_find("absent", NULL, &s, err, sizeof err), KG_ENOKERNEL);
  KG_CHECK(strstr(err, "absent") && strstr(err, "/usr/share/jupyter/kernels"));
  KG_CHECK_INT(kg_kernelspec_find("../x", NULL, &s, err, sizeof err), KG_EUSAGE);
  unsetenv("JUPYTER_PATH");
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  KG_CHECK_INT(system(cmd), 0);
}

/*  Kernelspec names as jupyter_client's _kernel_name_pat accepts them, and
    no directory references or over-long names. */
KG_TEST(kernelspec_names)
{
  static const struct { const char *name; const char *needle; } table[] = {
    {"python3", NULL}, {"My-Kernel_2.0", NULL}, {"a", NULL},
    {"", "at least one character"}, {".", "directory reference"},
    {"..", "directory reference"}, {"a b", "character 2 (a space)"},
    {"a/b", "character 2 ('/')"}, {"q\"x", "character 2 ('\"')"},
    {"caf\xc3\xa9", "character 4 (byte 0xc3)"}, {"t\tab", "character 2 (byte 0x09)"},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    char err[256] = "";
    int rc = kg_kernelspec_check_name(table[i].name, err, sizeof err);
    KG_CHECK_INT(rc, table[i].needle ? KG_EUSAGE : 0);
    if (table[i].needle && !strstr(err, table[i].needle))
      fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, table[i].needle);
    KG_CHECK(!table[i].needle || strstr(err, table[i].needle) != NULL);
  }
  char longest[KG_KERNELSPEC_NAME_MAX + 2];
  memset(longest, 'k', sizeof longest);
  longest[KG_KERNELSPEC_NAME_MAX] = '\0';
  char err[256];
  KG_CHECK_INT(kg_kernelspec_check_name(longest, err, sizeof err), 0);
  longest[KG_KERNELSPEC_NAME_MAX] = 'k';
  longest[KG_KERNELSPEC_NAME_MAX + 1] = '\0';
  KG_CHECK_INT(kg_kernelspec_check_name(longest, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "256 characters, at most 255") != NULL);
}

/*  Placeholders filled as jupyter_client's format_kernel_cmd fills them:
    anywhere in an argument, unknown names and unset values left alone. */
KG_TEST(kernelspec_format_arg)
{
  kg_kernelspec_ns_t ns = {.connection_file = "/r/c.json", .resource_dir = "/k/spec",
                           .prefix = "/usr"};
  static const struct { const char *arg, *want; } table[] = {
    {"{connection_file}", "/r/c.json"},
    {"--file={connection_file}", "--file=/r/c.json"},
    {"{resource_dir}/kernel.sh", "/k/spec/kernel.sh"},
    {"{prefix}/bin/x {prefix}", "/usr/bin/x /usr"},
    {"{unknown}", "{unknown}"}, {"{}", "{}"}, {"{resource-dir}", "{resource-dir}"},
    {"{{resource_dir}}", "{/k/spec}"}, {"{resource_dir", "{resource_dir"},
    {"plain", "plain"}, {"", ""},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    char *out = kg_kernelspec_format_arg(table[i].arg, &ns);
    KG_CHECK_STR(out, table[i].want);
    free(out);
  }
  kg_kernelspec_ns_t inner = {.resource_dir = "/k"};
  char *out = kg_kernelspec_format_arg("-f {connection_file} {resource_dir}", &inner);
  KG_CHECK_STR(out, "-f {connection_file} /k");
  free(out);
}

KG_TEST_MAIN(KG_CASE(kernelspec_parse_ok), KG_CASE(kernelspec_parse_errors),
             KG_CASE(kernelspec_find_search_path), KG_CASE(kernelspec_names),
             KG_CASE(kernelspec_format_arg))
