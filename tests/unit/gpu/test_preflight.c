/*  kg_preflight (the pre-flight probe beside a fresh kernel) and
    kg_inband_doctor (`%kguard doctor`): the pure parts by tables, the helper
    children against fake probes (shell scripts standing for `kguard doctor`,
    so the exit codes, the hang and the backstop are exact), and once each
    against the real `kguard doctor` under the labelled emulation
    (KGUARD_BIN, set by ctest). */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_inband_doctor.h"
#include "kg_preflight.h"
#include "kg_test.h"

static int64_t
s_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *
s_str(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- kg_preflight: pure ---------------------------------------------------- */

KG_TEST(preflight_config_table)
{
  static const struct {
    const char *mode, *timeout;
    int rc;
    kg_preflight_mode_t want;
    double want_t;
  } t[] = {
    {NULL, NULL, 0, KG_PREFLIGHT_STICKY, 10},
    {"", "", 0, KG_PREFLIGHT_STICKY, 10},
    {"never", NULL, 0, KG_PREFLIGHT_NEVER, 10},
    {"sticky", "1", 0, KG_PREFLIGHT_STICKY, 1},
    {"first", "0.5", 0, KG_PREFLIGHT_FIRST, 0.5},
    {"first", "3600", 0, KG_PREFLIGHT_FIRST, 3600},
    {"First", NULL, KG_EUSAGE, KG_PREFLIGHT_STICKY, 10},
    {"always", NULL, KG_EUSAGE, KG_PREFLIGHT_STICKY, 10},
    {"sticky", "0", KG_EUSAGE, KG_PREFLIGHT_STICKY, 10},
    {"sticky", "-1", KG_EUSAGE, KG_PREFLIGHT_STICKY, 10},
    {"sticky", "3601", KG_EUSAGE, KG_PREFLIGHT_STICKY, 10},
    {"sticky", "10s", KG_EUSAGE, KG_PREFLIGHT_STICKY, 10},
    {"sticky", "nan", KG_EUSAGE, KG_PREFLIGHT_STICKY, 10},
    {"sticky", "inf", KG_EUSAGE, KG_PREFLIGHT_STICKY, 10},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    kg_preflight_config_t cfg;
    char err[256] = "";
    int rc = kg_preflight_config_parse(t[i].mode, t[i].timeout, &cfg, err, sizeof err);
    KG_CHECK_INT(rc, t[i].rc);
    KG_CHECK_INT(cfg.mode, t[i].want);
    KG_CHECK(cfg.timeout_s == t[i].want_t);
    KG_CHECK(cfg.backstop_ms == KG_PREFLIGHT_BACKSTOP_MS);
    if (rc) {   /* the message names the variable and the value */
      KG_CHECK(strstr(err, "KGUARD_PREFLIGHT") != NULL);
      KG_CHECK(strstr(err, t[i].timeout && strcmp(t[i].mode, "sticky") == 0 ? t[i].timeout
                                                                                : t[i].mode));
    }
  }
  KG_CHECK_STR(kg_preflight_mode_name(KG_PREFLIGHT_FIRST), "first");
  KG_CHECK_STR(kg_preflight_verdict_name(KG_PREFLIGHT_TIMEOUT), "timeout");
}

KG_TEST(preflight_wanted_table)
{
  static const struct {
    kg_preflight_mode_t mode;
    bool first, sticky, want;
  } t[] = {
    {KG_PREFLIGHT_NEVER, true, true, false},    {KG_PREFLIGHT_NEVER, false, true, false},
    {KG_PREFLIGHT_STICKY, true, false, false},  {KG_PREFLIGHT_STICKY, false, true, true},
    {KG_PREFLIGHT_STICKY, false, false, false}, /* a user restart, a kernel that died */
    {KG_PREFLIGHT_FIRST, true, false, true},    {KG_PREFLIGHT_FIRST, false, true, true},
    {KG_PREFLIGHT_FIRST, false, false, false},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    KG_CHECK_INT(kg_preflight_wanted(t[i].mode, t[i].first, t[i].sticky), t[i].want);
}

#define HEALTHY "{\"status\":\"healthy\",\"summary\":\"1 device(s) healthy\",\"cuda\":{}}"
#define NOGPU "{\"status\":\"no-gpu\",\"summary\":\"no GPU visible: nothing to check\"}"
#define FAILING "{\"status\":\"failing\",\"summary\":\"a device is failing (ECC)\"}"
#define HUNG "{\"status\":\"timeout\",\"summary\":\"the device did not answer within 1000 ms\"}"

KG_TEST(preflight_judge_table)
{
  static const struct {
    int status;
    bool killed;
    const char *out;
    kg_preflight_verdict_t want;
    const char *want_status, *summary_has;
  } t[] = {
    {W_EXITCODE(0, 0), false, HEALTHY, KG_PREFLIGHT_OK, "healthy", "1 device(s) healthy"},
    {W_EXITCODE(0, 0), false, NOGPU, KG_PREFLIGHT_OK, "no-gpu", "no GPU visible"},
    {W_EXITCODE(1, 0), false, FAILING, KG_PREFLIGHT_FAILING, "failing", "ECC"},
    /* the exit code is the contract: 1 without a report still fails */
    {W_EXITCODE(1, 0), false, "garbage", KG_PREFLIGHT_FAILING, "failing", "nvidia-smi -q"},
    {W_EXITCODE(1, 0), false, NULL, KG_PREFLIGHT_FAILING, "failing", "rocm-smi"},
    {W_EXITCODE(2, 0), false, HUNG, KG_PREFLIGHT_TIMEOUT, "timeout", "1000 ms"},
    {W_EXITCODE(2, 0), false, "", KG_PREFLIGHT_TIMEOUT, "timeout", "within 10 s"},
    /* kguard's backstop, whatever the wait status says */
    {W_EXITCODE(0, SIGKILL), true, NULL, KG_PREFLIGHT_TIMEOUT, "timeout", "was killed"},
    /* no verdict on the device: the tool itself */
    {W_EXITCODE(100, 0), false, NULL, KG_PREFLIGHT_UNAVAILABLE, "error", "exit 100"},
    {W_EXITCODE(111, 0), false, NULL, KG_PREFLIGHT_UNAVAILABLE, "error", "exit 111"},
    {W_EXITCODE(0, SIGSEGV), false, NULL, KG_PREFLIGHT_UNAVAILABLE, "error", "SIGSEGV"},
    {W_EXITCODE(0, 0), false, "", KG_PREFLIGHT_UNAVAILABLE, "error", "without its report"},
    {W_EXITCODE(0, 0), false, "[1,2]", KG_PREFLIGHT_UNAVAILABLE, "error", "without its report"},
    /* exit 0 with a report saying otherwise is outside the contract */
    {W_EXITCODE(0, 0), false, FAILING, KG_PREFLIGHT_UNAVAILABLE, "error", "status failing"},
    {W_EXITCODE(7, 0), false, NOGPU, KG_PREFLIGHT_UNAVAILABLE, "error", "exit 7"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *r = NULL;
    kg_preflight_verdict_t v = kg_preflight_judge(t[i].status, t[i].killed, t[i].out, 10, &r);
    KG_CHECK_INT(v, t[i].want);
    KG_CHECK(cJSON_IsObject(r));
    KG_CHECK_STR(s_str(r, "status"), t[i].want_status);
    KG_CHECK_STR(s_str(r, "verdict"), kg_preflight_verdict_name(t[i].want));
    const char *sum = s_str(r, "summary");
    KG_CHECK(sum && strstr(sum, t[i].summary_has));
    if (!(sum && strstr(sum, t[i].summary_has)))
      fprintf(stderr, "  row %zu: summary '%s'\n", i, sum ? sum : "(none)");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(r, "exit");
    if (WIFEXITED(t[i].status) && !t[i].killed)
      KG_CHECK(cJSON_IsNumber(ex) && ex->valueint == WEXITSTATUS(t[i].status));
    else
      KG_CHECK(cJSON_IsNull(ex));
    KG_CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "killed_by_kguard"))
             == t[i].killed);
    /* what a probe printed outside its contract is kept as evidence */
    cJSON *parsed = t[i].out ? cJSON_Parse(t[i].out) : NULL;
    if (t[i].out && *t[i].out && !cJSON_IsObject(parsed))
      KG_CHECK_STR(s_str(r, "output"), t[i].out);
    cJSON_Delete(parsed);
    cJSON_Delete(r);
  }
}

KG_TEST(preflight_down_reason)
{
  cJSON *r = NULL;
  kg_preflight_judge(W_EXITCODE(1, 0), false, FAILING, 10, &r);
  char *why = kg_preflight_down_reason(KG_PREFLIGHT_FAILING, r);
  KG_CHECK(why && strncmp(why, "the device is failing", 21) == 0);
  KG_CHECK(why && strstr(why, "a device is failing (ECC)"));   /* the probe's summary */
  KG_CHECK(why && strstr(why, "nvidia-smi -q") && strstr(why, "Xid") && strstr(why, "rocm-smi"));
  free(why);
  cJSON_Delete(r);
  kg_preflight_judge(W_EXITCODE(2, 0), false, HUNG, 10, &r);
  why = kg_preflight_down_reason(KG_PREFLIGHT_TIMEOUT, r);
  KG_CHECK(why && strstr(why, "did not answer") && strstr(why, "1000 ms"));
  free(why);
  KG_CHECK(kg_preflight_down_reason(KG_PREFLIGHT_OK, r) == NULL);
  KG_CHECK(kg_preflight_down_reason(KG_PREFLIGHT_UNAVAILABLE, r) == NULL);
  cJSON_Delete(r);
}

KG_TEST(preflight_memory_note_table)
{
  static const struct {
    const char *json;
    long dead_pid;
    const char *want;   /* NULL: nothing to say */
  } t[] = {
    {"{\"status\":\"no-gpu\"}", 42, NULL},
    {"{\"cuda\":{\"devices\":[{\"index\":0,\"name\":\"A\",\"total_bytes\":17179869184,"
     "\"used_bytes\":1073741824}]}}", 42, NULL},
    {"{\"cuda\":{\"devices\":[{\"index\":0,\"name\":\"A\",\"total_bytes\":17179869184,"
     "\"used_bytes\":16106127360}]}}", 42,
     "cuda:0 (A): 15.0 GiB of 16.0 GiB still in use (another process, or the previous "
     "kernel's memory not released yet)"},
    {"{\"cuda\":{\"devices\":[{\"index\":1,\"name\":\"B\",\"total_bytes\":17179869184,"
     "\"used_bytes\":2147483648,\"processes\":[{\"pid\":42,\"used_bytes\":2147483648}]}]}}",
     42, "cuda:1 (B): 2.0 GiB of 16.0 GiB still in use, held by pid 42 (the previous kernel: "
         "its memory is not released yet)"},
    {"{\"cuda\":{\"devices\":[{\"index\":1,\"name\":\"B\",\"total_bytes\":17179869184,"
     "\"used_bytes\":2147483648,\"processes\":[{\"pid\":43,\"used_bytes\":2147483648}]}]}}",
     42, NULL},
    {"{\"hip\":{\"devices\":[{\"index\":0,\"name\":\"MI\",\"total_bytes\":100,"
     "\"used_bytes\":95},{\"index\":1,\"name\":\"MI\",\"total_bytes\":100,\"used_bytes\":90}]}}",
     0, "hip:0 (MI): 0.0 GiB of 0.0 GiB still in use (another process, or the previous "
        "kernel's memory not released yet); hip:1 (MI): 0.0 GiB of 0.0 GiB still in use "
        "(another process, or the previous kernel's memory not released yet)"},
    {"{\"cuda\":{\"devices\":[{\"index\":0,\"total_bytes\":\"x\",\"used_bytes\":null}]}}", 1,
     NULL},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *r = cJSON_Parse(t[i].json);
    char buf[1024];
    bool said = kg_preflight_memory_note(r, t[i].dead_pid, buf, sizeof buf);
    KG_CHECK_INT(said, t[i].want != NULL);
    KG_CHECK_STR(buf, t[i].want ? t[i].want : "");
    char small[24];   /* cut, never overrun */
    kg_preflight_memory_note(r, t[i].dead_pid, small, sizeof small);
    KG_CHECK(strlen(small) < sizeof small);
    cJSON_Delete(r);
  }
}

/* ---- kg_preflight: the child --------------------------------------------- */

/*  A fake `kguard` for the probe: answers `doctor --preflight ...` by
    FAKE_PROBE (healthy, failing, hang, hang-ignoring-timeout, usage). */
static char s_fake[64];

static void
s_write_fake(void)
{
  snprintf(s_fake, sizeof s_fake, "/tmp/kg-fake-probe-%ld", (long) getpid());
  FILE *f = fopen(s_fake, "w");
  fputs("#!/bin/sh\n"
        "[ \"$1 $2 $3 $4\" = 'doctor --preflight --json --timeout' ] || exit 100\n"
        "case \"$FAKE_PROBE\" in\n"
        "healthy) echo '" HEALTHY "' ;;\n"
        "failing) echo '" FAILING "'; exit 1 ;;\n"
        "timeout) sleep \"$5\"; echo '" HUNG "'; exit 2 ;;\n"
        "deaf) exec sleep 60 ;;\n"
        "*) echo 'usage' >&2; exit 100 ;;\n"
        "esac\n",
        f);
  fclose(f);
  chmod(s_fake, 0755);
}

static char *s_env_healthy[] = {"FAKE_PROBE=healthy", "PATH=/usr/bin:/bin", NULL};
static char *s_env_failing[] = {"FAKE_PROBE=failing", "PATH=/usr/bin:/bin", NULL};
static char *s_env_timeout[] = {"FAKE_PROBE=timeout", "PATH=/usr/bin:/bin", NULL};
static char *s_env_deaf[] = {"FAKE_PROBE=deaf", "PATH=/usr/bin:/bin", NULL};
static char *s_env_usage[] = {"FAKE_PROBE=nonsense", "PATH=/usr/bin:/bin", NULL};

/*  Run p as kguard's loop does: poll its fds until its deadline, pump,
    timers. True once the verdict is known; false after limit_ms. */
static bool
s_run(kg_preflight_t *p, int64_t limit_ms)
{
  int64_t end = s_now() + limit_ms;
  while (s_now() < end) {
    struct pollfd fds[2];
    int n = 0;
    for (int which = 1; which <= 2; which++)
      if (kg_preflight_fd(p, which) >= 0)
        fds[n++] = (struct pollfd){.fd = kg_preflight_fd(p, which), .events = POLLIN};
    int64_t wait = kg_preflight_deadline(p) - s_now();
    poll(fds, (nfds_t) n, n ? (int) (wait < 0 ? 0 : wait > 50 ? 50 : wait) : 10);
    if (kg_preflight_pump(p, s_now()))
      return true;
    kg_preflight_timers(p, s_now());
  }
  return false;
}

KG_TEST(preflight_child_verdicts)
{
  s_write_fake();
  static const struct {
    char **envp;
    kg_preflight_verdict_t want;
  } t[] = {
    {s_env_healthy, KG_PREFLIGHT_OK},
    {s_env_failing, KG_PREFLIGHT_FAILING},
    {s_env_timeout, KG_PREFLIGHT_TIMEOUT},
    {s_env_usage, KG_PREFLIGHT_UNAVAILABLE},
  };
  kg_preflight_config_t cfg = {.mode = KG_PREFLIGHT_STICKY, .timeout_s = 0.2,
                               .backstop_ms = 5000};
  kg_preflight_t *p = kg_preflight_new(&cfg);
  KG_CHECK(kg_preflight_verdict(p) == KG_PREFLIGHT_NONE && !kg_preflight_blocks_ready(p));
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    KG_CHECK_INT(kg_preflight_start(p, s_fake, t[i].envp, s_now()), 0);
    KG_CHECK(kg_preflight_blocks_ready(p));   /* ready waits for the verdict */
    KG_CHECK(kg_preflight_report(p) == NULL);
    KG_CHECK(s_run(p, 10000));
    KG_CHECK(!kg_preflight_blocks_ready(p) && !kg_preflight_running(p));
    KG_CHECK_INT(kg_preflight_verdict(p), t[i].want);
    KG_CHECK(kg_preflight_ms(p) >= 0);
    cJSON *record = cJSON_CreateObject();
    cJSON_AddStringToObject(record, "preflight", "an earlier one, replaced");
    KG_CHECK_INT(kg_preflight_record(p, record), 0);
    const cJSON *pf = cJSON_GetObjectItemCaseSensitive(record, "preflight");
    KG_CHECK_STR(s_str(pf, "verdict"), kg_preflight_verdict_name(t[i].want));
    KG_CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(pf, "kguard_ms")));
    KG_CHECK_INT(cJSON_GetArraySize(record), 1);
    cJSON_Delete(record);
  }
  kg_preflight_destroy(&p);
  KG_CHECK(p == NULL);
  unlink(s_fake);
}

KG_TEST(preflight_failed_device_is_checked_again)
{
  s_write_fake();
  kg_preflight_config_t cfg = {.mode = KG_PREFLIGHT_STICKY, .timeout_s = 1};
  kg_preflight_t *p = kg_preflight_new(&cfg);
  KG_CHECK(!kg_preflight_should_start(p, true, false));   /* first start: sticky mode */
  KG_CHECK(kg_preflight_should_start(p, false, true));
  KG_CHECK_INT(kg_preflight_start(p, s_fake, s_env_failing, s_now()), 0);
  KG_CHECK(s_run(p, 10000));
  kg_preflight_cancel(p);   /* the kernel went DOWN; then `%kguard restart` */
  KG_CHECK(kg_preflight_should_start(p, false, false));
  KG_CHECK_INT(kg_preflight_start(p, s_fake, s_env_healthy, s_now()), 0);
  KG_CHECK(s_run(p, 10000));
  KG_CHECK(!kg_preflight_should_start(p, false, false));  /* healthy again */
  kg_preflight_destroy(&p);
  cfg.mode = KG_PREFLIGHT_NEVER;
  p = kg_preflight_new(&cfg);
  KG_CHECK(!kg_preflight_should_start(p, true, true));
  kg_preflight_destroy(&p);
  unlink(s_fake);
}

KG_TEST(preflight_child_backstop_kills_a_deaf_probe)
{
  s_write_fake();
  kg_preflight_config_t cfg = {.mode = KG_PREFLIGHT_STICKY, .timeout_s = 0.1,
                               .backstop_ms = 300};
  kg_preflight_t *p = kg_preflight_new(&cfg);
  int64_t t0 = s_now();
  KG_CHECK_INT(kg_preflight_start(p, s_fake, s_env_deaf, t0), 0);
  KG_CHECK(kg_preflight_deadline(p) == t0 + 400);
  KG_CHECK(s_run(p, 10000));
  KG_CHECK_INT(kg_preflight_verdict(p), KG_PREFLIGHT_TIMEOUT);
  const cJSON *r = kg_preflight_report(p);
  KG_CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "killed_by_kguard")));
  KG_CHECK(strstr(s_str(r, "summary"), "was killed") != NULL);
  kg_preflight_destroy(&p);
  unlink(s_fake);
}

KG_TEST(preflight_child_cancel_and_failed_start)
{
  s_write_fake();
  kg_preflight_config_t cfg = {.mode = KG_PREFLIGHT_STICKY, .timeout_s = 5};
  kg_preflight_t *p = kg_preflight_new(&cfg);
  KG_CHECK_INT(kg_preflight_start(p, s_fake, s_env_deaf, s_now()), 0);
  KG_CHECK(kg_preflight_running(p));
  kg_preflight_cancel(p);   /* the start it belonged to was abandoned */
  KG_CHECK(!kg_preflight_running(p) && !kg_preflight_blocks_ready(p));
  KG_CHECK_INT(kg_preflight_verdict(p), KG_PREFLIGHT_NONE);
  KG_CHECK_INT(kg_preflight_record(p, NULL), KG_ENOTFOUND);
  /* a probe that cannot start holds nothing up, and says why */
  KG_CHECK(kg_preflight_start(p, "/nonexistent/kguard", NULL, s_now()) < 0);
  KG_CHECK(!kg_preflight_blocks_ready(p));
  KG_CHECK_INT(kg_preflight_verdict(p), KG_PREFLIGHT_UNAVAILABLE);
  KG_CHECK(strstr(s_str(kg_preflight_report(p), "summary"), "could not be started") != NULL);
  kg_preflight_destroy(&p);
  unlink(s_fake);
}

KG_TEST(preflight_argv)
{
  char **argv = kg_preflight_argv("/opt/kguard", 1.5);
  const char *want[] = {"/opt/kguard", "doctor", "--preflight", "--json", "--timeout", "1.5"};
  for (size_t i = 0; i < 6; i++)
    KG_CHECK_STR(argv[i], want[i]);
  KG_CHECK(argv[6] == NULL);
  kg_preflight_argv_free(&argv);
  KG_CHECK(argv == NULL);
}

/*  The real `kguard doctor --preflight` under the labelled emulation: the
    contract this class parses is the one the tool keeps. */
KG_TEST(preflight_real_doctor_emulated)
{
  const char *bin = getenv("KGUARD_BIN");
  if (!bin) {
    fprintf(stderr, "KGUARD_BIN is not set (ctest sets it)\n");
    kg_test__failed = 1;
    return;
  }
  static const struct {
    const char *emulate;
    double timeout;
    kg_preflight_verdict_t want;
    const char *status;
  } t[] = {
    {"KGUARD_EMULATE=", 10, KG_PREFLIGHT_OK, "no-gpu"},
    {"KGUARD_EMULATE=cuda-assert:step=2:once:preflight-fail", 10, KG_PREFLIGHT_FAILING,
     "failing"},
    {"KGUARD_EMULATE=cuda-assert:step=2:once:preflight-hang", 1, KG_PREFLIGHT_TIMEOUT,
     "timeout"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    kg_preflight_config_t cfg = {.mode = KG_PREFLIGHT_STICKY, .timeout_s = t[i].timeout};
    kg_preflight_t *p = kg_preflight_new(&cfg);
    char *envp[] = {(char *) t[i].emulate, "PATH=/usr/bin:/bin", "KGUARD_CUDA_LIB=/nonexistent",
                    "KGUARD_HIP_LIB=/nonexistent", NULL};
    KG_CHECK_INT(kg_preflight_start(p, bin, envp, s_now()), 0);
    KG_CHECK(s_run(p, 30000));
    KG_CHECK_INT(kg_preflight_verdict(p), t[i].want);
    const cJSON *r = kg_preflight_report(p);
    KG_CHECK_STR(s_str(r, "status"), t[i].status);
    if (t[i].want != KG_PREFLIGHT_OK) {
      KG_CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "emulated")));
      KG_CHECK(strstr(s_str(r, "summary"), "kguard emulation") != NULL);
      char *why = kg_preflight_down_reason(kg_preflight_verdict(p), r);
      KG_CHECK(why && strstr(why, "the device is failing") && strstr(why, "kguard emulation"));
      free(why);
    }
    kg_preflight_destroy(&p);
  }
}

/* ---- kg_inband_doctor ---------------------------------------------------- */

KG_TEST(inband_doctor_match_table)
{
  static const struct {
    const char *line;
    bool want;
  } t[] = {
    {"%kguard doctor", true},     {"  %kguard   doctor  ", true}, {"%kguard\tdoctor\r", true},
    {"%kguard doctor --json", false}, {"%kguard doctors", false}, {"%kguard status", false},
    {"%kguard", false},           {"%kguardx doctor", false},   {"kguard doctor", false},
    {"%kguard doctor x", false},  {"", false},                  {NULL, false},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    KG_CHECK_INT(kg_inband_doctor_match(t[i].line), t[i].want);
}

/*  The cell the doctor answers: an id of any length, kept across a start
    (also one that fails at once), handed over once. */
KG_TEST(inband_doctor_request_id)
{
  kg_inband_doctor_t *d = kg_inband_doctor_new(0);
  KG_CHECK(d != NULL);
  KG_CHECK(kg_inband_doctor_take_request(d) == NULL);
  char *long_id = malloc(20001);
  KG_CHECK(long_id != NULL);
  memset(long_id, 'q', 20000);
  long_id[20000] = '\0';
  KG_CHECK_INT(kg_inband_doctor_set_request(d, "first"), 0);
  KG_CHECK_INT(kg_inband_doctor_set_request(d, long_id), 0);   /* replaces it */
  KG_CHECK(kg_inband_doctor_start(d, "/nonexistent/kguard", NULL, NULL, 0) < 0);
  KG_CHECK(kg_inband_doctor_done(d));
  char *id = kg_inband_doctor_take_request(d);
  KG_CHECK_STR(id, long_id);
  KG_CHECK(id != long_id);
  free(id);
  KG_CHECK(kg_inband_doctor_take_request(d) == NULL);   /* handed over once */
  KG_CHECK_INT(kg_inband_doctor_set_request(d, "kept"), 0);
  kg_inband_doctor_destroy(&d);   /* frees the id it still holds */
  KG_CHECK(d == NULL);
  free(long_id);
}

KG_TEST(inband_doctor_argv)
{
  char **a = kg_inband_doctor_argv("/k", "/usr/bin/python3");
  const char *want[] = {"/k", "doctor", "--format=markdown", "--timeout", "60", "--python",
                        "/usr/bin/python3"};
  for (size_t i = 0; i < 7; i++)
    KG_CHECK_STR(a[i], want[i]);
  KG_CHECK(a[7] == NULL);
  kg_inband_doctor_argv_free(&a);
  a = kg_inband_doctor_argv("/k", NULL);   /* not a Python kernel: no --python */
  KG_CHECK(a[5] == NULL);
  kg_inband_doctor_argv_free(&a);
}

KG_TEST(inband_doctor_render_table)
{
  static const struct {
    int status;
    bool killed;
    const char *out;
    bool ok;
    const char *plain_has;
  } t[] = {
    {W_EXITCODE(0, 0), false, "**kguard doctor**: fine\n", true, "**kguard doctor**: fine"},
    {W_EXITCODE(1, 0), false, "**kguard doctor**: 1 problem(s)\n", true, "1 problem(s)"},
    {W_EXITCODE(0, 0), false, "", false, "without a report"},
    {W_EXITCODE(100, 0), false, NULL, false, "exit 100"},
    {W_EXITCODE(111, 0), false, "partial", false, "exit 111"},
    {W_EXITCODE(0, SIGSEGV), false, NULL, false, "SIGSEGV"},
    {W_EXITCODE(0, SIGKILL), true, NULL, false, "within 90 s"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    bool ok = !t[i].ok;
    cJSON *c = kg_inband_doctor_render(t[i].status, t[i].killed, t[i].out, 90000, &ok);
    KG_CHECK_INT(ok, t[i].ok);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(c, "data");
    KG_CHECK(strstr(s_str(data, "text/plain"), t[i].plain_has) != NULL);
    KG_CHECK(strstr(s_str(data, "text/markdown"), "kguard doctor") != NULL);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(c, "metadata"), "kguard");
    KG_CHECK_STR(s_str(k, "event"), "doctor");
    KG_CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(k, "ok")) == t[i].ok);
    KG_CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(c, "transient")));
    cJSON_Delete(c);
  }
  cJSON *r = kg_inband_doctor_reply_content(true, NULL, 7);
  KG_CHECK_STR(s_str(r, "status"), "ok");
  KG_CHECK_INT(cJSON_GetObjectItemCaseSensitive(r, "execution_count")->valueint, 7);
  cJSON_Delete(r);
  r = kg_inband_doctor_reply_content(false, "kguard doctor was killed", 7);
  KG_CHECK_STR(s_str(r, "status"), "error");
  KG_CHECK_STR(s_str(r, "ename"), "KguardDoctorFailed");
  KG_CHECK_STR(s_str(r, "evalue"), "kguard doctor was killed");
  cJSON_Delete(r);
}

static bool
s_run_doctor(kg_inband_doctor_t *d, int64_t limit_ms)
{
  int64_t end = s_now() + limit_ms;
  while (s_now() < end) {
    struct pollfd fds[2];
    int n = 0;
    for (int which = 1; which <= 2; which++)
      if (kg_inband_doctor_fd(d, which) >= 0)
        fds[n++] = (struct pollfd){.fd = kg_inband_doctor_fd(d, which), .events = POLLIN};
    poll(fds, (nfds_t) n, 50);
    if (kg_inband_doctor_pump(d, s_now()))
      return true;
    kg_inband_doctor_timers(d, s_now());
  }
  return false;
}

KG_TEST(inband_doctor_backstop_and_cancel)
{
  /* a "doctor" that never answers: killed at the bound, said so */
  char deaf[64];
  snprintf(deaf, sizeof deaf, "/tmp/kg-fake-doctor-%ld", (long) getpid());
  FILE *f = fopen(deaf, "w");
  fputs("#!/bin/sh\nexec sleep 60\n", f);
  fclose(f);
  chmod(deaf, 0755);
  kg_inband_doctor_t *d = kg_inband_doctor_new(300);
  KG_CHECK_INT(kg_inband_doctor_start(d, deaf, NULL, NULL, s_now()), 0);
  KG_CHECK(kg_inband_doctor_running(d) && !kg_inband_doctor_done(d));
  KG_CHECK(kg_inband_doctor_display(d) == NULL);
  KG_CHECK(s_run_doctor(d, 10000));
  KG_CHECK(kg_inband_doctor_done(d));
  cJSON *reply = kg_inband_doctor_reply(d, 3);
  KG_CHECK_STR(s_str(reply, "status"), "error");
  KG_CHECK(strstr(s_str(reply, "evalue"), "did not answer within 0.3 s") != NULL);
  cJSON_Delete(reply);
  /* cancelled: nothing left running, nothing to show */
  KG_CHECK_INT(kg_inband_doctor_start(d, deaf, NULL, NULL, s_now()), 0);
  kg_inband_doctor_cancel(d);
  KG_CHECK(!kg_inband_doctor_running(d) && !kg_inband_doctor_done(d));
  /* cannot start: answered at once */
  KG_CHECK(kg_inband_doctor_start(d, "/nonexistent/kguard", NULL, NULL, s_now()) < 0);
  KG_CHECK(kg_inband_doctor_done(d));
  cJSON *disp = kg_inband_doctor_display(d);
  KG_CHECK(strstr(s_str(cJSON_GetObjectItemCaseSensitive(disp, "data"), "text/plain"),
                  "could not be started") != NULL);
  cJSON_Delete(disp);
  kg_inband_doctor_destroy(&d);
  KG_CHECK(d == NULL);
  unlink(deaf);
}

/*  The real `kguard doctor --format=markdown --python ...`: the report
    becomes the cell's Markdown, and the reply is ok. */
KG_TEST(inband_doctor_real_doctor)
{
  const char *bin = getenv("KGUARD_BIN");
  const char *py = getenv("KGUARD_PYTHON");
  if (!bin) {
    fprintf(stderr, "KGUARD_BIN is not set (ctest sets it)\n");
    kg_test__failed = 1;
    return;
  }
  kg_inband_doctor_t *d = kg_inband_doctor_new(0);
  KG_CHECK_INT(kg_inband_doctor_start(d, bin, py && *py ? py : "/usr/bin/python3", NULL,
                                      s_now()), 0);
  KG_CHECK(s_run_doctor(d, 120000));
  cJSON *disp = kg_inband_doctor_display(d);
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(disp, "data");
  const char *md = s_str(data, "text/markdown");
  KG_CHECK(md && strncmp(md, "**kguard doctor**", 17) == 0);
  KG_CHECK(md && strstr(md, "### Stack") && strstr(md, "### Variables in force"));
  KG_CHECK_STR(s_str(data, "text/plain"), md);
  cJSON *reply = kg_inband_doctor_reply(d, 1);
  KG_CHECK_STR(s_str(reply, "status"), "ok");
  cJSON_Delete(reply);
  cJSON_Delete(disp);
  kg_inband_doctor_destroy(&d);
}

KG_TEST_MAIN(KG_CASE(preflight_config_table), KG_CASE(preflight_wanted_table),
             KG_CASE(preflight_judge_table), KG_CASE(preflight_down_reason),
             KG_CASE(preflight_memory_note_table), KG_CASE(preflight_child_verdicts),
             KG_CASE(preflight_failed_device_is_checked_again),
             KG_CASE(preflight_child_backstop_kills_a_deaf_probe),
             KG_CASE(preflight_child_cancel_and_failed_start), KG_CASE(preflight_argv),
             KG_CASE(preflight_real_doctor_emulated), KG_CASE(inband_doctor_match_table),
             KG_CASE(inband_doctor_request_id), KG_CASE(inband_doctor_argv),
             KG_CASE(inband_doctor_render_table),
             KG_CASE(inband_doctor_backstop_and_cancel), KG_CASE(inband_doctor_real_doctor))
