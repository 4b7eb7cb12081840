/*  kg_runner: the execution policy of `kguard run`.

    Executes the notebook's code cells in order through a `kguard kernel`
    child (kg_client), one request at a time, as nbclient does: an
    execute_request (silent false, store_history true, allow_stdin false,
    stop_on_error true), then the outputs of that request until both its
    execute_reply and its iopub idle have arrived.

    After a restart by kguard (the reply's or a notice's metadata.kguard.event
    is "sticky-restart" or "kernel-died", or the reply's ename is
    KernelRestarted), the fresh kernel has none of the earlier cells' state:
    the runner executes the notebook again from its first code cell through
    the failed one (training code resumes from the restored checkpoint through
    kguard.resume()), then goes on. The written notebook holds the outputs of
    each cell's final execution; every incident is listed in the notebook
    metadata under kguard.incidents.
*/
#ifndef KG_RUNNER_H
#define KG_RUNNER_H

#include <stdbool.h>

#include "kg_client.h"
#include "kg_notebook.h"
#include "kg_progress.h"
#include "kg_sigsrc.h"

/*  Exit codes of `kguard run` (besides KG_EXIT_USAGE 100 and KG_EXIT_SYSTEM
    111 of kg_cli.h). */
#define KG_RUN_EXIT_CELL_ERROR 1    /* a cell raised an error                 */
#define KG_RUN_EXIT_GAVE_UP 2       /* kguard stopped restarting ("down"), or
                                       --max-restarts was exceeded            */
#define KG_RUN_EXIT_BAD_NOTEBOOK 3  /* unreadable notebook or unknown kernel  */
#define KG_RUN_EXIT_TIMEOUT 4       /* a cell ran past --timeout             */
#define KG_RUN_EXIT_NOT_RESTORED 5  /* every cell ran, but after a restart a
                                       verified checkpoint could not be
                                       restored (notice metadata
                                       kguard.checkpoint.status "failed"):
                                       training started over              */
#define KG_RUN_EXIT_INTERRUPTED 130 /* Ctrl-C (SIGINT) or SIGTERM             */

typedef struct {
  const char *output_path;      /*  where the executed notebook goes       */
  double timeout_s;             /*  per cell; <= 0: none                   */
  int max_restarts;             /*  restarts `run` follows before giving up */
  double startup_timeout_s;     /*  for the kernel to answer kernel_info   */
  const char *state_dir;        /*  resolved, for incident paths           */
  const char *log_path;         /*  the kernel's log (for the summary)     */
  bool show_output;             /*  show the cells' output as it arrives   */
  const char *notebook;         /*  the input notebook, for the record     */
  const char *run_id;           /*  the run (kg_run_resume.h), or NULL     */
  bool resumed;                 /*  the kernel resumes a checkpoint (--resume) */
  long long resumed_step;       /*  its step, -1 if unknown                */
  kg_sigsrc_t *signals;         /*  the caller's signals (borrowed), or NULL:
                                    read on the run's loop                 */
  kg_client_config_t client;    /*  how to start the kernel                */
} kg_runner_config_t;

/*  Run every code cell of nb (edited in place: outputs, execution counts,
    metadata.kguard) and write it to config->output_path, unless the kernel
    could not start: after every cell (metadata.kguard.run.result "running"
    until the end), so a killed run keeps the cells it finished. progress reports to the terminal. Returns the process
    exit code. */
int kg_runner_run(kg_notebook_t *nb, const kg_runner_config_t *config,
                  kg_progress_t *progress);

#endif
