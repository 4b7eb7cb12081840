/*  kg_gate: the pure routing decision and the stale-request rule (see
    kg_gate.h). */
#include "kg_gate.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct kg_gate_t {
  int64_t window_ms;            /*  stale window after the notice             */
  bool fault;                   /*  a fault whose window has not been cleared */
  kg_gate_fault_t cause;
  int64_t fault_ms;             /*  T                                         */
  int64_t notice_ms;            /*  0: notice not published yet               */
  int64_t notice_wall_ms;
  int64_t told_wall_ms;         /*  first time the frontend was told (reply
                                    metadata or notice); 0: not yet        */
  char *incident;               /*  owned, or NULL                            */
  /* the kernel's own queue (kg_gate.h): ids owned, or NULL */
  char *running_id;             /*  execute request the kernel said busy for  */
  char *input_id;               /*  the kernel's input_request awaiting its
                                    reply (one is forwarded), or NULL        */
  char *abort_idle_id;          /*  error reply seen, its idle awaited        */
  char *abort_probe_id;         /*  kguard's probe, its reply awaited         */
  int64_t abort_ms;             /*  when that error reply came                */
};

/*  Replace the owned string *field with a copy of value (NULL or "" clear
    it; out of memory keeps the old value rather than none). */
static void
s_set(char **field, const char *value)
{
  char *copy = value && *value ? strdup(value) : NULL;
  if (value && *value && !copy)
    return;
  free(*field);
  *field = copy;
}

kg_gate_t *
kg_gate_new(int64_t stale_window_ms)
{
  kg_gate_t *self = calloc(1, sizeof *self);
  if (self)
    self->window_ms = stale_window_ms < 0 ? KG_GATE_STALE_WINDOW_MS_DEFAULT : stale_window_ms;
  return self;
}

void
kg_gate_destroy(kg_gate_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free((*self_p)->incident);
  free((*self_p)->running_id);
  free((*self_p)->input_id);
  free((*self_p)->abort_idle_id);
  free((*self_p)->abort_probe_id);
  free(*self_p);
  *self_p = NULL;
}

void
kg_gate_fault(kg_gate_t *self, kg_gate_fault_t cause, int64_t now_ms)
{
  assert(self);
  /* One incident, one T: a death while stopping after a sticky error is the
     same incident, and its window has not started yet. */
  if (self->fault && self->notice_ms == 0)
    return;
  self->fault = true;
  self->cause = cause;
  self->fault_ms = now_ms;
  self->notice_ms = 0;
  self->told_wall_ms = 0;
  kg_gate_set_incident(self, NULL);
}

void
kg_gate_told(kg_gate_t *self, int64_t wall_ms)
{
  assert(self);
  if (self->fault && self->notice_ms == 0 && self->told_wall_ms == 0)
    self->told_wall_ms = wall_ms > 0 ? wall_ms : 1;
}

void
kg_gate_set_incident(kg_gate_t *self, const char *incident_id)
{
  assert(self);
  char *copy = incident_id && *incident_id ? strdup(incident_id) : NULL;
  free(self->incident);
  self->incident = copy;
}

void
kg_gate_notice(kg_gate_t *self, int64_t now_ms, int64_t wall_ms)
{
  assert(self);
  if (self->fault && self->notice_ms == 0) {
    self->notice_ms = now_ms > 0 ? now_ms : 1;
    self->notice_wall_ms = wall_ms;
    if (self->told_wall_ms == 0)
      self->told_wall_ms = wall_ms > 0 ? wall_ms : 1;
  }
}

void
kg_gate_clear(kg_gate_t *self)
{
  assert(self);
  self->fault = false;
  self->notice_ms = 0;
}

int64_t
kg_gate_made_ms(int64_t sent_wall_ms, kg_gate_clock_t clock)
{
  return sent_wall_ms > 0 && clock.known ? sent_wall_ms + clock.offset_ms : 0;
}

bool
kg_gate_stale(const kg_gate_t *self, int64_t now_ms, int64_t made_wall_ms)
{
  if (!self->fault || now_ms < self->fault_ms)
    return false;
  if (self->notice_ms && now_ms >= self->notice_ms + self->window_ms)
    return false;   /* the window after the notice is over */
  if (self->told_wall_ms == 0)
    return true;    /* nobody can have seen the failure yet */
  /* made before the frontend was told: sent by someone who did not know */
  return made_wall_ms <= 0 || made_wall_ms < self->told_wall_ms;
}

const char *
kg_gate_incident(const kg_gate_t *self)
{
  assert(self);
  return self->incident ? self->incident : "";
}

kg_gate_fault_t
kg_gate_fault_cause(const kg_gate_t *self)
{
  assert(self);
  return self->cause;
}

int64_t
kg_gate_window_ms(const kg_gate_t *self)
{
  assert(self);
  return self->window_ms;
}

static kg_gate_decision_t
s_decision(kg_gate_action_t action, kg_gate_why_t why)
{
  kg_gate_decision_t d = {action, why};
  return d;
}

static bool
s_ends_with(const char *s, const char *suffix)
{
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

kg_gate_msg_t
kg_gate_kind(const char *msg_type, bool inband)
{
  if (!msg_type)
    return KG_GATE_MSG_OTHER;
  if (strcmp(msg_type, "execute_request") == 0)
    return inband ? KG_GATE_MSG_INBAND : KG_GATE_MSG_EXECUTE;
  if (strcmp(msg_type, "shutdown_request") == 0)
    return KG_GATE_MSG_SHUTDOWN;
  if (strcmp(msg_type, "interrupt_request") == 0)
    return KG_GATE_MSG_INTERRUPT;
  if (strcmp(msg_type, "kernel_info_request") == 0)
    return KG_GATE_MSG_KERNEL_INFO;
  return s_ends_with(msg_type, "_request") ? KG_GATE_MSG_REQUEST : KG_GATE_MSG_OTHER;
}

kg_gate_decision_t
kg_gate_decide(const kg_gate_t *self, const kg_gate_input_t *in)
{
  assert(self);
  bool open = kg_state_gate_open(in->state);
  if (kg_state_exiting(in->state))
    return s_decision(KG_GATE_DROP, KG_GATE_WHY_NONE);
  if (in->channel == KG_CH_STDIN)   /* input for the kernel that asked */
    return s_decision(open && self->input_id ? KG_GATE_FORWARD : KG_GATE_DROP,
                      KG_GATE_WHY_NONE);
  /* What kguard handles itself, whatever the queues hold. */
  if (in->channel == KG_CH_CONTROL) {
    if (in->kind == KG_GATE_MSG_SHUTDOWN)   /* the kernel replies, or kguard does */
      return open && in->kernel_alive ? s_decision(KG_GATE_FORWARD, KG_GATE_WHY_NONE)
                                      : s_decision(KG_GATE_ANSWER, KG_GATE_WHY_SHUTDOWN);
    if (in->kind == KG_GATE_MSG_INTERRUPT && in->interrupt_by_signal)
      return s_decision(KG_GATE_ANSWER, open && in->kernel_alive ? KG_GATE_WHY_SIGNAL
                                                                 : KG_GATE_WHY_INTERRUPT);
    if (in->kind == KG_GATE_MSG_INBAND)   /* `kguard restart`: out of band, at once */
      return s_decision(KG_GATE_FORWARD, KG_GATE_WHY_NONE);
  }
  if (in->kind == KG_GATE_MSG_KERNEL_INFO && !open && (in->info_cached || in->state == KG_ST_DOWN))
    return s_decision(KG_GATE_ANSWER, KG_GATE_WHY_INFO);
  /* Every other request is an ordinary one from here. */
  kg_gate_msg_t kind = in->kind;
  if (kind == KG_GATE_MSG_SHUTDOWN || kind == KG_GATE_MSG_INTERRUPT
      || kind == KG_GATE_MSG_KERNEL_INFO)
    kind = KG_GATE_MSG_REQUEST;
  if (in->state == KG_ST_DOWN) {
    /* In order behind a queued `%kguard restart`; else kguard answers. */
    if (kind == KG_GATE_MSG_INBAND)
      return s_decision(in->queue_waiting ? KG_GATE_HOLD : KG_GATE_FORWARD, KG_GATE_WHY_NONE);
    if (kind == KG_GATE_MSG_OTHER)
      return s_decision(KG_GATE_DROP, KG_GATE_WHY_NONE);
    return s_decision(KG_GATE_ANSWER, KG_GATE_WHY_DOWN);
  }
  if (kind == KG_GATE_MSG_EXECUTE
      && kg_gate_stale(self, in->now_ms, kg_gate_made_ms(in->sent_wall_ms, in->clock)))
    return s_decision(KG_GATE_ANSWER, KG_GATE_WHY_STALE);
  if (in->channel == KG_CH_SHELL) {
    /* One execute_request in the kernel at a time, in arrival order; a
       `%kguard` cell is answered by kguard even while the gate is closed. */
    bool turn = !in->queue_waiting
                && (open ? !in->in_flight : kind == KG_GATE_MSG_INBAND);
    return s_decision(turn ? KG_GATE_FORWARD : KG_GATE_HOLD, KG_GATE_WHY_NONE);
  }
  return s_decision(open ? KG_GATE_FORWARD : KG_GATE_HOLD, KG_GATE_WHY_NONE);
}

const char *
kg_gate_action_name(kg_gate_action_t action)
{
  static const char *names[] = {"FORWARD", "ANSWER", "HOLD", "DROP"};
  return (unsigned) action < sizeof names / sizeof names[0] ? names[action] : "?";
}

bool
kg_gate_abort_begin(kg_gate_t *self, const char *request_id, bool idle_seen, int64_t now_ms)
{
  assert(self);
  self->abort_ms = now_ms;
  s_set(&self->abort_probe_id, NULL);
  if (idle_seen) {
    s_set(&self->abort_idle_id, NULL);
    return true;
  }
  /* a reply without a parent id: no idle can be matched to it, no wait */
  s_set(&self->abort_idle_id, request_id);
  return false;
}

bool
kg_gate_abort_idle(kg_gate_t *self, const char *parent_id)
{
  if (!self->abort_idle_id || !parent_id || strcmp(parent_id, self->abort_idle_id) != 0)
    return false;
  s_set(&self->abort_idle_id, NULL);
  return true;
}

void
kg_gate_abort_probe_sent(kg_gate_t *self, const char *probe_id)
{
  assert(self);
  s_set(&self->abort_probe_id, probe_id);
}

bool
kg_gate_abort_answered(kg_gate_t *self, const char *parent_id)
{
  if (!self->abort_probe_id || !parent_id || strcmp(parent_id, self->abort_probe_id) != 0)
    return false;
  s_set(&self->abort_probe_id, NULL);
  return true;
}

void
kg_gate_abort_clear(kg_gate_t *self)
{
  assert(self);
  s_set(&self->abort_idle_id, NULL);
  s_set(&self->abort_probe_id, NULL);
}

bool
kg_gate_abort_active(const kg_gate_t *self)
{
  assert(self);
  return self->abort_idle_id || self->abort_probe_id;
}

int64_t
kg_gate_abort_deadline(const kg_gate_t *self)
{
  assert(self);
  return kg_gate_abort_active(self) ? self->abort_ms + KG_GATE_ABORT_PROBE_MS : 0;
}

void
kg_gate_input_asked(kg_gate_t *self, const char *request_id)
{
  s_set(&self->input_id, request_id);
}

bool
kg_gate_input_awaited(const kg_gate_t *self)
{
  return self->input_id != NULL;
}

void
kg_gate_set_running(kg_gate_t *self, const char *request_id)
{
  assert(self);
  s_set(&self->running_id, request_id);
}

const char *
kg_gate_running(const kg_gate_t *self)
{
  assert(self);
  return self->running_id;
}
