"""kguard on a real GPU (issue 13): each check is one subcommand that prints
one verdict line ("PASS name: ...", "SKIP name: ...", "FAIL name: ...") and
exits 0 / 77 (skipped: no driver or no device here) / 1.

  driver-assert   the fixture alone: a device-side assert (kgfx_assert,
                  __assertfail in PTX JIT-compiled by the driver) returns
                  CUDA_ERROR_ASSERT 710 and the context stays unusable
  driver-trap     the same with `trap`: CUDA_ERROR_LAUNCH_FAILED 719
  kernel-assert   an ipykernel under `kguard kernel` (jupyter_client) loads the
                  fixture with ctypes and triggers the assert in the live
                  kernel; kguard must detect it from the real driver's output,
                  restart, and the fresh process must allocate and launch fine
  run-notebook    `kguard run examples/train_classifier.ipynb` with the label-4
                  bug on a CUDA build of torch: the genuine nll_loss assert,
                  kguard restarts, the bug repeats, kguard stops with exit 2
  hip-driver-assert, hip-kernel-assert
                  the same two with the HIP twin (kgfx_hip.hip, built by
                  hipcc): 710/719 returned, or the ROCm 5 abort (SIGABRT with
                  "Device-side assertion" on stderr); in the kernel kguard must
                  see it as sticky (device-assert or launch-failure) and restart
  preflight       `kguard doctor --preflight` on the real device: healthy
  doctor          `kguard doctor --json`: the stack and every device listed

Environment: KGUARD_BIN, KGFX_LIB (the built kgfx_cuda library),
KGFX_HIP_LIB (the built kgfx_hip library; empty where hipcc is missing),
KGUARD_SOURCE_DIR, KGUARD_PYTHON (the kernel's interpreter).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("KGUARD_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
KGUARD = os.environ.get("KGUARD_BIN", os.path.join(SOURCE, "build", "dev", "kguard"))
PYTHON = os.environ.get("KGUARD_PYTHON", "/usr/bin/python3")
SKIP, FAIL = 77, 1
# CUDA_ERROR_STUB_LIBRARY 34, INSUFFICIENT_DRIVER 35, NO_DEVICE 100: nothing to test here
NO_GPU = (-1, 34, 35, 100)


def verdict(name, code, text):
    word = {0: "PASS", SKIP: "SKIP"}.get(code, "FAIL")
    print("%s %s: %s" % (word, name, text), flush=True)
    return code


def _in_subprocess(body):
    """Run fixture code in a fresh Python (a poisoned context must not leak)."""
    code = ("import sys, json; sys.path.insert(0, %r); import kgfx\n" % HERE) + body
    r = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    return r


def _fixture_fault(name, fn, expected, expected_name, hip=False):
    r = _in_subprocess(
        "rc = kgfx.lib().kgfx_init(kgfx.os.path.join(%r, 'kgfx_cuda.ptx').encode(), 0)\n"
        "if rc: print(json.dumps({'init': rc, 'why': kgfx.lib().kgfx_last_error().decode()})); "
        "sys.exit(0)\n"
        "ok = kgfx.raw('fill')\nrc = kgfx.raw(%r)\nafter = kgfx.raw('fill')\n"
        "print(json.dumps({'init': 0, 'fill': ok, 'rc': rc, 'after': after, "
        "'name': kgfx.lib().kgfx_error_name(rc).decode()}))\n" % (HERE, fn))
    if hip and r.returncode == -6 and "Device-side assertion" in r.stdout + r.stderr:
        return verdict(name, 0, "the HIP runtime printed the device-side assertion and "
                       "aborted the process (SIGABRT), as ROCm 5 does")
    try:
        res = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return verdict(name, FAIL, "no result (exit %d): %s" % (r.returncode, r.stderr[-300:]))
    if res["init"] in NO_GPU:
        return verdict(name, SKIP, "no usable CUDA driver/device: %s" % res.get("why"))
    if res["init"]:
        return verdict(name, FAIL, "init: %s" % res.get("why"))
    if res["fill"] != 0:
        return verdict(name, FAIL, "the healthy launch failed first (%d)" % res["fill"])
    if hip and res["rc"] in (710, 719):
        pass   # newer ROCm returns the error instead of aborting
    elif res["rc"] != expected or res["name"] != expected_name:
        return verdict(name, FAIL, "expected %s %d, got %s %d" % (expected_name, expected,
                                                                  res["name"], res["rc"]))
    if res["after"] == 0:
        return verdict(name, FAIL, "the context still worked after %d (not sticky?)" % expected)
    line = [l for l in r.stdout.splitlines() if "Assertion" in l]
    return verdict(name, 0, "%s %d, sticky (next launch: %d)%s" % (
        expected_name, expected, res["after"], "; device printed: " + line[0][:120] if line else ""))


def check_driver_assert():
    return _fixture_fault("driver-assert", "assert", 710, "CUDA_ERROR_ASSERT")


def check_driver_trap():
    return _fixture_fault("driver-trap", "trap", 719, "CUDA_ERROR_LAUNCH_FAILED")


def _use_hip(name):
    """Point KGFX_LIB at the HIP twin (the kernels started later inherit it);
    a verdict code if it is not built."""
    lib = os.environ.get("KGFX_HIP_LIB", "")
    if not lib or not os.path.exists(lib):
        return verdict(name, SKIP, "the HIP fixture is not built here (no hipcc)")
    os.environ["KGFX_LIB"] = lib
    return None


def check_hip_driver_assert():
    skip = _use_hip("hip-driver-assert")
    return skip if skip is not None else _fixture_fault(
        "hip-driver-assert", "assert", 710, "hipErrorAssert", hip=True)


def check_hip_kernel_assert():
    skip = _use_hip("hip-kernel-assert")
    return skip if skip is not None else check_kernel_assert("hip-kernel-assert",
                                                             ("device-assert", "launch-failure"))


def _has_gpu():
    """(rc of kgfx_init, why); rc None when the fixture itself did not load."""
    r = _in_subprocess("rc = kgfx.lib().kgfx_init(kgfx.os.path.join(%r, 'kgfx_cuda.ptx')"
                       ".encode(), 0)\nprint(rc)" % HERE)
    try:
        rc = int(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, "the fixture did not load: %s" % r.stderr[-200:]
    return rc, "kgfx_init: %d" % rc


def check_kernel_assert(name="kernel-assert", families=("device-assert",)):
    rc, why = _has_gpu()
    if rc in NO_GPU:
        return verdict(name, SKIP, "no usable CUDA device (%s)" % why)
    if rc != 0:
        return verdict(name, FAIL, why)
    sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))
    from jupyter_client import KernelManager
    from conftest import Collector, kernel_pid, notices
    tmp = tempfile.mkdtemp(prefix="kguard-gpu-")
    os.environ.update(KGUARD_STATE_DIR=os.path.join(tmp, "state"),
                      JUPYTER_PATH=os.path.join(tmp, "jpath"),
                      JUPYTER_RUNTIME_DIR=os.path.join(tmp, "rt"))
    kdir = os.path.join(tmp, "jpath", "kernels", "kg-gpu")
    os.makedirs(kdir)
    with open(os.path.join(kdir, "kernel.json"), "w") as f:
        json.dump({"argv": [KGUARD, "kernel", "-f", "{connection_file}", "--name", "kg-gpu",
                            "--", PYTHON, "-m", "ipykernel_launcher", "-f",
                            "{connection_file}"],
                   "display_name": "kguard gpu", "language": "python"}, f)
    km = KernelManager(kernel_name="kg-gpu")
    km.start_kernel(cwd=tmp)
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        col = Collector(kc)
        setup = "import sys; sys.path.insert(0, %r); import kgfx; kgfx.init(); kgfx.fill()\n" % HERE
        reply, _ = col.run(setup, timeout=120)
        if reply["content"]["status"] != "ok":
            return verdict(name, FAIL, "setup: %s" % reply["content"].get("evalue"))
        pid1 = kernel_pid(col)
        msg_id = kc.execute("kgfx.device_assert()")
        reply = col.wait_reply(msg_id, timeout=120)
        md = reply.get("metadata", {}).get("kguard", {})
        deadline = time.monotonic() + 120
        while not notices(col.iopub.get(msg_id, []), "sticky-restart"):
            if time.monotonic() > deadline:
                return verdict(name, FAIL, "no sticky-restart notice; reply %s %s" % (
                    reply["content"].get("evalue"), md))
            col._drain(0.1)
        reply, msgs = col.run(setup + "import os; print(os.getpid())", timeout=120)
        if reply["content"]["status"] != "ok":
            return verdict(name, FAIL, "the fresh kernel cannot launch: %s"
                           % reply["content"].get("evalue"))
        pid2 = kernel_pid(col)
        inc_dir = os.path.join(tmp, "state", "incidents")
        incs = [json.load(open(os.path.join(inc_dir, p))) for p in sorted(os.listdir(inc_dir))]
        fam = incs[0].get("family") if incs else None
        line = (incs[0].get("assertion_line") or "") if incs else ""
        if pid2 == pid1 or fam not in families:
            return verdict(name, FAIL, "pid %d→%d, family %s" % (pid1, pid2, fam))
        return verdict(name, 0, "real 710 detected (family %s), restarted (pid %d→%d), fresh "
                       "kernel launches; assertion line %s" % (
                           fam, pid1, pid2, "recorded: " + line[:100] if line else "NOT seen"))
    finally:
        km.shutdown_kernel(now=True)


def check_run_notebook():
    name = "run-notebook"
    r = subprocess.run([PYTHON, "-c", "import torch; print(torch.version.cuda, "
                        "torch.cuda.is_available())"], capture_output=True, text=True,
                       timeout=120)
    words = r.stdout.split()
    if r.returncode != 0 or len(words) < 2 or words[0] == "None" or words[1] != "True":
        return verdict(name, SKIP, "no CUDA build of torch with a device for %s (%s)" % (
            PYTHON, (r.stdout + r.stderr).strip()[-120:]))
    tmp = tempfile.mkdtemp(prefix="kguard-gpu-run-")
    nb = os.path.join(tmp, "train_classifier.ipynb")
    subprocess.run(["cp", os.path.join(SOURCE, "examples", "train_classifier.ipynb"), nb],
                   check=True)
    env = dict(os.environ, EXAMPLE_LABEL4_AT_STEP="60", EXAMPLE_SKIP_CHECK="1",
               KGUARD_STATE_DIR=os.path.join(tmp, "state"))
    env.pop("KGUARD_EMULATE", None)
    r = subprocess.run([KGUARD, "run", nb, "--quiet"], capture_output=True, text=True,
                       timeout=240, env=env)
    inc_dir = os.path.join(tmp, "state", "incidents")
    incs = [json.load(open(os.path.join(inc_dir, p))) for p in sorted(os.listdir(inc_dir))] \
        if os.path.isdir(inc_dir) else []
    fams = [i.get("family") for i in incs]
    if r.returncode != 2 or "device-assert" not in fams:
        return verdict(name, FAIL, "exit %d, incidents %s: %s" % (r.returncode, fams,
                                                                 (r.stdout + r.stderr)[-300:]))
    line = incs[0].get("assertion_line") or ""
    return verdict(name, 0, "genuine nll_loss assert detected (%d incident(s)), restarted and "
                   "stopped on the repeat (exit 2); assertion line: %s" % (
                       len(incs), line[:100] or "NOT seen"))


def check_preflight():
    name = "preflight"
    r = subprocess.run([KGUARD, "doctor", "--preflight", "--json", "--timeout", "60"],
                       capture_output=True, text=True, timeout=120)
    try:
        res = json.loads(r.stdout)
    except ValueError:
        return verdict(name, FAIL, "no JSON (exit %d): %s" % (r.returncode, r.stderr[-200:]))
    if res.get("status") == "no-gpu":
        return verdict(name, SKIP, "no GPU visible")
    devs = [d for b in ("cuda", "hip") for d in (res.get(b) or {}).get("devices", [])]
    if r.returncode != 0 or res.get("status") != "healthy":
        return verdict(name, FAIL, "%s (exit %d)" % (res.get("summary"), r.returncode))
    return verdict(name, 0, "%d device(s) healthy in %d ms: %s" % (
        len(devs), res.get("ms", -1), "; ".join("%s %.0f MiB used, %s ms" % (
            d.get("name"), d.get("used_bytes", 0) / 1048576,
            d.get("preflight", {}).get("ms")) for d in devs)))


def check_doctor():
    name = "doctor"
    r = subprocess.run([KGUARD, "doctor", "--json", "--python", PYTHON], capture_output=True,
                       text=True, timeout=180)
    try:
        rep = json.loads(r.stdout)
    except ValueError:
        return verdict(name, FAIL, "no JSON (exit %d): %s" % (r.returncode, r.stderr[-200:]))
    if not rep.get("devices"):
        return verdict(name, SKIP, rep.get("summary", "no device"))
    devs = "; ".join("%s:%d %s cap %s torch code %s" % (d.get("backend"), d.get("index", -1),
                     d.get("name"), d.get("capability") or d.get("gcn_arch"),
                     d.get("arch", {}).get("verdict")) for d in rep["devices"])
    return verdict(name, 0, "%s | %s | problems: %s" % (rep.get("summary"), devs,
                                                        rep.get("problems") or "none"))


CHECKS = {"driver-assert": check_driver_assert, "driver-trap": check_driver_trap,
          "hip-driver-assert": check_hip_driver_assert,
          "hip-kernel-assert": check_hip_kernel_assert,
          "kernel-assert": check_kernel_assert, "run-notebook": check_run_notebook,
          "preflight": check_preflight, "doctor": check_doctor}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CHECKS:
        sys.exit("usage: real_device.py %s" % "|".join(CHECKS))
    if "KGFX_LIB" not in os.environ:
        sys.exit(verdict(sys.argv[1], FAIL, "KGFX_LIB is not set (the built kgfx_cuda library)"))
    try:
        sys.exit(CHECKS[sys.argv[1]]())
    except Exception as e:  # a check that crashes is a failure, named
        sys.exit(verdict(sys.argv[1], FAIL, "%s: %s" % (type(e).__name__, e)))
