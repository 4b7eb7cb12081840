/*  kguard restart: ask a running kguard kernel for a (diagnostic) restart.

    A tiny Jupyter client: an execute_request with code `%kguard restart
    [--diagnostic]` signed with the connection file's key, on the control
    channel so that it acts at once (on shell it would wait its turn behind
    the running cell); kguard answers it itself (it never reaches the inner
    kernel). Prints kguard's answer, then asks `%kguard status` until a
    fresh kernel is ready (exit 0) or kguard is down (exit 1): exit 0 means
    restarted, not only asked.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_cli.h"
#include "kg_conninfo.h"
#include "kg_error.h"
#include "kg_msg.h"
#include "kg_signer.h"
#include "kg_socket.h"

/*  How long `restart -f` waits between two `%kguard status` questions when
    nothing is published in between. */
#define S_ASK_AGAIN_MS 100

enum { O_DIAG = 1, O_CONN, O_TIMEOUT };

static const kg_opt_t s_opts[] = {
  {O_CONN, 'f', "connection-file", "FILE",
   "the kguard kernel's connection file (from %connect_info, or in `jupyter --runtime-dir`)",
   0},
  {O_DIAG, 'd', "diagnostic", NULL,
   "start the fresh kernel with CUDA_LAUNCH_BLOCKING=1 (CUDA) or AMD_SERIALIZE_KERNEL=3 and "
   "HIP_LAUNCH_BLOCKING=1 (ROCm): for locating a fault, not for timing; the next normal "
   "restart removes them", 0},
  {O_TIMEOUT, 't', "timeout", "SEC",
   "how long to wait for kguard's answer and the fresh kernel (default 120)", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"0", "restarted: the fresh kernel is ready"},
  {"1", "kguard refused, or the kernel did not come back (kguard is down): the reason is "
        "printed"},
  {"100", "usage error or a bad connection file"},
  {"111", "I/O error, or not ready within --timeout"},
  {NULL, NULL},
};

const kg_cmd_t kg_cli_restart_cmd = {
  .name = "restart",
  .summary = "ask a running kguard kernel for a (diagnostic) restart",
  .usage = "[--diagnostic] [--timeout SEC] -f CONNECTION_FILE",
  .about = "Ask the kguard kernel behind CONNECTION_FILE to restart its inner kernel, as "
           "`%kguard restart` does in a cell, and wait until the fresh kernel is ready. It "
           "acts at once, even while a cell runs. It also leaves the DOWN state, where kguard "
           "has stopped restarting on its own.",
  .opts = s_opts,
  .exits = s_exits,
};

/*  A connection to a kguard kernel's control channel (requests, replies)
    and iopub (the stream kguard answers `%kguard` cells with). */
typedef struct {
  void *control, *iopub;
  kg_signer_t *signer;
  char session[37];
  const char *conn;
} s_client_t;

/*  Send `code` (a `%kguard` cell) on control and wait until deadline for
    kguard's reply: *ok its status, *text_p the stream text it printed (new
    string, or NULL). 0, or KG_ETIMEOUT / another negative code (logged). */
static int
s_ask(s_client_t *c, const char *code, int64_t deadline, bool *ok, char **text_p,
      char **evalue_p)
{
  *ok = false;
  *text_p = *evalue_p = NULL;
  size_t text_len = 0;
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "code", code);
  cJSON_AddBoolToObject(content, "silent", false);
  cJSON_AddBoolToObject(content, "store_history", false);
  cJSON_AddItemToObject(content, "user_expressions", cJSON_CreateObject());
  cJSON_AddBoolToObject(content, "allow_stdin", false);
  cJSON_AddBoolToObject(content, "stop_on_error", true);
  kg_msg_t *req = kg_msg_new("execute_request", c->session, NULL, &content);
  if (!req || kg_msg_send(req, c->control, c->signer, 0) != 0) {
    kg_opt_error("unable to send the request to the kernel of %s", c->conn);
    kg_msg_destroy(&req);
    return KG_EINTERNAL;
  }
  char req_id[64];
  snprintf(req_id, sizeof req_id, "%s", kg_msg_id(req));
  kg_msg_destroy(&req);
  for (;;) {
    int64_t left = deadline - kg_clock_mono_ms();
    if (left <= 0)
      return KG_ETIMEOUT;
    zmq_pollitem_t items[2] = {{.socket = c->control, .events = ZMQ_POLLIN},
                               {.socket = c->iopub, .events = ZMQ_POLLIN}};
    if (zmq_poll(items, 2, (long) left) < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    for (int i = 0; i < 2; i++) {
      if (!(items[i].revents & ZMQ_POLLIN))
        continue;
      kg_msg_t *m = NULL;
      if (kg_msg_recv(items[i].socket, ZMQ_DONTWAIT, &m) != 0)
        continue;
      const char *parent = NULL;
      if (kg_msg_parse(m, c->signer) == 0 && kg_msg_check_header(m) == 0)
        parent = kg_msg_parent_id(m);
      if (!parent || strcmp(parent, req_id) != 0) {
        kg_msg_destroy(&m);
        continue;
      }
      cJSON *mc = kg_msg_json(m, KG_PART_CONTENT);
      if (i == 1 && strcmp(kg_msg_type(m), "stream") == 0) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(mc, "text");
        if (cJSON_IsString(t)) {
          size_t n = strlen(t->valuestring);
          char *g = realloc(*text_p, text_len + n + 1);
          if (g) {
            *text_p = g;
            memcpy(g + text_len, t->valuestring, n + 1);
            text_len += n;
          }
        }
      } else if (i == 0 && strcmp(kg_msg_type(m), "execute_reply") == 0) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(mc, "status");
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(mc, "evalue");
        *ok = cJSON_IsString(st) && strcmp(st->valuestring, "ok") == 0;
        if (cJSON_IsString(ev))
          *evalue_p = strdup(ev->valuestring);
        kg_msg_destroy(&m);
        return 0;
      }
      kg_msg_destroy(&m);
    }
  }
}

/*  kguard's state and kernel number, from `%kguard status`; the text is
    kept (new string) for the down reason. 0 or a negative code. The text
    comes on iopub, which a fresh subscriber may miss for a moment after it
    connects (ZeroMQ's subscription travels to kguard on its own): a reply
    without it is asked again. */
static int
s_status(s_client_t *c, int64_t deadline, char state[32], int *kernel_no, char **text_p)
{
  for (;;) {
    bool ok;
    char *evalue = NULL;
    int rc = s_ask(c, "%kguard status", deadline, &ok, text_p, &evalue);
    free(evalue);
    if (rc != 0)
      return rc;
    if (!*text_p)
      continue;   /* the subscription was not in place yet */
    return sscanf(*text_p, "kguard: state %31[A-Z_], kernel #%d", state, kernel_no) == 2
             ? 0
             : KG_EINTERNAL;   /* not a kguard answer */
  }
}

/*  What the command line asked for. */
typedef struct {
  const char *conn;
  bool diagnostic;
  double timeout_s;
} s_args_t;

/*  Parse and check the command line into a. Returns -1 to go on, else the
    exit code (help, or a usage error already printed). */
static int
s_parse_args(kg_opt_parser_t *p, s_args_t *a)
{
  int id;
  while ((id = kg_opt_next(p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p->code;
    case KG_OPT_OPERAND: return kg_opt_usage(p, "unexpected argument '%s'", p->value);
    case O_DIAG: a->diagnostic = true; break;
    case O_CONN: a->conn = p->value; break;
    case O_TIMEOUT: {
      char *end = NULL;
      errno = 0;
      a->timeout_s = strtod(p->value, &end);
      if (errno || end == p->value || *end || !(a->timeout_s > 0 && a->timeout_s <= 86400))
        return kg_opt_usage(p, "--timeout takes seconds (more than 0, at most 86400), not "
                            "'%s'", p->value);
      break;
    }
    }
  }
  if (!a->conn)
    return kg_opt_usage(p, "missing -f CONNECTION_FILE");
  return -1;
}

/*  Ask for the restart, having noted which kernel runs now (*before).
    Returns 0 when kguard accepted it, 1 when it refused (said why), or a
    negative code. */
static int
s_request(s_client_t *cl, const s_args_t *a, int64_t deadline, char state[32], int *before)
{
  char *text = NULL, *evalue = NULL;
  bool ok = false;
  /* Which kernel runs now: the restart is done when a later one is ready. */
  int rc = s_status(cl, deadline, state, before, &text);
  free(text);
  text = NULL;
  if (rc == 0)
    rc = s_ask(cl, a->diagnostic ? "%kguard restart --diagnostic" : "%kguard restart",
               deadline, &ok, &text, &evalue);
  if (rc == 0 && !ok) {
    if (text)
      fputs(text, stderr);
    kg_opt_error("refused: %s", evalue ? evalue : "(no reason given)");
    rc = 1;
  } else if (rc == 0) {
    fputs(text ? text : "kguard: restart requested\n", stdout);
    fflush(stdout);
  }
  free(text);
  free(evalue);
  return rc;
}

/*  Wait for the fresh kernel: kguard answers `%kguard status` on control
    in every state, so ask until a later kernel than before is READY (0),
    or kguard is DOWN (the restart failed: 1, said why), or the time is up
    (KG_ETIMEOUT; other negative codes for other failures). */
static int
s_wait_fresh(s_client_t *cl, int before, int64_t deadline, char state[32])
{
  for (;;) {
    char *text = NULL;
    int now = 0;
    int rc = s_status(cl, deadline, state, &now, &text);
    if (rc != 0) {
      free(text);
      return rc;
    }
    if (now > before && strcmp(state, "READY") == 0) {
      printf("kguard: restarted: kernel #%d is ready\n", now);
      free(text);
      return KG_EXIT_OK;
    }
    if (strcmp(state, "DOWN") == 0 && now > before) {
      const char *why = strstr(text, "down: ");
      /* why ends with its own newline */
      fprintf(stderr, "%s: the kernel did not come back: %s", kg_opt_prog(),
              why ? why + 6 : "kguard is down\n");
      free(text);
      return 1;
    }
    free(text);
    /* Not yet: ask again as soon as anything is published (the fresh
       kernel's status, kguard's notice), or after S_ASK_AGAIN_MS at the
       latest (a kernel becoming READY publishes nothing of kguard's). */
    int64_t left = deadline - kg_clock_mono_ms();
    zmq_pollitem_t iopub = {.socket = cl->iopub, .events = ZMQ_POLLIN};
    if (zmq_poll(&iopub, 1, left < S_ASK_AGAIN_MS ? (long) (left > 0 ? left : 0)
                                                  : S_ASK_AGAIN_MS) > 0) {
      zmq_msg_t drop;   /* what woke us is not the answer: s_status asks */
      zmq_msg_init(&drop);
      while (zmq_msg_recv(&drop, cl->iopub, ZMQ_DONTWAIT) >= 0)
        ;
      zmq_msg_close(&drop);
    }
  }
}

/*  Connected: request the restart and wait for it. Returns the exit
    code, having said what failed. */
static int
s_restart(s_client_t *cl, const s_args_t *a)
{
  char state[32] = "";
  int before = 0;
  int64_t deadline = kg_clock_mono_ms() + (int64_t) (a->timeout_s * 1000);
  int rc = s_request(cl, a, deadline, state, &before);
  if (rc == 0)
    rc = s_wait_fresh(cl, before, deadline, state);
  if (rc >= 0)
    return rc;
  if (rc == KG_ETIMEOUT)
    kg_opt_error("%s within %.0f s (is %s a kguard kernel's?)",
                 *state ? "the fresh kernel was not ready" : "no answer", a->timeout_s, a->conn);
  else
    kg_opt_error_at(a->conn, "%s", rc == KG_EINTERNAL ? "not a kguard kernel's answer"
                                                      : kg_strerror(rc));
  return KG_EXIT_SYSTEM;
}

int
kg_cli_restart_main(int argc, char **argv)
{
  s_args_t a = {.timeout_s = 120};
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_cli_restart_cmd, argc, argv);
  int rc = s_parse_args(&p, &a);
  if (rc >= 0)
    return rc;
  kg_conninfo_t *info = kg_conninfo_new();
  char err[256] = "";
  rc = info ? kg_conninfo_load(info, a.conn, err, sizeof err) : KG_ENOMEM;
  if (rc) {
    kg_opt_error_at(a.conn, "%s", *err ? err : kg_strerror(rc));
    kg_conninfo_destroy(&info);
    return rc == KG_ECONNFILE || rc == KG_ESCHEME || rc == -ENOENT ? KG_EXIT_USAGE
                                                                   : KG_EXIT_SYSTEM;
  }
  int code = KG_EXIT_SYSTEM;
  s_client_t cl = {.conn = a.conn};
  cl.signer = kg_signer_new(info->key, info->key_len);
  void *ctx = zmq_ctx_new();
  char rid[64];
  kg_uuid4(cl.session);
  snprintf(rid, sizeof rid, "kguard-restart-%.36s", cl.session);
  cl.control = kg_socket_connect(ctx, info, KG_CH_CONTROL, rid, &rc);
  cl.iopub = kg_socket_connect(ctx, info, KG_CH_IOPUB, NULL, &rc);
  if (!cl.signer || !cl.control || !cl.iopub)
    kg_opt_error("unable to connect to the kernel of %s: %s", a.conn, kg_strerror(rc));
  else
    code = s_restart(&cl, &a);
  kg_socket_close(&cl.control);
  kg_socket_close(&cl.iopub);
  if (ctx)
    zmq_ctx_term(ctx);
  kg_signer_destroy(&cl.signer);
  kg_conninfo_destroy(&info);
  return code;
}
