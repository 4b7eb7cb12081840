/*  kguard doctor: which GPU stack a guarded kernel will use, whether the
    device and the driver fit the torch build, which variables are in force,
    which kernelspecs are guarded; and the pre-flight device probe. Nothing
    GPU-related runs in this process: the driver is loaded in a worker child
    (kg_gpudrv.h) and the stack is decided by the kernel's own Python in
    another (python/kguard/probe.py), both under a deadline. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "kg_cli.h"
#include "kg_clock.h"
#include "kg_doctor.h"
#include "kg_doctor_facts.h"
#include "kg_error.h"
#include "kg_gpudrv.h"
#include "kg_gpuenv.h"
#include "kg_gpuhealth.h"
#include "kg_kcheck.h"
#include "kg_kernelspec.h"
#include "kg_nvml.h"
#include "kg_paths.h"
#include "kg_snapdir.h"

#define S_EXIT_FAILING 1
#define S_EXIT_TIMEOUT 2

enum { O_KERNEL = 1, O_PYTHON, O_FORMAT, O_JSON, O_TIMEOUT, O_PREFLIGHT, O_WORKER };

static const kg_opt_t s_opts[] = {
  {O_KERNEL, 0, "kernel", "NAME",
   "judge this kernelspec: whether it can start, and the stack its Python sees with its "
   "env (CUDA_VISIBLE_DEVICES ...) applied. Default: the only guarded kernelspec; among "
   "several, python3-kguard (`kguard install`'s default name) or else the first; python3 "
   "when none is guarded", 0},
  {O_PYTHON, 0, "python", "PY", "judge this interpreter instead of a kernelspec's", 0},
  {O_FORMAT, 0, "format", "text|markdown|json",
   "text (default), markdown (what `%kguard doctor` shows), json", 0},
  {O_JSON, 0, "json", NULL, "the same as --format json", 0},
  {O_TIMEOUT, 0, "timeout", "SEC",
   "deadline for the helper processes (default 60; 10 with --preflight)", 0},
  {O_PREFLIGHT, 0, "preflight", NULL,
   "exercise every visible device: allocate, launch a trivial kernel (CUDA: PTX "
   "JIT-compiled by the driver), synchronise, copy back; report memory in use on each "
   "device", 0},
  {O_WORKER, 0, "driver-worker", NULL, "internal: the driver query's worker process",
   KG_OPT_HIDDEN},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"0", "no problem found (warnings alone give 0); --preflight: healthy, or no GPU"},
  {"1", "problems listed: a kernel that cannot start, a stack that will fail; "
        "--preflight: a device is failing (sticky or ECC error, wrong result, driver crash)"},
  {"2", "--preflight: the probe hung past its deadline"},
  {"100", "usage error"},
  {"111", "system failure"},
  {NULL, NULL},
};

const kg_cmd_t kg_cli_doctor_cmd = {
  .name = "doctor",
  .summary = "whether the guarded kernels can start, and which GPU stack they will use",
  .usage = "[--json | --format FORMAT] [--kernel NAME | --python PY] [--timeout SEC]\n"
           "--preflight [--json] [--timeout SEC]",
  .about = "Without --preflight: check that every kernelspec kguard guards can start here (its "
           "kguard program, the wrapped kernel's program and Python module; a kernelspec "
           "written by a kguard that was moved or removed is named with the command that "
           "writes it again), then judge one kernel: which GPU stack it will use (CUDA, ROCm "
           "or none: decided by the kernel's own Python in a separate process, where "
           "torch.version.hip set means ROCm), torch's CUDA/HIP version and compiled "
           "architectures against each visible device (a mismatch is the \"no kernel image\" "
           "error before it happens), the driver version, the devices with their free memory "
           "(a short-lived context is created on each), the GPU variables in force and what "
           "they do (diagnostic ones left on are flagged), the room in-memory snapshots "
           "(kguard.snapshot) have under $KGUARD_SNAPSHOT_BASE or /dev/shm (a warning under "
           "1 GiB free, or when it is missing or not a tmpfs), and which kernelspecs kguard "
           "guards, with where their checkpoints, keys and incidents live. The driver "
           "(libcuda.so.1, libamdhip64.so) is loaded with dlopen in a worker process: this "
           "works on machines without any GPU software.",
  .opts = s_opts,
  .more = "Emulation (no GPU needed; output labelled \"kguard emulation\"): with KGUARD_EMULATE "
          "containing preflight-fail the pre-flight reports a failing device (uncorrectable "
          "ECC error), with preflight-hang it hangs until the deadline.",
  .exits = s_exits,
};

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

static const char *
s_name(const cJSON *spec)
{
  return cJSON_GetStringValue(cJSON_GetObjectItem(spec, "name"));
}

/*  The kernelspec to judge, with why it was chosen (into why): by name;
    else the only guarded one; among several, python3-kguard (install's
    default name), else the first; with none guarded, python3. NULL when
    there is none of these. */
static const cJSON *
s_pick(const cJSON *specs, const char *name, char *why, size_t whylen)
{
  const cJSON *s, *chosen = NULL;
  *why = '\0';
  if (name) {
    cJSON_ArrayForEach(s, specs) if (strcmp(s_name(s), name) == 0) return s;
    return NULL;
  }
  int guarded = 0;
  cJSON_ArrayForEach(s, specs) if (cJSON_IsTrue(cJSON_GetObjectItem(s, "guarded"))) {
    guarded++;
    if (!chosen || strcmp(s_name(s), "python3-kguard") == 0)
      chosen = s;
  }
  if (guarded == 1)
    snprintf(why, whylen, "the only kernelspec kguard guards");
  else if (guarded > 1) {
    size_t n = (size_t) snprintf(why, whylen, "%s among the %d guarded kernelspecs (",
                                 strcmp(s_name(chosen), "python3-kguard") == 0
                                   ? "`kguard install`'s default name" : "the first",
                                 guarded);
    bool first = true;
    cJSON_ArrayForEach(s, specs) if (s != chosen && cJSON_IsTrue(cJSON_GetObjectItem(s,
                                                                                  "guarded"))
                                     && n < whylen) {
      n += (size_t) snprintf(why + n, whylen - n, "%s%s", first ? "" : ", ", s_name(s));
      first = false;
    }
    if (n < whylen)
      snprintf(why + n, whylen - n, " can be judged with --kernel NAME)");
  }
  if (chosen)
    return chosen;
  cJSON_ArrayForEach(s, specs) if (strcmp(s_name(s), "python3") == 0) {
    snprintf(why, whylen, "no kernelspec is guarded: python3, the one `kguard install` "
             "wraps by default");
    return s;
  }
  return NULL;
}

/*  Whether the kernelspec described by entry (kg_doctor_kernelspecs) can
    start here: entry["start"] = {"ok", "why", "fix"}; fix is the command
    that writes a guarded kernelspec again with this kguard, when its own
    kguard program is gone or another one. */
static void
s_start_check(cJSON *entry, const char *self)
{
  if (cJSON_GetObjectItem(entry, "start"))
    return;
  cJSON *st = cJSON_AddObjectToObject(entry, "start");
  const char *bad = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "error"));
  if (bad) {
    cJSON_AddBoolToObject(st, "ok", false);
    cJSON_AddStringToObject(st, "why", bad);
    return;
  }
  kg_kernelspec_t *spec = NULL;
  char err[2048] = "", fix[8192] = "";
  int rc = kg_kcheck_load(cJSON_GetStringValue(cJSON_GetObjectItem(entry, "dir")),
                          s_name(entry), &spec, err, sizeof err);
  kg_kcheck_t kc = {0};
  if (rc == 0)
    rc = kg_kcheck_run(spec, self, &kc, err, sizeof err);
  cJSON_AddBoolToObject(st, "ok", rc == 0);
  if (rc != 0)
    cJSON_AddStringToObject(st, "why", *err ? err : kg_strerror(rc));
  if (spec && (kc.kguard_missing || kc.other_kguard)
      && kg_kcheck_reinstall_cmd(spec, self, fix, sizeof fix) == 0) {
    cJSON_AddStringToObject(st, "fix", fix);
    if (kc.other_kguard)
      cJSON_AddStringToObject(st, "other_kguard", kc.kguard);
  }
  kg_kernelspec_destroy(&spec);
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

/*  The pre-flight's status, exit code and summary from how its worker
    ended (code: its exit, -2 timed out, -3 not started) and how many
    devices it saw. */
static const char *
s_preflight_verdict(int code, int devices, bool emulated, int64_t timeout_ms, int *exit_code,
                    char *summary, size_t size)
{
  if (code == -3) {
    *exit_code = KG_EXIT_SYSTEM;
    snprintf(summary, size, "the pre-flight worker could not be started");
    return "error";
  }
  if (code == -2) {
    *exit_code = S_EXIT_TIMEOUT;
    snprintf(summary, size, "the device did not answer within %lld ms: the driver "
             "or the device is hung (check `nvidia-smi -q` and the kernel log for Xid "
             "messages, or `rocm-smi`)%s", (long long) timeout_ms,
             emulated ? " [kguard emulation: preflight-hang]" : "");
    return "timeout";
  }
  if (code == 0) {
    *exit_code = 0;
    snprintf(summary, size, devices ? "%d device(s) healthy: allocate, launch, "
             "synchronise and copy back succeeded" : "no GPU visible: nothing to check", devices);
    return devices ? "healthy" : "no-gpu";
  }
  *exit_code = S_EXIT_FAILING;
  snprintf(summary, size, "a device is failing%s (ECC or hardware family: check "
           "`nvidia-smi -q` and the kernel log for Xid messages, or `rocm-smi`)%s",
           code == 1 ? "" : " (the pre-flight worker crashed in the driver)",
           emulated ? " [kguard emulation: preflight-fail, no GPU was used]" : "");
  return "failing";
}

/*  One line per device of backend be: its verdict, the error, the memory
    in use and who holds it. */
static void
s_preflight_devices(const cJSON *r, const char *be)
{
  const cJSON *d;
  cJSON_ArrayForEach(d, cJSON_GetObjectItem(cJSON_GetObjectItem(r, be), "devices"))
  {
    const cJSON *p = cJSON_GetObjectItem(d, "preflight");
    const cJSON *e = cJSON_GetObjectItem(p, "error");
    const cJSON *used = cJSON_GetObjectItem(d, "used_bytes");
    printf("  %s:%d %s: %s%s%s%s", be, cJSON_GetObjectItem(d, "index")->valueint,
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
  int exit_code;
  char summary[512];
  const char *status = s_preflight_verdict(code, devices, emulated, timeout_ms, &exit_code,
                                           summary, sizeof summary);
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
    for (int b = 0; b < 2; b++)
      s_preflight_devices(r, be[b]);
  }
  cJSON_Delete(r);
  return exit_code;
}

/*  What the command line asked for. */
typedef struct {
  const char *kernel, *python, *format;
  kg_doctor_format_t fmt;
  double timeout_s;             /*  -1: the default                          */
  bool preflight, worker;
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
    case O_KERNEL: a->kernel = p->value; break;
    case O_PYTHON: a->python = p->value; break;
    case O_FORMAT: a->format = p->value; break;
    case O_JSON: a->format = "json"; break;
    case O_TIMEOUT: {
      char *end = NULL;
      a->timeout_s = strtod(p->value, &end);
      if (!end || *end || end == p->value || !(a->timeout_s > 0 && a->timeout_s <= 3600))
        return kg_opt_usage(p, "--timeout takes seconds in (0, 3600], not '%s'", p->value);
      break;
    }
    case O_PREFLIGHT: a->preflight = true; break;
    case O_WORKER: a->worker = true; break;
    }
  }
  if (a->kernel && a->python)
    return kg_opt_usage(p, "give --kernel or --python, not both");
  a->fmt = KG_DOCTOR_TEXT;
  if (strcmp(a->format, "markdown") == 0)
    a->fmt = KG_DOCTOR_MARKDOWN;
  else if (strcmp(a->format, "text") != 0 && strcmp(a->format, "json") != 0)
    return kg_opt_usage(p, "--format must be text, markdown or json, not '%s'", a->format);
  return -1;
}

/*  report["kguard"]: which kguard this is: with a pip install beside a
    Debian one, the first question is which of them runs. */
static void
s_whoami(cJSON *report, const char *self)
{
  char prefix[PATH_MAX], envp[PATH_MAX];
  cJSON *me = cJSON_AddObjectToObject(report, "kguard");
  cJSON_AddStringToObject(me, "executable", self);
  cJSON_AddStringToObject(me, "install", kg_paths_install_kind(prefix, sizeof prefix));
  if (*prefix)
    cJSON_AddStringToObject(me, "prefix", prefix);
  else
    cJSON_AddNullToObject(me, "prefix");
  if (kg_paths_env_prefix(envp, sizeof envp) == 0)
    cJSON_AddStringToObject(me, "python_env", envp);
  else
    cJSON_AddNullToObject(me, "python_env");
}

/*  report["kernel"]: the kernel judged (spec, chosen for why, or --python,
    or the default). Applies the kernelspec's variables to this process,
    since they apply to what its kernel will see. Returns the interpreter
    to probe, or NULL when the kernel is not started by a python. */
static const char *
s_kernel(cJSON *report, const cJSON *spec, const char *why, const char *python)
{
  cJSON *k = cJSON_AddObjectToObject(report, "kernel");
  const char *interp = python;
  if (spec) {
    cJSON_AddStringToObject(k, "name", s_name(spec));
    cJSON_AddStringToObject(k, "source", "kernelspec");
    cJSON_AddBoolToObject(k, "guarded", cJSON_IsTrue(cJSON_GetObjectItem(spec, "guarded")));
    if (*why)
      cJSON_AddStringToObject(k, "chosen", why);
    interp = cJSON_GetStringValue(cJSON_GetObjectItem(spec, "interpreter"));
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(spec, "env")) setenv(v->string, v->valuestring, 1);
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
  return interp;
}

/*  report["probe"] from the kernel's Python's answer (out, code), or why
    there is none. */
static void
s_probe(cJSON *report, const char *interp, bool have_pkg, const char *out, int code,
        int64_t timeout_ms)
{
  if (!interp) {
    cJSON *pr = cJSON_AddObjectToObject(report, "probe");
    cJSON_AddStringToObject(pr, "error", "the kernel is not started by a python executable");
    cJSON_AddBoolToObject(pr, "not_python", true);
    return;
  }
  char what[PATH_MAX + 64];
  snprintf(what, sizeof what, "%s%s", interp, have_pkg ? "" : " (kguard's Python package "
           "was not found: is kguard fully installed?)");
  cJSON *probe = s_parse(out, code, what, timeout_ms);
  if (code == -2)
    cJSON_AddBoolToObject(probe, "timed_out", true);
  char found[PATH_MAX];
  int prc = kg_kcheck_program(interp, getenv("PATH"), found, sizeof found);
  if (code == -3 && prc != 0) {
    char why2[PATH_MAX + 128];
    snprintf(why2, sizeof why2, "%s could not be started: %s", interp,
             prc == -ENOENT && !strchr(interp, '/') ? "not found in PATH" : kg_strerror(prc));
    cJSON_ReplaceItemInObject(probe, "error", cJSON_CreateString(why2));
  }
  cJSON_AddItemToObject(report, "probe", probe);
}

/*  The two helpers at once, the driver worker and the kernel's Python
    (when interp), under timeout_ms: report["drivers"] and ["probe"]. 0, or
    KG_EXIT_SYSTEM when they could not be run. */
static int
s_helpers(cJSON *report, char *self, const char *interp, int64_t timeout_ms)
{
  char pydir[PATH_MAX], pypath[2 * PATH_MAX], ptimeout[32];
  bool have_pkg = kg_paths_python_dir(pydir, sizeof pydir) == 0;
  if (have_pkg) {
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
  if (kg_doctor_run_children(argvs, interp ? 2 : 1, timeout_ms, outs, codes) != 0)
    return KG_EXIT_SYSTEM;
  cJSON_AddItemToObject(report, "drivers", s_parse(outs[0], codes[0], "the driver worker",
                                                   timeout_ms));
  s_probe(report, interp, have_pkg, outs[1], codes[1], timeout_ms);
  free(outs[0]);
  free(outs[1]);
  return 0;
}

/*  NVML's health reading of the GPUs this environment's
    CUDA_VISIBLE_DEVICES names, as kguard exec and the kernel read them
    before a restart (read only): report["gpu_health"], kg_gpuhealth_record
    without a baseline, and "line" naming a GPU that needs a reset. */
static void
s_gpu_health(cJSON *report)
{
  kg_gpuhealth_reading_t *now = malloc(sizeof *now);
  kg_nvml_t *nvml = now ? kg_nvml_new() : NULL;
  if (!nvml) {
    free(now);
    return;
  }
  kg_nvml_read(nvml, getenv("CUDA_VISIBLE_DEVICES"), now);
  kg_nvml_destroy(&nvml);
  kg_gpuhealth_result_t res;
  kg_gpuhealth_judge(NULL, now, NULL, NULL, &res);
  cJSON *rec = kg_gpuhealth_record(NULL, now, &res);
  if (rec && res.verdict == KG_GPUHEALTH_NEEDS_RESET) {
    char line[512];
    cJSON_AddStringToObject(rec, "line", kg_gpuhealth_line(now, &res, line, sizeof line));
  }
  if (rec)
    cJSON_AddItemToObject(report, "gpu_health", rec);
  free(now);
}

/*  report["snapshots"]: the directory kguard.snapshot writes under
    (kg_snapdir_base) and its room, read here as the training process will
    find it; {"base", "error"} when it cannot be read. */
static void
s_snapshots(cJSON *report)
{
  const char *base = kg_snapdir_base();
  cJSON *o = cJSON_AddObjectToObject(report, "snapshots");
  cJSON_AddStringToObject(o, "base", base);
  struct stat st;
  struct statvfs vfs;
  struct statfs fs;
  int e = 0;
  if (stat(base, &st) != 0)
    e = errno;
  else if (!S_ISDIR(st.st_mode))
    e = ENOTDIR;   /* kg_snapdir refuses it too */
  else if (statvfs(base, &vfs) != 0 || statfs(base, &fs) != 0)
    e = errno;
  if (e) {
    cJSON_AddStringToObject(o, "error", strerror(e));
    return;
  }
  cJSON_AddNumberToObject(o, "free_bytes", (double) vfs.f_bavail * (double) vfs.f_frsize);
  cJSON_AddNumberToObject(o, "total_bytes", (double) vfs.f_blocks * (double) vfs.f_frsize);
  cJSON_AddBoolToObject(o, "tmpfs", fs.f_type == TMPFS_MAGIC);
}

/*  The assessed report in the format asked; 1 when it lists problems. */
static int
s_print(cJSON *report, const s_args_t *a)
{
  kg_doctor_assess(report);
  char *text = strcmp(a->format, "json") == 0 ? cJSON_Print(report)
                                              : kg_doctor_render(report, a->fmt);
  int code = cJSON_GetArraySize(cJSON_GetObjectItem(report, "problems")) ? 1 : 0;
  if (!text)
    return KG_EXIT_SYSTEM;
  fputs(text, stdout);
  if (text[0] && text[strlen(text) - 1] != '\n')
    putchar('\n');
  free(text);
  return code;
}

/*  The judgement without --preflight: the kernelspecs, the kernel judged,
    the variables, the helpers' answers, printed. Returns the exit code. */
static int
s_judge(kg_opt_parser_t *p, const s_args_t *a, char *self)
{
  int64_t timeout_ms = (int64_t) ((a->timeout_s > 0 ? a->timeout_s : 60) * 1000);
  cJSON *dirs = kg_doctor_kernel_dirs();
  cJSON *specs = kg_doctor_kernelspecs(dirs);
  char why[2048];
  const cJSON *spec = a->python ? NULL : s_pick(specs, a->kernel, why, sizeof why);
  if (a->kernel && !spec) {
    cJSON_Delete(dirs);
    cJSON_Delete(specs);
    return kg_opt_usage(p, "no kernelspec named '%s' (`kguard doctor` without --kernel "
                        "lists them)", a->kernel);
  }
  /* every guarded kernelspec must be able to start, and the one judged */
  cJSON *e;
  cJSON_ArrayForEach(e, specs) if (cJSON_IsTrue(cJSON_GetObjectItem(e, "guarded")) || e == spec)
    s_start_check(e, self);
  cJSON *report = cJSON_CreateObject();
  cJSON_AddNumberToObject(report, "kguard_doctor", 1);
  s_whoami(report, self);
  const char *interp = s_kernel(report, spec, why, a->python);
  bool diag_run = false;
  cJSON_AddItemToObject(report, "env", s_env_list(&diag_run));
  cJSON_AddBoolToObject(report, "diagnostic_run", diag_run);
  if (s_helpers(report, self, interp, timeout_ms) != 0) {
    cJSON_Delete(report);
    cJSON_Delete(dirs);
    cJSON_Delete(specs);
    return KG_EXIT_SYSTEM;
  }
  s_gpu_health(report);
  s_snapshots(report);
  cJSON_AddItemToObject(report, "kernelspecs", specs);
  cJSON_AddItemToObject(report, "kernel_dirs", dirs);
  int code = s_print(report, a);
  cJSON_Delete(report);
  return code;
}

int
kg_cli_doctor_main(int argc, char **argv)
{
  s_args_t a = {.format = "text", .timeout_s = -1};
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_cli_doctor_cmd, argc, argv);
  int rc = s_parse_args(&p, &a);
  if (rc >= 0)
    return rc;
  if (a.worker) {
    int code = kg_gpudrv_worker_main(a.preflight);
    fflush(NULL);
    _exit(code);   /* no exit handlers: a GPU runtime's can hang */
  }
  char self[PATH_MAX];
  if (kg_paths_exe(self, sizeof self) != 0) {
    kg_opt_error("cannot find kguard's own executable (/proc/self/exe)");
    return KG_EXIT_SYSTEM;
  }
  if (a.preflight)
    return s_preflight(self, strcmp(a.format, "json") == 0,
                       (int64_t) ((a.timeout_s > 0 ? a.timeout_s : 10) * 1000));
  return s_judge(&p, &a, self);
}
