/*  kg_runner: the execution policy of `kguard run`. See kg_runner.h.

    One request is outstanding at a time. That is what nbclient does, and it
    matters here: a request that reaches kguard while it restarts the kernel
    is held and delivered to the *fresh* kernel, which would run a cell
    without the state of the cells before it. Sending one cell at a time
    leaves nothing queued when a fault is detected.

    The run reacts: one loop (kg_loop) serves the client's sockets, the
    child's end, the signals, the live line and the state's deadline; the
    run's progress is a machine on kg_fsm whose table and choices are
    kg_run_states.c's, whose rows (entry action, deadline, event on
    deadline) are here. Handlers post events; transitions never nest.
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

#include "kg_errtext.h"
#include "kg_exit.h"
#include "kg_error.h"
#include "kg_fsm.h"
#include "kg_loop.h"
#include "kg_outputs.h"
#include "kg_run_record.h"
#include "kg_run_states.h"
#include "kg_run_story.h"

/*  How long an interrupted cell (timeout) gets to answer. */
#define KG_INTERRUPT_GRACE_MS 10000
/*  The live line is refreshed this often. */
#define KG_TICK_MS 500
/*  kernel_info is asked again this often until the kernel answers. */
#define KG_NUDGE_MS 1000
/*  The kernel's shutdown: the grace after shutdown_request (short after a
    second Ctrl-C: do not linger), then after SIGTERM, then after SIGKILL. */
#define KG_SHUTDOWN_GRACE_MS 5000
#define KG_SHUTDOWN_GRACE_SIGNAL_MS 1000
#define KG_TERM_GRACE_MS 2000
#define KG_KILL_GRACE_MS 2000

/*  What happened to the running cell's execute_request. */
typedef struct {
  char msg_id[37];
  bool replied, idle;
  cJSON *reply;                 /*  execute_reply content (owned)          */
  cJSON *events;                /*  kguard metadata seen meanwhile (array) */
  bool timed_out;               /*  --timeout expired, interrupt sent      */
  bool user_interrupt;          /*  Ctrl-C, interrupt sent                 */
  bool child_exited;
  int child_status;
  int failure;                  /*  a send or receive failed (its code)    */
} s_cell_t;

typedef struct {
  kg_notebook_t *nb;
  const kg_runner_config_t *cfg;
  kg_progress_t *pr;
  kg_loop_t *loop;
  kg_fsm_t *fsm;
  kg_client_t *client;
  kg_client_ready_t ready;      /*  what WAITING learnt                    */
  kg_run_clock_t clock;         /*  the deadlines TIMER is read against    */
  kg_outputs_t *outputs;
  size_t *code;                 /*  indices of the non-empty code cells    */
  size_t ncode;
  size_t pos;                   /*  the running cell's position in code[]:
                                    its number (In [N]) is pos + 1         */
  size_t rerun_until;           /*  positions < this are re-runs           */
  size_t done;                  /*  cells done                             */
  s_cell_t cell;                /*  the running (or last) cell             */
  int restarts;                 /*  restarts followed so far               */
  int executions;               /*  execute_requests sent                  */
  kg_run_record_t *record;      /*  incidents and checkpoints learnt       */
  int signals_id;               /*  the caller's signals on the loop, or 0 */
  int sigints;                  /*  SIGINTs received                       */
  int stop_signal;              /*  a signal that ends the run now, or 0   */
  int exit_code;                /*  the result (KG_EXIT_SYSTEM until known) */
  bool was_ready;               /*  the kernel answered: the end writes the
                                    notebook and says how the run went     */
  bool signalled;               /*  the kernel had to be signalled to go   */
  bool save_failed;             /*  the last write after a cell failed     */
  int64_t tick_at;              /*  the live line's next refresh           */
  char plain[8192];             /*  a traceback line, colours removed      */
} s_run_t;

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

/*  Post event (with arg) at the loop's time: applied now, or after the
    running transition. */
static void
s_post(s_run_t *run, kg_run_event_t event, int64_t arg)
{
  if (kg_fsm_post(run->fsm, event, arg, kg_loop_now(run->loop)) != 0)
    kg_progress_event(run->pr, true, "internal: event %s dropped", kg_run_event_names[event]);
}

static int64_t
s_now(s_run_t *run)
{
  return kg_fsm_now(run->fsm);
}

/*  ------------------------------------------------------------------------
    One cell's messages. */

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

/*  ------------------------------------------------------------------------
    The notebook as the run goes. */

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

/*  ------------------------------------------------------------------------
    Entry actions. */

static void
s_cell_free(s_cell_t *cell)
{
  cJSON_Delete(cell->reply);
  cJSON_Delete(cell->events);
  *cell = (s_cell_t){0};
}

/*  The kernel answers: the machine sees each event of the client. */
static void s_on_client(void *arg, const kg_client_event_t *ev);
static int s_on_signal(kg_loop_t *loop, int signo, void *arg);

static void
s_enter_starting(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  char err[1024];
  int rc = kg_client_start(&run->cfg->client, run->loop, s_on_client, run, &run->client, err,
                           sizeof err);
  if (rc != 0) {
    kg_progress_event(run->pr, true, "unable to start the kernel: %s", err);
    kg_run_story_log_tail(run->pr, run->cfg->log_path);
    s_post(run, KG_RUN_EV_SPAWN_FAILED, rc);
    return;
  }
  /*  After the client's sources: a message and a signal that arrive
      together are served in that order. */
  if (run->cfg->signals
      && (run->signals_id = kg_loop_signals(run->loop, run->cfg->signals, s_on_signal,
                                            run)) < 0) {
    run->signals_id = 0;
    kg_progress_event(run->pr, true, "out of memory");
    s_post(run, KG_RUN_EV_FAILED, KG_ENOMEM);
  }
  kg_progress_event(run->pr, false, "kernel \"%s\" starting under kguard (pid %d)",
                    run->cfg->client.spec->name, (int) kg_client_pid(run->client));
  s_post(run, KG_RUN_EV_SPAWNED, 0);
}

/*  Entered once the kernel is spawned, then again at every nudge. */
static void
s_enter_waiting(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  int64_t now = s_now(run);
  if (from == KG_RUN_ST_STARTING)
    run->clock.start_limit = now + (int64_t) (run->cfg->startup_timeout_s * 1000);
  int rc = kg_client_ready_nudge(run->client, &run->ready);
  if (rc != 0)
    s_post(run, KG_RUN_EV_FAILED, rc);
  int64_t next = now + KG_NUDGE_MS;
  kg_fsm_set_deadline(run->fsm, next < run->clock.start_limit ? next : run->clock.start_limit);
}

/*  Send the cell at run->pos. 0, or a negative code. */
static int
s_send_cell(s_run_t *run, size_t index, const char *code)
{
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
                          run->cell.msg_id);
  cJSON_Delete(content);
  if (rc == 0)
    run->executions++;
  return rc;
}

/*  Start the cell at run->pos: its outputs reset, its request sent, its
    --timeout armed. 0, or a negative code. */
static int
s_cell_begin(s_run_t *run)
{
  size_t index = run->code[run->pos];
  s_cell_free(&run->cell);
  run->cell.events = cJSON_CreateArray();
  char *code = kg_notebook_source(run->nb, index);
  cJSON *outputs = code && run->cell.events ? kg_notebook_reset_cell(run->nb, index) : NULL;
  kg_progress_cell_start(run->pr, run->pos + 1, run->ncode, run->pos < run->rerun_until,
                         code ? code : "");
  int rc = outputs ? 0 : KG_ENOMEM;
  if (rc == 0) {
    kg_outputs_begin(run->outputs, index, outputs);
    rc = s_send_cell(run, index, code);
  }
  free(code);
  int64_t now = s_now(run);
  run->clock.limit = run->cfg->timeout_s > 0 ? now + (int64_t) (run->cfg->timeout_s * 1000) : 0;
  run->clock.idle_limit = 0;
  run->tick_at = now + KG_TICK_MS;
  kg_fsm_set_deadline(run->fsm, kg_run_cell_due(&run->clock));
  return rc;
}

static void
s_enter_executing(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  if (from == KG_RUN_ST_WAITING) {
    run->was_ready = true;
    kg_progress_event(run->pr, false, "kernel ready; %zu code cell%s to run", run->ncode,
                      run->ncode == 1 ? "" : "s");
    s_checkpoint_notebook(run, 0);
  }
  if (run->pos >= run->ncode) {
    run->exit_code = 0;
    s_post(run, KG_RUN_EV_END, 0);
    return;
  }
  int rc = s_cell_begin(run);
  if (rc != 0)
    s_post(run, KG_RUN_EV_FAILED, rc);
}

static void
s_enter_interrupting(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  run->cell.timed_out = true;
  kg_progress_event(run->pr, true, "cell %zu ran past --timeout %gs: interrupting it",
                    run->pos + 1, run->cfg->timeout_s);
  s_interrupt(run);
  run->clock.limit = s_now(run) + KG_INTERRUPT_GRACE_MS;
  kg_fsm_set_deadline(run->fsm, kg_run_cell_due(&run->clock));
}

/*  The cell ended as it should (its reply and idle), or its idle or its
    interrupt's answer never came: its outputs and count are kept. */
static void
s_cell_close(s_run_t *run, const kg_fsm_event_t *ev)
{
  if (ev->id == KG_RUN_EV_TIMER) {
    if (kg_run_cell_late(&run->clock, s_now(run)) == KG_RUN_LATE_IDLE) {
      /*  Expected when kguard has just replaced the kernel; worth a word
          otherwise. */
      if (cJSON_GetArraySize(run->cell.events) == 0)
        kg_progress_event(run->pr, false, "no idle status after the reply of cell %zu; "
                          "going on", run->pos + 1);
    }
    else
      kg_progress_event(run->pr, true, "cell %zu did not answer the interrupt", run->pos + 1);
  }
  kg_outputs_end(run->outputs);
  const cJSON *count = cJSON_GetObjectItemCaseSensitive(run->cell.reply, "execution_count");
  if (cJSON_IsNumber(count))
    kg_notebook_set_count(run->nb, run->code[run->pos], count->valueint);
}

/*  Say the outcome of a cell that ends the run; its exit code. */
static int
s_cell_fatal(s_run_t *run, kg_run_outcome_t out)
{
  s_cell_t *cell = &run->cell;
  switch (out) {
  case KG_RUN_OUT_FAILED:
    kg_progress_cell_end(run->pr, "failed");
    kg_progress_event(run->pr, true, "unable to execute cell %zu: %s", run->pos + 1,
                      kg_strerror(cell->failure));
    break;
  case KG_RUN_OUT_STOPPED:
  case KG_RUN_OUT_INTERRUPTED:
    kg_progress_cell_end(run->pr, "interrupted");
    break;
  case KG_RUN_OUT_KERNEL_GONE: {
    kg_progress_cell_end(run->pr, "kernel gone");
    int st = cell->child_status;
    kg_progress_event(run->pr, true, "the kguard kernel exited unexpectedly (%s %d)",
                      WIFSIGNALED(st) ? "signal" : "status",
                      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    kg_run_story_log_tail(run->pr, run->cfg->log_path);
    break;
  }
  case KG_RUN_OUT_DOWN:
    kg_progress_cell_end(run->pr, "down");
    kg_run_record_acted_on(run->record, cell->msg_id, cell->events);
    s_record(run, cell);
    kg_run_story_down(run->pr, run->pos + 1, cell->events, cell->reply);
    break;
  case KG_RUN_OUT_TIMED_OUT:
    kg_progress_cell_end(run->pr, "timed out");
    s_record(run, cell);
    break;
  default: {   /* KG_RUN_OUT_ERROR */
    const char *status = kg_json_string(cell->reply, "status");
    kg_progress_cell_end(run->pr, status ? status : "error");
    s_record(run, cell);
    kg_run_story_error(run->pr, run->pos + 1, cell->reply);
    break;
  }
  }
  return kg_run_outcome_exit(out, run->stop_signal);
}

static void
s_enter_judging(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  s_cell_t *cell = &run->cell;
  if (ev->id == KG_RUN_EV_FINISHED || ev->id == KG_RUN_EV_TIMER)
    s_cell_close(run, ev);
  else if (ev->id == KG_RUN_EV_CHILD_EXIT) {
    cell->child_exited = true;
    cell->child_status = (int) ev->arg;
  }
  else if (ev->id == KG_RUN_EV_FAILED)
    cell->failure = (int) ev->arg;
  const char *status = kg_json_string(cell->reply, "status");
  kg_run_cell_t facts = {
    .failure = cell->failure,
    .stop_signal = run->stop_signal,
    .child_exited = cell->child_exited,
    .event = kg_run_events_strongest(cell->events, cell->reply),
    .timed_out = cell->timed_out,
    .user_interrupt = cell->user_interrupt,
    .status = status,
    .raises_exception = kg_notebook_has_tag(run->nb, run->code[run->pos], "raises-exception"),
  };
  kg_run_outcome_t out = kg_run_outcome(&facts);
  if (out == KG_RUN_OUT_RESTARTED) {
    s_post(run, KG_RUN_EV_RESTART, 0);
    return;
  }
  if (out != KG_RUN_OUT_OK) {
    run->exit_code = s_cell_fatal(run, out);
    s_post(run, KG_RUN_EV_END, run->exit_code);
    return;
  }
  kg_progress_cell_end(run->pr, s_is(status, "ok") ? "ok" : "error (raises-exception)");
  s_record(run, cell);
  run->pos++;
  if (run->pos > run->done)
    run->done = run->pos;
  s_checkpoint_notebook(run, run->done);
  s_post(run, KG_RUN_EV_NEXT, 0);
}

/*  kguard replaced the kernel: the fresh one has none of the earlier
    cells' state, so the notebook runs again from its first cell, unless
    --max-restarts is spent. */
static void
s_enter_restarting(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  s_cell_t *cell = &run->cell;
  kg_progress_cell_end(run->pr, "kernel restarted");
  s_record(run, cell);
  kg_run_record_acted_on(run->record, cell->msg_id, cell->events);
  run->restarts++;
  if (run->restarts > run->cfg->max_restarts) {
    kg_progress_event(run->pr, true, "gave up: more than %d restart%s (--max-restarts)",
                      run->cfg->max_restarts, run->cfg->max_restarts == 1 ? "" : "s");
    run->exit_code = KG_RUN_EXIT_GAVE_UP;
    s_post(run, KG_RUN_EV_END, run->exit_code);
    return;
  }
  kg_run_story_restart(run->pr, run->record, cell->events, cell->reply, run->pos + 1,
                       run->ncode, run->restarts, run->cfg->max_restarts);
  if (run->pos + 1 > run->rerun_until)
    run->rerun_until = run->pos + 1;
  run->pos = 0;
  s_checkpoint_notebook(run, run->done);
  s_post(run, KG_RUN_EV_NEXT, 0);
}

/*  The kernel never became ready: say why (event is what WAITING saw). */
static void
s_start_failed(s_run_t *run, const kg_fsm_event_t *ev)
{
  switch (ev->id) {
  case KG_RUN_EV_STOP:
    kg_progress_event(run->pr, true, "interrupted while the kernel was starting");
    run->exit_code = 128 + (int) ev->arg;
    break;
  case KG_RUN_EV_DOWN:
    kg_run_story_start_failed(run->pr, run->cfg->client.spec, run->ready.reason,
                              run->cfg->log_path);
    break;
  default: {
    int rc = ev->id == KG_RUN_EV_TIMER ? KG_ETIMEOUT
             : ev->id == KG_RUN_EV_CHILD_EXIT ? KG_ESPAWN : (int) ev->arg;
    kg_progress_event(run->pr, true, "the kernel did not become ready: %s",
                      rc == KG_ESPAWN ? "it exited" : kg_strerror(rc));
    kg_run_story_log_tail(run->pr, run->cfg->log_path);
    break;
  }
  }
}

static void s_conclude(s_run_t *run);

/*  The result is known: the notebook written, then the kernel asked to go. */
static void
s_enter_stopping(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  /*  A Ctrl-C from now on is not lost: it stays pending in the signalfd for
      the caller. */
  if (run->signals_id)
    kg_loop_set_events(run->loop, run->signals_id, 0);
  if (run->was_ready)
    s_conclude(run);
  else
    s_start_failed(run, ev);
  if (kg_client_exited(run->client, NULL)) {
    s_post(run, KG_RUN_EV_CHILD_EXIT, 0);
    return;
  }
  kg_client_ask_shutdown(run->client);
  kg_fsm_set_deadline(run->fsm, s_now(run) + (run->stop_signal ? KG_SHUTDOWN_GRACE_SIGNAL_MS
                                                               : KG_SHUTDOWN_GRACE_MS));
}

static void
s_enter_terminating(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  run->signalled = true;
  kg_client_kill(run->client, SIGTERM);
}

static void
s_enter_killing(void *arg, int from, const kg_fsm_event_t *ev)
{
  kg_client_kill(((s_run_t *) arg)->client, SIGKILL);
}

static void
s_enter_done(void *arg, int from, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  if (run->signalled)
    kg_progress_event(run->pr, false, "the kernel did not exit on request; it was signalled");
  kg_loop_stop(run->loop);
}

/*  ------------------------------------------------------------------------
    The rows and the table. */

static const kg_fsm_row_t s_rows[KG_RUN_ST_COUNT] = {
  [KG_RUN_ST_STARTING]     = {s_enter_starting,     0,                KG_FSM_NONE},
  [KG_RUN_ST_WAITING]      = {s_enter_waiting,      0 /* a nudge */,  KG_RUN_EV_TIMER},
  [KG_RUN_ST_EXECUTING]    = {s_enter_executing,    0 /* the cell */, KG_RUN_EV_TIMER},
  [KG_RUN_ST_INTERRUPTING] = {s_enter_interrupting, 0 /* the cell */, KG_RUN_EV_TIMER},
  [KG_RUN_ST_JUDGING]      = {s_enter_judging,      0,                KG_FSM_NONE},
  [KG_RUN_ST_RESTARTING]   = {s_enter_restarting,   0,                KG_FSM_NONE},
  [KG_RUN_ST_STOPPING]     = {s_enter_stopping,     0 /* a grace */,  KG_RUN_EV_TIMER},
  [KG_RUN_ST_TERMINATING]  = {s_enter_terminating,  KG_TERM_GRACE_MS, KG_RUN_EV_TIMER},
  [KG_RUN_ST_KILLING]      = {s_enter_killing,      KG_KILL_GRACE_MS, KG_RUN_EV_TIMER},
  [KG_RUN_ST_DONE]         = {s_enter_done,         0,                KG_FSM_NONE},
};

static int
s_next(void *arg, int state, const kg_fsm_event_t *ev)
{
  s_run_t *run = arg;
  return kg_run_next((kg_run_state_t) state, (kg_run_event_t) ev->id, &run->clock,
                     kg_fsm_now(run->fsm));
}

static const kg_fsm_def_t s_def = {
  .nstates = KG_RUN_ST_COUNT,
  .nevents = KG_RUN_EV_COUNT,
  .state_names = kg_run_state_names,
  .event_names = kg_run_event_names,
  .rows = s_rows,
  .next = s_next,
};

/*  ------------------------------------------------------------------------
    The loop's handlers: each turns what happened into an event. */

static bool
s_in_cell(const s_run_t *run)
{
  int st = kg_fsm_state(run->fsm);
  return st == KG_RUN_ST_EXECUTING || st == KG_RUN_ST_INTERRUPTING;
}

/*  A message while a cell runs: recorded; the cell is over once both its
    reply and its idle are in, and once replied its idle is awaited only
    for a grace. */
static void
s_cell_message(s_run_t *run, kg_channel_t channel, kg_msg_t *msg)
{
  s_cell_t *cell = &run->cell;
  if (channel == KG_CH_IOPUB)
    s_on_iopub(run, cell, msg);
  else if (channel == KG_CH_SHELL)
    s_on_shell(run, cell, msg);
  if (cell->replied && cell->idle) {
    s_post(run, KG_RUN_EV_FINISHED, 0);
    return;
  }
  if (cell->replied && run->clock.idle_limit == 0) {
    bool kguard_event = cJSON_GetArraySize(cell->events) > 0;
    run->clock.idle_limit = kg_loop_now(run->loop) + kg_run_idle_grace_ms(kguard_event);
    kg_fsm_set_deadline(run->fsm, kg_run_cell_due(&run->clock));
  }
}

static void
s_on_client(void *arg, const kg_client_event_t *ev)
{
  s_run_t *run = arg;
  if (ev->kind == KG_CLIENT_EXITED) {
    s_post(run, KG_RUN_EV_CHILD_EXIT, ev->status);
    return;
  }
  if (ev->kind == KG_CLIENT_FAILED) {
    s_post(run, KG_RUN_EV_FAILED, ev->error);
    return;
  }
  if (s_in_cell(run))
    s_cell_message(run, ev->channel, ev->msg);
  else if (kg_fsm_state(run->fsm) == KG_RUN_ST_WAITING) {
    int rc = kg_client_ready_judge(&run->ready, ev->channel, ev->msg);
    if (rc == 1)
      s_post(run, KG_RUN_EV_READY, 0);
    else if (rc == KG_EDOWN)
      s_post(run, KG_RUN_EV_DOWN, 0);
  }
  /*  Else shutting down: nothing more is read from the kernel. */
}

static int
s_on_signal(kg_loop_t *loop, int signo, void *arg)
{
  s_run_t *run = arg;
  kg_run_signal_t what = kg_run_on_signal((kg_run_state_t) kg_fsm_state(run->fsm), signo,
                                          run->sigints);
  if (signo == SIGINT)
    run->sigints++;
  if (what == KG_RUN_SIG_INTERRUPT) {
    kg_progress_event(run->pr, true, "interrupted: interrupting cell %zu "
                      "(Ctrl-C again to stop at once)", run->pos + 1);
    run->cell.user_interrupt = true;
    s_interrupt(run);
  }
  else if (what == KG_RUN_SIG_STOP) {
    if (s_in_cell(run))
      run->stop_signal = signo;   /* the cell ends "interrupted"; no lingering */
    s_post(run, KG_RUN_EV_STOP, signo);
  }
  return KG_LOOP_OK;
}

static int64_t
s_deadline_when(void *arg)
{
  return kg_fsm_deadline(((s_run_t *) arg)->fsm);
}

static int
s_on_deadline(kg_loop_t *loop, int id, void *arg)
{
  kg_fsm_tick(((s_run_t *) arg)->fsm, kg_loop_now(loop));
  return KG_LOOP_OK;
}

/*  The live line, while a cell runs. */
static int64_t
s_tick_when(void *arg)
{
  s_run_t *run = arg;
  return s_in_cell(run) ? run->tick_at : 0;
}

static int
s_on_tick(kg_loop_t *loop, int id, void *arg)
{
  s_run_t *run = arg;
  kg_progress_tick(run->pr);
  run->tick_at = kg_loop_now(loop) + KG_TICK_MS;
  return KG_LOOP_OK;
}

/*  The run's end, once the kernel had answered: the result, the notebook
    written a last time, and the summary. */
static void
s_conclude(s_run_t *run)
{
  int code = run->exit_code;
  if (code == 0 && cJSON_GetArraySize(kg_run_record_not_restored(run->record)) > 0)
    code = KG_RUN_EXIT_NOT_RESTORED;
  s_metadata(run, s_result_name(code), run->done);
  int rc = kg_notebook_save(run->nb, run->cfg->output_path);
  if (rc != 0) {
    kg_progress_event(run->pr, true, "unable to write %s: %s", run->cfg->output_path,
                      kg_strerror(rc));
    code = KG_EXIT_SYSTEM;
  }
  kg_run_story_summary(run->pr, run->record, code, run->done, run->ncode, run->executions,
                       run->restarts, run->cfg->log_path);
  if (rc == 0)
    kg_progress_event(run->pr, true, "  executed notebook: %s", run->cfg->output_path);
  run->exit_code = code;
}

/*  ------------------------------------------------------------------------
    The run. */

/*  The code cells to run, the outputs' recorder and the incidents' record.
    0, or KG_ENOMEM. */
static int
s_prepare(s_run_t *run)
{
  size_t ncells = kg_notebook_cell_count(run->nb);
  run->code = calloc(ncells + 1, sizeof *run->code);
  run->outputs = kg_outputs_new();
  cJSON *kguard = kg_notebook_kguard_metadata(run->nb);
  if (kguard) {
    cJSON_DeleteItemFromObjectCaseSensitive(kguard, "incidents");
    run->record = kg_run_record_new(cJSON_AddArrayToObject(kguard, "incidents"),
                                    run->cfg->state_dir, run->pr);
  }
  if (!run->code || !run->outputs || !run->record)
    return KG_ENOMEM;
  kg_notebook_reset_all(run->nb);
  for (size_t i = 0; i < ncells; i++) {
    if (!kg_notebook_is_code(run->nb, i))
      continue;
    char *src = kg_notebook_source(run->nb, i);
    if (src && !s_blank(src))
      run->code[run->ncode++] = i;
    free(src);
  }
  return 0;
}

/*  The loop and the machine, the state's deadline and the live line on it
    (the client's sources and the signals join once the kernel is spawned).
    0, or KG_ENOMEM. */
static int
s_attach(s_run_t *run)
{
  run->loop = kg_loop_new();
  run->fsm = kg_fsm_new(&s_def, run, 8);
  if (!run->loop || !run->fsm
      || kg_loop_timer_of(run->loop, s_deadline_when, s_on_deadline, run) < 0
      || kg_loop_timer_of(run->loop, s_tick_when, s_on_tick, run) < 0)
    return KG_ENOMEM;
  return 0;
}

int
kg_runner_run(kg_notebook_t *nb, const kg_runner_config_t *cfg, kg_progress_t *pr)
{
  s_run_t run = {.nb = nb, .cfg = cfg, .pr = pr, .exit_code = KG_EXIT_SYSTEM};
  if (s_prepare(&run) != 0 || s_attach(&run) != 0)
    kg_progress_event(pr, true, "out of memory");
  else {
    kg_fsm_start(run.fsm, KG_RUN_ST_STARTING, kg_loop_now(run.loop));
    int rc = 0;
    if (kg_fsm_state(run.fsm) != KG_RUN_ST_DONE)
      rc = kg_loop_run(run.loop);
    if (rc < 0) {
      kg_progress_event(pr, true, "unable to wait for the kernel: %s", kg_strerror(rc));
      run.exit_code = KG_EXIT_SYSTEM;
    }
  }
  kg_client_destroy(&run.client);
  if (run.signals_id)
    kg_loop_remove(run.loop, run.signals_id);
  kg_fsm_destroy(&run.fsm);
  kg_loop_destroy(&run.loop);
  s_cell_free(&run.cell);
  kg_outputs_destroy(&run.outputs);
  kg_run_record_destroy(&run.record);
  free(run.code);
  return run.exit_code;
}
