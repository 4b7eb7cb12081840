/*  kg_run_story: what `kguard run` tells on the terminal about a run's
    turns (contracts in kg_run_story.h). */
#include "kg_run_story.h"
#include "kg_json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_runner.h"   /* the exit codes */

static bool
s_is(const char *a, const char *b)
{
  return a && b && strcmp(a, b) == 0;
}

void
kg_run_story_restart(kg_progress_t *pr, kg_run_record_t *record, const cJSON *events,
                     const cJSON *reply, size_t number, size_t ncode, int restarts,
                     int max_restarts)
{
  const cJSON *kg = NULL, *ev;
  cJSON_ArrayForEach(ev, events) {
    const char *e = kg_json_string(ev, "event");
    if (s_is(e, "sticky-restart") || s_is(e, "kernel-died"))
      kg = ev;
  }
  const char *family = kg_json_string(kg, "family");
  const char *ename = kg_json_string(reply, "ename");
  if (s_is(kg_json_string(kg, "event"), "kernel-died"))
    kg_progress_event(pr, true, "cell %zu: the kernel died; kguard started a fresh "
                      "one", number);
  else
    kg_progress_event(pr, true, "cell %zu: sticky device error%s%s%s (%s): kguard "
                      "stopped the poisoned kernel and started a fresh one", number,
                      family ? " [" : "", family ? family : "", family ? "]" : "",
                      ename ? ename : "detected by kguard");
  if (number + 1 == ncode)
    kg_progress_event(pr, true, "cell %zu was held back: it did not run in the poisoned "
                      "kernel", ncode);
  else if (number < ncode)
    kg_progress_event(pr, true, "cells %zu-%zu were held back: none of them ran in "
                      "the poisoned kernel", number + 1, ncode);
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(kg, "restored_step");
  if (cJSON_IsNumber(step) && cJSON_GetObjectItemCaseSensitive(kg, "notice"))
    kg_run_record_complete(record, kg, NULL);
  else
    kg_progress_event(pr, true, "kguard restores the last checkpoint sealed before the "
                      "fault into the fresh kernel");
  char buf[4096];
  const char *path = kg ? kg_run_record_incident_path(record, kg, buf, sizeof buf) : NULL;
  if (path)
    kg_progress_event(pr, true, "incident record: %s", path);
  if (number == 1)
    kg_progress_event(pr, true, "restart %d (of at most %d): running cell 1 again in the "
                      "fresh kernel, then the rest", restarts, max_restarts);
  else
    kg_progress_event(pr, true, "restart %d (of at most %d): running cells 1-%zu again in "
                      "the fresh kernel, then the rest", restarts, max_restarts, number);
}

void
kg_run_story_down(kg_progress_t *pr, size_t number, const cJSON *events, const cJSON *reply)
{
  const char *ename = kg_json_string(reply, "ename");
  const char *evalue = kg_json_string(reply, "evalue");
  const cJSON *ev;
  cJSON_ArrayForEach(ev, events) {
    if (s_is(kg_json_string(ev, "event"), "down") && kg_json_string(ev, "reason")) {
      evalue = kg_json_string(ev, "reason");
      ename = NULL;
    }
  }
  char why[2048];
  kg_run_story_strip_inband(evalue, why, sizeof why);
  size_t n = strcspn(why, "\n");
  why[n] = '\0';
  kg_progress_event(pr, true, "cell %zu: gave up: kguard stopped restarting the kernel"
                    "%s%s%s%s%s", number, ename ? " (" : "", ename ? ename : "",
                    ename ? ")" : "", why[0] ? ": " : "", why);
  kg_progress_event(pr, true, "fix the cause, then run the notebook again: with --resume it "
                    "continues from the run's last checkpoint; CUDA_LAUNCH_BLOCKING=1 in the "
                    "environment makes a device error name the operator that caused it");
}

void
kg_run_story_error(kg_progress_t *pr, size_t number, const cJSON *reply)
{
  const char *ename = kg_json_string(reply, "ename");
  const char *evalue = kg_json_string(reply, "evalue");
  kg_progress_event(pr, true, "cell %zu raised %s%s%s", number,
                    ename ? ename : "an error", evalue && *evalue ? ": " : "",
                    evalue ? evalue : "");
}

void
kg_run_story_summary(kg_progress_t *pr, const kg_run_record_t *record, int code,
                     size_t cells_done, size_t ncode, int executions, int restarts,
                     const char *log_path)
{
  const char *what = code == 0 ? "finished"
                     : code == KG_RUN_EXIT_NOT_RESTORED
                     ? "finished WITHOUT the checkpoint it should have resumed from"
                     : "stopped";
  int64_t restored = kg_run_record_restored_step(record);
  if (restored >= 0)
    kg_progress_event(pr, true, "%s: %zu of %zu code cells done, %d execution%s, "
                      "%d restart%s, checkpoint step %lld restored", what, cells_done,
                      ncode, executions, executions == 1 ? "" : "s",
                      restarts, restarts == 1 ? "" : "s",
                      (long long) restored);
  else
    kg_progress_event(pr, true, "%s: %zu of %zu code cells done, %d execution%s, "
                      "%d restart%s", what, cells_done, ncode, executions,
                      executions == 1 ? "" : "s", restarts,
                      restarts == 1 ? "" : "s");
  const cJSON *p;
  cJSON_ArrayForEach(p, kg_run_record_paths(record))
    kg_progress_event(pr, true, "  incident record:   %s", p->valuestring);
  if (log_path)
    kg_progress_event(pr, true, "  kernel log:        %s", log_path);
}

void
kg_run_story_log_tail(kg_progress_t *pr, const char *log_path)
{
  const char *path = log_path;
  FILE *f = path ? fopen(path, "re") : NULL;
  if (!f)
    return;
  char buf[8192];
  if (fseek(f, -(long) (sizeof buf - 1), SEEK_END) != 0)
    rewind(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *start = n == sizeof buf - 1 ? strchr(buf, '\n') : NULL;
  kg_progress_event(pr, true, "the kernel's log (%s) ends with:", path);
  kg_progress_block(pr, true, "  | ", start ? start + 1 : buf);
}

char *
kg_run_story_strip_inband(const char *text, char *buf, size_t size)
{
  size_t at = 0;
  buf[0] = '\0';
  const char *s = text ? text : "";
  while (*s) {
    /*  One sentence: up to ". " or the end. */
    const char *end = strstr(s, ". ");
    size_t n = end ? (size_t) (end - s) + 1 : strlen(s);
    bool advice = false;
    for (size_t i = 0; i + 15 <= n && !advice; i++)
      advice = strncmp(s + i, "%kguard restart", 15) == 0;
    if (!advice && at + n + 2 < size) {
      at += (size_t) snprintf(buf + at, size - at, "%s%.*s", at ? " " : "", (int) n, s);
    }
    s += n;
    while (*s == ' ')
      s++;
  }
  /*  A trailing "; kguard stays up ..." clause is advice for notebooks too. */
  char *semi = strstr(buf, "; kguard stays up");
  if (semi)
    *semi = '\0';
  return buf;
}

/*  A line kguard's own log wrote: "2026-01-02T03:04:05.678Z kguard[PID] L: ". */
static bool
s_is_kguard_line(const char *line, size_t n)
{
  if (n < 24 || !isdigit((unsigned char) line[0]) || line[4] != '-' || line[10] != 'T')
    return false;
  const char *sp = memchr(line, ' ', n);
  return sp && (size_t) (sp - line) + 8 < n && strncmp(sp + 1, "kguard[", 7) == 0;
}

void
kg_run_story_start_failed(kg_progress_t *pr, const kg_kernelspec_t *spec, const char *reason,
                          const char *log_path)
{
  char why[1024];
  kg_run_story_strip_inband(reason, why, sizeof why);
  kg_progress_event(pr, true, "kernel \"%s\" could not start%s%s", spec->name,
                    why[0] ? ": " : "", why);

  /*  The kernel's own words: its lines of the log, repeats folded. */
  FILE *f = log_path ? fopen(log_path, "re") : NULL;
  if (f) {
    char tail[8192];
    if (fseek(f, -(long) (sizeof tail - 1), SEEK_END) != 0)
      rewind(f);
    size_t n = fread(tail, 1, sizeof tail - 1, f);
    fclose(f);
    tail[n] = '\0';
    const char *from = tail;
    if (n == sizeof tail - 1 && strchr(tail, '\n'))
      from = strchr(tail, '\n') + 1;     /*  from a line start */
    char words[8192];
    size_t at = 0;
    const char *prev = NULL;
    size_t prev_n = 0;
    int repeats = 0;
    for (const char *s = from; *s;) {
      size_t len = strcspn(s, "\n");
      bool keep = len > 0 && !s_is_kguard_line(s, len);
      if (keep && prev && len == prev_n && memcmp(s, prev, len) == 0)
        repeats++;
      else if (keep) {
        if (repeats && at < sizeof words)
          at += (size_t) snprintf(words + at, sizeof words - at, " (%d times)", repeats + 1);
        if (at < sizeof words)
          at += (size_t) snprintf(words + at, sizeof words - at, "%s%.*s", at ? "\n" : "",
                                  (int) len, s);
        prev = s;
        prev_n = len;
        repeats = 0;
      }
      s += len;
      if (*s == '\n')
        s++;
    }
    if (repeats && at < sizeof words)
      snprintf(words + at, sizeof words - at, " (%d times)", repeats + 1);
    if (at) {
      kg_progress_event(pr, true, "the kernel's last words (from %s):", log_path);
      kg_progress_block(pr, true, "  | ", words);
    }
  }
  const cJSON *arg0 = cJSON_GetArrayItem(spec->argv, 0);
  kg_progress_event(pr, true, "its kernelspec: %s%skernel.json (runs %s); fix it, or choose "
                    "another kernel with -k NAME (jupyter kernelspec list)",
                    spec->dir ? spec->dir : "", spec->dir ? "/" : "",
                    cJSON_IsString(arg0) ? arg0->valuestring : "?");
}
