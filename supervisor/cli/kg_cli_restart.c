/*  kguard restart: ask a running kguard kernel for a (diagnostic) restart.

    A tiny Jupyter client: an execute_request with code `%kguard restart
    [--diagnostic]` signed with the connection file's key, on the control
    channel so that it acts at once (on shell it would wait its turn behind
    the running cell); kguard answers it itself (it never reaches the inner
    kernel). Prints kguard's answer.
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

enum { O_DIAG = 1, O_CONN, O_TIMEOUT };

static const kg_opt_t s_opts[] = {
  {O_CONN, 'f', "connection-file", "FILE",
   "the kguard kernel's connection file (from %connect_info, or in `jupyter --runtime-dir`)",
   0},
  {O_DIAG, 'd', "diagnostic", NULL,
   "start the fresh kernel with CUDA_LAUNCH_BLOCKING=1 (CUDA) or AMD_SERIALIZE_KERNEL=3 and "
   "HIP_LAUNCH_BLOCKING=1 (ROCm): for locating a fault, not for timing; the next normal "
   "restart removes them", 0},
  {O_TIMEOUT, 't', "timeout", "SEC", "how long to wait for kguard's answer (default 30)", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"0", "kguard accepted the request: the restart has begun"},
  {"1", "kguard refused (its reason is printed)"},
  {"100", "usage error or a bad connection file"},
  {"111", "I/O error, or no answer within --timeout"},
  {NULL, NULL},
};

const kg_cmd_t kg_cli_restart_cmd = {
  .name = "restart",
  .summary = "ask a running kguard kernel for a (diagnostic) restart",
  .usage = "[--diagnostic] [--timeout SEC] -f CONNECTION_FILE",
  .about = "Ask the kguard kernel behind CONNECTION_FILE to restart its inner kernel, as "
           "`%kguard restart` does in a cell. It acts at once, even while a cell runs. It also "
           "leaves the DOWN state, where kguard has stopped restarting on its own.",
  .opts = s_opts,
  .exits = s_exits,
};

int
kg_cli_restart_main(int argc, char **argv)
{
  const char *conn = NULL;
  bool diagnostic = false;
  double timeout_s = 30;
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_cli_restart_cmd, argc, argv);
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case KG_OPT_OPERAND: return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
    case O_DIAG: diagnostic = true; break;
    case O_CONN: conn = p.value; break;
    case O_TIMEOUT: {
      char *end = NULL;
      errno = 0;
      timeout_s = strtod(p.value, &end);
      if (errno || end == p.value || *end || !(timeout_s > 0 && timeout_s <= 86400))
        return kg_opt_usage(&p, "--timeout takes seconds (more than 0, at most 86400), not "
                            "'%s'", p.value);
      break;
    }
    }
  }
  if (!conn)
    return kg_opt_usage(&p, "missing -f CONNECTION_FILE");
  kg_conninfo_t *info = kg_conninfo_new();
  char err[256] = "";
  int rc = info ? kg_conninfo_load(info, conn, err, sizeof err) : KG_ENOMEM;
  if (rc) {
    kg_opt_error_at(conn, "%s", *err ? err : kg_strerror(rc));
    kg_conninfo_destroy(&info);
    return rc == KG_ECONNFILE || rc == KG_ESCHEME || rc == -ENOENT ? KG_EXIT_USAGE
                                                                   : KG_EXIT_SYSTEM;
  }
  int code = KG_EXIT_SYSTEM;
  kg_signer_t *signer = kg_signer_new(info->key, info->key_len, 0);
  void *ctx = zmq_ctx_new();
  char rid[64], session[37];
  kg_uuid4(session);
  snprintf(rid, sizeof rid, "kguard-restart-%.36s", session);
  void *control = kg_socket_connect(ctx, info, KG_CH_CONTROL, rid, &rc);
  void *iopub = kg_socket_connect(ctx, info, KG_CH_IOPUB, NULL, &rc);
  kg_msg_t *req = NULL;
  char *text = NULL;
  size_t text_len = 0;
  if (!signer || !control || !iopub) {
    kg_opt_error("unable to connect to the kernel of %s: %s", conn, kg_strerror(rc));
    goto done;
  }
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "code", diagnostic ? "%kguard restart --diagnostic"
                                                      : "%kguard restart");
  cJSON_AddBoolToObject(content, "silent", false);
  cJSON_AddBoolToObject(content, "store_history", false);
  cJSON_AddItemToObject(content, "user_expressions", cJSON_CreateObject());
  cJSON_AddBoolToObject(content, "allow_stdin", false);
  cJSON_AddBoolToObject(content, "stop_on_error", true);
  req = kg_msg_new("execute_request", session, NULL, &content);
  if (!req || kg_msg_send(req, control, signer, 0) != 0) {
    kg_opt_error("unable to send the request to the kernel of %s", conn);
    goto done;
  }
  char req_id[64];
  snprintf(req_id, sizeof req_id, "%s", kg_msg_id(req));
  int64_t deadline = kg_clock_mono_ms() + (int64_t) (timeout_s * 1000);
  for (;;) {
    int64_t left = deadline - kg_clock_mono_ms();
    if (left <= 0) {
      kg_opt_error("no answer within %.0f s (is %s a kguard kernel's?)", timeout_s, conn);
      goto done;
    }
    zmq_pollitem_t items[2] = {{.socket = control, .events = ZMQ_POLLIN},
                               {.socket = iopub, .events = ZMQ_POLLIN}};
    if (zmq_poll(items, 2, (long) left) < 0) {
      if (errno == EINTR)
        continue;
      goto done;
    }
    for (int i = 0; i < 2; i++) {
      if (!(items[i].revents & ZMQ_POLLIN))
        continue;
      kg_msg_t *m = NULL;
      if (kg_msg_recv(items[i].socket, ZMQ_DONTWAIT, &m) != 0)
        continue;
      const char *parent = NULL;
      if (kg_msg_parse(m, signer) == 0 && kg_msg_check_header(m) == 0)
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
          char *g = realloc(text, text_len + n + 1);
          if (g) {
            text = g;
            memcpy(text + text_len, t->valuestring, n + 1);
            text_len += n;
          }
        }
      } else if (i == 0 && strcmp(kg_msg_type(m), "execute_reply") == 0) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(mc, "status");
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(mc, "evalue");
        bool ok = cJSON_IsString(st) && strcmp(st->valuestring, "ok") == 0;
        if (text)
          fputs(text, ok ? stdout : stderr);
        else if (ok)
          puts("kguard restart: restart requested");
        if (!ok)
          kg_opt_error("refused: %s", cJSON_IsString(ev) ? ev->valuestring
                                                         : "(no reason given)");
        code = ok ? KG_EXIT_OK : 1;
        kg_msg_destroy(&m);
        goto done;
      }
      kg_msg_destroy(&m);
    }
  }
done:
  free(text);
  kg_msg_destroy(&req);
  kg_socket_close(&control);
  kg_socket_close(&iopub);
  if (ctx)
    zmq_ctx_term(ctx);
  kg_signer_destroy(&signer);
  kg_conninfo_destroy(&info);
  return code;
}
