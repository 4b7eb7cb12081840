/*  kg_run_prepare: resume-prepare before the kernel starts. See
    kg_run_prepare.h. */
#include "kg_run_prepare.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_helper.h"
#include "kg_loop.h"

/*  Bounds of the helper, as the kernel supervisor's: resume-prepare prints
    one JSON object, and progress lines while it reads. */
#define S_OUT_MAX (1 << 20)
#define S_STALL_MS 60000

typedef struct {
  kg_helper_t *helper;
  int which;                    /*  1 stdout, 2 stderr                       */
} s_pipe_t;

static int
s_fd_of(void *arg)
{
  s_pipe_t *p = arg;
  return kg_helper_fd(p->helper, p->which);
}

static int
s_on_pipe(kg_loop_t *loop, int id, int events, void *arg)
{
  return kg_helper_pump(((s_pipe_t *) arg)->helper, kg_loop_now(loop)) ? KG_LOOP_STOP
                                                                        : KG_LOOP_OK;
}

static int64_t
s_when(void *arg)
{
  return kg_helper_deadline(arg);
}

/*  The stall deadline, or a look again for a child whose pipes closed
    before it was reaped. */
static int
s_on_deadline(kg_loop_t *loop, int id, void *arg)
{
  kg_helper_timers(arg, kg_loop_now(loop));
  return kg_helper_pump(arg, kg_loop_now(loop)) ? KG_LOOP_STOP : KG_LOOP_OK;
}

int
kg_run_prepare(const kg_run_prepare_t *what, char **out_p, char *err, size_t errlen)
{
  *out_p = NULL;
  char before[32];
  snprintf(before, sizeof before, "%lld", what->before_ms);
  char *argv[] = {(char *) what->exe, "ckpt", "resume-prepare", "--dir", (char *) what->dir,
                  "--before", before, "--incident", (char *) what->incident,
                  "--into", (char *) what->into, "--run", (char *) what->run_id, "--json",
                  "--progress=machine", NULL};
  kg_helper_t *helper = kg_helper_new("checkpoint choice", S_OUT_MAX, S_STALL_MS);
  kg_loop_t *loop = kg_loop_new();
  s_pipe_t pipes[2] = {{helper, 1}, {helper, 2}};
  int rc = helper && loop ? 0 : KG_ENOMEM;
  if (rc == 0)
    rc = kg_helper_start(helper, argv, NULL, kg_loop_now(loop));
  if (rc == 0 && (kg_loop_fd_of(loop, s_fd_of, KG_LOOP_IN, s_on_pipe, &pipes[0]) < 0
                  || kg_loop_fd_of(loop, s_fd_of, KG_LOOP_IN, s_on_pipe, &pipes[1]) < 0
                  || kg_loop_timer_of(loop, s_when, s_on_deadline, helper) < 0))
    rc = KG_ENOMEM;
  if (rc == 0)
    rc = kg_loop_run(loop);
  if (rc == 0 && kg_helper_stalled(helper))
    rc = KG_ETIMEOUT;
  if (rc == 0 && !(*out_p = strdup(kg_helper_out(helper))))
    rc = KG_ENOMEM;
  if (rc != 0)
    kg_errf(err, errlen, "`kguard ckpt resume-prepare` %s",
            rc == KG_ETIMEOUT ? "stalled (no output for 60 s) and was killed"
                              : kg_strerror(rc));
  kg_loop_destroy(&loop);
  kg_helper_destroy(&helper);
  return rc;
}
