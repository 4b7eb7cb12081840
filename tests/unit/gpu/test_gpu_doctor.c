/*  kguard doctor's and incident export's pure logic, by tables: GPU
    variables, architecture against capability, the doctor's judgement,
    scrubbing and the repro request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_doctor.h"
#include "kg_gpuarch.h"
#include "kg_gpuenv.h"
#include "kg_repro.h"
#include "kg_scrub.h"
#include "kg_test.h"

KG_TEST(env_flags)
{
  static const struct {
    const char *name, *value;
    int diag;
    kg_gpuenv_level_t level;
    const char *note;   /* substring of the note, "" = empty note */
  } rows[] = {
    {"CUDA_LAUNCH_BLOCKING", "1", 0, KG_GPUENV_WARN, "outside a diagnostic run"},
    {"CUDA_LAUNCH_BLOCKING", "1", 1, KG_GPUENV_INFO, "diagnostic run"},
    {"CUDA_LAUNCH_BLOCKING", "0", 0, KG_GPUENV_OK, ""},
    {"CUDA_LAUNCH_BLOCKING", NULL, 0, KG_GPUENV_OK, ""},
    {"AMD_SERIALIZE_KERNEL", "3", 0, KG_GPUENV_WARN, "slower"},
    {"AMD_SERIALIZE_KERNEL", "3", 1, KG_GPUENV_INFO, ""},
    {"HIP_LAUNCH_BLOCKING", "true", 0, KG_GPUENV_WARN, ""},
    {"HIP_LAUNCH_BLOCKING", "off", 0, KG_GPUENV_OK, ""},
    {"PYTORCH_USE_CUDA_DSA", "1", 0, KG_GPUENV_WARN, ""},
    {"TORCH_USE_CUDA_DSA", "1", 0, KG_GPUENV_INFO, "build option"},
    {"CUDA_VISIBLE_DEVICES", "", 0, KG_GPUENV_WARN, "hides every device"},
    {"CUDA_VISIBLE_DEVICES", "-1", 0, KG_GPUENV_WARN, "CPU"},
    {"CUDA_VISIBLE_DEVICES", "1,0", 0, KG_GPUENV_INFO, "renumbered"},
    {"HIP_VISIBLE_DEVICES", "", 0, KG_GPUENV_WARN, "hides"},
    {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 0, KG_GPUENV_OK, ""},
    {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0", 0, KG_GPUENV_WARN, "hang"},
    {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", 0, KG_GPUENV_OK, ""},
    {"NOT_A_GPU_VARIABLE", "1", 0, KG_GPUENV_OK, ""},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char note[256];
    kg_gpuenv_level_t l = kg_gpuenv_assess(rows[i].name, rows[i].value, rows[i].diag, note,
                                           sizeof note);
    if (l != rows[i].level || (*rows[i].note && !strstr(note, rows[i].note)))
      fprintf(stderr, "row %zu: %s=%s diag=%d: level %d note \"%s\"\n", i, rows[i].name,
              rows[i].value ? rows[i].value : "(unset)", rows[i].diag, (int) l, note);
    KG_CHECK_INT(l, rows[i].level);
    KG_CHECK(!*rows[i].note || strstr(note, rows[i].note));
  }
  /* every variable of the issue is in the table with a description */
  const char *must[] = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING",
                        "AMD_SERIALIZE_KERNEL", "HIP_LAUNCH_BLOCKING", "PYTORCH_CUDA_ALLOC_CONF",
                        "TORCH_USE_CUDA_DSA", "TORCH_NCCL_ASYNC_ERROR_HANDLING"};
  for (size_t i = 0; i < sizeof must / sizeof must[0]; i++) {
    const kg_gpuenv_var_t *v = kg_gpuenv_find(must[i]);
    KG_CHECK(v && strlen(v->what) > 20);
  }
}

KG_TEST(arch_parse)
{
  static const struct { const char *arch; int rc, cc, ptx, spec; } rows[] = {
    {"sm_86", 0, 86, 0, 0}, {"compute_90", 0, 90, 1, 0}, {"sm_90a", 0, 90, 0, 1},
    {"sm_100", 0, 100, 0, 0}, {"sm_120f", 0, 120, 0, 1}, {"sm_5", -1, 0, 0, 0},
    {"gfx90a", -1, 0, 0, 0}, {"sm_86x", -1, 0, 0, 0}, {"", -1, 0, 0, 0}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    int cc = 0, ptx = 0, spec = 0;
    KG_CHECK_INT(kg_gpuarch_parse_cuda(rows[i].arch, &cc, &ptx, &spec), rows[i].rc);
    if (rows[i].rc == 0) {
      KG_CHECK_INT(cc, rows[i].cc);
      KG_CHECK_INT(ptx, rows[i].ptx);
      KG_CHECK_INT(spec, rows[i].spec);
    }
  }
}

KG_TEST(arch_vs_capability)
{
  /* torch 2.x CUDA 12 wheels list roughly these */
  const char *wheel[] = {"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"};
  const char *old[] = {"sm_37", "sm_50", "sm_60", "sm_70", "compute_70"};
  const char *sass_only[] = {"sm_70", "sm_75"};
  const char *hopper_a[] = {"sm_90a"};
  static const struct {
    int which, major, minor;
    kg_arch_verdict_t v;
    const char *entry;
  } rows[] = {
    {0, 9, 0, KG_ARCH_NATIVE, "sm_90"},      /* H100/H200 */
    {0, 8, 9, KG_ARCH_COMPAT, "sm_86"},      /* L40/4090: sm_86 code runs on 8.9 */
    {0, 8, 0, KG_ARCH_NATIVE, "sm_80"},
    {0, 10, 0, KG_ARCH_NONE, ""},            /* Blackwell on a wheel without it */
    {0, 3, 7, KG_ARCH_NONE, ""},             /* K80 dropped */
    {1, 8, 0, KG_ARCH_PTX_JIT, "compute_70"},/* only PTX fits: JIT */
    {1, 3, 7, KG_ARCH_NATIVE, "sm_37"},
    {2, 8, 0, KG_ARCH_NONE, ""},             /* newer major, no PTX */
    {2, 7, 2, KG_ARCH_COMPAT, "sm_70"},      /* Xavier 7.2 */
    {3, 9, 0, KG_ARCH_NATIVE, "sm_90a"},
    {3, 10, 0, KG_ARCH_NONE, ""},            /* arch-specific: exact only */
    {3, 0, 0, KG_ARCH_UNKNOWN, ""},
  };
  const char *const *lists[] = {wheel, old, sass_only, hopper_a};
  size_t sizes[] = {7, 5, 2, 1};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char best[32];
    kg_arch_verdict_t v = kg_gpuarch_cuda(lists[rows[i].which], sizes[rows[i].which],
                                          rows[i].major, rows[i].minor, best, sizeof best);
    if (v != rows[i].v)
      fprintf(stderr, "row %zu: %d.%d → %s\n", i, rows[i].major, rows[i].minor,
              kg_gpuarch_verdict_name(v));
    KG_CHECK_INT(v, rows[i].v);
    KG_CHECK_STR(best, rows[i].entry);
  }
  char best[32];
  KG_CHECK_INT(kg_gpuarch_cuda(NULL, 0, 9, 0, best, sizeof best), KG_ARCH_UNKNOWN);
  const char *rocm[] = {"gfx900", "gfx906", "gfx908", "gfx90a", "gfx942"};
  KG_CHECK_INT(kg_gpuarch_rocm(rocm, 5, "gfx90a:sramecc+:xnack-", best, sizeof best),
               KG_ARCH_NATIVE);
  KG_CHECK_STR(best, "gfx90a");
  KG_CHECK_INT(kg_gpuarch_rocm(rocm, 5, "gfx1100", best, sizeof best), KG_ARCH_NONE);
  KG_CHECK_INT(kg_gpuarch_rocm(rocm, 5, "gfx90", best, sizeof best), KG_ARCH_NONE);
  KG_CHECK_INT(kg_gpuarch_rocm(rocm, 5, NULL, best, sizeof best), KG_ARCH_UNKNOWN);
}

static cJSON *
s_report(const char *probe, const char *drivers)
{
  cJSON *r = cJSON_CreateObject();
  cJSON_AddItemToObject(r, "kernel", cJSON_Parse("{\"name\":\"k\",\"interpreter\":\"/usr/bin/python3\"}"));
  cJSON_AddItemToObject(r, "probe", cJSON_Parse(probe));
  cJSON_AddItemToObject(r, "drivers", cJSON_Parse(drivers));
  cJSON_AddItemToObject(r, "kernelspecs", cJSON_Parse("[{\"name\":\"k\",\"guarded\":true}]"));
  cJSON_AddItemToObject(r, "env", cJSON_Parse("[]"));
  kg_doctor_assess(r);
  return r;
}

static bool
s_any(const cJSON *r, const char *key, const char *needle)
{
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, key)) if (strstr(e->valuestring, needle)) return true;
  return false;
}

KG_TEST(doctor_judgement)
{
  const char *none = "{\"cuda\":{\"library\":\"libcuda.so.1\",\"loaded\":false,\"error\":\"x\"},"
                     "\"hip\":{\"library\":\"libamdhip64.so\",\"loaded\":false}}";
  const char *h200 = "{\"cuda\":{\"loaded\":true,\"driver_version\":\"12.4\",\"devices\":"
                     "[{\"index\":0,\"name\":\"NVIDIA H200\",\"capability\":\"9.0\"}]},"
                     "\"hip\":{\"loaded\":false}}";
  const char *b200 = "{\"cuda\":{\"loaded\":true,\"driver_version\":\"12.8\",\"devices\":"
                     "[{\"index\":0,\"name\":\"NVIDIA B200\",\"capability\":\"10.0\"}]},"
                     "\"hip\":{\"loaded\":false}}";
  const char *cpu = "{\"torch\":\"2.5.1\",\"cuda\":null,\"hip\":null,\"arch_list\":[]}";
  const char *cu124 = "{\"torch\":\"2.5.1\",\"cuda\":\"12.4\",\"hip\":null,"
                      "\"arch_list\":[\"sm_80\",\"sm_86\",\"sm_90\"]}";
  const char *cu13 = "{\"torch\":\"2.9.0\",\"cuda\":\"13.0\",\"hip\":null,"
                     "\"arch_list\":[\"sm_80\",\"sm_90\",\"sm_100\"]}";
  const char *rocm = "{\"torch\":\"2.5.1\",\"cuda\":null,\"hip\":\"6.2.41133\","
                     "\"arch_list\":[\"gfx90a\"]}";

  cJSON *r = s_report(cpu, none);   /* this machine: a useful, problem-free answer */
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "stack"), "decision")->valuestring, "cpu");
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "problems")), 0);
  KG_CHECK(strstr(cJSON_GetObjectItem(r, "summary")->valuestring, "no GPU driver found"));
  KG_CHECK(strstr(cJSON_GetObjectItem(r, "summary")->valuestring, "CPU-only"));
  char *text = kg_doctor_render(r, KG_DOCTOR_TEXT);
  KG_CHECK(text && strstr(text, "kguard doctor: no GPU driver found"));
  free(text);
  text = kg_doctor_render(r, KG_DOCTOR_MARKDOWN);
  KG_CHECK(text && strstr(text, "### Stack"));
  free(text);
  cJSON_Delete(r);

  r = s_report(cu124, none);   /* CUDA torch, no driver */
  KG_CHECK(s_any(r, "problems", "no CUDA driver was found"));
  cJSON_Delete(r);

  r = s_report(cu124, h200);   /* fits */
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "problems")), 0);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
                 cJSON_GetObjectItem(r, "devices"), 0), "arch"), "verdict")->valuestring, "native");
  cJSON_Delete(r);

  r = s_report(cu124, b200);   /* Blackwell, torch without sm_100: no kernel image */
  KG_CHECK(s_any(r, "problems", "no kernel image"));
  cJSON_Delete(r);

  r = s_report(cu13, h200);    /* torch for CUDA 13 on a CUDA 12 driver */
  KG_CHECK(s_any(r, "problems", "driver supports CUDA 12.4 at most"));
  cJSON_Delete(r);

  r = s_report(rocm, none);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "stack"), "decision")->valuestring, "rocm");
  KG_CHECK(s_any(r, "problems", "no HIP runtime"));
  cJSON_Delete(r);

  r = s_report("{\"error\":\"the kernel's Python did not answer within 60 s\"}", none);
  KG_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "stack"), "decision")->valuestring, "unknown");
  cJSON_Delete(r);
  KG_CHECK_INT(kg_doctor_version_value("12.4"), 12004);
  KG_CHECK_INT(kg_doctor_version_value("none"), -1);
}

KG_TEST(scrub_table)
{
  kg_scrub_t *s = kg_scrub_new();
  kg_scrub_add_word(s, "alice", "<user>");
  kg_scrub_add_word(s, "gpu-node-7.lab.example.org", "<host>");
  kg_scrub_add_word(s, "gpu-node-7", "<host>");
  kg_scrub_add_secret(s, "HF_TOKEN", "hf_abcdefSECRET");
  kg_scrub_add_word(s, "a", "<user>");   /* too short: ignored */
  static const struct { const char *in, *out; } rows[] = {
    {"File \"/home/alice/proj/train.py\", line 12, in <module>",
     "File \"<path>/train.py\", line 12, in <module>"},
    {"File /usr/lib/python3/dist-packages/torch/nn/functional.py:3104, in nll_loss(a)",
     "File <python-lib>/torch/nn/functional.py:3104, in nll_loss(a)"},
    {"/opt/venv/lib/python3.11/site-packages/torch/_tensor.py",
     "<python-lib>/torch/_tensor.py"},
    {"/opt/conda/lib/python3.10/abc.py", "<python-lib>/abc.py"},
    {"../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss", "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss"},
    {"open('~/data/labels.csv')", "open('<path>/labels.csv')"},
    {"user alice on gpu-node-7.lab.example.org", "user <user> on <host>"},
    {"alice.", "<user>."},
    {"malice and alicebob stay", "malice and alicebob stay"},
    {"ssh gpu-node-7: ok", "ssh <host>: ok"},
    {"token=hf_abcdefSECRET", "token=<env:HF_TOKEN>"},
    {"CUDA_VISIBLE_DEVICES=GPU-5f3c2a1b-9d8e-4f00-a1b2-c3d4e5f60718", "CUDA_VISIBLE_DEVICES=GPU-<uuid>"},
    {"a GPU-bound step", "a GPU-bound step"},
    {"ratio 3/4 and a/b", "ratio 3/4 and a/b"},
    {"", ""},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char *out = kg_scrub_text(s, rows[i].in);
    KG_CHECK_STR(out, rows[i].out);
    free(out);
  }
  KG_CHECK(kg_scrub_count(s, "path") >= 5);
  KG_CHECK(kg_scrub_count(s, "secret") == 1);
  KG_CHECK(kg_scrub_count(s, "uuid") == 1);
  kg_scrub_destroy(&s);
  KG_CHECK(s == NULL);
}

KG_TEST(repro_traceback_parts)
{
  char buf[512];
  bool plain;
  static const struct { const char *line, *frame; int plain; } frames[] = {
    {"  File \"/home/alice/t.py\", line 7, in train", "/home/alice/t.py:7 in train", 1},
    {"File /usr/lib/python3/dist-packages/torch/nn/functional.py:3104, in nll_loss(input, target)",
     "/usr/lib/python3/dist-packages/torch/nn/functional.py:3104 in nll_loss", 0},
    {"Cell In[4], line 2", "<cell>:2 in <module>", 0},
    {"Cell In [2], line 4", "<cell>:4 in <module>", 0},
    {"/tmp/ipykernel_77/123.py in <module>", "/tmp/ipykernel_77/123.py in <module>", 0},
    {"RuntimeError: CUDA error: device-side assert triggered", NULL, 0},
  };
  for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
    bool ok = kg_repro_frame(frames[i].line, buf, sizeof buf, &plain);
    KG_CHECK_INT(ok, frames[i].frame != NULL);
    if (ok) {
      KG_CHECK_STR(buf, frames[i].frame);
      KG_CHECK_INT(plain, frames[i].plain);
    }
  }
  static const struct { const char *line; int after_plain, code; } codes[] = {
    {"----> 2 loss = F.nll_loss(out, y)", 0, 1}, {"      1 x = 1", 0, 1},
    {"--> 385     _fire(cfg.kind, n)", 0, 1}, {"---------------------------", 0, 0},
    {"-> 3104 return torch._C._nn.nll_loss_nd(input, target)", 0, 1},
    {"    loss = F.nll_loss(out, y)", 1, 1}, {"    loss = F.nll_loss(out, y)", 0, 0},
    {"RuntimeError: CUDA error: device-side assert triggered", 0, 0},
    {"    ^^^^^^^^", 1, 0}, {"Traceback (most recent call last):", 0, 0}};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    KG_CHECK_INT(kg_repro_is_code_line(codes[i].line, codes[i].after_plain), codes[i].code);
  char *clean = kg_repro_strip_ansi("\x1b[0;31mRuntimeError\x1b[0m: boom");
  KG_CHECK_STR(clean, "RuntimeError: boom");
  free(clean);
  cJSON *shapes = cJSON_CreateArray(), *dtypes = cJSON_CreateArray();
  kg_repro_scan_tensors("mat1 and mat2 shapes cannot be multiplied (64x10 and 5x3); "
                        "expected scalar type Long but found Float; torch.Size([64, 4]) "
                        "dtype=torch.float32 torch.Size([64, 4]) shape '[2, -1]' torch.int64",
                        shapes, dtypes);
  char *s = cJSON_PrintUnformatted(shapes), *d = cJSON_PrintUnformatted(dtypes);
  KG_CHECK_STR(s, "[\"torch.Size([64, 4])\",\"64x10\",\"5x3\",\"[2, -1]\"]");
  KG_CHECK_STR(d, "[\"float32\",\"int64\",\"Long\",\"Float\"]");
  free(s);
  free(d);
  cJSON_Delete(shapes);
  cJSON_Delete(dtypes);
  KG_CHECK_STR(kg_repro_env_value("1"), "1");
  KG_CHECK_STR(kg_repro_env_value("expandable_segments:True,max_split_size_mb:128"),
               "expandable_segments:True,max_split_size_mb:128");
  KG_CHECK_STR(kg_repro_env_value("/home/alice/cache"), "<set>");
}

static const char *s_incident =
  "{\"kguard_incident\":1,\"id\":\"20261203T050000Z-abcdef\",\"family\":\"device-assert\","
  "\"title\":\"device-side assert\",\"sticky\":true,\"backend\":\"cuda\",\"error_code\":710,"
  "\"first_error\":{\"ename\":\"RuntimeError\",\"evalue\":\"CUDA error: device-side assert "
  "triggered\",\"traceback\":[\"\\u001b[0;31mRuntimeError\\u001b[0m   Traceback (most recent "
  "call last)\",\"Cell In[3], line 2\\n      1 y = labels_from('/home/alice/secret-proj/y.csv')"
  "\\n----> 2 loss = F.nll_loss(out, y)\",\"File /home/alice/venv/lib/python3.11/site-packages/"
  "torch/nn/functional.py:3104, in nll_loss(input, target)\\n-> 3104 return x\","
  "\"RuntimeError: CUDA error: device-side assert triggered (input torch.Size([64, 4]), "
  "dtype torch.float32) on gpu-node-7\"]},"
  "\"assertion_line\":\"../aten/src/ATen/native/cuda/Loss.cu:250: "
  "nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [3,0,0] Assertion `t >= 0 "
  "&& t < n_classes` failed.\","
  "\"cell\":{\"code\":\"loss = F.nll_loss(out, y)  # alice's cell\",\"msg_id\":\"m\"},"
  "\"versions\":{\"python\":\"3.11.2\",\"torch\":\"2.5.1\",\"cuda\":\"12.4\",\"hip\":null,"
  "\"python_executable\":\"/home/alice/venv/bin/python\",\"driver\":{\"nvidia\":\"550.54.14\"},"
  "\"devices\":[{\"index\":0,\"name\":\"NVIDIA H200\",\"capability\":\"9.0\"}]},"
  "\"diagnostic_env\":{\"CUDA_LAUNCH_BLOCKING\":\"1\",\"PYTORCH_KERNEL_CACHE_PATH\":"
  "\"/home/alice/.cache\"},\"restart_count\":1,"
  "\"preflight\":{\"status\":\"failing\",\"summary\":\"a device is failing on gpu-node-7\"}}";

KG_TEST(repro_build_scrubs)
{
  cJSON *inc = cJSON_Parse(s_incident);
  for (int with_code = 0; with_code < 2; with_code++) {
    kg_scrub_t *s = kg_scrub_new();
    kg_scrub_add_word(s, "alice", "<user>");
    kg_scrub_add_word(s, "gpu-node-7", "<host>");
    char err[128];
    cJSON *r = kg_repro_build(inc, s, with_code ? KG_REPRO_CODE : 0, err, sizeof err);
    KG_CHECK(r != NULL);
    char *json = cJSON_PrintUnformatted(r);
    char *md = kg_repro_markdown(r);
    KG_CHECK(json && md);
    if (!json || !md)
      return;
    /* what must go */
    KG_CHECK(!strstr(json, "alice") && !strstr(md, "alice"));
    KG_CHECK(!strstr(json, "gpu-node-7") && !strstr(md, "gpu-node-7"));
    KG_CHECK(!strstr(json, "/home/") && !strstr(md, "/home/"));
    KG_CHECK(!strstr(json, "secret-proj"));
    KG_CHECK(!strstr(json, "python_executable"));
    KG_CHECK_INT(strstr(json, "nll_loss(out, y)") != NULL, with_code);
    KG_CHECK_INT(strstr(json, "cell_code") != NULL, with_code);
    /* what must stay */
    KG_CHECK(strstr(json, "\"kernel\":\"nll_loss_forward_reduce_cuda_kernel_2d\""));
    KG_CHECK(strstr(json, "\"source\":\"../aten/src/ATen/native/cuda/Loss.cu:250\""));
    KG_CHECK(strstr(json, "\"python\":\"nll_loss\""));
    KG_CHECK(strstr(json, "torch.Size([64, 4])") && strstr(json, "float32"));
    KG_CHECK(strstr(json, "<python-lib>/torch/nn/functional.py:3104 in nll_loss"));
    KG_CHECK(strstr(json, "\"CUDA_LAUNCH_BLOCKING\":\"1\""));
    KG_CHECK(strstr(json, "\"PYTORCH_KERNEL_CACHE_PATH\":\"<set>\""));
    KG_CHECK(strstr(json, "\"nvidia\":\"550.54.14\"") && strstr(json, "NVIDIA H200"));
    KG_CHECK(strstr(json, "\"emulated\":false"));
    KG_CHECK(strstr(md, "Assertion `t >= 0 && t < n_classes` failed."));
    KG_CHECK(strstr(md, "| PyTorch | 2.5.1 |"));
    KG_CHECK(strstr(md, "removed before sharing"));
    KG_CHECK(strstr(md, "device pre-flight after the restart: failing: a device is failing on <host>"));
    free(json);
    free(md);
    cJSON_Delete(r);
    kg_scrub_destroy(&s);
  }
  kg_scrub_t *s = kg_scrub_new();
  char err[128] = "";
  cJSON *notinc = cJSON_Parse("{\"id\":\"x\"}");
  KG_CHECK(kg_repro_build(notinc, s, 0, err, sizeof err) == NULL);
  KG_CHECK(strstr(err, "not a kguard incident record"));
  cJSON_Delete(notinc);
  kg_scrub_destroy(&s);
  cJSON_Delete(inc);
}

KG_TEST_MAIN(KG_CASE(env_flags), KG_CASE(arch_parse), KG_CASE(arch_vs_capability),
             KG_CASE(doctor_judgement), KG_CASE(scrub_table), KG_CASE(repro_traceback_parts),
             KG_CASE(repro_build_scrubs))
