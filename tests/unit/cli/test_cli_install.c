/*  kg_cli_install's kernel.json builder: the guarded kernelspec runs
    `kguard kernel` with the options given, then `--` and the wrapped argv
    unchanged, and keeps the wrapped spec's language, interrupt mode, env
    and metadata. The wrapped spec is parsed from text, as kguard reads one
    from disk; nothing is written. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kg_cli_install.h"
#include "kg_kernelspec.h"
#include "kg_test.h"

static const char s_ipykernel[] =
  "{\"argv\": [\"/usr/bin/python3\", \"-m\", \"ipykernel_launcher\", \"-f\", "
  "\"{connection_file}\"], \"display_name\": \"Python 3 (ipykernel)\", "
  "\"language\": \"python\", \"metadata\": {\"debugger\": true}}";

/*  The options `kguard install` starts from (its defaults). */
static kg_cli_install_opts_t
s_defaults(void)
{
  return (kg_cli_install_opts_t){
    .kernel = "python3", .check = true,
    .policy = {{"--max-restarts", true, NULL, 0}, {"--restart-window", false, NULL, 0},
               {"--backoff", false, NULL, 0}, {"--backoff-max", false, NULL, 0},
               {"--stale-window", false, NULL, 0}}};
}

/*  Build the kernel.json for wrapped_text with o, parsed back. */
static cJSON *
s_build(const kg_cli_install_opts_t *o, const char *wrapped_text)
{
  kg_kernelspec_t *spec = NULL;
  char err[256] = "";
  KG_CHECK_INT(kg_kernelspec_parse("python3", wrapped_text, strlen(wrapped_text), &spec, err,
                                   sizeof err), 0);
  if (!spec)
    return NULL;
  char *text = kg_cli_install_json(o, spec, "/opt/kguard/bin/kguard", "python3-kguard",
                                   "Python 3 (kguard)");
  kg_kernelspec_destroy(&spec);
  KG_CHECK(text != NULL);
  cJSON *j = text ? cJSON_Parse(text) : NULL;
  cJSON_free(text);
  KG_CHECK(j != NULL);
  return j;
}

/*  The index of "--" in argv, -1 when absent. */
static int
s_dashdash(const cJSON *av)
{
  for (int i = 0; i < cJSON_GetArraySize(av); i++)
    if (strcmp(cJSON_GetArrayItem(av, i)->valuestring, "--") == 0)
      return i;
  return -1;
}

/*  The word after flag among kguard's own options (before "--"); "" for a
    flag without a value at the end, NULL when absent. */
static const char *
s_kguard_opt(const cJSON *j, const char *flag)
{
  const cJSON *av = cJSON_GetObjectItemCaseSensitive(j, "argv");
  int dash = s_dashdash(av);
  for (int i = 0; i < dash; i++)
    if (strcmp(cJSON_GetArrayItem(av, i)->valuestring, flag) == 0)
      return i + 1 < dash ? cJSON_GetArrayItem(av, i + 1)->valuestring : "";
  return NULL;
}

static const char *
s_env(const cJSON *j, const char *name)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(
    cJSON_GetObjectItemCaseSensitive(j, "env"), name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

KG_TEST(install_json_wraps_the_argv_unchanged)
{
  kg_cli_install_opts_t o = s_defaults();
  cJSON *j = s_build(&o, s_ipykernel);
  if (!j)
    return;
  const cJSON *av = cJSON_GetObjectItemCaseSensitive(j, "argv");
  const char *head[] = {"/opt/kguard/bin/kguard", "kernel", "-f", "{connection_file}",
                        "--name", "python3-kguard"};
  for (int i = 0; i < 6; i++)
    KG_CHECK_STR(cJSON_GetArrayItem(av, i)->valuestring, head[i]);
  /* the wrapped argv follows "--" word for word */
  cJSON *wrapped = cJSON_Parse(s_ipykernel);
  const cJSON *wav = cJSON_GetObjectItemCaseSensitive(wrapped, "argv");
  int dash = s_dashdash(av);
  KG_CHECK(dash > 0);
  KG_CHECK_INT(cJSON_GetArraySize(av) - dash - 1, cJSON_GetArraySize(wav));
  for (int i = 0; dash > 0 && i < cJSON_GetArraySize(wav); i++)
    KG_CHECK_STR(cJSON_GetArrayItem(av, dash + 1 + i)->valuestring,
                 cJSON_GetArrayItem(wav, i)->valuestring);
  cJSON_Delete(wrapped);
  /* the language is told to kguard and kept; signal interrupts are the default */
  KG_CHECK_STR(s_kguard_opt(j, "--language"), "python");
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(j, "language")->valuestring, "python");
  KG_CHECK(s_kguard_opt(j, "--interrupt-mode") == NULL);
  KG_CHECK(!cJSON_GetObjectItemCaseSensitive(j, "interrupt_mode"));
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(j, "display_name")->valuestring,
               "Python 3 (kguard)");
  /* no option given: no env, no policy, no standby */
  KG_CHECK(!cJSON_GetObjectItemCaseSensitive(j, "env"));
  KG_CHECK(s_kguard_opt(j, "--max-restarts") == NULL);
  KG_CHECK(s_kguard_opt(j, "--standby") == NULL);
  /* the wrapped metadata is kept and says what is wrapped */
  const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
  KG_CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(md, "debugger")));
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(
                 cJSON_GetObjectItemCaseSensitive(md, "kguard"), "wraps")->valuestring,
               "python3");
  cJSON_Delete(j);
}

/*  Each option given lands in kguard's argv (before "--") or in the env. */
KG_TEST(install_json_options_table)
{
  static const struct {
    const char *what;
    int policy;                 /*  index into o.policy, -1 none           */
    double number;
    const char *ckpt, *preflight, *timeout, *keep, *imports;
    bool standby;
    const char *flag, *flag_value;   /*  expected in kguard's argv          */
    const char *var, *var_value;     /*  expected in the env                */
  } rows[] = {
    {"checkpoints", -1, 0, "/ck", NULL, NULL, NULL, NULL, false, "--checkpoints", "/ck",
     NULL, NULL},
    {"max-restarts", 0, 5, NULL, NULL, NULL, NULL, NULL, false, "--max-restarts", "5",
     NULL, NULL},
    {"backoff, a fraction", 2, 0.5, NULL, NULL, NULL, NULL, NULL, false, "--backoff", "0.5",
     NULL, NULL},
    {"stale-window", 4, 12, NULL, NULL, NULL, NULL, NULL, false, "--stale-window", "12",
     NULL, NULL},
    {"standby", -1, 0, NULL, NULL, NULL, NULL, NULL, true, "--standby", "", NULL, NULL},
    {"preflight", -1, 0, NULL, "first", NULL, NULL, NULL, false, NULL, NULL,
     "KGUARD_PREFLIGHT", "first"},
    {"preflight-timeout", -1, 0, NULL, NULL, "7", NULL, NULL, false, NULL, NULL,
     "KGUARD_PREFLIGHT_TIMEOUT", "7"},
    {"keep", -1, 0, NULL, NULL, NULL, "3", NULL, false, NULL, NULL, "KGUARD_KEEP", "3"},
    {"standby-imports", -1, 0, NULL, NULL, NULL, NULL, "torch,numpy", true, "--standby", "",
     "KGUARD_STANDBY_IMPORTS", "torch,numpy"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_cli_install_opts_t o = s_defaults();
    char given[32];
    if (rows[i].policy >= 0) {
      snprintf(given, sizeof given, "%g", rows[i].number);
      o.policy[rows[i].policy].value = given;
      o.policy[rows[i].policy].number = rows[i].number;
    }
    o.ckpt = rows[i].ckpt;
    o.preflight = rows[i].preflight;
    o.preflight_timeout = rows[i].timeout;
    o.keep = rows[i].keep;
    o.standby_imports = rows[i].imports;
    o.standby = rows[i].standby;
    cJSON *j = s_build(&o, s_ipykernel);
    if (!j)
      continue;
    if (rows[i].flag) {
      const char *v = s_kguard_opt(j, rows[i].flag);
      if (!v || strcmp(v, rows[i].flag_value) != 0)
        fprintf(stderr, "row %s: %s is %s\n", rows[i].what, rows[i].flag, v ? v : "absent");
      KG_CHECK(v && strcmp(v, rows[i].flag_value) == 0);
    }
    if (rows[i].var)
      KG_CHECK_STR(s_env(j, rows[i].var), rows[i].var_value);
    else
      KG_CHECK(!cJSON_GetObjectItemCaseSensitive(j, "env"));
    cJSON_Delete(j);
  }
}

/*  The wrapped env is kept; an option replaces the variable it sets; a
    message-mode kernel keeps its interrupt mode, told to kguard too. */
KG_TEST(install_json_keeps_env_and_interrupt_mode)
{
  static const char wrapped[] =
    "{\"argv\": [\"/opt/ir/bin/R\", \"--slave\", \"-e\", \"IRkernel::main()\", "
    "\"--args\", \"{connection_file}\"], \"display_name\": \"R\", \"language\": \"R\", "
    "\"interrupt_mode\": \"message\", \"env\": {\"LANG\": \"C.UTF-8\", \"KGUARD_KEEP\": \"9\"}}";
  kg_cli_install_opts_t o = s_defaults();
  o.kernel = "ir";
  o.keep = "2";
  cJSON *j = s_build(&o, wrapped);
  if (!j)
    return;
  KG_CHECK_STR(s_env(j, "LANG"), "C.UTF-8");
  KG_CHECK_STR(s_env(j, "KGUARD_KEEP"), "2");
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "env")), 2);
  KG_CHECK_STR(s_kguard_opt(j, "--interrupt-mode"), "message");
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(j, "interrupt_mode")->valuestring, "message");
  KG_CHECK_STR(s_kguard_opt(j, "--language"), "R");
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(
                 cJSON_GetObjectItemCaseSensitive(
                   cJSON_GetObjectItemCaseSensitive(j, "metadata"), "kguard"), "wraps")
                 ->valuestring, "ir");
  cJSON_Delete(j);
}

KG_TEST_MAIN(KG_CASE(install_json_wraps_the_argv_unchanged), KG_CASE(install_json_options_table),
             KG_CASE(install_json_keeps_env_and_interrupt_mode))
