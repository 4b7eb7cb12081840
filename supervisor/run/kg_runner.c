/*  kg_runner: the execution policy of `kguard run`. See kg_runner.h.

    One request is outstanding at a time. That is what nbclient does, and it
    matters here: a request that reaches kguard while it restarts the kernel
    is held and delivered to the *fresh* kernel, which would run a cell
    without the state of the cells before it. Sending one cell at a time
    leaves nothing queued when a fault is detected.
*/
#include "kg_runner.h"
#include "kg_json.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_errtext.h"
#include "kg_exit.h"
#include "kg_error.h"
#include "kg_outputs.h"
#include "kg_run_record.h"
#include "kg_run_story.h"

/*  How long to wait for a cell's iopub idle once its reply has arrived
    (nbclient waits 4 s; kguard relays through one more hop). */
#define KG_IDLE_GRACE_MS 10000
#define KG_IDLE_GRACE_EVENT_MS 2000
/*  How long an interrupted cell (timeout) gets to answer. */
#define KG_INTERRUPT_GRACE_MS 10000
/*  The live line is refreshed this often. */
#define KG_TICK_MS 500

typedef struct {
  kg_notebook_t *nb;
  const kg_runner_config_t *cfg;
  kg_progress_t *pr;
  kg_client_t *client;
  kg_outputs_t *outputs;
  size_t *code;                 /*  indices of the non-empty code cells    */
  size_t ncode;
  size_t pos;                   /*  the running cell's position in code[]:
                                    its number (In [N]) is pos + 1         */
  int restarts;                 /*  restarts followed so far               */
  int executions;               /*  execute_requests sent                  */
  kg_run_record_t *record;      /*  incidents and checkpoints learnt       */
  int sigints;                  /*  SIGINTs received                       */
  int stop_signal;              /*  a signal that ends the run now, or 0   */
  bool save_failed;             /*  the last write after a cell failed     */
  char plain[8192];             /*  a traceback line, colours removed      */
} s_run_t;

/*  What happened to one execute_request. */
typedef struct {
  char msg_id[37];
  bool replied, idle;
  cJSON *reply;                 /*  execute_reply content (owned)          */
  cJSON *events;                /*  kguard metadata seen meanwhile (array) */
  bool timed_out;               /*  --timeout expired, interrupt sent      */
  bool user_interrupt;          /*  Ctrl-C, interrupt sent                 */
  bool child_exited;
  int child_status;
} s_cell_t;

static bool
s_is(const char *a, const char *b)
{
  return a && b && strcmp(a, b) == 0;
}

static bool
s_blank(const char *code)
{
  for (; code && *code; code++) {
    if (!isspace((unsigned char) *code))
      return false;
  }
  return true;
}

/*  ------------------------------------------------------------------------
    One cell. */

/*  The cell's output as it arrives, as running its code as a script would
    show it: its stdout stream and the text of its results and displays on
    standard output, its stderr stream and error tracebacks on stderr. */
static void
s_show_output(s_run_t *run, const char *type, const cJSON *content)
{
  if (s_is(type, "stream")) {
    bool err = s_is(kg_json_string(content, "name"), "stderr");
    kg_progress_output(run->pr, err, kg_json_string(content, "text"));
  }
  else if (s_is(type, "execute_result") || s_is(type, "display_data")) {
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(content, "data");
    const char *text = kg_json_string(data, "text/plain");
    if (text && *text) {
      kg_progress_output(run->pr, false, text);
      kg_progress_output(run->pr, false, "\n");
    }
  }
  else if (s_is(type, "error")) {
    const cJSON *line;
    cJSON_ArrayForEach(line, cJSON_GetObjectItemCaseSensitive(content, "traceback")) {
      if (!cJSON_IsString(line))
        continue;
      snprintf(run->plain, sizeof run->plain, "%s", line->valuestring);
      if (!isatty(STDERR_FILENO))
        kg_errtext_strip_ansi(run->plain);    /*  colours only on a terminal */
      kg_progress_output(run->pr, true, run->plain);
      kg_progress_output(run->pr, true, "\n");
    }
  }
}

static void
s_on_iopub(s_run_t *run, s_cell_t *cell, kg_msg_t *msg)
{
  const char *type = kg_msg_type(msg);
  const char *parent = kg_msg_parent_id(msg);
  cJSON *content = kg_msg_json(msg, KG_PART_CONTENT);
  bool mine = s_is(parent, cell->msg_id);

  /*  A kguard notice (display_data whose metadata has "kguard"), for this
      request, for one already acted on, or (detected late) an earlier one. */
  const cJSON *kg = NULL;
  if (s_is(type, "display_data")) {
    kg = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(content, "metadata"), "kguard");
    if (!cJSON_IsObject(kg))
      kg = cJSON_GetObjectItemCaseSensitive(kg_msg_json(msg, KG_PART_METADATA), "kguard");
  }
  if (cJSON_IsObject(kg)) {
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(content, "data");
    const char *text = kg_json_string(data, "text/plain");
    /*  The give-up notice is written for a notebook (`%kguard restart`);
        the run says it once, with advice that works here (kg_run_story_down). */
    if (!s_is(kg_json_string(kg, "event"), "down"))
      kg_progress_block(run->pr, true, "  kguard | ", text);
    kg_run_record_checkpoint(run->record, kg);
    if (!mine && kg_run_record_is_handled(run->record, kg_json_string(kg, "incident"), parent))
      kg_run_record_complete(run->record, kg, text);
    else
      kg_run_events_note(cell->events, kg, text);
  }
  if (!mine)
    return;
  if (s_is(type, "status")) {
    if (s_is(kg_json_string(content, "execution_state"), "idle"))
      cell->idle = true;
    return;
  }
  if (run->cfg->show_output && !cJSON_IsObject(kg))
    s_show_output(run, type, content);  /*  notices are shown already      */
  if (kg_outputs_add(run->outputs, type, content) < 0)
    kg_progress_event(run->pr, true, "out of memory while recording outputs");
}

static void
s_on_shell(s_run_t *run, s_cell_t *cell, kg_msg_t *msg)
{
  if (!s_is(kg_msg_parent_id(msg), cell->msg_id)
      || !s_is(kg_msg_type(msg), "execute_reply"))
    return;
  cell->replied = true;
  cJSON_Delete(cell->reply);
  cell->reply = cJSON_Duplicate(kg_msg_json(msg, KG_PART_CONTENT), true);
  if (!cell->reply)
    cell->reply = cJSON_CreateObject();
  const cJSON *kg = cJSON_GetObjectItemCaseSensitive(kg_msg_json(msg, KG_PART_METADATA),
                                                     "kguard");
  if (cJSON_IsObject(kg)) {
    kg_run_record_checkpoint(run->record, kg);
    kg_run_events_note(cell->events, kg, NULL);
  }
}

static void
s_interrupt(s_run_t *run)
{
  char id[37];
  kg_client_send(run->client, KG_CH_CONTROL, "interrupt_request", NULL, id);
}

/*  Execute code cell index and wait for its reply and idle. Returns 0 when
    the cell finished (in whatever status) or a stop condition is recorded in
    cell / run (child exit, signal, timeout without answer). */
static int
s_execute(s_run_t *run, size_t index, s_cell_t *cell, const char *code)
{
  cJSON *outputs = kg_notebook_reset_cell(run->nb, index);
  if (!outputs)
    return KG_ENOMEM;
  kg_outputs_begin(run->outputs, index, outputs);

  /* As nbclient: a cell tagged raises-exception is expected to fail, so the
     kernel must not abort what comes after it. With stop_on_error true,
     ipykernel aborts every execute_request reaching it until an event it
     schedules after the error reply, so the next cell could be aborted. */
  bool stop_on_error = !kg_notebook_has_tag(run->nb, index, "raises-exception");
  cJSON *content = cJSON_CreateObject();
  if (!content || !cJSON_AddStringToObject(content, "code", code)
      || !cJSON_AddBoolToObject(content, "silent", false)
      || !cJSON_AddBoolToObject(content, "store_history", true)
      || !cJSON_AddObjectToObject(content, "user_expressions")
      || !cJSON_AddBoolToObject(content, "allow_stdin", false)
      || !cJSON_AddBoolToObject(content, "stop_on_error", stop_on_error)) {
    cJSON_Delete(content);
    return KG_ENOMEM;
  }
  int rc = kg_client_send(run->client, KG_CH_SHELL, "execute_request", &content,
                          cell->msg_id);
  cJSON_Delete(content);
  if (rc != 0)
    return rc;
  run->executions++;

  int64_t start = kg_clock_mono_ms();
  int64_t limit = run->cfg->timeout_s > 0
                  ? start + (int64_t) (run->cfg->timeout_s * 1000) : -1;
  int64_t idle_limit = -1;
  while (!(cell->replied && cell->idle)) {
    int64_t now = kg_clock_mono_ms();
    /*  After a reply that reports a kguard event the kernel that would
        publish idle may already be gone: wait briefly only. */
    if (cell->replied && idle_limit < 0)
      idle_limit = now + (cJSON_GetArraySize(cell->events) > 0 ? KG_IDLE_GRACE_EVENT_MS
                                                                : KG_IDLE_GRACE_MS);
    if (idle_limit >= 0 && now >= idle_limit) {
      /*  Expected when kguard has just replaced the kernel; worth a word
          otherwise. */
      if (cJSON_GetArraySize(cell->events) == 0)
        kg_progress_event(run->pr, false, "no idle status after the reply of cell %zu; "
                          "going on", run->pos + 1);
      break;
    }
    if (limit >= 0 && now >= limit) {
      if (cell->timed_out) {
        kg_progress_event(run->pr, true, "cell %zu did not answer the interrupt",
                          run->pos + 1);
        break;
      }
      cell->timed_out = true;
      kg_progress_event(run->pr, true, "cell %zu ran past --timeout %gs: interrupting it",
                        run->pos + 1, run->cfg->timeout_s);
      s_interrupt(run);
      limit = now + KG_INTERRUPT_GRACE_MS;
    }
    int64_t until = now + KG_TICK_MS;
    if (limit >= 0 && limit < until)
      until = limit;
    if (idle_limit >= 0 && idle_limit < until)
      until = idle_limit;

    kg_client_event_t ev;
    rc = kg_client_next(run->client, until, &ev);
    if (rc != 0)
      return rc;
    switch (ev.kind) {
    case KG_CLIENT_TIMEOUT:
      kg_progress_tick(run->pr);
      break;
    case KG_CLIENT_MESSAGE:
      if (ev.channel == KG_CH_IOPUB)
        s_on_iopub(run, cell, ev.msg);
      else if (ev.channel == KG_CH_SHELL)
        s_on_shell(run, cell, ev.msg);
      kg_msg_destroy(&ev.msg);
      break;
    case KG_CLIENT_SIGNAL:
      if (ev.signo == SIGINT && run->sigints++ == 0) {
        kg_progress_event(run->pr, true, "interrupted: interrupting cell %zu "
                          "(Ctrl-C again to stop at once)", run->pos + 1);
        cell->user_interrupt = true;
        s_interrupt(run);
      }
      else {
        run->stop_signal = ev.signo;
        return 0;
      }
      break;
    case KG_CLIENT_EXITED:
      cell->child_exited = true;
      cell->child_status = ev.status;
      return 0;
    }
  }
  kg_outputs_end(run->outputs);
  const cJSON *count = cJSON_GetObjectItemCaseSensitive(cell->reply, "execution_count");
  if (cJSON_IsNumber(count))
    kg_notebook_set_count(run->nb, index, count->valueint);
  return 0;
}

/*  ------------------------------------------------------------------------
    The run. */

static void
s_metadata(s_run_t *run, const char *result, size_t cells_done)
{
  cJSON *kguard = kg_notebook_kguard_metadata(run->nb);
  if (!kguard)
    return;
  cJSON_DeleteItemFromObjectCaseSensitive(kguard, "run");
  cJSON *info = cJSON_AddObjectToObject(kguard, "run");
  if (!info)
    return;
  cJSON_AddStringToObject(info, "result", result);
  cJSON_AddStringToObject(info, "kernel", run->cfg->client.spec->name);
  cJSON_AddNumberToObject(info, "code_cells", (double) run->ncode);
  cJSON_AddNumberToObject(info, "cells_done", (double) cells_done);
  cJSON_AddNumberToObject(info, "executions", run->executions);
  cJSON_AddNumberToObject(info, "restarts", run->restarts);
  int64_t restored = kg_run_record_restored_step(run->record);
  if (restored >= 0)
    cJSON_AddNumberToObject(info, "restored_step", (double) restored);
  else
    cJSON_AddNullToObject(info, "restored_step");
  cJSON_AddItemToObject(info, "checkpoints_not_restored",
                        cJSON_Duplicate(kg_run_record_not_restored(run->record), true));
  if (run->cfg->run_id)
    cJSON_AddStringToObject(info, "run_id", run->cfg->run_id);
  /*  What --resume continued from: the step the first kernel resumed. */
  cJSON *resumed = run->cfg->resumed ? cJSON_AddObjectToObject(info, "resumed")
                                     : cJSON_AddNullToObject(info, "resumed");
  if (run->cfg->resumed && resumed) {
    if (run->cfg->resumed_step >= 0)
      cJSON_AddNumberToObject(resumed, "step", (double) run->cfg->resumed_step);
    else
      cJSON_AddNullToObject(resumed, "step");
  }
}

/*  The notebook as it stands, written after each cell: a run killed later
    keeps what was done. A failure is said once; the run goes on (the final
    write says it again if it fails too). */
static void
s_checkpoint_notebook(s_run_t *run, size_t done)
{
  s_metadata(run, "running", done);
  int rc = kg_notebook_save(run->nb, run->cfg->output_path);
  if (rc != 0 && !run->save_failed)
    kg_progress_event(run->pr, true, "unable to write %s: %s (going on)",
                      run->cfg->output_path, kg_strerror(rc));
  run->save_failed = rc != 0;
}

/*  Record the kguard events of the running cell in the notebook. */
static void
s_record(s_run_t *run, const s_cell_t *cell)
{
  kg_run_record_incidents(run->record, run->pos + 1, run->code[run->pos], run->executions,
                          cell->events, cell->reply);
}

/*  Execute the cells; returns the exit code and how many cells were done. */
static int
s_loop(s_run_t *run, size_t *done)
{
  size_t pos = 0;
  size_t rerun_until = 0;       /*  positions < this are re-runs           */
  *done = 0;
  while (pos < run->ncode) {
    size_t index = run->code[pos];
    char *code = kg_notebook_source(run->nb, index);
    if (!code)
      return KG_EXIT_SYSTEM;
    s_cell_t cell = {0};
    cell.events = cJSON_CreateArray();
    run->pos = pos;
    kg_progress_cell_start(run->pr, pos + 1, run->ncode, pos < rerun_until, code);
    int rc = cell.events ? s_execute(run, index, &cell, code) : KG_ENOMEM;
    free(code);
    int exit_code = -1;
    const char *event = kg_run_events_strongest(cell.events, cell.reply);
    const char *status = kg_json_string(cell.reply, "status");
    if (rc != 0) {
      kg_progress_cell_end(run->pr, "failed");
      kg_progress_event(run->pr, true, "unable to execute cell %zu: %s", pos + 1,
                        kg_strerror(rc));
      exit_code = KG_EXIT_SYSTEM;
    }
    else if (run->stop_signal) {
      kg_progress_cell_end(run->pr, "interrupted");
      exit_code = 128 + run->stop_signal;
    }
    else if (cell.child_exited) {
      kg_progress_cell_end(run->pr, "kernel gone");
      int st = cell.child_status;
      kg_progress_event(run->pr, true, "the kguard kernel exited unexpectedly (%s %d)",
                        WIFSIGNALED(st) ? "signal" : "status",
                        WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
      kg_run_story_log_tail(run->pr, run->cfg->log_path);
      exit_code = KG_EXIT_SYSTEM;
    }
    else if (s_is(event, "down")) {
      kg_progress_cell_end(run->pr, "down");
      kg_run_record_acted_on(run->record, cell.msg_id, cell.events);
      s_record(run, &cell);
      kg_run_story_down(run->pr, pos + 1, cell.events, cell.reply);
      exit_code = KG_RUN_EXIT_GAVE_UP;
    }
    else if (s_is(event, "sticky-restart") || s_is(event, "kernel-died")) {
      kg_progress_cell_end(run->pr, "kernel restarted");
      s_record(run, &cell);
      kg_run_record_acted_on(run->record, cell.msg_id, cell.events);
      run->restarts++;
      if (run->restarts > run->cfg->max_restarts) {
        kg_progress_event(run->pr, true, "gave up: more than %d restart%s (--max-restarts)",
                          run->cfg->max_restarts, run->cfg->max_restarts == 1 ? "" : "s");
        exit_code = KG_RUN_EXIT_GAVE_UP;
      }
      else {
        kg_run_story_restart(run->pr, run->record, cell.events, cell.reply, pos + 1, run->ncode,
                             run->restarts, run->cfg->max_restarts);
        if (pos + 1 > rerun_until)
          rerun_until = pos + 1;
        pos = 0;
      }
    }
    else if (cell.timed_out) {
      kg_progress_cell_end(run->pr, "timed out");
      s_record(run, &cell);
      exit_code = KG_RUN_EXIT_TIMEOUT;
    }
    else if (cell.user_interrupt) {
      kg_progress_cell_end(run->pr, "interrupted");
      exit_code = KG_RUN_EXIT_INTERRUPTED;
    }
    else if (!s_is(status, "ok") && !kg_notebook_has_tag(run->nb, index, "raises-exception")) {
      kg_progress_cell_end(run->pr, status ? status : "error");
      s_record(run, &cell);
      kg_run_story_error(run->pr, pos + 1, cell.reply);
      exit_code = KG_RUN_EXIT_CELL_ERROR;
    }
    else {
      kg_progress_cell_end(run->pr, s_is(status, "ok") ? "ok" : "error (raises-exception)");
      s_record(run, &cell);
      pos++;
      if (pos > *done)
        *done = pos;
    }
    cJSON_Delete(cell.reply);
    cJSON_Delete(cell.events);
    if (exit_code >= 0)
      return exit_code;
    s_checkpoint_notebook(run, *done);
  }
  return 0;
}

static const char *
s_result_name(int code)
{
  switch (code) {
  case 0: return "ok";
  case KG_RUN_EXIT_CELL_ERROR: return "cell-error";
  case KG_RUN_EXIT_GAVE_UP: return "gave-up";
  case KG_RUN_EXIT_TIMEOUT: return "timeout";
  case KG_RUN_EXIT_NOT_RESTORED: return "checkpoint-not-restored";
  case KG_EXIT_SYSTEM: return "system-failure";
  default: return "interrupted";
  }
}

int
kg_runner_run(kg_notebook_t *nb, const kg_runner_config_t *cfg, kg_progress_t *pr)
{
  s_run_t run = {.nb = nb, .cfg = cfg, .pr = pr};
  int code = KG_EXIT_SYSTEM;
  size_t done = 0;
  size_t ncells = kg_notebook_cell_count(nb);
  run.code = calloc(ncells + 1, sizeof *run.code);
  run.outputs = kg_outputs_new();
  cJSON *kguard = kg_notebook_kguard_metadata(nb);
  if (kguard) {
    cJSON_DeleteItemFromObjectCaseSensitive(kguard, "incidents");
    run.record = kg_run_record_new(cJSON_AddArrayToObject(kguard, "incidents"),
                                   cfg->state_dir, pr);
  }
  if (!run.code || !run.outputs || !run.record) {
    kg_progress_event(pr, true, "out of memory");
    goto done;
  }
  kg_notebook_reset_all(nb);
  for (size_t i = 0; i < ncells; i++) {
    if (!kg_notebook_is_code(nb, i))
      continue;
    char *src = kg_notebook_source(nb, i);
    if (src && !s_blank(src))
      run.code[run.ncode++] = i;
    free(src);
  }

  char err[1024];
  int rc = kg_client_start(&cfg->client, &run.client, err, sizeof err);
  if (rc != 0) {
    kg_progress_event(pr, true, "unable to start the kernel: %s", err);
    kg_run_story_log_tail(run.pr, run.cfg->log_path);
    goto done;
  }
  kg_progress_event(pr, false, "kernel \"%s\" starting under kguard (pid %d)",
                    cfg->client.spec->name, (int) kg_client_pid(run.client));
  kg_client_ready_t ready;
  int64_t deadline = kg_clock_mono_ms() + (int64_t) (cfg->startup_timeout_s * 1000);
  rc = kg_client_wait_ready(run.client, deadline, &ready);
  if (rc == -EINTR) {
    kg_progress_event(pr, true, "interrupted while the kernel was starting");
    code = 128 + ready.signo;
    goto done;
  }
  if (rc == KG_EDOWN) {
    kg_run_story_start_failed(pr, cfg->client.spec, ready.reason, cfg->log_path);
    goto done;
  }
  if (rc != 0) {
    kg_progress_event(pr, true, "the kernel did not become ready: %s",
                      rc == KG_ESPAWN ? "it exited" : kg_strerror(rc));
    kg_run_story_log_tail(run.pr, run.cfg->log_path);
    goto done;
  }
  kg_progress_event(pr, false, "kernel ready; %zu code cell%s to run", run.ncode,
                    run.ncode == 1 ? "" : "s");
  s_checkpoint_notebook(&run, 0);

  code = s_loop(&run, &done);
  if (code == 0 && cJSON_GetArraySize(kg_run_record_not_restored(run.record)) > 0)
    code = KG_RUN_EXIT_NOT_RESTORED;
  s_metadata(&run, s_result_name(code), done);
  rc = kg_notebook_save(nb, cfg->output_path);
  if (rc != 0) {
    kg_progress_event(pr, true, "unable to write %s: %s", cfg->output_path,
                      kg_strerror(rc));
    code = KG_EXIT_SYSTEM;
  }
  kg_run_story_summary(run.pr, run.record, code, done, run.ncode, run.executions, run.restarts,
                       run.cfg->log_path);
  if (rc == 0)
    kg_progress_event(pr, true, "  executed notebook: %s", cfg->output_path);

done:
  if (run.client) {
    /*  After a second Ctrl-C, do not linger: a short grace, then signals. */
    int64_t grace = run.stop_signal ? 1000 : 5000;
    if (kg_client_shutdown(run.client, grace) != 0)
      kg_progress_event(pr, false, "the kernel did not exit on request; it was signalled");
  }
  kg_client_destroy(&run.client);
  kg_outputs_destroy(&run.outputs);
  kg_run_record_destroy(&run.record);
  free(run.code);
  return code;
}
