/*  kg_inband_doctor: `%kguard doctor` in a notebook (see kg_inband_doctor.h). */
#include "kg_inband_doctor.h"

#include "kg_envp.h"

#include <assert.h>
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kg_error.h"
#include "kg_helper.h"
#include "kg_log.h"

#define S_OUT_CAP (1024 * 1024)   /* a report is a few KiB; many kernelspecs, more */

struct kg_inband_doctor_t {
  kg_helper_t *helper;
  int64_t bound_ms;
  bool started;                 /*  started and not yet done                 */
  bool done;
  cJSON *display;               /*  the answer, once done                    */
  bool ok;
  char *why;                    /*  the failure line when !ok                */
  char *request;                /*  the msg_id of the cell it answers (owned;
                                    any length), or NULL                     */
};

/* ---- pure parts ---------------------------------------------------------- */

/*  Skip blanks; the next word's length. */
static size_t
s_word(const char **p)
{
  while (isspace((unsigned char) **p))
    (*p)++;
  size_t n = 0;
  while ((*p)[n] && !isspace((unsigned char) (*p)[n]))
    n++;
  return n;
}

bool
kg_inband_doctor_match(const char *line)
{
  if (!line)
    return false;
  const char *p = line;
  size_t n = s_word(&p);
  if (n != 7 || strncmp(p, "%kguard", 7) != 0)
    return false;
  p += n;
  n = s_word(&p);
  if (n != 6 || strncmp(p, "doctor", 6) != 0)
    return false;
  p += n;
  return s_word(&p) == 0;
}

char **
kg_inband_doctor_argv(const char *exe, const char *python)
{
  char t[16];
  snprintf(t, sizeof t, "%d", KG_INBAND_DOCTOR_TOOL_S);
  const char *words[] = {exe, "doctor", "--format=markdown", "--timeout", t, "--python", python};
  return kg_envp_copy(words, python && *python ? 7 : 5);
}

void
kg_inband_doctor_argv_free(char ***argv_p)
{
  kg_envp_free(argv_p);
}

/*  The one line saying why there is no report. */
static void
s_why(int wait_status, bool backstop_killed, int64_t bound_ms, char *buf, size_t len)
{
  if (backstop_killed)
    snprintf(buf, len, "kguard doctor did not answer within %.3g s and was killed",
             (double) bound_ms / 1000.0);
  else if (WIFSIGNALED(wait_status))
    snprintf(buf, len, "kguard doctor was killed by signal %d (SIG%s)", WTERMSIG(wait_status),
             sigabbrev_np(WTERMSIG(wait_status)) ? sigabbrev_np(WTERMSIG(wait_status)) : "?");
  else if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 100)
    snprintf(buf, len, "kguard doctor refused its arguments (exit 100: usage error)");
  else if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 111)
    snprintf(buf, len, "kguard doctor failed (exit 111: system failure; see kguard's log)");
  else if (WIFEXITED(wait_status))
    snprintf(buf, len, "kguard doctor ended with exit %d without a report",
             WEXITSTATUS(wait_status));
  else
    snprintf(buf, len, "kguard doctor ended without a report");
}

/*  The display_data content: the report when ok, else the line why. */
static cJSON *
s_content(bool ok, const char *report, const char *why, bool exited, int code)
{
  cJSON *c = cJSON_CreateObject();
  if (!c)
    return NULL;
  cJSON *data = cJSON_AddObjectToObject(c, "data");
  if (ok) {
    cJSON_AddStringToObject(data, "text/markdown", report);
    cJSON_AddStringToObject(data, "text/plain", report);
  } else {
    char md[320];
    snprintf(md, sizeof md, "**kguard doctor**: %s", why);
    cJSON_AddStringToObject(data, "text/markdown", md);
    cJSON_AddStringToObject(data, "text/plain", why);
  }
  cJSON *k = cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "metadata"), "kguard");
  cJSON_AddStringToObject(k, "event", "doctor");
  if (exited)
    cJSON_AddNumberToObject(k, "exit", code);
  else
    cJSON_AddNullToObject(k, "exit");
  cJSON_AddBoolToObject(k, "ok", ok);
  if (!ok)
    cJSON_AddStringToObject(k, "error", why);
  cJSON_AddItemToObject(c, "transient", cJSON_CreateObject());
  if (!data || !k) {
    cJSON_Delete(c);
    return NULL;
  }
  return c;
}

cJSON *
kg_inband_doctor_render(int wait_status, bool backstop_killed, const char *out, int64_t bound_ms,
                        bool *ok_p)
{
  bool exited = WIFEXITED(wait_status) && !backstop_killed;
  int code = exited ? WEXITSTATUS(wait_status) : -1;
  /* 0: no problem, 1: problems listed; either way the report is the answer */
  bool ok = exited && (code == 0 || code == 1) && out && *out;
  char why[256] = "";
  if (!ok)
    s_why(wait_status, backstop_killed, bound_ms, why, sizeof why);
  if (ok_p)
    *ok_p = ok;
  return s_content(ok, out, why, exited, code);
}

cJSON *
kg_inband_doctor_reply_content(bool ok, const char *why, int execution_count)
{
  cJSON *c = cJSON_CreateObject();
  if (!c)
    return NULL;
  if (ok) {
    cJSON_AddStringToObject(c, "status", "ok");
    cJSON_AddItemToObject(c, "user_expressions", cJSON_CreateObject());
    cJSON_AddItemToObject(c, "payload", cJSON_CreateArray());
  } else {
    const char *w = why && *why ? why : "kguard doctor failed";
    cJSON_AddStringToObject(c, "status", "error");
    cJSON_AddStringToObject(c, "ename", "KguardDoctorFailed");
    cJSON_AddStringToObject(c, "evalue", w);
    cJSON *tb = cJSON_AddArrayToObject(c, "traceback");
    cJSON_AddItemToArray(tb, cJSON_CreateString(w));
  }
  cJSON_AddNumberToObject(c, "execution_count", execution_count);
  return c;
}

/* ---- the helper child ---------------------------------------------------- */

kg_inband_doctor_t *
kg_inband_doctor_new(int64_t bound_ms)
{
  kg_inband_doctor_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->bound_ms = bound_ms > 0 ? bound_ms : KG_INBAND_DOCTOR_MS;
  /* the doctor writes its report at the end: the stall deadline is its bound */
  self->helper = kg_helper_new("kguard doctor (%kguard doctor)", S_OUT_CAP, self->bound_ms);
  if (!self->helper) {
    free(self);
    return NULL;
  }
  return self;
}

static void
s_forget(kg_inband_doctor_t *self)
{
  assert(self);
  cJSON_Delete(self->display);
  self->display = NULL;
  free(self->why);
  self->why = NULL;
  self->started = self->done = self->ok = false;
}

void
kg_inband_doctor_destroy(kg_inband_doctor_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_inband_doctor_t *self = *self_p;
  kg_helper_destroy(&self->helper);
  s_forget(self);
  free(self->request);
  free(self);
  *self_p = NULL;
}

/*  Known at once: the doctor never ran. */
static void
s_failed_start(kg_inband_doctor_t *self, int rc)
{
  assert(self);
  char why[256];
  snprintf(why, sizeof why, "kguard doctor could not be started (%s)", kg_strerror(rc));
  self->why = strdup(why);
  self->display = s_content(false, NULL, why, false, -1);
  self->done = true;
}

int
kg_inband_doctor_start(kg_inband_doctor_t *self, const char *exe, const char *python,
                       char *const *envp, int64_t now_ms)
{
  assert(self);
  s_forget(self);
  char **argv = kg_inband_doctor_argv(exe, python);
  int rc = argv ? kg_helper_start(self->helper, argv, envp, now_ms) : KG_ENOMEM;
  kg_inband_doctor_argv_free(&argv);
  if (rc) {
    s_failed_start(self, rc);
    return rc;
  }
  self->started = true;
  return 0;
}

int
kg_inband_doctor_set_request(kg_inband_doctor_t *self, const char *msg_id)
{
  assert(self);
  char *copy = msg_id ? strdup(msg_id) : NULL;
  if (msg_id && !copy)
    return KG_ENOMEM;
  free(self->request);
  self->request = copy;
  return 0;
}

char *
kg_inband_doctor_take_request(kg_inband_doctor_t *self)
{
  assert(self);
  char *id = self->request;
  self->request = NULL;
  return id;
}

bool
kg_inband_doctor_running(const kg_inband_doctor_t *self)
{
  assert(self);
  return self->started && kg_helper_running(self->helper);
}

bool
kg_inband_doctor_done(const kg_inband_doctor_t *self)
{
  assert(self);
  return self->done;
}

int
kg_inband_doctor_fd(const kg_inband_doctor_t *self, int which)
{
  assert(self);
  return self->started ? kg_helper_fd(self->helper, which) : -1;
}

bool
kg_inband_doctor_pump(kg_inband_doctor_t *self, int64_t now_ms)
{
  assert(self);
  if (!self->started || !kg_helper_pump(self->helper, now_ms))
    return false;
  self->started = false;
  self->done = true;
  int st = kg_helper_status(self->helper);
  bool killed = kg_helper_stalled(self->helper);
  self->display = kg_inband_doctor_render(st, killed, kg_helper_out(self->helper),
                                          self->bound_ms, &self->ok);
  if (!self->ok) {
    char why[256];
    s_why(st, killed, self->bound_ms, why, sizeof why);
    self->why = strdup(why);
    kg_warning("%%kguard doctor: %s", why);
  }
  return true;
}

int64_t
kg_inband_doctor_deadline(const kg_inband_doctor_t *self)
{
  assert(self);
  return self->started ? kg_helper_deadline(self->helper) : 0;
}

bool
kg_inband_doctor_timers(kg_inband_doctor_t *self, int64_t now_ms)
{
  assert(self);
  return self->started && kg_helper_timers(self->helper, now_ms);
}

void
kg_inband_doctor_cancel(kg_inband_doctor_t *self)
{
  assert(self);
  kg_helper_t *fresh = kg_helper_new("kguard doctor (%kguard doctor)", S_OUT_CAP,
                                     self->bound_ms);
  if (fresh) {
    kg_helper_destroy(&self->helper);   /* kills and reaps the running doctor */
    self->helper = fresh;
  }
  s_forget(self);
}

cJSON *
kg_inband_doctor_display(const kg_inband_doctor_t *self)
{
  assert(self);
  return self->done && self->display ? cJSON_Duplicate(self->display, 1) : NULL;
}

cJSON *
kg_inband_doctor_reply(const kg_inband_doctor_t *self, int execution_count)
{
  assert(self);
  if (!self->done)
    return NULL;
  return kg_inband_doctor_reply_content(self->ok, self->why, execution_count);
}
