/*  kg_hangwatch: one heartbeat pinger per kernel process and the reason a
    hang was declared (kg_hangwatch.h). */
#include "kg_hangwatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_child.h"
#include "kg_error.h"

struct kg_hangwatch_t {
  void *ctx;                    /*  borrowed                                 */
  kg_kernel_hb_config_t cfg;
  kg_kernel_hb_t *hb;           /*  owned, or NULL: nothing watched          */
  pid_t pid;                    /*  the process hb pings (0: none)           */
  char *reason;                 /*  owned, or NULL                           */
};

kg_hangwatch_t *
kg_hangwatch_new(void *zmq_ctx, const kg_kernel_hb_config_t *cfg)
{
  kg_hangwatch_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->ctx = zmq_ctx;
  self->cfg = cfg ? *cfg
                  : (kg_kernel_hb_config_t){.period_ms = KG_KHB_PERIOD_MS_DEFAULT,
                                            .max_missed = KG_KHB_MISSES_DEFAULT};
  return self;
}

void
kg_hangwatch_destroy(kg_hangwatch_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_kernel_hb_destroy(&(*self_p)->hb);
  free((*self_p)->reason);
  free(*self_p);
  *self_p = NULL;
}

const kg_kernel_hb_config_t *
kg_hangwatch_config(const kg_hangwatch_t *self)
{
  return &self->cfg;
}

bool
kg_hangwatch_watches(const kg_hangwatch_t *self, pid_t pid)
{
  return self->hb && pid > 0 && self->pid == pid;
}

void
kg_hangwatch_forget(kg_hangwatch_t *self)
{
  kg_kernel_hb_destroy(&self->hb);
  self->pid = 0;
}

int
kg_hangwatch_watch(kg_hangwatch_t *self, pid_t pid, const char *endpoint)
{
  kg_hangwatch_forget(self);
  if (pid <= 0 || !endpoint || !*endpoint)
    return KG_EUSAGE;
  self->hb = kg_kernel_hb_new(self->ctx, endpoint, &self->cfg);
  if (!self->hb)
    return KG_ENOMEM;
  self->pid = pid;
  return 0;
}

void
kg_hangwatch_idle(kg_hangwatch_t *self, int64_t now)
{
  if (self->hb)
    kg_kernel_hb_arm(self->hb, false, now);
}

bool
kg_hangwatch_tick(kg_hangwatch_t *self, int64_t now)
{
  if (!self->hb)
    return false;
  kg_kernel_hb_arm(self->hb, true, now);
  if (kg_kernel_hb_tick(self->hb, now) != KG_KHB_HUNG)
    return false;
  char *why = kg_hangwatch_describe(&self->cfg, kg_child_proc_state(self->pid));
  if (why) {   /* out of memory keeps the older reason (or none) */
    free(self->reason);
    self->reason = why;
  }
  return true;
}

int64_t
kg_hangwatch_deadline(const kg_hangwatch_t *self)
{
  return self->hb ? kg_kernel_hb_deadline(self->hb) : 0;
}

const char *
kg_hangwatch_reason(const kg_hangwatch_t *self)
{
  return self->reason;
}

char *
kg_hangwatch_describe(const kg_kernel_hb_config_t *cfg, char proc_state)
{
  double seconds = (double) (cfg->period_ms * cfg->max_missed) / 1000.0;
  const char *stopped = proc_state == 'T' ? " (the process is stopped: SIGSTOP)" : "";
  int n = snprintf(NULL, 0, "it stopped answering its heartbeat for %.3g s%s", seconds, stopped);
  char *text = n >= 0 ? malloc((size_t) n + 1) : NULL;
  if (text)
    snprintf(text, (size_t) n + 1, "it stopped answering its heartbeat for %.3g s%s", seconds,
             stopped);
  return text;
}
