/*  kg_kernel: see kg_kernel.h. */
#include "kg_kernel.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_child.h"
#include "kg_clock.h"
#include "kg_error.h"
#include "kg_foreign.h"
#include "kg_log.h"
#include "kg_outq.h"
#include "kg_socket.h"

struct kg_kernel_t {
  void *ctx;                    /*  borrowed                                 */
  char *runtime_dir;            /*  owned copies                             */
  char *conn_path;
  char *tag;                    /*  endpoint and routing id name             */
  const kg_conninfo_t *key_from;/*  borrowed                                 */
  kg_rotlog_t *log;             /*  borrowed                                 */
  kg_foreign_t *foreign[2];     /*  what strangers make ipykernel print, out */
  kg_conninfo_t *info;          /*  the private connection file's contents   */
  kg_signer_t *signer;          /*  its key                                  */
  void *sock[KG_CH_COUNT];      /*  DEALER x3 (one routing id), SUB iopub    */
  kg_outq_t *outq[KG_CH_COUNT]; /*  for the DEALERs; NULL for iopub and hb   */
  char routing_id[40];
  kg_child_t *child;            /*  the process, until released              */
  kg_ring_t *ring[2];           /*  stdout, stderr                           */
  int generation;               /*  kernels started                          */
  kg_ready_t *ready;            /*  kernel_info nudges, reply and iopub seen */
  kg_loop_t *loop;              /*  told of each send, or NULL (borrowed)    */
  bool signalled;               /*  SIGTERM/SIGKILL sent by kguard           */
  char *reason;                 /*  why the last start failed, or NULL       */
};

kg_kernel_t *
kg_kernel_new(const kg_kernel_opts_t *opts)
{
  kg_kernel_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->ctx = opts->ctx;
  self->key_from = opts->key_from;
  self->log = opts->log;
  self->loop = opts->loop;
  self->runtime_dir = strdup(opts->runtime_dir ? opts->runtime_dir : "");
  self->conn_path = strdup(opts->conn_path ? opts->conn_path : "");
  self->tag = strdup(opts->tag ? opts->tag : "k");
  self->info = kg_conninfo_new();
  self->ring[0] = kg_ring_new(opts->ring_bytes, opts->log);
  self->ring[1] = kg_ring_new(opts->ring_bytes, opts->log);
  self->foreign[0] = kg_foreign_new();
  self->foreign[1] = kg_foreign_new();
  self->ready = kg_ready_new();
  bool queues = true;
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    if (ch == KG_CH_SHELL || ch == KG_CH_CONTROL || ch == KG_CH_STDIN)
      queues = queues && (self->outq[ch] = kg_outq_new(KG_OUTQ_MAX_MSGS, KG_OUTQ_MAX_BYTES));
  if (!queues || !self->ready || !self->foreign[0] || !self->foreign[1] || !self->runtime_dir || !self->conn_path || !self->tag || !self->info
      || !self->ring[0]
      || !self->ring[1])
    kg_kernel_destroy(&self);
  return self;
}

static void
s_close_sockets(kg_kernel_t *self)
{
  assert(self);
  for (int ch = 0; ch < KG_CH_COUNT; ch++) {
    if (self->outq[ch])
      kg_outq_clear(self->outq[ch]);   /* meant for the previous kernel */
    kg_socket_close(&self->sock[ch]);
  }
}

void
kg_kernel_destroy(kg_kernel_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_kernel_t *self = *self_p;
  kg_child_destroy(&self->child);   /* SIGKILL to its group if not reaped */
  s_close_sockets(self);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    kg_outq_destroy(&self->outq[ch]);
  kg_signer_destroy(&self->signer);
  kg_conninfo_destroy(&self->info);
  kg_ring_destroy(&self->ring[0]);
  kg_ring_destroy(&self->ring[1]);
  kg_foreign_destroy(&self->foreign[0]);
  kg_foreign_destroy(&self->foreign[1]);
  kg_ready_destroy(&self->ready);
  free(self->runtime_dir);
  free(self->conn_path);
  free(self->tag);
  free(self->reason);
  free(self);
  *self_p = NULL;
}

static void
s_set_reason(kg_kernel_t *self, const char *reason)
{
  assert(self);
  free(self->reason);
  self->reason = reason ? strdup(reason) : NULL;
}

static int
s_connect(kg_kernel_t *self)
{
  assert(self);
  s_close_sockets(self);
  snprintf(self->routing_id, sizeof self->routing_id, "kguard-%ld-%.8s%d", (long) getpid(),
           self->tag, self->generation);
  static const kg_channel_t chans[] = {KG_CH_SHELL, KG_CH_IOPUB, KG_CH_STDIN, KG_CH_CONTROL};
  for (size_t i = 0; i < 4; i++) {
    int rc = 0;
    self->sock[chans[i]] = kg_socket_connect(self->ctx, self->info, chans[i],
                                             self->routing_id, &rc);
    if (!self->sock[chans[i]]) {
      kg_error("unable to connect to the kernel's %s channel: %s",
               kg_channel_name(chans[i]), kg_strerror(rc));
      return rc ? rc : KG_EINTERNAL;
    }
  }
  return 0;
}

/*  The connection file of this generation: ipc endpoints in the runtime
    directory (fresh names per generation, so a late message of the old
    kernel cannot reach the new sockets), and the shared key. */
static int
s_connection(kg_kernel_t *self)
{
  assert(self);
  snprintf(self->info->transport, sizeof self->info->transport, "ipc");
  snprintf(self->info->ip, sizeof self->info->ip, "%.200s/%.8s", self->runtime_dir, self->tag);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    self->info->ports[ch] = 1 + ch + 5 * (self->generation % 10000);
  /* The frontend's key (the file lives in kguard's 0700 runtime dir): the
     kernel's signatures go to the frontend as they are, no HMAC again. */
  int rc = self->key_from ? kg_conninfo_share_key(self->info, self->key_from)
                          : kg_conninfo_set_random_key(self->info);
  if (rc == 0) {
    kg_signer_destroy(&self->signer);
    self->signer = kg_signer_new(self->info->key, self->info->key_len);
    if (!self->signer)
      rc = KG_ENOMEM;
  }
  if (rc == 0 && (rc = kg_conninfo_save(self->info, self->conn_path)) != 0)
    kg_error("unable to write %s: %s", self->conn_path, kg_strerror(rc));
  return rc;
}

int
kg_kernel_start(kg_kernel_t *self, char *const *argv, char *const *envp, const char *banner)
{
  assert(self);
  s_set_reason(self, NULL);
  if (self->child) {
    s_set_reason(self, "the previous kernel was not released");
    return KG_EINTERNAL;
  }
  self->generation++;
  self->signalled = false;
  kg_ready_reset(self->ready, kg_clock_mono_ms());   /* nothing seen, nudge at once */
  int rc = s_connection(self);
  if (rc == 0)
    rc = s_connect(self);
  if (rc) {
    s_set_reason(self, "unable to prepare the kernel's connection");
    return rc;
  }
  kg_ring_clear(self->ring[0]);
  kg_ring_clear(self->ring[1]);
  if (banner)
    kg_rotlog_write(self->log, banner, strlen(banner));
  /* The keeper: the kernel's whole group (DataLoader workers, Popen'd
     children) dies with kguard, even when kguard is SIGKILLed. */
  kg_child_opts_t opts = {.argv = argv, .envp = envp, .capture = true, .keeper = true};
  rc = kg_child_spawn(&opts, &self->child);
  if (rc) {
    char buf[PATH_MAX + 200];
    snprintf(buf, sizeof buf, "unable to start the kernel `%s`: %s", argv[0],
             kg_strerror(rc));
    s_set_reason(self, buf);
    if (!self->reason)
      s_set_reason(self, "unable to start the kernel");
    rc = KG_ESPAWN;
  }
  return rc;
}

const char *
kg_kernel_reason(const kg_kernel_t *self)
{
  assert(self);
  return self->reason ? self->reason : "";
}

int
kg_kernel_endpoint(const kg_kernel_t *self, kg_channel_t ch, char *buf, size_t len)
{
  assert(self);
  if (self->generation == 0)
    return KG_ENOKERNEL;
  return kg_conninfo_endpoint(self->info, ch, buf, len);
}

const char *
kg_kernel_conn_path(const kg_kernel_t *self)
{
  assert(self);
  return self->conn_path;
}

int
kg_kernel_generation(const kg_kernel_t *self)
{
  assert(self);
  return self->generation;
}

bool
kg_kernel_present(const kg_kernel_t *self)
{
  assert(self);
  return self->child != NULL;
}

bool
kg_kernel_alive(const kg_kernel_t *self)
{
  assert(self);
  return self->child && !kg_child_exited(self->child);
}

bool
kg_kernel_exiting(const kg_kernel_t *self)
{
  assert(self);
  return kg_kernel_alive(self) && kg_child_proc_state(kg_child_pid(self->child)) == 'Z';
}

pid_t
kg_kernel_pid(const kg_kernel_t *self)
{
  assert(self);
  return self->child ? kg_child_pid(self->child) : -1;
}

void *
kg_kernel_socket(const kg_kernel_t *self, kg_channel_t ch)
{
  assert(self);
  return ch >= 0 && ch < KG_CH_COUNT ? self->sock[ch] : NULL;
}

kg_signer_t *
kg_kernel_signer(const kg_kernel_t *self)
{
  assert(self);
  return self->signer;
}

int
kg_kernel_send(kg_kernel_t *self, kg_channel_t ch, kg_msg_t *msg, kg_outq_class_t cls)
{
  assert(self);
  void *sock = kg_kernel_socket(self, ch);
  kg_outq_t *q = sock && self->signer ? self->outq[ch] : NULL;
  if (!q)
    return KG_ENOKERNEL;
  int rc = kg_outq_send(q, sock, self->signer, msg, cls);
  if (self->loop)
    kg_loop_sent(self->loop, sock);   /* the send may have taken its input's edge */
  return rc > 0 ? 0 : rc;   /* queued counts as sent */
}

size_t
kg_kernel_flush(kg_kernel_t *self, kg_channel_t ch)
{
  assert(self);
  void *sock = kg_kernel_socket(self, ch);
  size_t n = sock && self->outq[ch] ? kg_outq_flush(self->outq[ch], sock, self->signer) : 0;
  if (n && self->loop)
    kg_loop_sent(self->loop, sock);   /* a send that failed is no wake-up */
  return n;
}

size_t
kg_kernel_queued(const kg_kernel_t *self, kg_channel_t ch)
{
  assert(self);
  return ch >= 0 && ch < KG_CH_COUNT && self->outq[ch] ? kg_outq_length(self->outq[ch]) : 0;
}

int
kg_kernel_output_fd(const kg_kernel_t *self, int which)
{
  if (!self->child)
    return -1;
  return which == 1 ? kg_child_stdout_fd(self->child) : kg_child_stderr_fd(self->child);
}

size_t
kg_kernel_drain(kg_kernel_t *self, kg_kernel_output_fn *fn, void *arg)
{
  if (!self->child)
    return 0;
  /* One poll says which pipe has anything: the relay drains both before
     every execute_reply it passes on, and they are almost always empty
     (one system call then, not a read per pipe). */
  struct pollfd fds[2] = {{kg_child_stdout_fd(self->child), POLLIN, 0},
                          {kg_child_stderr_fd(self->child), POLLIN, 0}};
  if (poll(fds, 2, 0) <= 0)
    return 0;
  char buf[65536], kept[sizeof buf + KG_FOREIGN_HOLD];
  size_t total = 0;
  for (int which = 1; which <= 2; which++) {
    if (fds[which - 1].fd < 0 || !fds[which - 1].revents)
      continue;
    kg_foreign_t *foreign = self->foreign[which - 1];
    unsigned long before = kg_foreign_lines(foreign);
    for (int i = 0; i < 64; i++) {   /* bounded: the loop has others to serve */
      ssize_t n = kg_child_read(self->child, which, buf, sizeof buf);
      if (n <= 0)
        break;
      total += (size_t) n;
      size_t k = kg_foreign_filter(foreign, buf, (size_t) n, kept);
      if (k == 0)
        continue;
      kg_ring_append(self->ring[which - 1], kept, k);
      ssize_t w = write(which, kept, k);   /* pass through */
      (void) w;
      if (fn)
        fn(arg, which, kept, k);
    }
    if (before == 0 && kg_foreign_lines(foreign) > 0)
      kg_warning("the kernel's %s had a line a stranger can write (ipykernel's answer to a "
                 "message sent to its subprocess-output port, TCP 127.0.0.1): kept out of the "
                 "kernel log and of the evidence, as every later one (\"%.80s...\")",
                 which == 1 ? "stdout" : "stderr", kg_foreign_sample(foreign));
  }
  return total;
}

unsigned long
kg_kernel_foreign_lines(const kg_kernel_t *self)
{
  return kg_foreign_lines(self->foreign[0]) + kg_foreign_lines(self->foreign[1]);
}

kg_ready_t *
kg_kernel_ready(const kg_kernel_t *self)
{
  assert(self);
  return self->ready;
}

kg_ring_t *
kg_kernel_ring(const kg_kernel_t *self, int which)
{
  assert(self);
  return self->ring[which == 1 ? 0 : 1];
}

int
kg_kernel_signal(kg_kernel_t *self, int sig)
{
  if (!self->child)
    return KG_ENOKERNEL;
  if (sig == SIGTERM || sig == SIGKILL)
    self->signalled = true;
  return kg_child_kill_group(self->child, sig);
}

int
kg_kernel_reap(kg_kernel_t *self)
{
  if (!self->child)
    return KG_ENOKERNEL;
  if (kg_child_exited(self->child))
    return 1;
  return kg_child_reap(self->child);
}

int
kg_kernel_status(const kg_kernel_t *self)
{
  assert(self);
  return self->child ? kg_child_status(self->child) : 0;
}

int
kg_kernel_release(kg_kernel_t *self, bool *exited, bool *signalled)
{
  assert(self);
  int st = self->child ? kg_child_status(self->child) : 0;
  if (exited)
    *exited = self->child && kg_child_exited(self->child);
  if (signalled)
    *signalled = self->child && self->signalled;
  if (self->child) {
    kg_child_kill_group(self->child, SIGKILL);   /* leftovers of its group */
    kg_child_destroy(&self->child);
  }
  return st;
}
