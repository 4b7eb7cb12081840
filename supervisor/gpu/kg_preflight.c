/*  kg_preflight: the pre-flight device probe (see kg_preflight.h). */
#include "kg_preflight.h"

#include "kg_envp.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kg_error.h"
#include "kg_helper.h"
#include "kg_log.h"

#define S_OUT_CAP (256 * 1024)   /* the probe's JSON is a few KiB per device */

/*  The probe's exit codes (kguard doctor --preflight). */
#define S_EXIT_OK 0
#define S_EXIT_FAILING 1
#define S_EXIT_TIMEOUT 2

struct kg_preflight_t {
  kg_preflight_config_t cfg;
  kg_helper_t *helper;
  bool started;                 /*  a run is under way (no verdict yet)      */
  kg_preflight_verdict_t verdict;
  cJSON *report;
  int64_t started_ms, ms;
  bool last_failed;             /*  the last verdict was FAILING or TIMEOUT
                                    (kept across cancel and new starts)     */
};

/* ---- pure parts ---------------------------------------------------------- */

static const char *s_modes[] = {"never", "sticky", "first"};

int
kg_preflight_mode_parse(const char *text, kg_preflight_mode_t *mode)
{
  for (int i = 0; text && i < 3; i++)
    if (strcmp(text, s_modes[i]) == 0) {
      *mode = (kg_preflight_mode_t) i;
      return 0;
    }
  return KG_EUSAGE;
}

const char *
kg_preflight_mode_name(kg_preflight_mode_t mode)
{
  return mode >= KG_PREFLIGHT_NEVER && mode <= KG_PREFLIGHT_FIRST ? s_modes[mode] : "?";
}

const char *
kg_preflight_verdict_name(kg_preflight_verdict_t verdict)
{
  switch (verdict) {
  case KG_PREFLIGHT_OK: return "ok";
  case KG_PREFLIGHT_FAILING: return "failing";
  case KG_PREFLIGHT_TIMEOUT: return "timeout";
  case KG_PREFLIGHT_UNAVAILABLE: return "unavailable";
  case KG_PREFLIGHT_NONE: break;
  }
  return "none";
}

int
kg_preflight_config_parse(const char *mode, const char *timeout_s, kg_preflight_config_t *cfg,
                          char *err, size_t errlen)
{
  cfg->mode = KG_PREFLIGHT_STICKY;
  cfg->timeout_s = KG_PREFLIGHT_TIMEOUT_S_DEFAULT;
  cfg->backstop_ms = KG_PREFLIGHT_BACKSTOP_MS;
  kg_preflight_mode_t m = KG_PREFLIGHT_STICKY;
  if (mode && *mode && kg_preflight_mode_parse(mode, &m) != 0) {
    kg_errf(err, errlen, "KGUARD_PREFLIGHT must be never, sticky or first, not '%s'", mode);
    return KG_EUSAGE;
  }
  double t = KG_PREFLIGHT_TIMEOUT_S_DEFAULT;
  if (timeout_s && *timeout_s) {
    char *end = NULL;
    errno = 0;
    t = strtod(timeout_s, &end);
    /* the probe's own --timeout accepts (0, 3600] */
    if (errno || end == timeout_s || *end || !isfinite(t) || !(t > 0 && t <= 3600)) {
      kg_errf(err, errlen, "KGUARD_PREFLIGHT_TIMEOUT must be seconds in (0, 3600], not '%s'",
              timeout_s);
      return KG_EUSAGE;
    }
  }
  cfg->mode = m;
  cfg->timeout_s = t;
  return 0;
}

bool
kg_preflight_wanted(kg_preflight_mode_t mode, bool first_start, bool after_sticky)
{
  if (mode == KG_PREFLIGHT_NEVER)
    return false;
  return after_sticky || (first_start && mode == KG_PREFLIGHT_FIRST);
}

static const char *
s_str(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*  Set o[key] to the string value, replacing what was there. */
static void
s_set_str(cJSON *o, const char *key, const char *value)
{
  cJSON_DeleteItemFromObjectCaseSensitive(o, key);
  cJSON_AddStringToObject(o, key, value);
}

/*  The verdict from how the probe ended and what it said (j, its parsed
    report, or NULL), with kguard's own summary in summary when the probe's
    words do not fit the verdict or are missing ("" otherwise). */
static kg_preflight_verdict_t
s_verdict(int wait_status, bool backstop_killed, const cJSON *j, double timeout_s,
          char *summary, size_t size)
{
  bool exited = WIFEXITED(wait_status) && !backstop_killed;
  int code = exited ? WEXITSTATUS(wait_status) : -1;
  const char *status = s_str(j, "status");
  kg_preflight_verdict_t v;
  if (backstop_killed) {
    v = KG_PREFLIGHT_TIMEOUT;
    snprintf(summary, size, "the pre-flight probe did not answer within %.3g s and "
             "was killed: the driver or the device is hung (check `nvidia-smi -q` and the "
             "kernel log for Xid messages, or `rocm-smi`)", timeout_s);
  } else if (!exited) {
    int sig = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
    v = KG_PREFLIGHT_UNAVAILABLE;
    snprintf(summary, size, "the pre-flight probe (`kguard doctor --preflight`) was "
             "killed by signal %d (SIG%s): no verdict on the device", sig,
             sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
  } else if (code == S_EXIT_FAILING) {
    v = KG_PREFLIGHT_FAILING;   /* the exit code is the contract, JSON or not */
  } else if (code == S_EXIT_TIMEOUT) {
    v = KG_PREFLIGHT_TIMEOUT;
  } else if (code == S_EXIT_OK && j && status
             && (strcmp(status, "healthy") == 0 || strcmp(status, "no-gpu") == 0)) {
    v = KG_PREFLIGHT_OK;
  } else {
    v = KG_PREFLIGHT_UNAVAILABLE;
    if (code == S_EXIT_OK && j)
      snprintf(summary, size, "the pre-flight probe exited 0 but its report says "
               "status %s: no verdict on the device", status ? status : "(none)");
    else if (code == S_EXIT_OK)
      snprintf(summary, size, "the pre-flight probe exited 0 without its report: "
               "no verdict on the device");
    else
      snprintf(summary, size, "the pre-flight probe (`kguard doctor --preflight`) "
               "could not run (exit %d): no verdict on the device", code);
  }
  /* the probe's words when it gave them and they fit its verdict */
  if (v == KG_PREFLIGHT_FAILING && !(j && s_str(j, "summary")))
    snprintf(summary, size, "a device is failing: the pre-flight probe exited 1 "
             "without its report (ECC or hardware family: check `nvidia-smi -q` and the "
             "kernel log for Xid messages, or `rocm-smi`)");
  if (v == KG_PREFLIGHT_TIMEOUT && !backstop_killed && !(j && s_str(j, "summary")))
    snprintf(summary, size, "the device did not answer the pre-flight probe within "
             "%.3g s (check `nvidia-smi -q` and the kernel log for Xid messages, or "
             "`rocm-smi`)", timeout_s);
  return v;
}

/*  How the probe ended, in the report: exit (or null) and signal, and
    whether kguard's backstop killed it. */
static void
s_set_end(cJSON *r, int wait_status, bool backstop_killed)
{
  bool exited = WIFEXITED(wait_status) && !backstop_killed;
  cJSON_DeleteItemFromObjectCaseSensitive(r, "exit");
  cJSON_DeleteItemFromObjectCaseSensitive(r, "signal");
  if (exited)
    cJSON_AddNumberToObject(r, "exit", WEXITSTATUS(wait_status));
  else {
    cJSON_AddNullToObject(r, "exit");
    if (WIFSIGNALED(wait_status))
      cJSON_AddNumberToObject(r, "signal", WTERMSIG(wait_status));
  }
  cJSON_DeleteItemFromObjectCaseSensitive(r, "killed_by_kguard");
  cJSON_AddBoolToObject(r, "killed_by_kguard", backstop_killed);
}

kg_preflight_verdict_t
kg_preflight_judge(int wait_status, bool backstop_killed, const char *out, double timeout_s,
                   cJSON **report_p)
{
  cJSON *j = out && *out ? cJSON_Parse(out) : NULL;
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    j = NULL;
  }
  char summary[512] = "";
  kg_preflight_verdict_t v = s_verdict(wait_status, backstop_killed, j, timeout_s, summary,
                                       sizeof summary);
  cJSON *r = j ? j : cJSON_CreateObject();
  if (!r) {
    *report_p = NULL;
    return v;
  }
  if (!j && out && *out) {
    /* what it printed, bounded by the helper's cap: evidence, not parsed */
    cJSON_AddStringToObject(r, "output", out);
  }
  /* a copy: s_set_str frees the item status points into */
  char st[16];
  snprintf(st, sizeof st, "%s", v == KG_PREFLIGHT_FAILING  ? "failing"
                                : v == KG_PREFLIGHT_TIMEOUT ? "timeout"
                                : v == KG_PREFLIGHT_OK      ? s_str(r, "status")
                                                            : "error");
  s_set_str(r, "status", st);
  if (*summary)
    s_set_str(r, "summary", summary);
  s_set_str(r, "verdict", kg_preflight_verdict_name(v));
  s_set_end(r, wait_status, backstop_killed);
  *report_p = r;
  return v;
}

char *
kg_preflight_down_reason(kg_preflight_verdict_t verdict, const cJSON *report)
{
  if (verdict != KG_PREFLIGHT_FAILING && verdict != KG_PREFLIGHT_TIMEOUT)
    return NULL;
  const char *summary = s_str(report, "summary");
  const char *head = verdict == KG_PREFLIGHT_FAILING
    ? "the device is failing: the pre-flight probe after the restart hit an error on a "
      "trivial kernel, so a fresh kernel would fail again"
    : "the device is failing: it did not answer the pre-flight probe after the restart";
  const char *tail = "Check `nvidia-smi -q` (ECC errors) and the kernel log for Xid messages, "
                     "or `rocm-smi` (RAS/ECC counters), before `%kguard restart`.";
  char *out = NULL;
  if (asprintf(&out, "%s (%s). %s", head, summary && *summary ? summary : "no summary", tail) < 0)
    return NULL;
  return out;
}

static void
s_bytes(double b, char *buf, size_t len)
{
  snprintf(buf, len, "%.1f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

bool
kg_preflight_memory_note(const cJSON *report, long dead_pid, char *buf, size_t len)
{
  if (!len)
    return false;
  buf[0] = '\0';
  size_t n = 0;
  static const char *backends[] = {"cuda", "hip"};
  for (int b = 0; b < 2; b++) {
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(report, backends[b]), "devices");
    const cJSON *d;
    cJSON_ArrayForEach(d, devs)
    {
      const cJSON *total = cJSON_GetObjectItemCaseSensitive(d, "total_bytes");
      const cJSON *used = cJSON_GetObjectItemCaseSensitive(d, "used_bytes");
      const cJSON *index = cJSON_GetObjectItemCaseSensitive(d, "index");
      bool held = false;
      const cJSON *p;
      cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(d, "processes"))
      {
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(p, "pid");
        if (dead_pid > 0 && cJSON_IsNumber(pid) && (long) pid->valuedouble == dead_pid)
          held = true;
      }
      bool full = cJSON_IsNumber(total) && cJSON_IsNumber(used) && total->valuedouble > 0
                  && used->valuedouble * 100.0 >= total->valuedouble * KG_PREFLIGHT_FULL_PERCENT;
      if (!held && !full)
        continue;
      char u[32] = "?", t[32] = "?";
      if (cJSON_IsNumber(used))
        s_bytes(used->valuedouble, u, sizeof u);
      if (cJSON_IsNumber(total))
        s_bytes(total->valuedouble, t, sizeof t);
      const char *name = s_str(d, "name");
      int w = snprintf(buf + n, len - n, "%s%s:%d (%s): %s of %s still in use", n ? "; " : "",
                       backends[b], cJSON_IsNumber(index) ? index->valueint : -1,
                       name ? name : "unknown device", u, t);
      if (w > 0 && (size_t) w < len - n && held)
        w += snprintf(buf + n + (size_t) w, len - n - (size_t) w,
                      ", held by pid %ld (the previous kernel: its memory is not released yet)",
                      dead_pid);
      else if (w > 0 && (size_t) w < len - n)
        w += snprintf(buf + n + (size_t) w, len - n - (size_t) w,
                      " (another process, or the previous kernel's memory not released yet)");
      if (w < 0 || (size_t) w >= len - n) {
        buf[len - 1] = '\0';
        return true;
      }
      n += (size_t) w;
    }
  }
  return n > 0;
}

/* ---- the helper child ---------------------------------------------------- */

/*  The helper child's bound: the probe's own timeout, then the backstop. */
static kg_helper_t *
s_helper(const kg_preflight_config_t *cfg)
{
  return kg_helper_new("pre-flight probe", S_OUT_CAP,
                       (int64_t) (cfg->timeout_s * 1000) + cfg->backstop_ms);
}

kg_preflight_t *
kg_preflight_new(const kg_preflight_config_t *cfg)
{
  kg_preflight_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->cfg = *cfg;
  if (!(self->cfg.timeout_s > 0))
    self->cfg.timeout_s = KG_PREFLIGHT_TIMEOUT_S_DEFAULT;
  if (self->cfg.backstop_ms <= 0)
    self->cfg.backstop_ms = KG_PREFLIGHT_BACKSTOP_MS;
  self->ms = -1;
  self->helper = s_helper(&self->cfg);
  if (!self->helper) {
    free(self);
    return NULL;
  }
  return self;
}

void
kg_preflight_destroy(kg_preflight_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_preflight_t *self = *self_p;
  kg_helper_destroy(&self->helper);
  cJSON_Delete(self->report);
  free(self);
  *self_p = NULL;
}

bool
kg_preflight_should_start(const kg_preflight_t *self, bool first_start, bool after_sticky)
{
  assert(self);
  if (self->cfg.mode == KG_PREFLIGHT_NEVER)
    return false;
  return self->last_failed || kg_preflight_wanted(self->cfg.mode, first_start, after_sticky);
}

const kg_preflight_config_t *
kg_preflight_config(const kg_preflight_t *self)
{
  assert(self);
  return &self->cfg;
}

char **
kg_preflight_argv(const char *exe, double timeout_s)
{
  char t[32];
  snprintf(t, sizeof t, "%.6g", timeout_s > 0 ? timeout_s : KG_PREFLIGHT_TIMEOUT_S_DEFAULT);
  const char *words[] = {exe, "doctor", "--preflight", "--json", "--timeout", t};
  return kg_envp_copy(words, sizeof words / sizeof words[0]);
}

void
kg_preflight_argv_free(char ***argv_p)
{
  kg_envp_free(argv_p);
}

static void
s_forget(kg_preflight_t *self)
{
  assert(self);
  cJSON_Delete(self->report);
  self->report = NULL;
  self->verdict = KG_PREFLIGHT_NONE;
  self->started = false;
  self->ms = -1;
}

/*  A probe that never ran: UNAVAILABLE at once, with why. */
static void
s_unavailable(kg_preflight_t *self, int rc)
{
  assert(self);
  self->verdict = KG_PREFLIGHT_UNAVAILABLE;
  self->report = cJSON_CreateObject();
  char why[256];
  snprintf(why, sizeof why, "the pre-flight probe could not be started (%s): no verdict on "
           "the device", kg_strerror(rc));
  cJSON_AddStringToObject(self->report, "status", "error");
  cJSON_AddStringToObject(self->report, "summary", why);
  cJSON_AddStringToObject(self->report, "verdict", "unavailable");
  cJSON_AddNullToObject(self->report, "exit");
  self->ms = 0;
}

int
kg_preflight_start(kg_preflight_t *self, const char *exe, char *const *envp, int64_t now_ms)
{
  assert(self);
  s_forget(self);
  char **argv = kg_preflight_argv(exe, self->cfg.timeout_s);
  int rc = argv ? kg_helper_start(self->helper, argv, envp, now_ms) : KG_ENOMEM;
  kg_preflight_argv_free(&argv);
  if (rc) {
    s_unavailable(self, rc);
    return rc;
  }
  self->started = true;
  self->started_ms = now_ms;
  return 0;
}

void
kg_preflight_cancel(kg_preflight_t *self)
{
  assert(self);
  /* a fresh helper: destroying the old one kills and reaps its child */
  kg_helper_t *fresh = s_helper(&self->cfg);
  if (fresh) {
    kg_helper_destroy(&self->helper);
    self->helper = fresh;
  }
  s_forget(self);
}

bool
kg_preflight_running(const kg_preflight_t *self)
{
  assert(self);
  return self->started && kg_helper_running(self->helper);
}

bool
kg_preflight_blocks_ready(const kg_preflight_t *self)
{
  assert(self);
  return self->started && self->verdict == KG_PREFLIGHT_NONE;
}

int
kg_preflight_fd(const kg_preflight_t *self, int which)
{
  assert(self);
  return self->started ? kg_helper_fd(self->helper, which) : -1;
}

bool
kg_preflight_pump(kg_preflight_t *self, int64_t now_ms)
{
  assert(self);
  if (!self->started || !kg_helper_pump(self->helper, now_ms))
    return false;
  self->started = false;
  self->ms = now_ms - self->started_ms;
  self->verdict = kg_preflight_judge(kg_helper_status(self->helper),
                                     kg_helper_stalled(self->helper),
                                     kg_helper_out(self->helper), self->cfg.timeout_s,
                                     &self->report);
  if (!self->report)
    self->verdict = KG_PREFLIGHT_UNAVAILABLE;   /* out of memory: no verdict */
  else
    cJSON_AddNumberToObject(self->report, "kguard_ms", (double) self->ms);
  if (self->verdict == KG_PREFLIGHT_FAILING || self->verdict == KG_PREFLIGHT_TIMEOUT)
    self->last_failed = true;
  else if (self->verdict == KG_PREFLIGHT_OK)
    self->last_failed = false;
  kg_info("pre-flight probe: %s in %lld ms: %s", kg_preflight_verdict_name(self->verdict),
          (long long) self->ms,
          self->report && s_str(self->report, "summary") ? s_str(self->report, "summary") : "");
  return true;
}

int64_t
kg_preflight_deadline(const kg_preflight_t *self)
{
  assert(self);
  return self->started ? kg_helper_deadline(self->helper) : 0;
}

bool
kg_preflight_timers(kg_preflight_t *self, int64_t now_ms)
{
  assert(self);
  return self->started && kg_helper_timers(self->helper, now_ms);
}

kg_preflight_verdict_t
kg_preflight_verdict(const kg_preflight_t *self)
{
  assert(self);
  return self->verdict;
}

const cJSON *
kg_preflight_report(const kg_preflight_t *self)
{
  assert(self);
  return self->report;
}

int64_t
kg_preflight_ms(const kg_preflight_t *self)
{
  assert(self);
  return self->ms;
}

int
kg_preflight_record(const kg_preflight_t *self, cJSON *record)
{
  assert(self);
  if (!self->report || self->verdict == KG_PREFLIGHT_NONE)
    return KG_ENOTFOUND;
  cJSON *copy = cJSON_Duplicate(self->report, 1);
  if (!copy)
    return KG_ENOMEM;
  cJSON_DeleteItemFromObjectCaseSensitive(record, "preflight");
  cJSON_AddItemToObject(record, "preflight", copy);
  return 0;
}
