/*  Diagnosis: fault time, line reassembly, family rules across evidence, the
    failure signature. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_diagnosis.h"
#include "kg_error.h"
#include "kg_errtext.h"
#include "kg_jsonscan.h"
#include "kg_test.h"
#include "kg_test_rules.h"

#define ASSERT_LINE(thread)                                                                  \
  "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "      \
  "block: [0,0,0], thread: [" thread ",0,0] Assertion `t >= 0 && t < n_classes` failed."

#define CUDA_710                                                                             \
  "CUDA error: device-side assert triggered\nCUDA kernel errors might be asynchronously "    \
  "reported at some other API call, so the stacktrace below might be incorrect.\nFor "       \
  "debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to " \
  "enable device-side assertions.\n"

static kg_classifier_t *rules;

static kg_diagnosis_t *
s_new(void)
{
  if (!rules && !(rules = kg_test_rules()))
    exit(1);
  return kg_diagnosis_new(rules);
}

/*  An iopub error content as ipykernel sends it (coloured traceback). */
static cJSON *
s_error(const char *ename, const char *evalue)
{
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "ename", ename);
  cJSON_AddStringToObject(c, "evalue", evalue);
  cJSON *tb = cJSON_AddArrayToObject(c, "traceback");
  cJSON_AddItemToArray(tb, cJSON_CreateString("\x1b[0;31m--------------------\x1b[0m"));
  cJSON_AddItemToArray(tb, cJSON_CreateString("\x1b[0;32mCell In[2], line 3\x1b[0m"));
  char last[2048];
  snprintf(last, sizeof last, "\x1b[0;31m%s\x1b[0m: %s", ename, evalue);
  cJSON_AddItemToArray(tb, cJSON_CreateString(last));
  return c;
}

static void
s_feed_str(kg_diagnosis_t *d, kg_source_t src, const char *name, const char *parent,
           const char *text, int64_t t, kg_diag_event_t expect)
{
  KG_CHECK_INT(kg_diagnosis_feed(d, src, name, parent, text, strlen(text), t), expect);
}

KG_TEST(fault_time_is_earliest_sign)
{
  kg_diagnosis_t *d = s_new();
  /* unrelated output first: no sign */
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL, "loading data\n", 900, KG_DIAG_NONE);
  KG_CHECK_INT(kg_diagnosis_fault_time(d), -1);
  /* the device printf arrives on raw stderr before the traceback */
  /* (a suspicion: raw text proves nothing by itself) */
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL, ASSERT_LINE("3") "\n", 1000, KG_DIAG_SUSPECT);
  KG_CHECK(!kg_diagnosis_sticky(d));
  /* the cell's uncaught error proves it; T stays the first evidence */
  cJSON *e = s_error("AcceleratorError", CUDA_710);
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "req-2", 1500), KG_DIAG_STICKY);
  /* the execute_reply repeats it: not counted twice */
  cJSON_AddStringToObject(e, "status", "error");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_EXECUTE_REPLY, e, "req-2", 1600), KG_DIAG_NONE);
  cJSON_Delete(e);
  KG_CHECK_INT(kg_diagnosis_fault_time(d), 1000);
  KG_CHECK(kg_diagnosis_sticky(d));
  KG_CHECK_STR(kg_diagnosis_match(d)->family->id, "device-assert");
  KG_CHECK_STR(kg_diagnosis_assertion(d), ASSERT_LINE("3"));
  KG_CHECK_STR(kg_diagnosis_parent(d), "req-2");
  KG_CHECK_STR(kg_backend_name(kg_diagnosis_backend(d)), "cuda");

  cJSON *j = kg_diagnosis_to_json(d);
  cJSON *fe = cJSON_GetObjectItem(j, "first_error");
  KG_CHECK_STR(cJSON_GetObjectItem(fe, "ename")->valuestring, "AcceleratorError");
  KG_CHECK_STR(cJSON_GetObjectItem(fe, "evalue")->valuestring, CUDA_710);
  cJSON *tb = cJSON_GetObjectItem(fe, "traceback");
  KG_CHECK_INT(cJSON_GetArraySize(tb), 3);
  KG_CHECK(strchr(cJSON_GetArrayItem(tb, 2)->valuestring, '\x1b') == NULL);
  KG_CHECK(!strncmp(cJSON_GetArrayItem(tb, 2)->valuestring, "AcceleratorError: CUDA error", 28));
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "following")), 0);
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "raw_stderr_tail")), 2);
  KG_CHECK_INT(cJSON_GetObjectItem(j, "fault_time_ms")->valuedouble, 1000);
  cJSON_Delete(j);

  /* a later error is a following message, and STICKY is not repeated */
  e = s_error("AcceleratorError", CUDA_710);
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "req-3", 2000), KG_DIAG_NONE);
  cJSON_Delete(e);
  j = kg_diagnosis_to_json(d);
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "following")), 1);
  cJSON_Delete(j);
  kg_diagnosis_destroy(&d);
  KG_CHECK(d == NULL);
}

KG_TEST(assertion_split_across_raw_reads)
{
  kg_diagnosis_t *d = s_new();
  const char *line = ASSERT_LINE("7") "\n";
  size_t cut = 60;
  KG_CHECK_INT(kg_diagnosis_feed(d, KG_SRC_RAW_STDERR, NULL, NULL, line, cut, 500), KG_DIAG_NONE);
  KG_CHECK_INT(kg_diagnosis_feed(d, KG_SRC_RAW_STDERR, NULL, NULL, line + cut,
                                 strlen(line) - cut, 700),
               KG_DIAG_SUSPECT);
  KG_CHECK_STR(kg_diagnosis_assertion(d), ASSERT_LINE("7"));
  KG_CHECK_INT(kg_diagnosis_confirm(d, NULL, 900), KG_DIAG_STICKY);   /* the probe failed */
  /* T is when the line's first byte arrived */
  KG_CHECK_INT(kg_diagnosis_fault_time(d), 500);
  kg_diagnosis_destroy(&d);
}

KG_TEST(line_split_across_stream_messages)
{
  kg_diagnosis_t *d = s_new();
  s_feed_str(d, KG_SRC_STREAM, "stderr", "req-1", "epoch 1\n../aten/src/ATen/native/cuda/Loss.cu:250: "
             "nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thr", 100, KG_DIAG_NONE);
  /* another request's stream does not mix into this line */
  s_feed_str(d, KG_SRC_STREAM, "stderr", "req-9", "ead: [1,0,0] noise\n", 150, KG_DIAG_NONE);
  s_feed_str(d, KG_SRC_STREAM, "stdout", "req-1", "ead: [1,0,0] noise\n", 160, KG_DIAG_NONE);
  s_feed_str(d, KG_SRC_STREAM, "stderr", "req-1", "ead: [2,0,0] Assertion `t >= 0 && t < n_classes` failed.\n",
             200, KG_DIAG_SUSPECT);
  KG_CHECK_STR(kg_diagnosis_assertion(d), ASSERT_LINE("2"));
  KG_CHECK_STR(kg_diagnosis_suspect_parent(d), "req-1");
  KG_CHECK_INT(kg_diagnosis_confirm(d, NULL, 300), KG_DIAG_STICKY);
  KG_CHECK_STR(kg_diagnosis_parent(d), "req-1");
  KG_CHECK_INT(kg_diagnosis_fault_time(d), 100);
  kg_diagnosis_destroy(&d);
}

KG_TEST(cublas_after_assert_belongs_to_assert)
{
  kg_diagnosis_t *d = s_new();
  s_feed_str(d, KG_SRC_RAW_STDOUT, NULL, NULL, ASSERT_LINE("0") "\n", 10, KG_DIAG_SUSPECT);
  KG_CHECK_INT(kg_diagnosis_confirm(d, NULL, 15), KG_DIAG_STICKY);
  cJSON *e = s_error("RuntimeError", "CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling "
                                     "`cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, "
                                     "b, ldb, &beta, c, ldc)`");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "req-1", 20), KG_DIAG_NONE);
  cJSON_Delete(e);
  KG_CHECK_STR(kg_diagnosis_match(d)->family->id, "device-assert");
  kg_diagnosis_destroy(&d);

  /* the other order: cuBLAS first (advice), the assert line later → sticky,
     T at the cuBLAS error */
  d = s_new();
  e = s_error("RuntimeError", "CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm`");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "req-1", 20), KG_DIAG_ADVICE);
  cJSON_Delete(e);
  KG_CHECK_STR(kg_diagnosis_match(d)->family->id, "cublas-cudnn");
  KG_CHECK(!kg_diagnosis_sticky(d));
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL, ASSERT_LINE("0") "\n", 30, KG_DIAG_SUSPECT);
  KG_CHECK_INT(kg_diagnosis_confirm(d, NULL, 40), KG_DIAG_STICKY);
  KG_CHECK_STR(kg_diagnosis_match(d)->family->id, "device-assert");
  KG_CHECK_INT(kg_diagnosis_fault_time(d), 20);
  KG_CHECK_STR(kg_diagnosis_parent(d), "req-1");
  cJSON *j = kg_diagnosis_to_json(d);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "first_error"), "ename")->valuestring,
               "RuntimeError");
  cJSON_Delete(j);
  kg_diagnosis_destroy(&d);
}

KG_TEST(rocm_719_launch_failure_likely_assert)
{
  kg_diagnosis_t *d = s_new();
  cJSON *e = s_error("RuntimeError", "HIP error: unspecified launch failure\nHIP kernel errors "
                     "might be asynchronously reported at some other API call, so the stacktrace "
                     "below might be incorrect.\nFor debugging consider passing "
                     "AMD_SERIALIZE_KERNEL=3\nCompile with `TORCH_USE_HIP_DSA` to enable "
                     "device-side assertions.\n");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "r", 5), KG_DIAG_STICKY);
  cJSON_Delete(e);
  const kg_match_t *m = kg_diagnosis_match(d);
  KG_CHECK_STR(m->family->id, "launch-failure");
  KG_CHECK(m->note && strstr(m->note, "ROCm form of a device-side assert likely"));
  KG_CHECK_INT(kg_diagnosis_backend(d), KG_BACKEND_ROCM);
  KG_CHECK(kg_diagnosis_assertion(d) == NULL);
  kg_diagnosis_destroy(&d);
}

KG_TEST(oom_is_advice)
{
  kg_diagnosis_t *d = s_new();
  cJSON *e = s_error("OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                     "has a total capacity of 79.15 GiB of which 1.02 GiB is free.");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "r1", 5), KG_DIAG_ADVICE);
  /* the same request's execute_reply: already advised */
  cJSON_AddStringToObject(e, "status", "error");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_EXECUTE_REPLY, e, "r1", 6), KG_DIAG_NONE);
  KG_CHECK(!kg_diagnosis_sticky(d));
  KG_CHECK_STR(kg_diagnosis_match(d)->family->id, "out-of-memory");
  /* the same OOM in a later cell is advised again */
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "r2", 50), KG_DIAG_ADVICE);
  cJSON_Delete(e);
  /* a plain Python error is nobody's business */
  e = s_error("KeyError", "'cuda'");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "r3", 60), KG_DIAG_NONE);
  cJSON_Delete(e);
  KG_CHECK(!kg_diagnosis_sticky(d));
  /* a sticky fault in a later cell: T is not moved back to the old OOM */
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL, ASSERT_LINE("1") "\n", 90000, KG_DIAG_SUSPECT);
  KG_CHECK_INT(kg_diagnosis_confirm(d, NULL, 90100), KG_DIAG_STICKY);
  KG_CHECK_INT(kg_diagnosis_fault_time(d), 90000);
  kg_diagnosis_destroy(&d);
}

KG_TEST(sigabrt_with_hsa_line_is_sticky)
{
  kg_diagnosis_t *d = s_new();
  /* HIP prints the abort line and dies before ending it */
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL,
             "/tmp/h.hip:9: void k(const int *): Device-side assertion `labels[i] < 4' failed.",
             100, KG_DIAG_NONE);
  KG_CHECK_INT(kg_diagnosis_feed_exit(d, -1, SIGABRT, 300), KG_DIAG_STICKY);
  KG_CHECK_INT(kg_diagnosis_fault_time(d), 100);
  KG_CHECK_STR(kg_diagnosis_match(d)->family->id, "device-assert");
  kg_diagnosis_destroy(&d);

  d = s_new();
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL,
             ":0:rocdevice.cpp            :2614: 2817263451 us: 4242 : [tid:0x7f1c2a7fc640] "
             "Device::callbackQueue aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL "
             "operation resulted in a hardware exception. code: 0x1016",
             100, KG_DIAG_NONE);
  KG_CHECK_INT(kg_diagnosis_feed_exit(d, -1, SIGABRT, 300), KG_DIAG_STICKY);
  KG_CHECK_INT(kg_diagnosis_backend(d), KG_BACKEND_ROCM);
  cJSON *j = kg_diagnosis_to_json(d);
  KG_CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "exit"), "signal")->valueint, SIGABRT);
  cJSON_Delete(j);
  kg_diagnosis_destroy(&d);

  /* SIGABRT without any GPU sign: recorded, not sticky (the kernel died) */
  d = s_new();
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL, "Fatal Python error: Aborted\n", 100, KG_DIAG_NONE);
  KG_CHECK_INT(kg_diagnosis_feed_exit(d, -1, SIGABRT, 300), KG_DIAG_NONE);
  KG_CHECK(!kg_diagnosis_sticky(d));
  kg_diagnosis_destroy(&d);
}

KG_TEST(signature_normalised)
{
  char a[KG_DIAG_SIGNATURE_MAX], b[KG_DIAG_SIGNATURE_MAX], c[KG_DIAG_SIGNATURE_MAX];
  kg_diagnosis_t *d = s_new();
  KG_CHECK_INT(kg_diagnosis_signature(d, "x", a, sizeof a), KG_ENOTFOUND);
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL,
             "../aten/src/ATen/native/cuda/Loss.cu:250: k: block: [0,0,0], thread: [3,0,0] "
             "Assertion `t >= 0 && t < n_classes` failed.\n", 1, KG_DIAG_SUSPECT);
  KG_CHECK_INT(kg_diagnosis_confirm(d, NULL, 2), KG_DIAG_STICKY);
  KG_CHECK_INT(kg_diagnosis_signature(d, "loss = crit(out, y)", a, sizeof a), 0);
  kg_diagnosis_reset(d);
  KG_CHECK(!kg_diagnosis_sticky(d));
  KG_CHECK_INT(kg_diagnosis_fault_time(d), -1);
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL,
             "../aten/src/ATen/native/cuda/Loss.cu:250: k: block: [5,0,0], thread: [91,0,0] "
             "Assertion `t >= 0 && t < n_classes` failed.\n", 1, KG_DIAG_SUSPECT);
  KG_CHECK_INT(kg_diagnosis_confirm(d, NULL, 2), KG_DIAG_STICKY);
  KG_CHECK_INT(kg_diagnosis_signature(d, "loss = crit(out, y)", b, sizeof b), 0);
  KG_CHECK_STR(a, b);
  KG_CHECK(!strncmp(a, "device-assert:", 14));
  /* another cell: another signature */
  KG_CHECK_INT(kg_diagnosis_signature(d, "other cell", c, sizeof c), 0);
  KG_CHECK(strcmp(a, c) != 0);
  kg_diagnosis_destroy(&d);

  char n[256];
  kg_errtext_normalise("Memory access fault by GPU node-2 (Agent handle: 0x55d8a1e3c2f0) on "
                       "address 0x7f3a2c000000.  Reason:  x", n, sizeof n);
  KG_CHECK_STR(n, "Memory access fault by GPU node-2 (Agent handle: 0x?) on address 0x?. Reason: x");
}

KG_TEST(step_marker_and_following_bounded)
{
  kg_diagnosis_t *d = s_new();
  s_feed_str(d, KG_SRC_STREAM, "stdout", "r", "kguard: completed step 29\n", 1, KG_DIAG_NONE);
  KG_CHECK_INT(kg_diagnosis_last_step(d), 29);
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL, ASSERT_LINE("0") "\n", 2, KG_DIAG_SUSPECT);
  /* confirmed: the suspicion's line and the probe's verdict come first */
  KG_CHECK_INT(kg_diagnosis_confirm(d, NULL, 2), KG_DIAG_STICKY);
  for (int i = 0; i < KG_DIAG_MAX_FOLLOWING + 10 - 2; i++)
    s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL, ASSERT_LINE("1") "\n", 3 + i, KG_DIAG_NONE);
  cJSON *j = kg_diagnosis_to_json(d);
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "following")), KG_DIAG_MAX_FOLLOWING);
  KG_CHECK_INT(cJSON_GetObjectItem(j, "following_dropped")->valueint, 10);
  KG_CHECK_INT(cJSON_GetObjectItem(j, "last_step")->valueint, 29);
  cJSON_Delete(j);
  kg_diagnosis_destroy(&d);
}

/*  Proof and suspicion, by table: the same sticky text is proof only as the cell's
    uncaught error or with a death; printed anywhere else it is a suspicion;
    a non-sticky family printed gives nothing (advice only when uncaught). */
KG_TEST(suspicion_vs_proof_per_source)
{
  static const struct {
    kg_source_t source;
    const char *text;
    kg_diag_event_t expect;
  } rows[] = {
    {KG_SRC_STREAM, "RuntimeError: CUDA error: device-side assert triggered\n", KG_DIAG_SUSPECT},
    {KG_SRC_STREAM, ASSERT_LINE("3") "\n", KG_DIAG_SUSPECT},
    {KG_SRC_RAW_STDERR, ASSERT_LINE("3") "\n", KG_DIAG_SUSPECT},
    {KG_SRC_RAW_STDOUT, "RuntimeError: CUDA error: unspecified launch failure\n", KG_DIAG_SUSPECT},
    {KG_SRC_STREAM, "previous run failed with CUDA error: an illegal memory access was "
                    "encountered\n", KG_DIAG_SUSPECT},
    {KG_SRC_STREAM, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
     KG_DIAG_NONE},
    {KG_SRC_RAW_STDERR, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
     KG_DIAG_NONE},
    {KG_SRC_STREAM, "epoch 3 loss 0.25\n", KG_DIAG_NONE},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_diagnosis_t *d = s_new();
    const char *name = rows[i].source == KG_SRC_STREAM ? "stdout" : NULL;
    const char *parent = rows[i].source == KG_SRC_STREAM ? "p" : NULL;
    kg_diag_event_t ev = kg_diagnosis_feed(d, rows[i].source, name, parent, rows[i].text,
                                           strlen(rows[i].text), 100);
    if (ev != rows[i].expect)
      fprintf(stderr, "row %zu: event %d, expected %d\n", i, ev, rows[i].expect);
    KG_CHECK_INT(ev, rows[i].expect);
    KG_CHECK(!kg_diagnosis_sticky(d));
    KG_CHECK_INT(kg_diagnosis_suspect(d), rows[i].expect == KG_DIAG_SUSPECT);
    /* a second mention while the suspicion stands is not a second probe */
    KG_CHECK_INT(kg_diagnosis_feed(d, rows[i].source, name, parent, rows[i].text,
                                   strlen(rows[i].text), 200), KG_DIAG_NONE);
    if (rows[i].expect == KG_DIAG_SUSPECT) {
      /* the probe passed: cleared, nothing established, T forgotten */
      kg_diagnosis_clear_suspicion(d);
      KG_CHECK(!kg_diagnosis_suspect(d));
      KG_CHECK_INT(kg_diagnosis_fault_time(d), -1);
      /* the same text later is a new suspicion */
      KG_CHECK_INT(kg_diagnosis_feed(d, rows[i].source, name, parent, rows[i].text,
                                     strlen(rows[i].text), 300), KG_DIAG_SUSPECT);
    }
    kg_diagnosis_destroy(&d);
  }
  /* proof: the uncaught error, error reply; a death by a signal after a
     suspicion; a plain exit after a suspicion proves nothing */
  kg_diagnosis_t *d = s_new();
  cJSON *e = s_error("RuntimeError", "CUDA error: device-side assert triggered");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "p", 5), KG_DIAG_STICKY);
  kg_diagnosis_destroy(&d);
  d = s_new();
  cJSON_AddStringToObject(e, "status", "error");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_EXECUTE_REPLY, e, "p", 5), KG_DIAG_STICKY);
  cJSON_Delete(e);
  kg_diagnosis_destroy(&d);
  d = s_new();
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL, ASSERT_LINE("3") "\n", 10, KG_DIAG_SUSPECT);
  KG_CHECK_INT(kg_diagnosis_feed_exit(d, -1, SIGABRT, 20), KG_DIAG_STICKY);
  KG_CHECK_INT(kg_diagnosis_fault_time(d), 10);
  kg_diagnosis_destroy(&d);
  d = s_new();
  s_feed_str(d, KG_SRC_RAW_STDERR, NULL, NULL, ASSERT_LINE("3") "\n", 10, KG_DIAG_SUSPECT);
  KG_CHECK_INT(kg_diagnosis_feed_exit(d, 0, 0, 20), KG_DIAG_NONE);
  KG_CHECK(!kg_diagnosis_sticky(d));
  kg_diagnosis_destroy(&d);
  /* an OOM as the cell's uncaught error is advice */
  d = s_new();
  e = s_error("OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB.");
  KG_CHECK_INT(kg_diagnosis_feed_error(d, KG_SRC_IOPUB_ERROR, e, "p", 5), KG_DIAG_ADVICE);
  cJSON_Delete(e);
  kg_diagnosis_destroy(&d);
}

/*  A stream's text read as kguard reads it (kg_jsonscan_stream, whole lines
    skipped undecoded when kg_diagnosis_may_skip_json says so) ends in the
    same diagnosis as the decoded text fed whole; the skip is taken for
    plain output and refused where a line matters. */
typedef struct {
  kg_diagnosis_t *d;
  kg_diag_event_t ev;
  int skipped;
} s_json_feed_t;

static int
s_json_piece(const char *text, size_t len, void *arg)
{
  s_json_feed_t *f = arg;
  kg_diag_event_t ev = kg_diagnosis_feed(f->d, KG_SRC_STREAM, "stderr", "req", text, len, 7);
  if (ev > f->ev)
    f->ev = ev;
  return 0;
}

static bool
s_json_skip(const char *raw, size_t len, void *arg)
{
  s_json_feed_t *f = arg;
  bool skip = kg_diagnosis_may_skip_json(f->d, raw, len);
  f->skipped += skip;
  return skip;
}

/*  n lines of plain output with tabs, quotes and backslashes. */
static void
s_boring(char *buf, size_t cap, int n)
{
  for (int i = 0; i < n; i++)
    snprintf(buf + strlen(buf), cap - strlen(buf), "epoch %d\tloss \"0.5\" C:\\runs\n", i);
}

KG_TEST(json_lines_skipped_only_where_nothing_can_match)
{
  static const struct {
    const char *middle;         /* a line among boring ones                 */
    const char *from, *to;      /* then in the JSON, from written as to     */
    int skipped;                /* skips taken                              */
    kg_diag_event_t ev;
  } rows[] = {
    {"", NULL, NULL, 1, KG_DIAG_NONE},
    {ASSERT_LINE("3") "\n", NULL, NULL, 0, KG_DIAG_SUSPECT},
    {ASSERT_LINE("3") "\n", "/", "\\/", 0, KG_DIAG_SUSPECT},   /* \/: not plain */
    {"\x1b[0;31mRuntimeError\x1b[0m: " CUDA_710, NULL, NULL, 0, KG_DIAG_SUSPECT},
    /* an encoder may write any character as \uXXXX: the raw text then
       lacks the literal, so those lines must be decoded */
    {"RuntimeError: " CUDA_710, "device-side", "device\\u002dside", 0, KG_DIAG_SUSPECT},
    {"RuntimeError: " CUDA_710, "Error: ", "Error\\u003a ", 0, KG_DIAG_SUSPECT},
    /* printed, a non-sticky family is no event, but its line is read */
    {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", NULL, NULL, 0,
     KG_DIAG_NONE},
    {"kguard: completed step 17\n", NULL, NULL, 0, KG_DIAG_NONE},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char text[8192] = "";
    s_boring(text, sizeof text, 40);
    snprintf(text + strlen(text), sizeof text - strlen(text), "%s", rows[i].middle);
    s_boring(text, sizeof text, 40);
    snprintf(text + strlen(text), sizeof text - strlen(text), "no newline yet");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", "stderr");
    cJSON_AddStringToObject(c, "text", text);
    char *json = cJSON_PrintUnformatted(c);
    cJSON_Delete(c);
    char raw[16384];
    size_t n = 0;
    for (const char *p = json; *p && n + 16 < sizeof raw;) {
      size_t k = rows[i].from ? strlen(rows[i].from) : 0;
      if (k && strncmp(p, rows[i].from, k) == 0) {
        n += (size_t) snprintf(raw + n, sizeof raw - n, "%s", rows[i].to);
        p += k;
      } else
        raw[n++] = *p++;
    }
    raw[n] = '\0';
    free(json);

    s_json_feed_t f = {.d = s_new()};
    bool is_stderr;
    KG_CHECK_INT(kg_jsonscan_stream((kg_frame_t) {raw, n}, 1024, &is_stderr, s_json_piece,
                                    s_json_skip, &f),
                 0);
    kg_diagnosis_t *whole = s_new();
    kg_diag_event_t ev = kg_diagnosis_feed(whole, KG_SRC_STREAM, "stderr", "req", text,
                                           strlen(text), 7);
    if (f.skipped != rows[i].skipped || f.ev != ev)
      fprintf(stderr, "row %zu\n", i);
    KG_CHECK_INT(f.skipped, rows[i].skipped);
    KG_CHECK_INT(ev, rows[i].ev);
    KG_CHECK_INT(f.ev, ev);
    KG_CHECK_INT(kg_diagnosis_suspect(f.d), kg_diagnosis_suspect(whole));
    KG_CHECK_STR(kg_diagnosis_assertion(f.d) ? kg_diagnosis_assertion(f.d) : "",
                 kg_diagnosis_assertion(whole) ? kg_diagnosis_assertion(whole) : "");
    KG_CHECK_INT(kg_diagnosis_last_step(f.d), kg_diagnosis_last_step(whole));
    /* the line left open is the same: its end, fed to both, decides alike */
    KG_CHECK_INT(kg_diagnosis_feed(f.d, KG_SRC_STREAM, "stderr", "req", " CUDA error: misaligned address\n", 2, 8),
                 kg_diagnosis_feed(whole, KG_SRC_STREAM, "stderr", "req", " CUDA error: misaligned address\n", 2, 8));
    kg_diagnosis_destroy(&whole);
    kg_diagnosis_destroy(&f.d);
  }
}

/*  A traceback quotes the program's source: an error text in that code is
    no evidence and never the quoted line; the error's own line is. Each
    row: what is fed (one line per feed, or the chunk as it comes), the
    event of the last feed, the line the suspicion quotes ("" none). */
KG_TEST(traceback_source_line_is_not_the_error)
{
  static const struct {
    const char *frame;
    bool frame_ok;
  } frames[] = {
    {"  File \"/w/train.py\", line 28, in main", true},
    {"File \"<string>\", line 1, in <module>", true},
    {"\tFile \"a b.py\", line 7", true},
    {"  File \"/w/train.py\", line x, in main", false},
    {"  File /w/train.py, line 28", false},
    {"RuntimeError: CUDA error: device-side assert triggered", false},
    {"  File \"", false},
    {"", false},
  };
  for (size_t i = 0; i < sizeof frames / sizeof *frames; i++)
    KG_CHECK_INT(kg_errtext_is_frame(frames[i].frame, strlen(frames[i].frame)),
                 frames[i].frame_ok);

  static const struct {
    kg_source_t src;
    const char *feeds[4];
    kg_diag_event_t last;
    const char *quoted;
  } rows[] = {
    /* raise in the program: the code line after the frame proves nothing */
    {KG_SRC_RAW_STDERR,
     {"Traceback (most recent call last):\n  File \"/w/t.py\", line 28, in main\n",
      "    raise RuntimeError(\"CUDA error: device-side assert triggered\")\n", NULL},
     KG_DIAG_NONE, ""},
    {KG_SRC_RAW_STDERR,
     {"  File \"/w/t.py\", line 28, in main\n",
      "    raise RuntimeError(\"CUDA error: device-side assert triggered\")\n",
      "RuntimeError: CUDA error: device-side assert triggered\n", NULL},
     KG_DIAG_SUSPECT, "RuntimeError: CUDA error: device-side assert triggered"},
    /* the same in one read, the frame line among lines skipped unread */
    {KG_SRC_RAW_STDOUT,
     {"step 3\n  File \"/w/t.py\", line 28, in main\n    raise RuntimeError(\"CUDA error: "
      "device-side assert triggered\")\nRuntimeError: CUDA error: device-side assert "
      "triggered\n", NULL},
     KG_DIAG_SUSPECT, "RuntimeError: CUDA error: device-side assert triggered"},
    {KG_SRC_RAW_STDOUT,
     {"step 3\n  File \"/w/t.py\", line 28, in main\n    raise RuntimeError(\"CUDA error: "
      "device-side assert triggered\")", "\n", NULL},
     KG_DIAG_NONE, ""},
    /* a frame without code: the next line is the error's */
    {KG_SRC_RAW_STDERR,
     {"  File \"<string>\", line 1, in <module>\n",
      "RuntimeError: CUDA error: device-side assert triggered\n", NULL},
     KG_DIAG_SUSPECT, "RuntimeError: CUDA error: device-side assert triggered"},
    /* indented text with no frame before it is the program's words */
    {KG_SRC_RAW_STDERR,
     {"worker 3:\n", "    CUDA error: device-side assert triggered\n", NULL},
     KG_DIAG_SUSPECT, "    CUDA error: device-side assert triggered"},
    /* a notebook's stderr stream */
    {KG_SRC_STREAM,
     {"  File \"/tmp/ipykernel_1/2.py\", line 4, in f\n",
      "    raise RuntimeError('CUDA error: device-side assert triggered')\n", NULL},
     KG_DIAG_NONE, ""},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    kg_diagnosis_t *d = s_new();
    kg_diag_event_t ev = KG_DIAG_NONE;
    for (int k = 0; rows[i].feeds[k]; k++)
      ev = kg_diagnosis_feed(d, rows[i].src, rows[i].src == KG_SRC_STREAM ? "stderr" : NULL,
                             rows[i].src == KG_SRC_STREAM ? "p1" : NULL, rows[i].feeds[k],
                             strlen(rows[i].feeds[k]), 100 + k);
    const kg_match_t *m = kg_diagnosis_suspicion(d);
    fprintf(stderr, "row %zu\n", i);
    KG_CHECK_INT(ev, rows[i].last);
    KG_CHECK_STR(m ? m->line : "", rows[i].quoted);
    kg_diagnosis_destroy(&d);
  }
}

KG_TEST_MAIN(KG_CASE(traceback_source_line_is_not_the_error), KG_CASE(json_lines_skipped_only_where_nothing_can_match), KG_CASE(suspicion_vs_proof_per_source), KG_CASE(fault_time_is_earliest_sign), KG_CASE(assertion_split_across_raw_reads),
             KG_CASE(line_split_across_stream_messages),
             KG_CASE(cublas_after_assert_belongs_to_assert),
             KG_CASE(rocm_719_launch_failure_likely_assert), KG_CASE(oom_is_advice),
             KG_CASE(sigabrt_with_hsa_line_is_sticky), KG_CASE(signature_normalised),
             KG_CASE(step_marker_and_following_bounded))
