/*  kg_exec_node: a node's side of a multi-node `kguard exec` job: the
    coordinator process on node 0, the CURVE link, the messages (kg_coord.h)
    and the restore of this node's ranks at the agreed step. */
#include "kg_exec_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_clock.h"
#include "kg_coord_keys.h"
#include "kg_error.h"
#include "kg_exit.h"
#include "kg_file.h"
#include "kg_json.h"
#include "kg_log.h"
#include "kg_throughput.h"
#include "kg_socket.h"
#include "kg_loop.h"
#include "kg_paths.h"

#define S_MONITOR "inproc://kguard-exec-monitor"

static int
s_start_coordinator(kg_exec_s *E)
{
  /* The address the nodes were told, unless --coordinator-bind says where. */
  const char *colon = strrchr(E->cfg.coordinator, ':');
  char bind[600], nn[16], np[16], mr[16];
  if (E->cfg.coordinator_bind)
    snprintf(bind, sizeof bind, "%s:%s", E->cfg.coordinator_bind, colon ? colon + 1 : "");
  else
    snprintf(bind, sizeof bind, "%s", E->cfg.coordinator);
  snprintf(nn, sizeof nn, "%d", E->cfg.nnodes);
  snprintf(np, sizeof np, "%d", E->cfg.nproc_per_node);
  snprintf(mr, sizeof mr, "%d", E->cfg.max_restarts);
  char hb[32], jt[32];
  snprintf(hb, sizeof hb, "%lld", (long long) E->cfg.heartbeat_ms);
  snprintf(jt, sizeof jt, "%lld", (long long) E->cfg.join_timeout_ms);
  char *argv[] = {E->exe, "exec", "--serve-coordinator", "--bind", bind, "--nnodes", nn,
                  "--nproc-per-node", np, "--secret", (char *) E->cfg.secret_file,
                  "--checkpoints", (char *) E->cfg.ckpt_dir, "--state-dir", E->state_dir,
                  "--max-restarts", mr, "--heartbeat-timeout-ms", hb, "--join-timeout-ms", jt,
                  NULL};
  /* Ranks kguard starts get a rendezvous store the coordinator keeps. */
  bool module;
  const char *py = kg_exec_python_program(E->cfg.argv, &module) >= 0 ? E->cfg.argv[0] : "python3";
  char *full[sizeof argv / sizeof argv[0] + 2];
  size_t k = 0;
  for (; argv[k]; k++)
    full[k] = argv[k];
  if (E->mode == KG_EXEC_MODE_AGENT && E->cfg.master_port == 0) {
    full[k++] = "--store-python";
    full[k++] = (char *) py;
  }
  full[k] = NULL;
  kg_child_opts_t o = {.argv = full, .capture = false};
  int rc = kg_child_spawn(&o, &E->coord);
  if (rc != 0)
    kg_error("exec: cannot start the coordinator: %s", kg_strerror(rc));
  return rc;
}

int
kg_ex_node_open(kg_exec_s *E)
{
  kg_coord_keys_t keys;
  char err[512];
  if (kg_coord_keys_load(E->cfg.secret_file, &keys, err, sizeof err) != 0) {
    kg_error("exec: %s", err);
    return KG_EUSAGE;
  }
  const char *colon = strrchr(E->cfg.coordinator, ':');
  if (!colon || colon == E->cfg.coordinator || !colon[1]) {
    kg_error("exec: --coordinator must be HOST:PORT, got %s", E->cfg.coordinator);
    return KG_EUSAGE;
  }
  if (E->cfg.node_rank == 0 && s_start_coordinator(E) != 0)
    return KG_ESPAWN;
  E->zctx = zmq_ctx_new();
  E->link = E->zctx ? zmq_socket(E->zctx, ZMQ_DEALER) : NULL;
  char ep[600];
  snprintf(ep, sizeof ep, "tcp://%s", E->cfg.coordinator);
  int zero = 0;
  if (!E->link || zmq_setsockopt(E->link, ZMQ_CURVE_SERVERKEY, keys.server_public, 41) != 0
      || zmq_setsockopt(E->link, ZMQ_CURVE_PUBLICKEY, keys.client_public, 41) != 0
      || zmq_setsockopt(E->link, ZMQ_CURVE_SECRETKEY, keys.client_secret, 41) != 0
      || zmq_setsockopt(E->link, ZMQ_LINGER, &zero, sizeof zero) != 0
      || zmq_connect(E->link, ep) != 0) {
    kg_error("exec: cannot connect to the coordinator %s: %s", ep, zmq_strerror(zmq_errno()));
    return KG_EUSAGE;
  }
  /* The handshake's outcome: a coordinator that refuses this node's keys
     (another job secret) shows only as failed handshakes here. */
  E->monitor = kg_socket_handshake_monitor(E->zctx, E->link, S_MONITOR);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "host", host);
  cJSON_AddNumberToObject(f, "nproc", E->cfg.nproc_per_node);
  kg_ex_node_send(E, "hello", f);
  E->coord_seen = kg_ex_now(E);   /* the joining deadline covers the start */
  E->beat_next = E->coord_seen + E->cfg.heartbeat_ms / 4;
  kg_notice("exec: node %d of %d, coordinator %s (CURVE)", E->cfg.node_rank, E->cfg.nnodes,
            E->cfg.coordinator);
  return 0;
}

void
kg_ex_node_close(kg_exec_s *E)
{
  if (E->monitor)
    zmq_close(E->monitor);
  E->monitor = NULL;
  if (E->link) {
    int linger = 1000;
    zmq_setsockopt(E->link, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(E->link);
  }
  if (E->zctx)
    zmq_ctx_term(E->zctx);
  E->link = E->zctx = NULL;
  cJSON_Delete(E->decision);
  E->decision = NULL;
  cJSON_Delete(E->listing);
  E->listing = NULL;
}

void
kg_ex_node_send(kg_exec_s *E, const char *type, cJSON *fields)
{
  cJSON *m = fields ? fields : cJSON_CreateObject();
  cJSON_AddStringToObject(m, "type", type);
  cJSON_AddNumberToObject(m, "node", E->cfg.node_rank);
  char *text = cJSON_PrintUnformatted(m);
  if (text && E->link) {
    zmq_send(E->link, text, strlen(text), ZMQ_DONTWAIT);
    if (E->loop)
      kg_loop_sent(E->loop, E->link);   /* the send may have taken the input's edge */
  }
  free(text);
  cJSON_Delete(m);
}

/*  The welcome's nonce must be readable here: the checkpoint directory is
    shared, else multi-node mode is refused. */
static bool
s_shared_storage(kg_exec_s *E, const cJSON *m)
{
  const cJSON *nonce = cJSON_GetObjectItemCaseSensitive(m, "nonce");
  if (!cJSON_IsString(nonce) || strspn(nonce->valuestring, "0123456789abcdef") != 32
      || nonce->valuestring[32])
    return false;
  /* In this node's own --checkpoints: the same directory, seen here,
     read without following a link planted at .kguard or at the name. */
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/.kguard", E->cfg.ckpt_dir);
  int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  char name[64], data[64];
  snprintf(name, sizeof name, "nonce-%s", nonce->valuestring);
  int fd = dir >= 0 ? openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) : -1;
  ssize_t n = fd >= 0 ? read(fd, data, sizeof data) : -1;
  if (fd >= 0)
    close(fd);
  if (dir >= 0)
    close(dir);
  return n == 32 && memcmp(data, nonce->valuestring, 32) == 0;
}

void
kg_ex_node_recv(kg_exec_s *E)
{
  for (;;) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, E->link, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      return;
    }
    cJSON *m = cJSON_ParseWithLength(zmq_msg_data(&msg), zmq_msg_size(&msg));
    zmq_msg_close(&msg);
    E->coord_seen = kg_ex_now(E);
    E->heard = true;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
    if (!cJSON_IsString(type)) {
      kg_warning("exec: malformed message from the coordinator ignored");
    } else if (strcmp(type->valuestring, "welcome") == 0) {
      const cJSON *gen = cJSON_GetObjectItemCaseSensitive(m, "gen");
      if (cJSON_IsNumber(gen) && gen->valueint >= 0)
        E->generation = gen->valueint;   /* a requeued job goes on counting */
      const cJSON *nonce = cJSON_GetObjectItemCaseSensitive(m, "nonce");
      if (cJSON_IsString(nonce))
        snprintf(E->nonce, sizeof E->nonce, "%s", nonce->valuestring);
      kg_ex_fire(E, KG_EXE_WELCOME, s_shared_storage(E, m) ? 1 : 0);
    } else if (strcmp(type->valuestring, "check") == 0) {
      kg_ex_fire(E, KG_EXE_CHECK, 0);
    } else if (strcmp(type->valuestring, "start") == 0) {
      const cJSON *gen = cJSON_GetObjectItemCaseSensitive(m, "gen");
      const cJSON *port = cJSON_GetObjectItemCaseSensitive(m, "master_port");
      const cJSON *store = cJSON_GetObjectItemCaseSensitive(m, "store_port");
      E->store_port = cJSON_IsNumber(store) ? store->valueint : 0;
      if (cJSON_IsNumber(gen) && gen->valueint >= 0)
        E->generation = gen->valueint;
      kg_ex_fire(E, KG_EXE_START, cJSON_IsNumber(port) ? port->valueint : 0);
    } else if (strcmp(type->valuestring, "stop") == 0) {
      const cJSON *by = cJSON_GetObjectItemCaseSensitive(m, "by");
      kg_ex_fire(E, KG_EXE_PEER_FAULT, cJSON_IsNumber(by) ? by->valueint : -1);
    } else if (strcmp(type->valuestring, "decision") == 0) {
      cJSON_Delete(E->decision);
      E->decision = m;
      m = NULL;
      kg_ex_fire(E, KG_EXE_DECISION, 0);
    }
    cJSON_Delete(m);
  }
}

/*  Heartbeats both ways: send one when due, and declare the coordinator
    lost when it said nothing for the heartbeat timeout (once). Returns the
    next time (monotonic ms) this needs to run. */
int64_t
kg_ex_node_when(const kg_exec_s *E)
{
  int64_t next = E->beat_next, hb = E->cfg.heartbeat_ms;
  if (!E->lost && E->coord_seen + hb + 1 < next)
    next = E->coord_seen + hb + 1;
  return next > 0 ? next : 1;
}

int64_t
kg_ex_node_timers(kg_exec_s *E)
{
  int64_t now = kg_ex_now(E), hb = E->cfg.heartbeat_ms;
  if (now >= E->beat_next) {
    kg_ex_node_send(E, "beat", NULL);
    E->beat_next = now + (hb / 4 > 0 ? hb / 4 : 1);
  }
  kg_ex_state_t st = kg_ex_state(E);
  if (!E->lost && st != KG_EX_DONE && st != KG_EX_ENDING && st != KG_EX_JOINING
      && now - E->coord_seen > hb) {
    E->lost = true;
    kg_ex_fire(E, KG_EXE_LINK_LOST, 0);
  }
  int64_t next = E->beat_next;
  if (!E->lost && E->coord_seen + hb + 1 < next)
    next = E->coord_seen + hb + 1;
  return next;
}

cJSON *
kg_ex_node_report(kg_exec_s *E)
{
  if (!E->sticky_report)
    return cJSON_CreateNull();
  const kg_match_t *m = kg_diagnosis_match(E->diag);
  cJSON *r = cJSON_CreateObject();
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  cJSON_AddStringToObject(r, "host", host);
  cJSON_AddNumberToObject(r, "rank", E->cfg.node_rank * E->cfg.nproc_per_node
                                     + (E->mode == KG_EXEC_MODE_AGENT && E->fault_rank > 0
                                        ? E->fault_rank : 0));
  cJSON_AddStringToObject(r, "family", m && m->family ? m->family->id : "unknown");
  cJSON_AddStringToObject(r, "line", m ? m->line : "");
  cJSON_AddNumberToObject(r, "fault_ms", (double) E->fault_wall_ms);
  cJSON_AddNumberToObject(r, "last_step", (double) E->pace.last_step);
  cJSON_AddStringToObject(r, "signature", E->signature);
  if (E->incident) {
    cJSON_AddStringToObject(r, "incident", kg_incident_id(E->incident));
    const cJSON *gh = cJSON_GetObjectItemCaseSensitive(kg_incident_json(E->incident),
                                                       "gpu_health");
    if (gh)
      cJSON_AddItemToObject(r, "gpu_health", cJSON_Duplicate(gh, true));
  }
  return r;
}

/*  Rank r's memory directory of snapshots on this node, into buf. */
static void
s_memory_dir(const kg_exec_s *E, int r, char *buf, size_t len)
{
  snprintf(buf, len, "%s/rank-%d", kg_snapdir_path(E->snapdir), r);
}

/*  Whether the decision restores rank r from a snapshot in memory. */
static bool
s_from_memory(const kg_exec_s *E, int r)
{
  char key[16];
  snprintf(key, sizeof key, "%d", r);
  const char *tier = kg_json_string(cJSON_GetObjectItemCaseSensitive(E->decision, "tiers"),
                                    key);
  return tier && strcmp(tier, "memory") == 0;
}

/*  The decision's archive of rank r as a path on this node, into buf: a
    disk archive named relative to the shared directory (another node may
    mount it elsewhere), or a snapshot that must lie in rank r's own
    memory directory here (nothing else on this node is ever read on the
    coordinator's word). */
static bool
s_archive(const kg_exec_s *E, int r, char *buf, size_t len)
{
  char key[16];
  snprintf(key, sizeof key, "%d", r);
  const char *a = kg_json_string(cJSON_GetObjectItemCaseSensitive(E->decision, "archives"),
                                 key);
  if (!a || strstr(a, ".."))
    return false;
  if (!s_from_memory(E, r)) {
    if (a[0] == '/')
      return false;
    snprintf(buf, len, "%s/%s", E->cfg.ckpt_dir, a);
    return true;
  }
  char dir[PATH_MAX + 32];
  if (!E->snapdir)
    return false;
  s_memory_dir(E, r, dir, sizeof dir);
  size_t n = strlen(dir);
  if (strncmp(a, dir, n) != 0 || a[n] != '/' || strchr(a + n + 1, '/'))
    return false;
  snprintf(buf, len, "%s", a);
  return true;
}

/*  Rank r reads its snapshot where it lies, in memory: the pointer its
    kguard.resume() reads (KGUARD_RESUME_DIR/rank-R.memory.json: archive,
    digest, step) instead of a restored copy. Returns 0 or a negative
    code. */
static int
s_point_at_memory(kg_exec_s *E, int r, const char *archive)
{
  char key[16], ptr[PATH_MAX + 160];
  snprintf(key, sizeof key, "%d", r);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "archive", archive);
  kg_json_add_string_or_null(o, "digest", kg_json_string(cJSON_GetObjectItemCaseSensitive(
                                                            E->decision, "digests"), key));
  cJSON_AddNumberToObject(o, "step", (double) E->resume_step);
  cJSON_AddStringToObject(o, "tier", "memory");
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!text)
    return KG_ENOMEM;
  snprintf(ptr, sizeof ptr, "%s/rank-%d.memory.json", E->restored_base, r);
  int rc = kg_file_write_atomic(ptr, text, strlen(text), 0600);
  free(text);
  if (rc != 0)
    kg_error("exec: cannot point rank %d at its snapshot in memory (%s): %s", r, ptr,
             kg_strerror(rc));
  else
    kg_notice("exec: rank %d restores step %lld from memory, %s", r,
              (long long) E->resume_step, archive);
  return rc;
}

/*  The restore of this node's ranks at the agreed step, in three passes
    over them: each local rank's archives newer than it go to quarantine
    (the decision says from when), then its snapshots in memory newer than
    it (so that a later fault never meets them), then each rank's archive
    is restored (a snapshot in memory is read in place). Returns 1 when a
    helper was started, 0 when every step is done, < 0 on failure. */
int
kg_ex_node_restore_next(kg_exec_s *E)
{
  int n = E->nranks, first = E->cfg.node_rank * n;
  const cJSON *inc = cJSON_GetObjectItemCaseSensitive(E->decision, "incident");
  const char *incident = cJSON_IsString(inc) ? inc->valuestring : "job";
  while (E->restore_rank < 3 * n) {
    int pass = E->restore_rank / n, r = first + E->restore_rank % n;
    E->restore_rank++;
    char key[16], dir[PATH_MAX + 32];
    snprintf(key, sizeof key, "%d", r);
    if (pass < 2) {
      const cJSON *from = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(E->decision, pass ? "quarantine_memory" : "quarantine"),
        key);
      if (!cJSON_IsNumber(from) || (pass == 1 && !E->snapdir))
        continue;
      if (pass == 0)
        snprintf(dir, sizeof dir, "%s/rank-%d", E->cfg.ckpt_dir, r);
      else
        s_memory_dir(E, r, dir, sizeof dir);
      char froms[32];
      snprintf(froms, sizeof froms, "%.0f", from->valuedouble);
      char *argv[] = {E->exe, "ckpt", "quarantine", dir, "--incident", (char *) incident,
                      "--from", froms, NULL};
      return kg_ex_start_helper(E, argv) == 0 ? 1 : -1;
    }
    char archive[PATH_MAX + 200], dest[PATH_MAX + 128];
    if (!s_archive(E, r, archive, sizeof archive)) {
      if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(E->decision, "archives"), key))) {
        kg_error("exec: the decision names an archive for rank %d that is not in this "
                 "node's checkpoint directory or memory", r);
        return -1;
      }
      continue;
    }
    kg_paths_mkdirs(E->restored_base, 0700);
    if (!E->resume_archive)
      E->resume_archive = strdup(archive);
    if (s_from_memory(E, r)) {
      if (s_point_at_memory(E, r, archive) != 0)
        return -1;
      continue;
    }
    snprintf(dest, sizeof dest, "%s/rank-%d", E->restored_base, r);
    char *argv[] = {E->exe, "ckpt", "restore", archive, dest, NULL};
    return kg_ex_start_helper(E, argv) == 0 ? 1 : -1;
  }
  return 0;
}

void
kg_ex_node_list_begin(kg_exec_s *E)
{
  cJSON_Delete(E->listing);
  E->listing = cJSON_CreateObject();
  E->listing_failed = false;
  E->listing_started = kg_ex_now(E);
  E->list_rank = E->cfg.node_rank * E->nranks;
  E->list_memory = false;
  kg_ex_enter(E, KG_EX_WAITING);
}

int
kg_ex_node_list_next(kg_exec_s *E)
{
  int first = E->cfg.node_rank * E->nranks, last = first + E->nranks;
  if (E->list_rank >= last && !E->list_memory && E->snapdir && !E->cfg.fresh) {
    E->list_memory = true;   /* the disk is listed: now the memory */
    E->list_rank = first;
  }
  while (E->list_rank < last) {
    char dir[PATH_MAX + 32];
    if (E->list_memory)
      s_memory_dir(E, E->list_rank, dir, sizeof dir);
    else
      snprintf(dir, sizeof dir, "%s/rank-%d", E->cfg.ckpt_dir, E->list_rank);
    struct stat st;
    if (stat(dir, &st) != 0) {   /* nothing sealed by this rank yet */
      char key[16];
      snprintf(key, sizeof key, "%d", E->list_rank++);
      if (!E->list_memory)
        cJSON_AddItemToObject(E->listing, key, cJSON_CreateArray());
      continue;
    }
    char *argv[] = {E->exe, "ckpt", "list", dir, "--json", NULL};
    if (kg_ex_start_helper(E, argv) != 0) {
      if (!E->list_memory)
        E->listing_failed = true;
      E->list_rank = last;
      E->list_memory = true;
      return 0;
    }
    return 1;
  }
  return 0;
}

/*  Rows of other runs leave rows: the same user's other experiment copied
    into the directory is never chosen. An archive whose signature does
    not verify has no run to read (`ckpt list` says null): it stays, never
    chosen, so that checkpoints which exist but do not verify stop a start
    over (kg_coord_ckpt_unusable), as resume-prepare's do on one node. */
static void
s_only_this_run(kg_exec_s *E, cJSON *rows)
{
  for (int i = cJSON_GetArraySize(rows) - 1; i >= 0; i--) {
    const cJSON *row = cJSON_GetArrayItem(rows, i);
    const char *run = kg_json_string(row, "run");
    if (run && strcmp(run, E->cfg.name) != 0) {
      const char *path = kg_json_string(row, "archive");
      kg_notice("exec: skipping %s: run '%s', not the run being resumed ('%s')",
                path ? path : "an archive", run, E->cfg.name);
      cJSON_DeleteItemFromArray(rows, i);
    }
  }
}

void
kg_ex_node_listed(kg_exec_s *E)
{
  int st = kg_child_status(E->helper);
  kg_child_destroy(&E->helper);
  cJSON *rows = E->helper_out ? cJSON_Parse(E->helper_out) : NULL;
  free(E->helper_out);
  E->helper_out = NULL;
  E->helper_len = 0;
  char key[16];
  snprintf(key, sizeof key, "%d", E->list_rank++);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !cJSON_IsArray(rows)) {
    cJSON_Delete(rows);
    if (E->list_memory) {
      /* Memory only ever adds a newer step: without it, the disk decides. */
      kg_warning("exec: cannot list rank %s's snapshots in memory (`kguard ckpt list`): "
                 "that rank restores from disk", key);
      return;
    }
    kg_error("exec: cannot list rank %s's checkpoints (`kguard ckpt list`)", key);
    E->listing_failed = true;
    return;
  }
  s_only_this_run(E, rows);
  if (E->list_memory) {
    cJSON *into = cJSON_GetObjectItemCaseSensitive(E->listing, key), *e;
    if (!into)
      into = cJSON_AddArrayToObject(E->listing, key);
    while (into && (e = cJSON_DetachItemFromArray(rows, 0)) != NULL) {
      const char *status = kg_json_string(e, "status");
      const char *path = kg_json_string(e, "archive");
      const char *reason = kg_json_string(e, "reason");
      if (status && strcmp(status, "valid") != 0 && strcmp(status, "leftover") != 0)
        kg_notice("exec: rank %s's snapshot %s in memory is not offered: %s: %s", key,
                  path ? path : "?", status, reason ? reason : "");
      cJSON_AddStringToObject(e, "tier", "memory");
      cJSON_AddItemToArray(into, e);
    }
    cJSON_Delete(rows);
    return;
  }
  /* Paths relative to the shared directory: another node may mount it
     elsewhere. */
  size_t base = strlen(E->cfg.ckpt_dir);
  cJSON *e;
  cJSON_ArrayForEach(e, rows) {
    cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "archive");
    if (cJSON_IsString(path) && strncmp(path->valuestring, E->cfg.ckpt_dir, base) == 0
        && path->valuestring[base] == '/') {
      char *rel = strdup(path->valuestring + base + 1);
      if (rel)
        cJSON_SetValuestring(path, rel);
      free(rel);
    }
  }
  cJSON_AddItemToObject(E->listing, key, rows);
}

void
kg_ex_node_list_start(kg_exec_s *E)
{
  kg_ex_node_list_begin(E);
  if (E->cfg.fresh) {
    /* Nothing to list: --fresh on any node starts every node at step 0. */
    kg_notice("exec: --fresh: asking the coordinator to start run %s at step 0 on every node",
              E->cfg.name);
    E->list_rank = (E->cfg.node_rank + 1) * E->nranks;
  }
  if (kg_ex_node_list_next(E) == 0)
    kg_ex_node_send_stopped(E);
}

void
kg_ex_node_send_stopped(kg_exec_s *E)
{
  int archives = 0;
  const cJSON *rows;
  cJSON_ArrayForEach(rows, E->listing)
    archives += cJSON_GetArraySize(rows);
  char took[32];
  kg_notice("exec: this node's ranks' checkpoints listed and verified: %d archive(s) in %s",
            archives, kg_throughput_duration(kg_ex_now(E) - E->listing_started, took,
                                             sizeof took));
  cJSON *f = cJSON_CreateObject();
  cJSON_AddNumberToObject(f, "gen", E->generation - 1);
  cJSON_AddItemToObject(f, "report", kg_ex_node_report(E));
  cJSON_AddStringToObject(f, "run", E->cfg.name);   /* the start's line names it */
  cJSON_AddBoolToObject(f, "fresh", E->cfg.fresh);
  if (E->listing_failed || !E->listing)
    cJSON_AddNullToObject(f, "listing");
  else
    cJSON_AddItemReferenceToObject(f, "listing", E->listing);
  kg_ex_node_send(E, "stopped", f);
  cJSON_Delete(E->listing);
  E->listing = NULL;
}
