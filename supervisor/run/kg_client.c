/*  kg_client: spawning and talking to the `kguard kernel` child of
    `kguard run`. See kg_client.h for the contract.
*/
#include "kg_client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_file.h"
#include "kg_loop.h"
#include "kg_safepath.h"
#include "kg_paths.h"
#include "kg_log.h"
#include "kg_signer.h"
#include "kg_socket.h"

extern char **environ;

#define S_REAP_POLL_MS 200   /* without a pidfd: how often the child is looked at */

/*  What a channel's reader is given. */
typedef struct {
  kg_client_t *self;
  kg_channel_t ch;
} s_src_t;

struct kg_client_t {
  char dir[128];                /*  private runtime dir (0700)             */
  char conn_path[160];          /*  connection file inside dir             */
  char resume_path[160];        /*  resume-prepare's result inside dir, or "" */
  kg_conninfo_t *info;          /*  what the child binds                   */
  kg_signer_t *signer;          /*  the connection file's key              */
  char session[37];             /*  our session id                         */
  void *ctx;                    /*  zmq context                            */
  void *sockets[KG_CH_COUNT];   /*  shell, iopub, stdin, control (no hb)   */
  pid_t pid;                    /*  the child, its own process group       */
  int pidfd;                    /*  readable when the child exits, or -1   */
  bool exited;                  /*  reaped                                 */
  int status;                   /*  its waitpid status                     */
  kg_loop_t *loop;              /*  the caller's (borrowed)                */
  kg_client_fn *on_event;       /*  the caller's handler, and its arg      */
  void *arg;
  s_src_t src[KG_CH_COUNT];     /*  what each channel's reader is given    */
  int ids[KG_CH_COUNT + 2];     /*  our registrations on the loop          */
  int nids;
};

/*  ------------------------------------------------------------------------
    Spawning. */

/*  The child's argv: either the wrapper kernelspec's own argv with the
    connection file put in, or `exe kernel -f CONN ... -- inner argv`. The
    inner argv keeps its {connection_file}: the kguard kernel fills it with
    the connection file it writes for the inner kernel. */
bool
kg_client_spec_is_kguard(const kg_kernelspec_t *spec)
{
  const cJSON *a1 = cJSON_GetArrayItem(spec->argv, 1);
  return cJSON_IsString(a1) && strcmp(a1->valuestring, "kernel") == 0;
}

static void
s_argv_free(char **argv)
{
  for (size_t i = 0; argv && argv[i]; i++)
    free(argv[i]);
  free(argv);
}

/*  The placeholders of the spec's argv are filled as jupyter_client fills
    them (KernelManager.format_kernel_cmd): {resource_dir} is the spec's
    directory, {prefix} Python's sys.prefix. {connection_file} is ours in a
    wrapper's argv; in an inner argv it stays for the kguard kernel to fill
    with the connection file it writes for the inner kernel. New array of
    new strings (free with s_argv_free), NULL on allocation failure. */
static char **
s_child_argv(const kg_client_t *self, const kg_client_config_t *cfg)
{
  const kg_kernelspec_t *spec = cfg->spec;
  size_t argc = (size_t) cJSON_GetArraySize(spec->argv);
  bool wrapper = kg_client_spec_is_kguard(spec);
  char **argv = calloc(argc + 16, sizeof(char *));
  if (!argv)
    return NULL;
  kg_kernelspec_ns_t ns = {
    .connection_file = wrapper ? self->conn_path : NULL,
    .resource_dir = spec->dir,
    .prefix = kg_kernelspec_sys_prefix(),
  };
  const char *head[12];
  size_t nh = 0;
  const cJSON *a = spec->argv->child;
  if (wrapper) {
    head[nh++] = a->valuestring;
    a = a->next;
    head[nh++] = a->valuestring;
    a = a->next;
  }
  else {
    head[nh++] = cfg->exe;
    head[nh++] = "kernel";
    head[nh++] = "-f";
    head[nh++] = self->conn_path;
  }
  if (cfg->checkpoints) {
    head[nh++] = "--checkpoints";
    head[nh++] = cfg->checkpoints;
  }
  if (cfg->state_dir_arg) {
    head[nh++] = "--state-dir";
    head[nh++] = cfg->state_dir_arg;
  }
  if (self->resume_path[0]) {
    head[nh++] = "--resume";
    head[nh++] = self->resume_path;
  }
  size_t n = 0;
  bool ok = true;
  for (size_t i = 0; i < nh && ok; i++)
    ok = (argv[n++] = strdup(head[i])) != NULL;
  if (ok && !wrapper)
    ok = (argv[n++] = strdup("--")) != NULL;
  for (; a && ok; a = a->next)
    ok = (argv[n++] = kg_kernelspec_format_arg(a->valuestring, &ns)) != NULL;
  if (!ok) {
    s_argv_free(argv);
    return NULL;
  }
  argv[n] = NULL;
  return argv;
}

/*  In the child, between fork and exec: only async-signal-safe calls. */
static void
s_child(const kg_client_config_t *cfg, char **argv, int errpipe, int logfd)
{
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  /*  Its own process group: the terminal's Ctrl-C reaches `run` only, which
      turns it into an interrupt_request; and the group can be killed whole. */
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (logfd >= 0) {
    dup2(logfd, 1);
    dup2(logfd, 2);
  }
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0)
    dup2(devnull, 0);
  if (cfg->cwd && chdir(cfg->cwd) != 0) {
    int e = errno;
    (void) !write(errpipe, &e, sizeof e);
    _exit(127);
  }
  execvp(argv[0], argv);
  int e = errno;
  (void) !write(errpipe, &e, sizeof e);
  _exit(127);
}

/*  Environment for the child: ours, the kernelspec's env, JPY_PARENT_PID
    (ipykernel's parent poller) and KGUARD_STATE_DIR. Set in our own
    environment before fork, which is safe: `run` is still single-threaded
    (the zmq context and its threads are created after the spawn), and
    `run` itself reads none of these afterwards. */
static void
s_child_env(const kg_client_config_t *cfg)
{
  const cJSON *item;
  cJSON_ArrayForEach(item, cfg->spec->env)
    setenv(item->string, item->valuestring, 1);
  char pid[32];
  snprintf(pid, sizeof pid, "%d", (int) getpid());
  setenv("JPY_PARENT_PID", pid, 1);
  if (cfg->state_dir)
    setenv("KGUARD_STATE_DIR", cfg->state_dir, 1);
  if (cfg->run_id)
    setenv("KGUARD_RUN_ID", cfg->run_id, 1);
  if (cfg->notebook)
    setenv("JPY_SESSION_NAME", cfg->notebook, 1);
  if (cfg->keep)
    setenv("KGUARD_KEEP", cfg->keep, 1);
}

static int
s_spawn(kg_client_t *self, const kg_client_config_t *cfg, char *err, size_t errlen)
{
  char **argv = s_child_argv(self, cfg);
  if (!argv)
    return KG_ENOMEM;
  int logfd = -1;
  if (cfg->log_path) {
    logfd = kg_safepath_open(cfg->log_path, O_APPEND, 0600);
    if (logfd < 0) {
      int rc = logfd;
      kg_errf(err, errlen, "unable to open the kernel log %s: %s", cfg->log_path,
              kg_strerror(rc));
      s_argv_free(argv);
      return rc;
    }
  }
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    int rc = -errno;
    kg_errf(err, errlen, "unable to create a pipe: %s", strerror(errno));
    s_argv_free(argv);
    if (logfd >= 0)
      close(logfd);
    return rc;
  }
  s_child_env(cfg);
  pid_t pid = fork();
  if (pid == 0)
    s_child(cfg, argv, pipefd[1], logfd);
  int fork_errno = errno;
  char argv0[256];
  snprintf(argv0, sizeof argv0, "%s", argv[0]);
  close(pipefd[1]);
  if (logfd >= 0)
    close(logfd);
  s_argv_free(argv);
  if (pid < 0) {
    close(pipefd[0]);
    kg_errf(err, errlen, "unable to fork: %s", strerror(fork_errno));
    return -fork_errno;
  }
  /*  Also from the parent, so the group exists before we might signal it. */
  setpgid(pid, pid);
  self->pid = pid;

  /*  EOF on the CLOEXEC pipe means exec succeeded; an int means it failed. */
  int child_errno = 0;
  ssize_t n;
  do
    n = read(pipefd[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(pipefd[0]);
  if (n == (ssize_t) sizeof child_errno) {
    waitpid(pid, &self->status, 0);
    self->exited = true;
    kg_errf(err, errlen, "unable to start %s: %s", argv0, strerror(child_errno));
    return KG_ESPAWN;
  }
  self->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
  return 0;
}

/*  ------------------------------------------------------------------------
    The loop's sources. */

static int s_take(kg_client_t *self, kg_channel_t ch, kg_msg_t **msg_p);
static bool s_reap(kg_client_t *self);

/*  Hand every message waiting on channel ch to the caller, in order. False
    if a receive failed (the caller was told). */
static bool
s_drain(kg_client_t *self, kg_channel_t ch)
{
  for (;;) {
    kg_msg_t *msg = NULL;
    int rc = s_take(self, ch, &msg);
    if (rc == 2)
      continue;   /* a dropped message: the next one */
    if (rc == 0)
      return true;
    if (rc < 0) {
      kg_client_event_t ev = {.kind = KG_CLIENT_FAILED, .error = rc};
      self->on_event(self->arg, &ev);
      return false;
    }
    kg_client_event_t ev = {.kind = KG_CLIENT_MESSAGE, .channel = ch, .msg = msg};
    self->on_event(self->arg, &ev);
    kg_msg_destroy(&msg);
  }
}

static int
s_on_channel(kg_loop_t *loop, int id, int events, void *arg)
{
  s_drain(((s_src_t *) arg)->self, ((s_src_t *) arg)->ch);
  return KG_LOOP_OK;
}

/*  The sources, in the order the loop serves them: control, then iopub
    before shell (outputs published before a reply are handed out before
    it; the runner waits for both the reply and iopub idle anyway, so this
    only keeps the order natural), stdin. */
static const kg_channel_t s_order[] = {KG_CH_CONTROL, KG_CH_IOPUB, KG_CH_SHELL, KG_CH_STDIN};

/*  The child ended (or, without a pidfd, a look at it): what its sockets
    still hold is handed out first, then its end, once. */
static void
s_check_child(kg_client_t *self)
{
  if (self->exited || !s_reap(self))
    return;
  for (size_t i = 0; i < sizeof s_order / sizeof s_order[0]; i++) {
    if (!s_drain(self, s_order[i]))
      break;
  }
  kg_client_event_t ev = {.kind = KG_CLIENT_EXITED, .status = self->status};
  self->on_event(self->arg, &ev);
}

static int
s_pidfd(void *arg)
{
  return ((kg_client_t *) arg)->pidfd;
}

static int
s_on_pidfd(kg_loop_t *loop, int id, int events, void *arg)
{
  s_check_child(arg);
  return KG_LOOP_OK;
}

static int
s_on_reap_timer(kg_loop_t *loop, int id, void *arg)
{
  kg_client_t *self = arg;
  s_check_child(self);
  if (!self->exited)
    kg_loop_timer_set(loop, id, kg_loop_now(loop) + S_REAP_POLL_MS);
  return KG_LOOP_OK;
}

static int
s_attach(kg_client_t *self)
{
  for (size_t i = 0; i < sizeof s_order / sizeof s_order[0]; i++) {
    kg_channel_t ch = s_order[i];
    self->src[ch].self = self;
    self->src[ch].ch = ch;
    int id = kg_loop_socket(self->loop, self->sockets[ch], KG_LOOP_IN, s_on_channel,
                            &self->src[ch]);
    if (id < 0)
      return KG_ENOMEM;
    self->ids[self->nids++] = id;
  }
  int id = kg_loop_fd_of(self->loop, s_pidfd, KG_LOOP_IN, s_on_pidfd, self);
  if (id < 0)
    return KG_ENOMEM;
  self->ids[self->nids++] = id;
  if (self->pidfd < 0) {
    id = kg_loop_timer(self->loop, kg_loop_now(self->loop) + S_REAP_POLL_MS, s_on_reap_timer,
                       self);
    if (id < 0)
      return KG_ENOMEM;
    self->ids[self->nids++] = id;
  }
  return 0;
}

/*  ------------------------------------------------------------------------
    Setup and teardown. */

static int
s_make_dir(kg_client_t *self, char *err, size_t errlen)
{
  /*  The supervisor's own helper: short enough for ipc socket paths, 0700,
      and stale dirs of killed runs are reaped. */
  int rc = kg_paths_runtime_dir(self->dir, sizeof self->dir);
  if (rc != 0) {
    kg_errf(err, errlen, "unable to create a runtime directory: %s", kg_strerror(rc));
    self->dir[0] = '\0';
    return rc;
  }
  snprintf(self->conn_path, sizeof self->conn_path, "%s/connection.json", self->dir);
  return 0;
}

/*  The restore the first kernel resumes from, for `kguard kernel --resume`. */
static int
s_write_resume(kg_client_t *self, const char *json, char *err, size_t errlen)
{
  snprintf(self->resume_path, sizeof self->resume_path, "%s/resume.json", self->dir);
  int rc = kg_file_write_atomic(self->resume_path, json, strlen(json), 0600);
  if (rc != 0)
    kg_errf(err, errlen, "unable to write %s: %s", self->resume_path, kg_strerror(rc));
  return rc;
}

static void
s_remove_dir(kg_client_t *self)
{
  if (!self->dir[0])
    return;
  kg_paths_remove_tree(self->dir);
  self->dir[0] = '\0';
}

int
kg_client_start(const kg_client_config_t *cfg, kg_loop_t *loop, kg_client_fn *on_event,
                void *arg, kg_client_t **self_p, char *err, size_t errlen)
{
  *self_p = NULL;
  kg_client_t *self = calloc(1, sizeof *self);
  if (!self) {
    kg_errf(err, errlen, "out of memory");
    return KG_ENOMEM;
  }
  self->pidfd = -1;
  self->loop = loop;
  self->on_event = on_event;
  self->arg = arg;
  kg_uuid4(self->session);
  int rc = s_make_dir(self, err, errlen);

  if (rc == 0) {
    self->info = kg_conninfo_new();
    rc = self->info ? kg_conninfo_set_random_key(self->info) : KG_ENOMEM;
    if (rc != 0)
      kg_errf(err, errlen, "out of memory");
  }
  if (rc == 0) {
    strcpy(self->info->transport, "ipc");
    snprintf(self->info->ip, sizeof self->info->ip, "%s/k", self->dir);
    for (int ch = 0; ch < KG_CH_COUNT; ch++)
      self->info->ports[ch] = ch + 1;
    snprintf(self->info->kernel_name, sizeof self->info->kernel_name, "%s",
             cfg->spec->name ? cfg->spec->name : "");
    rc = kg_conninfo_save(self->info, self->conn_path);
    if (rc != 0)
      kg_errf(err, errlen, "unable to write %s: %s", self->conn_path, kg_strerror(rc));
  }
  if (rc == 0) {
    self->signer = kg_signer_new(self->info->key, self->info->key_len);
    if (!self->signer) {
      rc = KG_ENOMEM;
      kg_errf(err, errlen, "out of memory");
    }
  }
  if (rc == 0 && cfg->resume_json)
    rc = s_write_resume(self, cfg->resume_json, err, errlen);
  if (rc == 0)
    rc = s_spawn(self, cfg, err, errlen);

  /*  The zmq context after the fork: its I/O threads are never duplicated,
      and inherit the signal mask the caller set up. ipc connects succeed
      before the child binds; zmq reconnects until it does. */
  if (rc == 0) {
    self->ctx = zmq_ctx_new();
    if (!self->ctx) {
      rc = -errno;
      kg_errf(err, errlen, "unable to create a zmq context: %s", zmq_strerror(errno));
    }
  }
  static const kg_channel_t channels[] = {KG_CH_SHELL, KG_CH_IOPUB, KG_CH_STDIN,
                                          KG_CH_CONTROL};
  for (size_t i = 0; rc == 0 && i < sizeof channels / sizeof channels[0]; i++) {
    kg_channel_t ch = channels[i];
    self->sockets[ch] = kg_socket_connect(self->ctx, self->info, ch, self->session, &rc);
    if (!self->sockets[ch])
      kg_errf(err, errlen, "unable to connect the %s channel: %s", kg_channel_name(ch),
            kg_strerror(rc));
    else
      rc = 0;
  }
  if (rc == 0) {
    rc = s_attach(self);
    if (rc != 0)
      kg_errf(err, errlen, "out of memory");
  }
  if (rc != 0) {
    kg_client_destroy(&self);
    return rc;
  }
  *self_p = self;
  return 0;
}

pid_t
kg_client_pid(const kg_client_t *self)
{
  return self->pid;
}

bool
kg_client_exited(const kg_client_t *self, int *status)
{
  if (status)
    *status = self->status;
  return self->exited;
}

/*  Reap the child if it has exited. True if it has (now or before). */
static bool
s_reap(kg_client_t *self)
{
  if (self->exited || self->pid <= 0)
    return self->exited;
  int status;
  pid_t r = waitpid(self->pid, &status, WNOHANG);
  if (r == self->pid || (r < 0 && errno == ECHILD)) {
    self->exited = true;
    self->status = r == self->pid ? status : 0;
    if (self->pidfd >= 0) {
      close(self->pidfd);
      self->pidfd = -1;
    }
  }
  return self->exited;
}

void
kg_client_destroy(kg_client_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_client_t *self = *self_p;
  if (self->pid > 0 && !s_reap(self)) {
    kill(-self->pid, SIGKILL);
    kill(self->pid, SIGKILL);
    waitpid(self->pid, &self->status, 0);
    self->exited = true;
  }
  if (self->pidfd >= 0)
    close(self->pidfd);
  for (int i = 0; i < self->nids; i++)
    kg_loop_remove(self->loop, self->ids[i]);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    kg_socket_close(&self->sockets[ch]);
  if (self->ctx)
    zmq_ctx_term(self->ctx);
  kg_signer_destroy(&self->signer);
  kg_conninfo_destroy(&self->info);
  s_remove_dir(self);
  free(self);
  *self_p = NULL;
}

/*  ------------------------------------------------------------------------
    Messages and events. */

int
kg_client_send(kg_client_t *self, kg_channel_t channel, const char *msg_type,
               cJSON **content_p, char msg_id[37])
{
  kg_msg_t *msg = kg_msg_new(msg_type, self->session, NULL, content_p);
  if (!msg)
    return KG_ENOMEM;
  const char *id = kg_msg_id(msg);
  snprintf(msg_id, 37, "%s", id ? id : "");
  int rc = kg_msg_send(msg, self->sockets[channel], self->signer, 0);
  kg_loop_sent(self->loop, self->sockets[channel]);   /* it may have taken an edge */
  kg_msg_destroy(&msg);
  return rc;
}

/*  Take one message from channel ch if there is one. 1: *msg_p set; 0:
    nothing; 2: one was dropped (oversized, or it failed its check); < 0: a
    socket error. */
static int
s_take(kg_client_t *self, kg_channel_t ch, kg_msg_t **msg_p)
{
  kg_msg_t *msg = NULL;
  int rc = kg_msg_recv(self->sockets[ch], ZMQ_DONTWAIT, &msg);
  if (rc == -EAGAIN || rc == -EINTR)
    return 0;
  if (rc != 0) {
    if (rc == KG_ETOOBIG)
      kg_warning("dropped an oversized message on %s", kg_channel_name(ch));
    return rc == KG_ETOOBIG ? 2 : rc;
  }
  rc = kg_msg_parse(msg, self->signer);
  if (rc == 0)
    rc = kg_msg_check_header(msg);
  if (rc != 0) {
    kg_warning("dropped a message on %s: %s", kg_channel_name(ch), kg_strerror(rc));
    kg_msg_destroy(&msg);
    return 2;
  }
  *msg_p = msg;
  return 1;
}

int
kg_client_ask_shutdown(kg_client_t *self)
{
  cJSON *content = cJSON_CreateObject();
  if (!content || !cJSON_AddBoolToObject(content, "restart", false)) {
    cJSON_Delete(content);
    return KG_ENOMEM;
  }
  char id[37];
  int rc = kg_client_send(self, KG_CH_CONTROL, "shutdown_request", &content, id);
  cJSON_Delete(content);
  return rc;
}

void
kg_client_kill(kg_client_t *self, int signo)
{
  if (self->pid <= 0 || self->exited)
    return;   /* a child not yet reaped still holds its pid: safe to signal */
  kill(-self->pid, signo);
  kill(self->pid, signo);
}
