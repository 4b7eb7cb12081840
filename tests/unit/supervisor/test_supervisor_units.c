/*  Unit tests of kg_ring, kg_pending, kg_state, kg_kernelspec, kg_child. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_child.h"
#include "kg_error.h"
#include "kg_kernelspec.h"
#include "kg_msg.h"
#include "kg_paths.h"
#include "kg_pending.h"
#include "kg_ring.h"
#include "kg_signer.h"
#include "kg_state.h"
#include "kg_test.h"

static long long
s_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

KG_TEST(ring_wraps)
{
  kg_ring_t *r = kg_ring_new(8, -1);
  kg_ring_append(r, "abcde", 5);
  kg_ring_append(r, "fghij", 5);
  char *t = kg_ring_tail(r, 100);
  KG_CHECK_STR(t, "cdefghij");
  free(t);
  kg_ring_append(r, "0123456789ABC", 13);   /* longer than the ring */
  t = kg_ring_tail(r, 100);
  KG_CHECK_STR(t, "56789ABC");
  free(t);
  KG_CHECK_INT(kg_ring_size(r), 8);
  kg_ring_destroy(&r);
  KG_CHECK(r == NULL);
  kg_ring_destroy(&r);
}

KG_TEST(ring_tail_and_total)
{
  char path[] = "/tmp/kg-ring-XXXXXX";
  int fd = mkstemp(path);
  kg_ring_t *r = kg_ring_new(16, fd);
  kg_ring_append(r, "line one\n", 9);
  kg_ring_append(r, "line two\n", 9);
  char *t = kg_ring_tail(r, 4);
  KG_CHECK_STR(t, "two\n");
  free(t);
  KG_CHECK_INT(kg_ring_total(r), 18);
  kg_ring_clear(r);
  KG_CHECK_INT(kg_ring_size(r), 0);
  kg_ring_destroy(&r);
  /* every byte reached the log file, in order */
  char buf[64] = "";
  int in = open(path, O_RDONLY);
  ssize_t n = read(in, buf, sizeof buf - 1);
  KG_CHECK_INT(n, 18);
  KG_CHECK_STR(buf, "line one\nline two\n");
  close(in);
  close(fd);
  unlink(path);
}

/*  Build a parsed request as it would arrive on a ROUTER socket. */
static kg_msg_t *
s_request(void *ctx, const char *type, const char *code, const char *ident)
{
  void *a = zmq_socket(ctx, ZMQ_PAIR), *b = zmq_socket(ctx, ZMQ_PAIR);
  char ep[64];
  snprintf(ep, sizeof ep, "inproc://req-%p", (void *) a);
  zmq_bind(a, ep);
  zmq_connect(b, ep);
  cJSON *content = cJSON_CreateObject();
  if (code)
    cJSON_AddStringToObject(content, "code", code);
  kg_msg_t *m = kg_msg_new(type, "sess", NULL, &content);
  kg_frame_t id = {ident, strlen(ident)};
  kg_msg_set_idents(m, &id, 1);
  kg_signer_t *s = kg_signer_new("k", 1, 0);
  kg_msg_send(m, b, s, 0);
  kg_msg_destroy(&m);
  kg_msg_recv(a, 0, &m);
  kg_msg_parse(m, s);
  kg_signer_destroy(&s);
  zmq_close(a);
  zmq_close(b);
  return m;
}

KG_TEST(pending_add_find_remove)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(4);
  kg_msg_t *m = s_request(ctx, "execute_request", "print(1)", "client-A");
  char id[64];
  snprintf(id, sizeof id, "%s", kg_msg_id(m));
  kg_pending_entry_t *e = kg_pending_add(p, m, KG_CH_SHELL, 42);
  KG_CHECK(e != NULL);
  KG_CHECK_STR(e->code, "print(1)");
  KG_CHECK_STR(e->msg_type, "execute_request");
  KG_CHECK_INT(e->ident_count, 1);
  KG_CHECK(e->idents[0].size == 8 && memcmp(e->idents[0].data, "client-A", 8) == 0);
  KG_CHECK_INT(e->arrival_ms, 42);
  const cJSON *mid = cJSON_GetObjectItemCaseSensitive(e->header, "msg_id");
  KG_CHECK_STR(mid->valuestring, id);
  kg_msg_destroy(&m);   /* the entry owns copies */
  KG_CHECK(kg_pending_find(p, id) == e);
  KG_CHECK_INT(kg_pending_count(p), 1);
  KG_CHECK(kg_pending_remove(p, id));
  KG_CHECK(!kg_pending_remove(p, id));
  KG_CHECK(kg_pending_find(p, id) == NULL);
  kg_pending_destroy(&p);
  zmq_ctx_term(ctx);
}

KG_TEST(pending_running)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(4);
  kg_msg_t *a = s_request(ctx, "kernel_info_request", NULL, "c");
  kg_msg_t *b = s_request(ctx, "execute_request", "a", "c");
  kg_msg_t *c = s_request(ctx, "execute_request", "b", "c");
  kg_pending_entry_t *ea = kg_pending_add(p, a, KG_CH_SHELL, 1);
  kg_pending_entry_t *eb = kg_pending_add(p, b, KG_CH_SHELL, 2);
  kg_pending_entry_t *ec = kg_pending_add(p, c, KG_CH_SHELL, 3);
  KG_CHECK(kg_pending_running(p) == NULL);   /* nothing forwarded yet */
  ea->forwarded = eb->forwarded = ec->forwarded = true;
  KG_CHECK(kg_pending_running(p) == eb);     /* the oldest forwarded execute */
  KG_CHECK(kg_pending_at(p, 2) == ec);
  kg_pending_remove(p, kg_msg_id(b));
  KG_CHECK(kg_pending_running(p) == ec);
  kg_msg_destroy(&a);
  kg_msg_destroy(&b);
  kg_msg_destroy(&c);
  kg_pending_destroy(&p);
  zmq_ctx_term(ctx);
}

KG_TEST(pending_held_queue_bounded)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(3);
  kg_msg_t *m1 = s_request(ctx, "execute_request", "1", "c");
  kg_msg_t *m2 = s_request(ctx, "interrupt_request", NULL, "c");
  kg_msg_t *m3 = s_request(ctx, "complete_request", NULL, "c");
  kg_msg_t *m4 = s_request(ctx, "execute_request", "4", "c");
  char id1[64], id3[64];
  snprintf(id1, sizeof id1, "%s", kg_msg_id(m1));
  snprintf(id3, sizeof id3, "%s", kg_msg_id(m3));
  KG_CHECK_INT(kg_pending_hold(p, &m1, KG_CH_SHELL), 0);
  KG_CHECK(m1 == NULL);
  KG_CHECK_INT(kg_pending_hold(p, &m2, KG_CH_CONTROL), 0);
  KG_CHECK_INT(kg_pending_hold(p, &m3, KG_CH_SHELL), 0);
  KG_CHECK_INT(kg_pending_hold(p, &m4, KG_CH_SHELL), KG_ETOOBIG);   /* both queues count */
  KG_CHECK(m4 != NULL);   /* still the caller's */
  KG_CHECK_INT(kg_pending_held(p), 3);
  KG_CHECK_INT(kg_pending_held_shell(p), 2);
  kg_channel_t ch;
  kg_msg_t *out = kg_pending_unhold(p, false, &ch);   /* the control queue */
  KG_CHECK_INT(ch, KG_CH_CONTROL);
  kg_msg_destroy(&out);
  KG_CHECK(kg_pending_unhold(p, false, &ch) == NULL);
  out = kg_pending_unhold(p, true, &ch);
  KG_CHECK_STR(kg_msg_id(out), id1);   /* the shell queue, in order */
  KG_CHECK_INT(ch, KG_CH_SHELL);
  kg_msg_destroy(&out);
  out = kg_pending_unhold(p, true, &ch);
  KG_CHECK_STR(kg_msg_id(out), id3);
  kg_msg_destroy(&out);
  KG_CHECK(kg_pending_unhold(p, true, &ch) == NULL);
  /* wraps around; drop empties one queue only */
  KG_CHECK_INT(kg_pending_hold(p, &m4, KG_CH_SHELL), 0);
  kg_msg_t *m5 = s_request(ctx, "shutdown_request", NULL, "c");
  KG_CHECK_INT(kg_pending_hold(p, &m5, KG_CH_CONTROL), 0);
  KG_CHECK_INT(kg_pending_drop_held(p, true), 1);
  KG_CHECK_INT(kg_pending_held(p), 1);
  kg_pending_destroy(&p);   /* frees what is still held */
  zmq_ctx_term(ctx);
}

KG_TEST(pending_execute_flags)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(4);
  kg_msg_t *a = s_request(ctx, "execute_request", "a", "c");
  cJSON *c = cJSON_Duplicate(kg_msg_json(a, KG_PART_CONTENT), 1);
  cJSON_AddBoolToObject(c, "silent", false);   /* no stop_on_error: true */
  kg_msg_set_json(a, KG_PART_CONTENT, c);
  kg_pending_entry_t *e = kg_pending_add(p, a, KG_CH_SHELL, 1);
  KG_CHECK(e->stop_on_error && !e->silent && e->well_formed);
  cJSON_AddBoolToObject(c, "stop_on_error", false);
  cJSON_ReplaceItemInObject(c, "silent", cJSON_CreateNumber(1));   /* Python truthiness */
  kg_msg_set_json(a, KG_PART_CONTENT, c);
  e = kg_pending_add(p, a, KG_CH_SHELL, 2);   /* same msg_id: replaces */
  KG_CHECK_INT(kg_pending_count(p), 1);
  KG_CHECK(!e->stop_on_error && e->silent && e->well_formed);
  cJSON_DeleteItemFromObject(c, "silent");   /* ipykernel would not reply */
  kg_msg_set_json(a, KG_PART_CONTENT, c);
  e = kg_pending_add(p, a, KG_CH_SHELL, 3);
  KG_CHECK(!e->well_formed);
  cJSON_Delete(c);
  kg_msg_destroy(&a);
  kg_pending_destroy(&p);
  zmq_ctx_term(ctx);
}

KG_TEST(pending_expire_keeps_late_routing)
{
  void *ctx = zmq_ctx_new();
  kg_pending_t *p = kg_pending_new(4);
  kg_pending_set_limits(p, 2000, 60000, 2);
  kg_msg_t *x = s_request(ctx, "execute_request", "x", "c");
  kg_msg_t *u = s_request(ctx, "frobnicate_request", NULL, "c");
  kg_msg_t *v = s_request(ctx, "frobnicate_request", NULL, "c");
  kg_msg_t *w = s_request(ctx, "complete_request", NULL, "c");
  kg_msg_t *y = s_request(ctx, "history_request", NULL, "c");
  kg_pending_entry_t *ex = kg_pending_add(p, x, KG_CH_SHELL, 1000);
  kg_pending_entry_t *eu = kg_pending_add(p, u, KG_CH_SHELL, 1000);
  kg_pending_entry_t *ev = kg_pending_add(p, v, KG_CH_SHELL, 1000);
  ex->forwarded = eu->forwarded = ev->forwarded = true;
  eu->idle_ms = 1500;   /* the kernel went idle without replying */
  KG_CHECK_INT(kg_pending_idle_expiry(p, eu), 3500);  /* the loop's deadline */
  KG_CHECK_INT(kg_pending_idle_expiry(p, ex), 0);     /* not idle: none */
  KG_CHECK_INT(kg_pending_expire(p, 3000), 0);       /* within the grace */
  KG_CHECK_INT(kg_pending_expire(p, 3500), 1);
  KG_CHECK(kg_pending_find(p, kg_msg_id(u)) == NULL);
  kg_pending_entry_t *late = kg_pending_find_expired(p, kg_msg_id(u));
  KG_CHECK(late != NULL && late->ident_count == 1);   /* a late reply still routes */
  KG_CHECK(kg_pending_remove(p, kg_msg_id(u)));
  KG_CHECK(kg_pending_find_expired(p, kg_msg_id(u)) == NULL);
  /* the cap: the oldest non-execute requests beyond 2 go; executes stay */
  kg_pending_add(p, w, KG_CH_SHELL, 3600)->forwarded = true;
  kg_pending_add(p, y, KG_CH_SHELL, 3700)->forwarded = true;
  KG_CHECK_INT(kg_pending_expire(p, 3800), 1);
  KG_CHECK(kg_pending_find(p, kg_msg_id(v)) == NULL);
  KG_CHECK(kg_pending_find_expired(p, kg_msg_id(v)) != NULL);
  /* age: non-execute requests older than the limit; the execute stays */
  KG_CHECK_INT(kg_pending_expire(p, 3600 + 60000), 1);
  KG_CHECK(kg_pending_find(p, kg_msg_id(w)) == NULL);
  KG_CHECK(kg_pending_find(p, kg_msg_id(x)) == ex);
  KG_CHECK(kg_pending_running(p) == ex);
  ex->idle_ms = 70000;   /* an execute the kernel went idle for unanswered */
  KG_CHECK_INT(kg_pending_expire(p, 72000), 2);   /* it and y (age) */
  KG_CHECK(kg_pending_running(p) == NULL);
  kg_msg_destroy(&x);
  kg_msg_destroy(&u);
  kg_msg_destroy(&v);
  kg_msg_destroy(&w);
  kg_msg_destroy(&y);
  kg_pending_destroy(&p);
  zmq_ctx_term(ctx);
}

KG_TEST(pending_busy_ledger)
{
  kg_pending_t *p = kg_pending_new(4);
  cJSON *h1 = cJSON_Parse("{\"msg_id\":\"m1\",\"msg_type\":\"execute_request\"}");
  cJSON *h2 = cJSON_Parse("{\"msg_id\":\"m2\",\"msg_type\":\"execute_request\"}");
  cJSON *bad = cJSON_Parse("{\"msg_type\":\"execute_request\"}");
  KG_CHECK_INT(kg_pending_busy_open(p, h1, "s-old"), 0);
  KG_CHECK_INT(kg_pending_busy_open(p, h1, "s-new"), 1);   /* one busy only */
  KG_CHECK(kg_pending_busy_open(p, bad, "s") < 0);
  KG_CHECK_INT(kg_pending_busy_open(p, h2, "s-old"), 0);
  KG_CHECK(kg_pending_busy_is_open(p, "m1"));
  KG_CHECK_INT(kg_pending_busy_count(p), 2);
  const cJSON *h;
  const char *session;
  KG_CHECK(kg_pending_busy_at(p, 0, &h, &session));
  KG_CHECK_STR(cJSON_GetObjectItem(h, "msg_id")->valuestring, "m1");
  KG_CHECK_STR(session, "s-old");   /* the session of the first busy */
  /* what kguard writes for m1 (the sticky notice, after a restart gave the
     kernel a new session) goes out under m1's busy session */
  KG_CHECK_STR(kg_pending_busy_session(p, "m1"), "s-old");
  KG_CHECK(kg_pending_busy_session(p, "m3") == NULL);
  KG_CHECK(kg_pending_busy_session(p, NULL) == NULL);
  KG_CHECK(kg_pending_busy_close(p, "m1"));
  KG_CHECK(kg_pending_busy_session(p, "m1") == NULL);
  KG_CHECK(!kg_pending_busy_close(p, "m1"));   /* one idle only */
  KG_CHECK(!kg_pending_busy_is_open(p, "m1"));
  KG_CHECK(!kg_pending_busy_at(p, 1, &h, &session));
  cJSON_Delete(h1);
  cJSON_Delete(h2);
  cJSON_Delete(bad);
  kg_pending_destroy(&p);   /* frees the open record of m2 */
}

KG_TEST(state_table_paths)
{
  /* The sticky path: READY → CLOSING → STOPPING → RESTORING → BACKOFF → STARTING → READY */
  kg_state_t s = KG_ST_READY;
  s = kg_state_next(s, KG_EV_STICKY);
  KG_CHECK_INT(s, KG_ST_CLOSING);
  KG_CHECK(!kg_state_gate_open(s));
  s = kg_state_next(s, KG_EV_EVIDENCE_DONE);
  KG_CHECK_INT(s, KG_ST_STOPPING);
  s = kg_state_next(s, KG_EV_STOPPED_RESTORE);
  KG_CHECK_INT(s, KG_ST_RESTORING);
  s = kg_state_next(s, KG_EV_RESTORED);
  KG_CHECK_INT(s, KG_ST_BACKOFF);
  s = kg_state_next(s, KG_EV_TIMER);
  KG_CHECK_INT(s, KG_ST_STARTING);
  s = kg_state_next(s, KG_EV_KERNEL_READY);
  KG_CHECK_INT(s, KG_ST_READY);
  KG_CHECK(kg_state_gate_open(s));
  /* death and give-up; DOWN is left only by a user restart */
  KG_CHECK_INT(kg_state_next(KG_ST_READY, KG_EV_CHILD_EXIT), KG_ST_STOPPING);
  KG_CHECK_INT(kg_state_next(KG_ST_STOPPING, KG_EV_STOPPED_GIVE_UP), KG_ST_DOWN);
  KG_CHECK_INT(kg_state_next(KG_ST_DOWN, KG_EV_USER_RESTART), KG_ST_STARTING);
  KG_CHECK_INT(kg_state_next(KG_ST_STARTING, KG_EV_SPAWN_FAILED), KG_ST_DOWN);
  /* shutdown from everywhere but the shutdown states: a forwarded
     shutdown_request awaits the kernel's reply (EXITING), a signal
     terminates the kernel at once (EXIT_TERM) */
  for (int st = 0; st < KG_ST_COUNT; st++) {
    bool exiting = kg_state_exiting((kg_state_t) st);
    KG_CHECK_INT(kg_state_next((kg_state_t) st, KG_EV_SHUTDOWN_REQUEST),
                 exiting ? KG_ST_NONE : KG_ST_EXITING);
    if (!exiting)
      KG_CHECK_INT(kg_state_next((kg_state_t) st, KG_EV_SHUTDOWN), KG_ST_EXIT_TERM);
  }
  KG_CHECK_STR(kg_state_name(KG_ST_RESTORING), "RESTORING");
  KG_CHECK_STR(kg_event_name(KG_EV_STICKY), "STICKY");
}

KG_TEST(state_table_ignores)
{
  KG_CHECK_INT(kg_state_next(KG_ST_DOWN, KG_EV_TIMER), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next(KG_ST_DOWN, KG_EV_CHILD_EXIT), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next(KG_ST_CLOSING, KG_EV_STICKY), KG_ST_NONE);   /* once */
  KG_CHECK_INT(kg_state_next(KG_ST_RESTORING, KG_EV_USER_RESTART), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next(KG_ST_EXITING, KG_EV_USER_RESTART), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next(KG_ST_READY, KG_EV_KERNEL_READY), KG_ST_NONE);
  KG_CHECK_INT(kg_state_next((kg_state_t) 99, KG_EV_TIMER), KG_ST_NONE);
}

KG_TEST(kernelspec_parse_ok)
{
  const char *text = "{\"argv\": [\"/usr/bin/python3\", \"-m\", \"ipykernel_launcher\", \"-f\","
                     " \"{connection_file}\"], \"display_name\": \"Python 3 (ipykernel)\","
                     " \"language\": \"python\", \"env\": {\"A\": \"1\"},"
                     " \"interrupt_mode\": \"message\", \"metadata\": {\"debugger\": true}}";
  kg_kernelspec_t *s = NULL;
  char err[256] = "";
  KG_CHECK_INT(kg_kernelspec_parse("python3", text, strlen(text), &s, err, sizeof err), 0);
  KG_CHECK_STR(s->display_name, "Python 3 (ipykernel)");
  KG_CHECK_STR(s->language, "python");
  KG_CHECK_STR(s->interrupt_mode, "message");
  KG_CHECK_INT(cJSON_GetArraySize(s->argv), 5);
  KG_CHECK(s->env && s->metadata);
  kg_kernelspec_destroy(&s);
  KG_CHECK(s == NULL);
  const char *min = "{\"argv\": [\"k\"], \"display_name\": \"K\"}";
  KG_CHECK_INT(kg_kernelspec_parse("k", min, strlen(min), &s, err, sizeof err), 0);
  KG_CHECK_STR(s->interrupt_mode, "signal");
  KG_CHECK_STR(s->language, "");
  kg_kernelspec_destroy(&s);
}

KG_TEST(kernelspec_parse_errors)
{
  struct { const char *text, *field; } cases[] = {
    {"[]", "not a JSON object"},
    {"{\"display_name\": \"x\"}", "argv"},
    {"{\"argv\": [], \"display_name\": \"x\"}", "argv"},
    {"{\"argv\": [1], \"display_name\": \"x\"}", "argv"},
    {"{\"argv\": [\"a\"]}", "display_name"},
    {"{\"argv\": [\"a\"], \"display_name\": \"x\", \"env\": {\"A\": 1}}", "env"},
    {"{\"argv\": [\"a\"], \"display_name\": \"x\", \"interrupt_mode\": \"sigint\"}",
     "interrupt_mode"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kg_kernelspec_t *s = NULL;
    char err[256] = "";
    int rc = kg_kernelspec_parse("bad", cases[i].text, strlen(cases[i].text), &s, err,
                                 sizeof err);
    KG_CHECK_INT(rc, KG_EKERNELSPEC);
    KG_CHECK(s == NULL);
    KG_CHECK(strstr(err, cases[i].field) != NULL);
  }
}

KG_TEST(kernelspec_find_search_path)
{
  char root[] = "/tmp/kg-ks-XXXXXX";
  KG_CHECK(mkdtemp(root) != NULL);
  char d[512], f[600];
  snprintf(d, sizeof d, "%s/a/kernels/mine", root);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "mkdir -p %s %s/b/kernels/mine", d, root);
  KG_CHECK_INT(system(cmd), 0);
  snprintf(f, sizeof f, "%s/kernel.json", d);
  FILE *o = fopen(f, "w");
  fputs("{\"argv\": [\"first\"], \"display_name\": \"A\"}", o);
  fclose(o);
  snprintf(f, sizeof f, "%s/b/kernels/mine/kernel.json", root);
  o = fopen(f, "w");
  fputs("{\"argv\": [\"second\"], \"display_name\": \"B\"}", o);
  fclose(o);
  char jp[600];
  snprintf(jp, sizeof jp, "%s/a:%s/b", root, root);
  setenv("JUPYTER_PATH", jp, 1);
  kg_kernelspec_t *s = NULL;
  char err[2048] = "";
  KG_CHECK_INT(kg_kernelspec_find("mine", NULL, &s, err, sizeof err), 0);
  KG_CHECK_STR(s ? s->display_name : NULL, "A");   /* first entry wins */
  KG_CHECK(s && strstr(s->dir, "/a/kernels/mine") != NULL);
  kg_kernelspec_destroy(&s);
  KG_CHECK_INT(kg_kernelspec_find("absent", NULL, &s, err, sizeof err), KG_ENOKERNEL);
  KG_CHECK(strstr(err, "absent") && strstr(err, "/usr/share/jupyter/kernels"));
  KG_CHECK_INT(kg_kernelspec_find("../x", NULL, &s, err, sizeof err), KG_EUSAGE);
  unsetenv("JUPYTER_PATH");
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  KG_CHECK_INT(system(cmd), 0);
}

static int
s_wait_exit(kg_child_t *c, int timeout_ms)
{
  long long deadline = s_now_ms() + timeout_ms;
  while (s_now_ms() < deadline) {
    int r = kg_child_reap(c);
    if (r != 0)
      return r;
    poll(NULL, 0, 10);   /* polling a condition with a deadline */
  }
  return 0;
}

KG_TEST(child_true)
{
  char *argv[] = {"true", NULL};
  kg_child_opts_t o = {.argv = argv};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  KG_CHECK(c != NULL);
  KG_CHECK_INT(s_wait_exit(c, 5000), 1);
  KG_CHECK(WIFEXITED(kg_child_status(c)) && WEXITSTATUS(kg_child_status(c)) == 0);
  kg_child_destroy(&c);
  KG_CHECK(c == NULL);
}

KG_TEST(child_missing_command)
{
  char *argv[] = {"/nonexistent/kg-command", NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), -ENOENT);   /* synchronously, via the error pipe */
  KG_CHECK(c == NULL);
  char *argv2[] = {"/etc/passwd", NULL};           /* not executable */
  o.argv = argv2;
  KG_CHECK_INT(kg_child_spawn(&o, &c), -EACCES);
  char *argv3[] = {"true", NULL};
  o.argv = argv3;
  o.cwd = "/nonexistent-dir";
  KG_CHECK_INT(kg_child_spawn(&o, &c), -ENOENT);
  KG_CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);    /* nothing left to reap */
}

KG_TEST(child_group_kill_grandchildren)
{
  /* The child starts a grandchild that ignores SIGTERM, prints its pid and
     waits; killing the group with SIGKILL takes both. */
  char *argv[] = {"sh", "-c",
                  "sh -c 'trap \"\" TERM; echo $$; exec sleep 300' & wait", NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  KG_CHECK(getpgid(kg_child_pid(c)) == kg_child_pid(c));   /* its own group */
  KG_CHECK(getsid(kg_child_pid(c)) == kg_child_pid(c));    /* and session */
  char buf[64] = "";
  size_t got = 0;
  long long deadline = s_now_ms() + 5000;
  while (!strchr(buf, '\n') && s_now_ms() < deadline) {
    struct pollfd p = {kg_child_stdout_fd(c), POLLIN, 0};
    poll(&p, 1, 100);
    ssize_t n = kg_child_read(c, 1, buf + got, sizeof buf - 1 - got);
    if (n > 0)
      got += (size_t) n;
  }
  pid_t grandchild = (pid_t) atol(buf);
  KG_CHECK(grandchild > 0);
  KG_CHECK_INT(getpgid(grandchild), kg_child_pid(c));
  KG_CHECK_INT(kg_child_kill_group(c, SIGKILL), 0);
  KG_CHECK_INT(s_wait_exit(c, 5000), 1);
  KG_CHECK(WIFSIGNALED(kg_child_status(c)) && WTERMSIG(kg_child_status(c)) == SIGKILL);
  /* the grandchild (reparented to init) is gone too */
  deadline = s_now_ms() + 5000;
  bool dead = false;
  while (!dead && s_now_ms() < deadline) {
    if (kill(grandchild, 0) != 0) {
      dead = true;
      break;
    }
    char st[64];
    snprintf(st, sizeof st, "/proc/%d/stat", (int) grandchild);
    FILE *f = fopen(st, "r");
    char state = '?';
    if (f) {
      if (fscanf(f, "%*d %*s %c", &state) != 1)
        state = '?';
      fclose(f);
    }
    if (state == 'Z' || !f)
      dead = true;   /* a zombie waiting for init to reap it is dead */
    else
      poll(NULL, 0, 20);
  }
  KG_CHECK(dead);
  kg_child_destroy(&c);
}

KG_TEST(child_pipes)
{
  char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
  kg_child_opts_t o = {.argv = argv, .capture = true};
  kg_child_t *c = NULL;
  KG_CHECK_INT(kg_child_spawn(&o, &c), 0);
  KG_CHECK_INT(s_wait_exit(c, 5000), 1);
  char buf[64] = "";
  struct pollfd p = {kg_child_stdout_fd(c), POLLIN, 0};
  poll(&p, 1, 2000);
  KG_CHECK_INT(kg_child_read(c, 1, buf, sizeof buf - 1), 4);
  KG_CHECK_STR(buf, "out\n");
  memset(buf, 0, sizeof buf);
  KG_CHECK_INT(kg_child_read(c, 2, buf, sizeof buf - 1), 4);
  KG_CHECK_STR(buf, "err\n");
  KG_CHECK_INT(kg_child_read(c, 1, buf, sizeof buf), 0);   /* EOF closes it */
  KG_CHECK_INT(kg_child_stdout_fd(c), -1);
  KG_CHECK_INT(WEXITSTATUS(kg_child_status(c)), 3);
  kg_child_destroy(&c);
}

KG_TEST(child_describe)
{
  char buf[64];
  kg_child_describe(3 << 8, buf, sizeof buf);
  KG_CHECK_STR(buf, "exit code 3");
  kg_child_describe(SIGKILL, buf, sizeof buf);
  KG_CHECK_STR(buf, "signal 9 (SIGKILL)");
}

/*  A runtime dir whose owner is gone (a kguard killed with SIGKILL) is
    removed when the next one is made; live owners, dirs without an owner
    file and unrelated names are left alone. */
static void
s_fake_runtime_dir(const char *parent, const char *name, long owner_pid)
{
  char dir[512], file[600];
  snprintf(dir, sizeof dir, "%s/%s", parent, name);
  KG_CHECK_INT(mkdir(dir, 0700), 0);
  snprintf(file, sizeof file, "%s/kernel.json", dir);
  FILE *f = fopen(file, "w");
  fputs("{}", f);
  fclose(f);
  if (owner_pid > 0) {
    snprintf(file, sizeof file, "%s/owner", dir);
    f = fopen(file, "w");
    fprintf(f, "%ld\n", owner_pid);
    fclose(f);
  }
}

static bool
s_exists(const char *parent, const char *name)
{
  char path[512];
  snprintf(path, sizeof path, "%s/%s", parent, name);
  struct stat st;
  return stat(path, &st) == 0;
}

KG_TEST(runtime_dir_reaps_stale)
{
  char parent[] = "/tmp/kgrt-XXXXXX";
  KG_CHECK(mkdtemp(parent) != NULL);
  pid_t dead = fork();
  if (dead == 0)
    _exit(0);
  KG_CHECK(waitpid(dead, NULL, 0) == dead);   /* reaped: its pid is free */
  s_fake_runtime_dir(parent, "kguard-DEAD01", (long) dead);
  s_fake_runtime_dir(parent, "kguard-ALIVE1", (long) getpid());
  s_fake_runtime_dir(parent, "kguard-NOOWNR", 0);
  s_fake_runtime_dir(parent, "other-DEAD002", (long) dead);
  char *old = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
  setenv("XDG_RUNTIME_DIR", parent, 1);
  char made[512];
  KG_CHECK_INT(kg_paths_runtime_dir(made, sizeof made), 0);
  KG_CHECK(strncmp(made, parent, strlen(parent)) == 0);
  KG_CHECK(!s_exists(parent, "kguard-DEAD01"));
  KG_CHECK(s_exists(parent, "kguard-ALIVE1"));
  KG_CHECK(s_exists(parent, "kguard-NOOWNR"));
  KG_CHECK(s_exists(parent, "other-DEAD002"));
  char owner[600];
  snprintf(owner, sizeof owner, "%s/owner", made);
  FILE *f = fopen(owner, "r");
  long pid = 0;
  KG_CHECK(f && fscanf(f, "%ld", &pid) == 1);
  if (f)
    fclose(f);
  KG_CHECK_INT(pid, getpid());
  if (old) {
    setenv("XDG_RUNTIME_DIR", old, 1);
    free(old);
  } else
    unsetenv("XDG_RUNTIME_DIR");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", parent);
  KG_CHECK_INT(system(cmd), 0);
}

/*  Make a runtime dir in a child under parent; its path comes back on a
    pipe. mode 0: the child then waits until *wait_w closes (alive);
    1: it removes its owner record and is SIGKILLed (killed mid-write of
    that record: the dir is ownerless); 2: like 0, but its owner record
    names a pid that is gone (a lock outranks a pid). */
static int s_holds[8], s_n_holds;

static pid_t
s_child_runtime_dir(const char *parent, int mode, char *made, size_t len, int *wait_w)
{
  int out[2], hold[2];
  KG_CHECK_INT(pipe(out), 0);
  KG_CHECK_INT(pipe(hold), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(out[0]);
    close(hold[1]);
    for (int i = 0; i < s_n_holds; i++)
      close(s_holds[i]);   /* the other children's: they must see EOF */
    setenv("XDG_RUNTIME_DIR", parent, 1);
    char dir[512];
    if (kg_paths_runtime_dir(dir, sizeof dir) != 0)
      _exit(1);
    char owner[600];
    snprintf(owner, sizeof owner, "%s/owner", dir);
    if (mode == 1)
      unlink(owner);
    if (mode == 2) {
      FILE *f = fopen(owner, "w");
      fprintf(f, "999999999\n");
      fclose(f);
    }
    if (write(out[1], dir, strlen(dir) + 1) < 0)
      _exit(1);
    close(out[1]);
    if (mode == 1)
      raise(SIGKILL);
    char c;
    while (read(hold[0], &c, 1) > 0) {
    }
    _exit(0);
  }
  close(out[1]);
  close(hold[0]);
  size_t got = 0;
  ssize_t n;
  while (got < len && (n = read(out[0], made + got, len - got)) > 0)
    got += (size_t) n;
  close(out[0]);
  KG_CHECK(got > 0 && made[got - 1] == '\0');
  *wait_w = hold[1];
  if (s_n_holds < 8)
    s_holds[s_n_holds++] = hold[1];
  return pid;
}

KG_TEST(runtime_dir_lock_decides)
{
  char parent[] = "/tmp/kgrt-XXXXXX";
  KG_CHECK(mkdtemp(parent) != NULL);
  char alive[512], killed[512], reused[512];
  int hold_alive, hold_killed, hold_reused;
  pid_t a = s_child_runtime_dir(parent, 0, alive, sizeof alive, &hold_alive);
  pid_t r = s_child_runtime_dir(parent, 2, reused, sizeof reused, &hold_reused);
  pid_t k = s_child_runtime_dir(parent, 1, killed, sizeof killed, &hold_killed);
  int status;
  KG_CHECK(waitpid(k, &status, 0) == k && WIFSIGNALED(status));
  close(hold_killed);
  /* empty, ownerless dirs: one from long ago, one just made */
  char old_empty[600], new_empty[600];
  snprintf(old_empty, sizeof old_empty, "%s/kguard-EMPTY1", parent);
  snprintf(new_empty, sizeof new_empty, "%s/kguard-EMPTY2", parent);
  KG_CHECK_INT(mkdir(old_empty, 0700), 0);
  KG_CHECK_INT(mkdir(new_empty, 0700), 0);
  struct timespec then[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
  KG_CHECK_INT(utimensat(AT_FDCWD, old_empty, then, 0), 0);
  struct stat st;
  KG_CHECK(stat(killed, &st) == 0);
  char owner[600];
  snprintf(owner, sizeof owner, "%s/owner", killed);
  KG_CHECK(access(owner, F_OK) != 0);   /* ownerless: the case the pid check skipped */

  /* a new kguard (this process) makes its dir: the reaper runs */
  char *old = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
  setenv("XDG_RUNTIME_DIR", parent, 1);
  char made[512];
  KG_CHECK_INT(kg_paths_runtime_dir(made, sizeof made), 0);
  KG_CHECK(stat(killed, &st) != 0 && errno == ENOENT);     /* its lock was free */
  KG_CHECK(stat(alive, &st) == 0);                         /* held by a live child */
  KG_CHECK(stat(reused, &st) == 0);                        /* held, whatever its pid says */
  KG_CHECK(stat(old_empty, &st) != 0 && errno == ENOENT);  /* empty, an hour old */
  KG_CHECK(stat(new_empty, &st) == 0);                     /* may be in its first moment */
  char lock[600];
  snprintf(lock, sizeof lock, "%s/lock", made);
  KG_CHECK(stat(lock, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);

  /* the alive child ends: its dir goes at the next start */
  s_n_holds = 0;
  close(hold_alive);
  KG_CHECK(waitpid(a, &status, 0) == a);
  close(hold_reused);
  KG_CHECK(waitpid(r, &status, 0) == r);
  char made2[512];
  KG_CHECK_INT(kg_paths_runtime_dir(made2, sizeof made2), 0);
  KG_CHECK(stat(alive, &st) != 0 && errno == ENOENT);
  KG_CHECK(stat(reused, &st) != 0 && errno == ENOENT);
  KG_CHECK(stat(made, &st) == 0);   /* this process's own first dir stays */
  if (old) {
    setenv("XDG_RUNTIME_DIR", old, 1);
    free(old);
  } else
    unsetenv("XDG_RUNTIME_DIR");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", parent);
  KG_CHECK_INT(system(cmd), 0);
}

KG_TEST_MAIN(KG_CASE(ring_wraps), KG_CASE(ring_tail_and_total),
             KG_CASE(pending_add_find_remove), KG_CASE(pending_running),
             KG_CASE(pending_held_queue_bounded), KG_CASE(pending_execute_flags),
             KG_CASE(pending_expire_keeps_late_routing), KG_CASE(pending_busy_ledger),
             KG_CASE(state_table_paths),
             KG_CASE(state_table_ignores), KG_CASE(kernelspec_parse_ok),
             KG_CASE(kernelspec_parse_errors), KG_CASE(kernelspec_find_search_path),
             KG_CASE(child_true), KG_CASE(child_missing_command),
             KG_CASE(child_group_kill_grandchildren), KG_CASE(child_pipes),
             KG_CASE(child_describe), KG_CASE(runtime_dir_reaps_stale),
             KG_CASE(runtime_dir_lock_decides))
