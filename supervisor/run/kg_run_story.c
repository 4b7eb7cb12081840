/*  kg_run_story: what `kguard run` tells on the terminal about a run's
    turns (contracts in kg_run_story.h). */
#include "kg_run_story.h"
#include "kg_json.h"

#include <stdio.h>
#include <string.h>

#include "kg_runner.h"   /* the exit codes */

static bool
s_is(const char *a, const char *b)
{
  return a && b && strcmp(a, b) == 0;
}

void
kg_run_story_restart(kg_progress_t *pr, kg_run_record_t *record, const cJSON *events,
                     const cJSON *reply, const size_t *code, size_t ncode, size_t pos,
                     int restarts, int max_restarts)
{
  const cJSON *kg = NULL, *ev;
  cJSON_ArrayForEach(ev, events) {
    const char *e = kg_json_string(ev, "event");
    if (s_is(e, "sticky-restart") || s_is(e, "kernel-died"))
      kg = ev;
  }
  size_t index = code[pos];
  const char *family = kg_json_string(kg, "family");
  const char *ename = kg_json_string(reply, "ename");
  if (s_is(kg_json_string(kg, "event"), "kernel-died"))
    kg_progress_event(pr, true, "cell %zu: the kernel died; kguard started a fresh "
                      "one", index + 1);
  else
    kg_progress_event(pr, true, "cell %zu: sticky device error%s%s%s (%s): kguard "
                      "stopped the poisoned kernel and started a fresh one", index + 1,
                      family ? " [" : "", family ? family : "", family ? "]" : "",
                      ename ? ename : "detected by kguard");
  if (pos + 1 < ncode)
    kg_progress_event(pr, true, "cells %zu..%zu were held back: none of them ran in "
                      "the poisoned kernel", code[pos + 1] + 1,
                      code[ncode - 1] + 1);
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
  kg_progress_event(pr, true, "restart %d (of at most %d): re-running cells 1..%zu "
                    "in the fresh kernel, then the rest", restarts,
                    max_restarts, index + 1);
}

void
kg_run_story_down(kg_progress_t *pr, size_t index, const cJSON *reply)
{
  const char *ename = kg_json_string(reply, "ename");
  const char *evalue = kg_json_string(reply, "evalue");
  int n = evalue ? (int) strcspn(evalue, "\n") : 0;
  kg_progress_event(pr, true, "cell %zu: kguard stopped restarting the kernel (down)%s%s"
                    "%s%.*s", index + 1, ename ? ": " : "", ename ? ename : "",
                    n ? ": " : "", n, evalue ? evalue : "");
  kg_progress_event(pr, true, "gave up: the same failure came back, or the restart "
                    "budget is spent; a restart does not fix a wrong label or a bug");
}

void
kg_run_story_error(kg_progress_t *pr, size_t index, const cJSON *reply)
{
  const char *ename = kg_json_string(reply, "ename");
  const char *evalue = kg_json_string(reply, "evalue");
  kg_progress_event(pr, true, "cell %zu raised %s%s%s", index + 1,
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
