/*  kg_diagnosis: per-kernel fault state built from every evidence source. */
#include "kg_diagnosis.h"
#include "kg_diag_report.h"

#include <assert.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_errrecord.h"
#include "kg_errtext.h"
#include "kg_linebuf.h"
#include "kg_log.h"
#include "kg_signs.h"
#include "kg_streamset.h"
#include "kg_trail.h"

#define MAX_ADVISED   16     /* families advised for one request              */
#define MAX_TEXT      65536  /* cap on one error text / following entry       */

/*  The family a cuBLAS/cuDNN status error belongs to until a sticky fault
    claims it. Named here because the rule is about evidence order, not text. */
#define BLAS_FAMILY "cublas-cudnn"

struct kg_diagnosis_t {
  const kg_classifier_t *rules;
  kg_linebuf_t *raw_out, *raw_err;
  kg_streamset_t *streams;    /* iopub stream lines per (parent, name)        */
  /* context of the current feed, for the line callback */
  kg_source_t cur_source;
  const char *cur_parent;
  kg_diag_event_t cur_event;
  /* the last line of raw stdout, raw stderr, the streams was a traceback's
     frame line: the next is quoted source code (kg_errtext_is_frame) */
  bool after_frame[3];

  bool sticky;
  bool suspect;              /* a sticky family seen in text that proves nothing */
  kg_match_t suspect_match;
  int64_t suspect_ms;
  char *suspect_parent;
  bool has_match;
  kg_match_t match;          /* established family (sticky, else last advice) */
  int64_t fault_ms;          /* T; -1 none                                    */
  char *parent;              /* failing request                               */
  char *last_parent;         /* last parent seen on any evidence              */
  kg_backend_t backend;      /* from text                                     */
  kg_backend_t backend_hint; /* from set_backend                              */
  char *assertion;
  int64_t last_step;
  kg_signs_t *signs;         /* earlier signs that may move T back            */
  char *advice_parent;
  const kg_family_t *advised[MAX_ADVISED];
  size_t nadvised;
  bool advice_parent_set;
  cJSON *first_error;
  kg_trail_t *trail;         /* what followed it, and the raw stderr tail     */
  bool exited;
  int exit_code, signo;
};

static char *
s_dup(const char *s)
{
  return s ? strdup(s) : NULL;
}

static bool
s_same(const char *a, const char *b)
{
  return a && b && strcmp(a, b) == 0;
}

kg_diagnosis_t *
kg_diagnosis_new(const kg_classifier_t *rules)
{
  kg_diagnosis_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->rules = rules;
  self->raw_out = kg_linebuf_new(KG_DIAG_MAX_LINE);
  self->raw_err = kg_linebuf_new(KG_DIAG_MAX_LINE);
  self->streams = kg_streamset_new(KG_DIAG_MAX_LINE);
  self->trail = kg_trail_new();
  self->signs = kg_signs_new();
  if (!self->raw_out || !self->raw_err || !self->streams || !self->trail || !self->signs) {
    kg_diagnosis_destroy(&self);
    return NULL;
  }
  self->fault_ms = -1;
  self->last_step = -1;
  return self;
}

static void
s_clear(kg_diagnosis_t *self)
{
  assert(self);
  if (self->streams)
    kg_streamset_clear(self->streams);
  if (self->trail)
    kg_trail_clear(self->trail);
  if (self->signs)
    kg_signs_clear(self->signs);
  free(self->parent);
  free(self->last_parent);
  free(self->assertion);
  free(self->advice_parent);
  free(self->suspect_parent);
  self->suspect_parent = NULL;
  self->suspect = false;
  self->parent = self->last_parent = self->assertion = self->advice_parent = NULL;
  self->advice_parent_set = false;
  self->nadvised = 0;
  cJSON_Delete(self->first_error);
  self->first_error = NULL;
  self->sticky = self->has_match = false;
  memset(&self->match, 0, sizeof self->match);
  self->fault_ms = -1;
  self->last_step = -1;
  self->backend = KG_BACKEND_UNKNOWN;
  self->exited = false;
  self->exit_code = self->signo = 0;
  memset(self->after_frame, 0, sizeof self->after_frame);
}

void
kg_diagnosis_destroy(kg_diagnosis_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_diagnosis_t *self = *self_p;
  s_clear(self);
  kg_linebuf_destroy(&self->raw_out);
  kg_linebuf_destroy(&self->raw_err);
  kg_streamset_destroy(&self->streams);
  kg_trail_destroy(&self->trail);
  kg_signs_destroy(&self->signs);
  free(self);
  *self_p = NULL;
}

void
kg_diagnosis_reset(kg_diagnosis_t *self)
{
  assert(self);
  kg_backend_t hint = self->backend_hint;
  kg_linebuf_flush(self->raw_out, NULL, NULL);
  kg_linebuf_flush(self->raw_err, NULL, NULL);
  s_clear(self);
  self->backend_hint = hint;
}

/* ------------------------------------------------------------------------ */
/*  Evidence bookkeeping                                                     */

static void
s_set_str(char **dst, const char *src)
{
  char *copy = s_dup(src);
  free(*dst);
  *dst = copy;
}

/*  One GPU sign: a match from any source at time t. Returns the event. */
static kg_diag_event_t
s_sign(kg_diagnosis_t *self, const kg_match_t *m, const char *parent, int64_t t)
{
  assert(self);
  if (m->backend != KG_BACKEND_UNKNOWN && self->backend == KG_BACKEND_UNKNOWN)
    self->backend = m->backend;
  if (parent)
    s_set_str(&self->last_parent, parent);
  if (kg_errtext_is_assertion(m->line) && m->family->sticky && !self->assertion)
    self->assertion = strdup(m->line);

  if (self->sticky) {
    /* Already established: everything after belongs to that fault (a cuBLAS
       error after an assert belongs to the assert). */
    if (t < self->fault_ms)
      self->fault_ms = t;
    return KG_DIAG_NONE;
  }

  kg_signs_prune(self->signs, parent, t);
  if (!kg_diagnosis_source_is_proof(m->source)) {
    /* Printed or raw text: a suspicion at most, never advice. Kept as an
       earlier sign in case the fault is confirmed. */
    kg_signs_add(self->signs, parent, t);
    if (!m->family->sticky || self->suspect)
      return KG_DIAG_NONE;
    self->suspect = true;
    self->suspect_match = *m;
    self->suspect_ms = t;
    s_set_str(&self->suspect_parent, parent ? parent : self->last_parent);
    return KG_DIAG_SUSPECT;
  }
  if (m->family->sticky) {
    self->sticky = true;
    self->has_match = true;
    self->match = *m;
    if (!self->parent)
      s_set_str(&self->parent, parent ? parent : self->last_parent);
    self->fault_ms = t;
    /* T is the earliest sign: a cuBLAS error or an OOM of the same request
       that was reported before the assert is the fault surfacing early. */
    self->fault_ms = kg_signs_earliest(self->signs, self->parent, self->fault_ms);
    if (self->suspect && self->suspect_ms < self->fault_ms)
      self->fault_ms = self->suspect_ms;   /* T: the first evidence */
    /* A first error recorded for another request is not this fault's. */
    if (self->first_error && self->parent) {
      const cJSON *fp = cJSON_GetObjectItemCaseSensitive(self->first_error, "parent_msg_id");
      if (cJSON_IsString(fp) && strcmp(fp->valuestring, self->parent) != 0) {
        cJSON_Delete(self->first_error);
        self->first_error = NULL;
      }
    }
    return KG_DIAG_STICKY;
  }

  kg_signs_add(self->signs, parent, t);
  if (!self->advice_parent_set || !(parent ? s_same(parent, self->advice_parent)
                                            : self->advice_parent == NULL)) {
    s_set_str(&self->advice_parent, parent);
    self->advice_parent_set = true;
    self->nadvised = 0;
  }
  for (size_t i = 0; i < self->nadvised; i++)
    if (self->advised[i] == m->family)
      return KG_DIAG_NONE;
  if (self->nadvised < MAX_ADVISED)
    self->advised[self->nadvised++] = m->family;
  self->has_match = true;
  self->match = *m;
  return KG_DIAG_ADVICE;
}

static kg_diag_event_t
s_max(kg_diag_event_t a, kg_diag_event_t b)
{
  return a > b ? a : b;
}

#define S_STEP_MARKER "kguard: completed step "

static void
s_step_marker(kg_diagnosis_t *self, const char *line)
{
  assert(self);
  const char *p = strstr(line, S_STEP_MARKER);
  if (!p)
    return;
  p += strlen(S_STEP_MARKER);
  char *end;
  long long n = strtoll(p, &end, 10);
  if (end != p && n >= 0)
    self->last_step = n;
}

/*  Which after_frame a source's lines keep, or -1. */
static int
s_frame_slot(kg_source_t source)
{
  return source == KG_SRC_RAW_STDOUT ? 0 : source == KG_SRC_RAW_STDERR ? 1
         : source == KG_SRC_STREAM ? 2 : -1;
}

/*  One complete line from a stream or raw pipe. */
static kg_diag_event_t
s_line(kg_diagnosis_t *self, kg_source_t source, const char *parent, const char *line,
       bool truncated, int64_t t)
{
  assert(self);
  if (source == KG_SRC_RAW_STDERR)
    kg_trail_tail_add(self->trail, line);
  s_step_marker(self, line);
  /* Source code a traceback quotes is the program's text, not an error it
     met: the error's own line follows, and that one is the evidence (and
     the line a notice quotes). */
  int slot = s_frame_slot(source);
  if (slot >= 0) {
    bool code = kg_errtext_is_quoted_code(self->after_frame[slot], line);
    self->after_frame[slot] = kg_errtext_is_frame(line, strlen(line));
    if (code)
      return KG_DIAG_NONE;
  }
  kg_match_t m;
  if (!kg_classifier_match(self->rules, source, line, strlen(line), &m)) {
    if (truncated)
      kg_debug("diagnosis: a %s line longer than %d bytes was cut", kg_source_name(source),
               KG_DIAG_MAX_LINE);
    return KG_DIAG_NONE;
  }
  bool was_sticky = self->sticky;
  kg_diag_event_t ev = s_sign(self, &m, parent, t);
  if (was_sticky) /* the sign that established the fault is "matched" */
    kg_trail_follow_line(self->trail, source, line, t);
  return ev;
}

static void
s_on_line(void *arg, const char *line, size_t len, bool truncated, int64_t first_ms)
{
  kg_diagnosis_t *self = arg;
  (void) len;
  kg_diag_event_t ev = s_line(self, self->cur_source, self->cur_parent, line, truncated, first_ms);
  self->cur_event = s_max(self->cur_event, ev);
}

/*  A stream buffer about to be reused or flushed at the end: classify its
    unterminated tail as a line of its request. */
static void
s_flush_stream(void *arg, const char *parent, kg_linebuf_t *lb)
{
  kg_diagnosis_t *self = arg;
  self->cur_source = KG_SRC_STREAM;
  self->cur_parent = parent;
  kg_linebuf_flush(lb, s_on_line, self);
}

/*  Whole lines (text, len bytes; decoded, or the raw JSON of lines with
    short escapes only when json) that hold neither a step marker nor
    anything a rule may match: feeding them changes nothing. The marker is
    plain text, so it stands in raw JSON as it is. */
static bool
s_lines_skippable(const kg_diagnosis_t *self, const char *text, size_t len, bool json)
{
  assert(self);
  bool may_match = json ? kg_classifier_may_match_json(self->rules, text, len)
                        : kg_classifier_may_match(self->rules, text, len);
  return !may_match && !memmem(text, len, S_STEP_MARKER, strlen(S_STEP_MARKER));
}

kg_diag_event_t
kg_diagnosis_feed(kg_diagnosis_t *self, kg_source_t source, const char *stream_name,
                  const char *parent_msg_id, const char *text, size_t len, int64_t now_ms)
{
  assert(self);
  if (!text || len == 0)
    return KG_DIAG_NONE;
  self->cur_event = KG_DIAG_NONE;
  kg_linebuf_t *lb = NULL;
  if (source == KG_SRC_RAW_STDOUT)
    lb = self->raw_out;
  else if (source == KG_SRC_RAW_STDERR)
    lb = self->raw_err;
  else if (source == KG_SRC_STREAM) {
    lb = kg_streamset_get(self->streams, stream_name, parent_msg_id, s_flush_stream, self);
  }
  if (!lb)
    return self->cur_event;
  self->cur_source = source;
  self->cur_parent = source == KG_SRC_STREAM ? parent_msg_id : NULL;
  /* The whole lines between the first and the last newline matter only if
     they hold a step marker or something a rule may match: otherwise they
     are skipped, which leaves the line buffer as feeding them would (at a
     line start). Most output is skipped this way in one pass instead of
     going line by line through every rule. Not for raw stderr, whose last
     lines are kept for the incident record. */
  const char *first = source != KG_SRC_RAW_STDERR ? memchr(text, '\n', len) : NULL;
  const char *last = first ? memrchr(text, '\n', len) : NULL;
  if (last > first) {
    size_t a = (size_t) (first + 1 - text), b = (size_t) (last + 1 - text);
    if (s_lines_skippable(self, text + a, b - a, false)) {
      kg_linebuf_feed(lb, text, a, now_ms, s_on_line, self);
      /* The last skipped line may be a traceback's frame line. */
      const char *end = text + b - 1;
      const char *nl = memrchr(text + a, '\n', (size_t) (end - (text + a)));
      const char *start = nl ? nl + 1 : text + a;
      int slot = s_frame_slot(source);
      if (slot >= 0)
        self->after_frame[slot] = kg_errtext_is_frame(start, (size_t) (end - start));
      kg_linebuf_feed(lb, text + b, len - b, now_ms, s_on_line, self);
      return self->cur_event;
    }
  }
  kg_linebuf_feed(lb, text, len, now_ms, s_on_line, self);
  return self->cur_event;
}

bool
kg_diagnosis_may_skip_json(const kg_diagnosis_t *self, const char *raw, size_t len)
{
  assert(self);
  return s_lines_skippable(self, raw, len, true);
}

/* ------------------------------------------------------------------------ */
/*  Errors                                                                   */

static const char *
s_str(const cJSON *obj, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

kg_diag_event_t
kg_diagnosis_feed_error(kg_diagnosis_t *self, kg_source_t source, const cJSON *content,
                        const char *parent_msg_id, int64_t now_ms)
{
  assert(self);
  if (!cJSON_IsObject(content))
    return KG_DIAG_NONE;
  if (source == KG_SRC_EXECUTE_REPLY && strcmp(s_str(content, "status"), "error") != 0)
    return KG_DIAG_NONE;
  const char *ename = s_str(content, "ename"), *evalue = s_str(content, "evalue");
  const cJSON *tb = cJSON_GetObjectItemCaseSensitive(content, "traceback");

  /* The execute_reply repeats the iopub error of the same request. */
  if (self->first_error && source == KG_SRC_EXECUTE_REPLY) {
    const cJSON *fe = self->first_error;
    if (strcmp(s_str(fe, "source"), "iopub_error") == 0 &&
        strcmp(s_str(fe, "ename"), ename) == 0 && strcmp(s_str(fe, "evalue"), evalue) == 0 &&
        (!parent_msg_id || strcmp(s_str(fe, "parent_msg_id"), parent_msg_id) == 0))
      return KG_DIAG_NONE;
  }

  /* Text to classify: "ename: evalue" then the traceback, ANSI removed. */
  char *text = kg_errrecord_text(ename, evalue, tb, MAX_TEXT);
  if (!text)
    return KG_DIAG_NONE;
  kg_match_t m;
  bool gpu = kg_classifier_match(self->rules, source, text, strlen(text), &m);
  free(text);
  if (parent_msg_id)
    s_set_str(&self->last_parent, parent_msg_id);
  if (!gpu && !self->sticky)
    return KG_DIAG_NONE; /* a plain Python error: not our business */

  bool was_sticky = self->sticky;
  kg_diag_event_t ev = gpu ? s_sign(self, &m, parent_msg_id, now_ms) : KG_DIAG_NONE;
  if (!self->sticky && ev == KG_DIAG_ADVICE && self->first_error) {
    /* A new request's advice replaces the last request's first error. */
    const char *fp = s_str(self->first_error, "parent_msg_id");
    if (!parent_msg_id || strcmp(fp, parent_msg_id) != 0) {
      cJSON_Delete(self->first_error);
      self->first_error = NULL;
    }
  }
  cJSON *rec = kg_errrecord_new(source, ename, evalue, tb, parent_msg_id, now_ms);
  if (!self->first_error) {
    self->first_error = rec;
    if (self->sticky && !self->parent && parent_msg_id)
      s_set_str(&self->parent, parent_msg_id);
  } else if (was_sticky || ev != KG_DIAG_NONE || self->sticky) {
    kg_trail_follow(self->trail, rec);
  } else {
    cJSON_Delete(rec);
  }
  return ev;
}

/* ------------------------------------------------------------------------ */
/*  Exit                                                                     */

kg_diag_event_t
kg_diagnosis_feed_exit(kg_diagnosis_t *self, int exit_code, int signo, int64_t now_ms)
{
  assert(self);
  kg_diag_event_t ev = KG_DIAG_NONE;
  /* Partial last lines: an aborting process may not end its line. */
  self->cur_event = KG_DIAG_NONE;
  self->cur_source = KG_SRC_RAW_STDOUT;
  self->cur_parent = NULL;
  kg_linebuf_flush(self->raw_out, s_on_line, self);
  self->cur_source = KG_SRC_RAW_STDERR;
  kg_linebuf_flush(self->raw_err, s_on_line, self);
  kg_streamset_each(self->streams, s_flush_stream, self);
  ev = self->cur_event;
  self->exited = true;
  self->exit_code = exit_code;
  self->signo = exit_code >= 0 ? 0 : signo;

  /* Let the rules see the death too (source "exit"), e.g. a user rule for an
     exit code; the shipped rules have none. */
  char text[64];
  if (exit_code >= 0)
    snprintf(text, sizeof text, "exit code %d", exit_code);
  else
    snprintf(text, sizeof text, "killed by signal %d (%s)", signo, sigabbrev_np(signo) ?
             sigabbrev_np(signo) : "?");
  kg_match_t m;
  if (kg_classifier_match(self->rules, KG_SRC_EXIT, text, strlen(text), &m))
    ev = s_max(ev, s_sign(self, &m, NULL, now_ms));
  /* A death by a signal after a sticky sign in the text (SIGABRT after a
     device assertion or an HSA queue abort line) proves it. */
  if (!self->sticky && self->suspect && exit_code < 0 && signo > 0)
    ev = s_max(ev, kg_diagnosis_confirm(self, NULL, now_ms));
  if (self->sticky)
    kg_trail_follow_line(self->trail, KG_SRC_EXIT, text, now_ms);
  return ev;
}

/* ------------------------------------------------------------------------ */
/*  Accessors                                                                */

bool
kg_diagnosis_source_is_proof(kg_source_t source)
{
  return (source & (KG_SRC_IOPUB_ERROR | KG_SRC_EXECUTE_REPLY | KG_SRC_EXIT)) != 0;
}

bool
kg_diagnosis_suspect(const kg_diagnosis_t *self)
{
  return self->suspect && !self->sticky;
}

const kg_match_t *
kg_diagnosis_suspicion(const kg_diagnosis_t *self)
{
  assert(self);
  return self->suspect ? &self->suspect_match : NULL;
}

const char *
kg_diagnosis_suspect_parent(const kg_diagnosis_t *self)
{
  assert(self);
  return self->suspect ? self->suspect_parent : NULL;
}

kg_diag_event_t
kg_diagnosis_confirm(kg_diagnosis_t *self, const kg_match_t *probe, int64_t now_ms)
{
  if (self->sticky || !self->suspect)
    return KG_DIAG_NONE;
  self->sticky = true;
  self->has_match = true;
  self->match = self->suspect_match;   /* the first sign names the fault */
  if (!self->parent)
    s_set_str(&self->parent, self->suspect_parent);
  self->fault_ms = self->suspect_ms;
  /* the same request's earlier signs */
  self->fault_ms = kg_signs_earliest(self->signs, self->parent, self->fault_ms);
  /* The suspicion's line first, then the proof, in the order they came. */
  kg_trail_follow_line(self->trail, self->suspect_match.source, self->suspect_match.line,
                self->suspect_ms);
  if (probe)
    kg_trail_follow_line(self->trail, KG_SRC_EXECUTE_REPLY, probe->line, now_ms);
  else
    kg_trail_follow_line(self->trail, KG_SRC_EXIT, "kguard's device probe found the device faulty or did not answer", now_ms);
  return KG_DIAG_STICKY;
}

void
kg_diagnosis_clear_suspicion(kg_diagnosis_t *self)
{
  assert(self);
  self->suspect = false;
  free(self->suspect_parent);
  self->suspect_parent = NULL;
  /* the signs it left must not make a later fault's T earlier */
  if (self->signs)
    kg_signs_clear(self->signs);
}

void
kg_diagnosis_set_backend(kg_diagnosis_t *self, kg_backend_t backend)
{
  assert(self);
  self->backend_hint = backend;
}

void
kg_diagnosis_set_last_step(kg_diagnosis_t *self, int64_t step)
{
  assert(self);
  self->last_step = step;
}

bool
kg_diagnosis_sticky(const kg_diagnosis_t *self)
{
  assert(self);
  return self->sticky;
}

const kg_match_t *
kg_diagnosis_match(const kg_diagnosis_t *self)
{
  assert(self);
  return self->has_match ? &self->match : NULL;
}

int64_t
kg_diagnosis_fault_time(const kg_diagnosis_t *self)
{
  assert(self);
  return self->fault_ms;
}

const char *
kg_diagnosis_parent(const kg_diagnosis_t *self)
{
  assert(self);
  return self->parent;
}

kg_backend_t
kg_diagnosis_backend(const kg_diagnosis_t *self)
{
  assert(self);
  return self->backend != KG_BACKEND_UNKNOWN ? self->backend : self->backend_hint;
}

const char *
kg_diagnosis_assertion(const kg_diagnosis_t *self)
{
  assert(self);
  return self->assertion;
}

int64_t
kg_diagnosis_last_step(const kg_diagnosis_t *self)
{
  assert(self);
  return self->last_step;
}

int
kg_diagnosis_signature(const kg_diagnosis_t *self, const char *cell_code, char *buf,
                       size_t size)
{
  assert(self);
  if (size)
    buf[0] = '\0';
  if (!self->has_match)
    return KG_ENOTFOUND;
  return kg_diag_report_signature(self->match.family->id,
                                  self->assertion ? self->assertion : self->match.line,
                                  cell_code, buf, size);
}

cJSON *
kg_diagnosis_to_json(const kg_diagnosis_t *self)
{
  assert(self);
  kg_diag_report_t r = {.match = kg_diagnosis_match(self), .sticky = self->sticky,
                        .backend = kg_diagnosis_backend(self), .fault_ms = self->fault_ms,
                        .parent = self->parent, .assertion = self->assertion,
                        .first_error = self->first_error, .trail = self->trail,
                        .exited = self->exited, .exit_code = self->exit_code,
                        .signo = self->signo, .last_step = self->last_step};
  return kg_diag_report_json(&r);
}
