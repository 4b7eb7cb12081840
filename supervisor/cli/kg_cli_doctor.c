/*  kguard doctor: which GPU stack a guarded kernel will use, whether the
    device and the driver fit the torch build, which variables are in force,
    which kernelspecs are guarded; and the pre-flight device probe. Nothing
    GPU-related runs in this process: the driver is loaded in a worker child
    (kg_gpudrv.h) and the stack is decided by the kernel's own Python in
    another (python/kguard/probe.py), both under a deadline. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_cli.h"
#include "kg_clock.h"
#include "kg_doctor.h"
#include "kg_doctor_facts.h"
#include "kg_error.h"
#include "kg_gpudrv.h"
#include "kg_gpuenv.h"
#include "kg_paths.h"

#define S_EXIT_FAILING 1
#define S_EXIT_TIMEOUT 2

static void
s_usage(FILE *out)
{
  fputs(
    "usage: kguard doctor [--json | --format text|markdown|json] [--kernel NAME | --python PY]\n"
    "                     [--timeout SECONDS]\n"
    "       kguard doctor --preflight [--json] [--timeout SECONDS]\n"
    "\n"
    "Without --preflight: report which GPU stack the guarded kernel will use (CUDA,\n"
    "ROCm or none: decided by the kernel's own Python in a separate process, where\n"
    "torch.version.hip set means ROCm), torch's CUDA/HIP version and compiled\n"
    "architectures against each visible device (a mismatch is the \"no kernel\n"
    "image\" error before it happens), the driver version, the devices with their\n"
    "free memory (a short-lived context is created on each), the GPU variables in\n"
    "force and what they do (diagnostic ones left on are flagged), and which\n"
    "kernelspecs kguard guards, with where their checkpoints, keys and incidents\n"
    "live. The driver (libcuda.so.1, libamdhip64.so) is loaded with dlopen in a\n"
    "worker process: this works on machines without any GPU software.\n"
    "\n"
    "  --kernel NAME     judge this kernelspec (default: the first guarded one,\n"
    "                    else python3); its env (CUDA_VISIBLE_DEVICES ...) applies\n"
    "  --python PY       judge this interpreter instead of a kernelspec's\n"
    "  --format F        text (default), markdown (what `%kguard doctor` shows), json\n"
    "  --json            the same as --format json\n"
    "  --timeout S       deadline for the helper processes (default 60; 10 with\n"
    "                    --preflight)\n"
    "  --preflight       exercise every visible device: allocate, launch a trivial\n"
    "                    kernel (CUDA: PTX JIT-compiled by the driver), synchronise,\n"
    "                    copy back; report memory in use on each device\n"
    "\n"
    "Emulation (no GPU needed; output labelled \"kguard emulation\"): with\n"
    "KGUARD_EMULATE containing preflight-fail the pre-flight reports a failing\n"
    "device (uncorrectable ECC error), with preflight-hang it hangs until the\n"
    "deadline.\n"
    "exit codes: doctor: 0 no problem found, 1 problems listed (warnings alone\n"
    "give 0); --preflight: 0 healthy or no GPU, 1 a device is failing (sticky or\n"
    "ECC error, wrong result, driver crash), 2 the probe hung past its deadline;\n"
    "both: 100 usage error, 111 system failure.\n",
    out);
}

/*  Parse the helper's stdout as one JSON object, else {"error": why}. */
static cJSON *
s_parse(const char *out, int code, const char *what, int64_t timeout_ms)
{
  cJSON *j = out ? cJSON_Parse(out) : NULL;
  if (cJSON_IsObject(j))
    return j;
  cJSON_Delete(j);
  char why[512];
  if (code == -2)
    snprintf(why, sizeof why, "%s did not answer within %lld s", what,
             (long long) (timeout_ms / 1000));
  else if (code == -3)
    snprintf(why, sizeof why, "%s could not be started", what);
  else
    snprintf(why, sizeof why, "%s gave no JSON (exit %d)", what, code);
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "error", why);
  return e;
}

/*  The kernelspec to judge: by name, else the first guarded, else python3. */
static const cJSON *
s_pick(const cJSON *specs, const char *name)
{
  const cJSON *s;
  if (name) {
    cJSON_ArrayForEach(s, specs) if (strcmp(cJSON_GetObjectItem(s, "name")->valuestring,
                                            name) == 0) return s;
    return NULL;
  }
  cJSON_ArrayForEach(s, specs) if (cJSON_IsTrue(cJSON_GetObjectItem(s, "guarded"))) return s;
  cJSON_ArrayForEach(s, specs) if (strcmp(cJSON_GetObjectItem(s, "name")->valuestring,
                                          "python3") == 0) return s;
  return NULL;
}

static cJSON *
s_env_list(bool *diagnostic_run)
{
  const char *kd = getenv("KGUARD_DIAGNOSTIC");
  *diagnostic_run = kd && *kd && strcmp(kd, "0") != 0;
  cJSON *arr = cJSON_CreateArray();
  size_t n;
  const kg_gpuenv_var_t *t = kg_gpuenv_table(&n);
  for (size_t i = 0; i < n; i++) {
    const char *v = getenv(t[i].name);
    char note[512];
    kg_gpuenv_level_t level = kg_gpuenv_assess(t[i].name, v, *diagnostic_run, note, sizeof note);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t[i].name);
    if (v)
      cJSON_AddStringToObject(o, "value", v);
    else
      cJSON_AddNullToObject(o, "value");
    cJSON_AddStringToObject(o, "kind", kg_gpuenv_kind_name(t[i].kind));
    cJSON_AddStringToObject(o, "what", t[i].what);
    cJSON_AddStringToObject(o, "level", kg_gpuenv_level_name(level));
    cJSON_AddStringToObject(o, "note", note);
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

static int
s_preflight(const char *self, bool json, int64_t timeout_ms)
{
  char *argv[] = {(char *) self, "doctor", "--driver-worker", "--preflight", NULL};
  char **argvs[] = {argv};
  char *out = NULL;
  int code = -3;
  int64_t t0 = kg_clock_mono_ms();
  if (kg_doctor_run_children(argvs, 1, timeout_ms, &out, &code) != 0)
    return KG_EXIT_SYSTEM;
  int64_t ms = kg_clock_mono_ms() - t0;
  cJSON *r = s_parse(out, code, "the pre-flight worker", timeout_ms);
  free(out);
  const char *emu = getenv("KGUARD_EMULATE");
  bool emulated = emu && (strstr(emu, "preflight-fail") || strstr(emu, "preflight-hang"));
  int devices = 0;
  const char *be[] = {"cuda", "hip"};
  for (int b = 0; b < 2; b++)
    devices += cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, be[b]), "devices"));
  const char *status;
  int exit_code;
  char summary[512];
  if (code == -3) {
    status = "error", exit_code = KG_EXIT_SYSTEM;
    snprintf(summary, sizeof summary, "the pre-flight worker could not be started");
  } else if (code == -2) {
    status = "timeout", exit_code = S_EXIT_TIMEOUT;
    snprintf(summary, sizeof summary, "the device did not answer within %lld ms: the driver "
             "or the device is hung (check `nvidia-smi -q` and the kernel log for Xid "
             "messages, or `rocm-smi`)%s", (long long) timeout_ms,
             emulated ? " [kguard emulation: preflight-hang]" : "");
  } else if (code == 0) {
    status = devices ? "healthy" : "no-gpu", exit_code = 0;
    snprintf(summary, sizeof summary, devices ? "%d device(s) healthy: allocate, launch, "
             "synchronise and copy back succeeded" : "no GPU visible: nothing to check", devices);
  } else {
    status = "failing", exit_code = S_EXIT_FAILING;
    snprintf(summary, sizeof summary, "a device is failing%s (ECC or hardware family: check "
             "`nvidia-smi -q` and the kernel log for Xid messages, or `rocm-smi`)%s",
             code == 1 ? "" : " (the pre-flight worker crashed in the driver)",
             emulated ? " [kguard emulation: preflight-fail, no GPU was used]" : "");
  }
  cJSON_AddNumberToObject(r, "kguard_preflight", 1);
  if (!cJSON_GetObjectItem(r, "emulated"))
    cJSON_AddBoolToObject(r, "emulated", emulated);
  cJSON_AddStringToObject(r, "status", status);
  cJSON_AddNumberToObject(r, "worker_exit", code);
  cJSON_AddNumberToObject(r, "ms", (double) ms);
  cJSON_AddStringToObject(r, "summary", summary);
  if (json) {
    char *text = cJSON_Print(r);
    if (text)
      puts(text);
    free(text);
  } else {
    printf("kguard pre-flight: %s: %s\n", status, summary);
    for (int b = 0; b < 2; b++) {
      const cJSON *d;
      cJSON_ArrayForEach(d, cJSON_GetObjectItem(cJSON_GetObjectItem(r, be[b]), "devices"))
      {
        const cJSON *p = cJSON_GetObjectItem(d, "preflight");
        const cJSON *e = cJSON_GetObjectItem(p, "error");
        const cJSON *used = cJSON_GetObjectItem(d, "used_bytes");
        printf("  %s:%d %s: %s%s%s%s", be[b], cJSON_GetObjectItem(d, "index")->valueint,
               cJSON_GetStringValue(cJSON_GetObjectItem(d, "name")),
               cJSON_IsTrue(cJSON_GetObjectItem(p, "ok")) ? "ok" : "FAILED",
               e ? " at " : "", e ? cJSON_GetStringValue(cJSON_GetObjectItem(e, "step")) : "",
               e ? ": " : "");
        if (e)
          printf("%s (%d): %s", cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")),
                 cJSON_GetObjectItem(e, "code")->valueint,
                 cJSON_GetStringValue(cJSON_GetObjectItem(e, "string")));
        if (cJSON_IsNumber(used))
          printf("; %.0f MiB in use on the device", used->valuedouble / 1048576.0);
        const cJSON *procs = cJSON_GetObjectItem(d, "processes"), *pr;
        cJSON_ArrayForEach(pr, procs)
          printf("%s pid %d %.0f MiB", pr == procs->child ? ", held by" : ",",
                 cJSON_GetObjectItem(pr, "pid")->valueint,
                 cJSON_GetObjectItem(pr, "used_bytes")->valuedouble / 1048576.0);
        putchar('\n');
      }
    }
  }
  cJSON_Delete(r);
  return exit_code;
}

int
kg_cli_doctor_main(int argc, char **argv)
{
  enum { O_KERNEL = 1000, O_PYTHON, O_FORMAT, O_JSON, O_TIMEOUT, O_PREFLIGHT, O_WORKER };
  static const struct option opts[] = {
    {"kernel", required_argument, NULL, O_KERNEL},
    {"python", required_argument, NULL, O_PYTHON},
    {"format", required_argument, NULL, O_FORMAT},
    {"json", no_argument, NULL, O_JSON},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"preflight", no_argument, NULL, O_PREFLIGHT},
    {"driver-worker", no_argument, NULL, O_WORKER},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};
  const char *kernel = NULL, *python = NULL, *format = "text";
  double timeout_s = -1;
  bool preflight = false, worker = false;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case O_KERNEL: kernel = optarg; break;
    case O_PYTHON: python = optarg; break;
    case O_FORMAT: format = optarg; break;
    case O_JSON: format = "json"; break;
    case O_TIMEOUT: {
      char *end = NULL;
      timeout_s = strtod(optarg, &end);
      if (!end || *end || !(timeout_s > 0 && timeout_s <= 3600)) {
        fprintf(stderr, "kguard doctor: --timeout takes seconds in (0, 3600], not '%s'\n", optarg);
        return KG_EXIT_USAGE;
      }
      break;
    }
    case O_PREFLIGHT: preflight = true; break;
    case O_WORKER: worker = true; break;
    case 'h': s_usage(stdout); return KG_EXIT_OK;
    default: s_usage(stderr); return KG_EXIT_USAGE;
    }
  }
  if (optind < argc || (kernel && python)) {
    fprintf(stderr, "kguard doctor: %s (see kguard doctor --help)\n",
            optind < argc ? "unexpected argument" : "give --kernel or --python, not both");
    return KG_EXIT_USAGE;
  }
  kg_doctor_format_t fmt = KG_DOCTOR_TEXT;
  if (strcmp(format, "markdown") == 0)
    fmt = KG_DOCTOR_MARKDOWN;
  else if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
    fprintf(stderr, "kguard doctor: --format must be text, markdown or json, not '%s'\n", format);
    return KG_EXIT_USAGE;
  }
  if (worker) {
    int code = kg_gpudrv_worker_main(preflight);
    fflush(NULL);
    _exit(code);   /* no exit handlers: a GPU runtime's can hang */
  }
  char self[PATH_MAX];
  if (kg_paths_exe(self, sizeof self) != 0) {
    fprintf(stderr, "kguard doctor: cannot find kguard's own executable\n");
    return KG_EXIT_SYSTEM;
  }
  if (preflight)
    return s_preflight(self, strcmp(format, "json") == 0,
                       (int64_t) ((timeout_s > 0 ? timeout_s : 10) * 1000));
  int64_t timeout_ms = (int64_t) ((timeout_s > 0 ? timeout_s : 60) * 1000);

  cJSON *report = cJSON_CreateObject();
  cJSON_AddNumberToObject(report, "kguard_doctor", 1);
  cJSON *dirs = kg_doctor_kernel_dirs();
  cJSON *specs = kg_doctor_kernelspecs(dirs);
  cJSON *k = cJSON_AddObjectToObject(report, "kernel");
  const cJSON *spec = python ? NULL : s_pick(specs, kernel);
  if (kernel && !spec) {
    fprintf(stderr, "kguard doctor: no kernelspec named '%s' (see the list without --kernel)\n",
            kernel);
    cJSON_Delete(report);
    cJSON_Delete(dirs);
    cJSON_Delete(specs);
    return KG_EXIT_USAGE;
  }
  const char *interp = python;
  if (spec) {
    cJSON_AddStringToObject(k, "name", cJSON_GetObjectItem(spec, "name")->valuestring);
    cJSON_AddStringToObject(k, "source", "kernelspec");
    cJSON_AddBoolToObject(k, "guarded", cJSON_IsTrue(cJSON_GetObjectItem(spec, "guarded")));
    interp = cJSON_GetStringValue(cJSON_GetObjectItem(spec, "interpreter"));
    /* the kernel's variables apply to what it will see */
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(spec, "env")) setenv(e->string, e->valuestring, 1);
  } else {
    cJSON_AddNullToObject(k, "name");
    cJSON_AddStringToObject(k, "source", python ? "--python" : "default (no kernelspec found)");
    if (!interp)
      interp = "python3";
  }
  if (interp)
    cJSON_AddStringToObject(k, "interpreter", interp);
  else
    cJSON_AddNullToObject(k, "interpreter");

  bool diag_run = false;
  cJSON_AddItemToObject(report, "env", s_env_list(&diag_run));
  cJSON_AddBoolToObject(report, "diagnostic_run", diag_run);

  /* the two helpers run at once: the driver worker and the kernel's Python */
  char pydir[PATH_MAX], pypath[2 * PATH_MAX], ptimeout[32];
  if (kg_paths_python_dir(pydir, sizeof pydir) == 0) {
    const char *old = getenv("PYTHONPATH");
    snprintf(pypath, sizeof pypath, "%s%s%s", pydir, old && *old ? ":" : "", old ? old : "");
    setenv("PYTHONPATH", pypath, 1);
  }
  snprintf(ptimeout, sizeof ptimeout, "%lld", (long long) (timeout_ms * 3 / 4 / 1000 + 1));
  setenv("KGUARD_PROBE_TIMEOUT", ptimeout, 1);
  char *wargv[] = {self, "doctor", "--driver-worker", NULL};
  char *pargv[] = {(char *) interp, "-m", "kguard.probe", NULL};
  char **argvs[] = {wargv, pargv};
  char *outs[2] = {NULL, NULL};
  int codes[2] = {-3, -3};
  int n = interp ? 2 : 1;
  if (kg_doctor_run_children(argvs, n, timeout_ms, outs, codes) != 0) {
    cJSON_Delete(report);
    cJSON_Delete(dirs);
    cJSON_Delete(specs);
    return KG_EXIT_SYSTEM;
  }
  cJSON_AddItemToObject(report, "drivers", s_parse(outs[0], codes[0], "the driver worker",
                                                   timeout_ms));
  if (interp)
    cJSON_AddItemToObject(report, "probe", s_parse(outs[1], codes[1], "the kernel's Python",
                                                   timeout_ms));
  else {
    cJSON *p = cJSON_AddObjectToObject(report, "probe");
    cJSON_AddStringToObject(p, "error", "the kernel is not started by a python executable");
  }
  free(outs[0]);
  free(outs[1]);
  cJSON_AddItemToObject(report, "kernelspecs", specs);
  cJSON_AddItemToObject(report, "kernel_dirs", dirs);
  kg_doctor_assess(report);
  char *text = strcmp(format, "json") == 0 ? cJSON_Print(report) : kg_doctor_render(report, fmt);
  int code = cJSON_GetArraySize(cJSON_GetObjectItem(report, "problems")) ? 1 : 0;
  cJSON_Delete(report);
  if (!text)
    return KG_EXIT_SYSTEM;
  fputs(text, stdout);
  if (text[0] && text[strlen(text) - 1] != '\n')
    putchar('\n');
  free(text);
  return code;
}
