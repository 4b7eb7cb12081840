"""Issue 13: the pre-flight device probe beside a fresh kernel's start, and
`%kguard doctor` in a notebook, through the real binary and jupyter_client.

Device failures come from the labelled emulation: KGUARD_EMULATE words
preflight-fail / preflight-hang make `kguard doctor --preflight` (started by
the supervisor with the kernel's environment) report a failing or hung
device; the kernel's own emulation skips those words. No GPU is used.

The supervisor's side of both is supervisor/kernel/kg_sup_gpu.c, over
supervisor/gpu/kg_preflight.h and supervisor/gpu/kg_inband_doctor.h.
"""
import json
import subprocess

import psutil

from conftest import KGUARD, PYTHON, Collector, kernel_pid, kguard_pid, stdout_of, wait_until

SETUP = "import os, kguard.emulate as em\n"


def _all_iopub(col):
    col._drain(0.05)
    return [m for msgs in col.iopub.values() for m in msgs]


def _kguard_notices(col, event):
    return [m for m in _all_iopub(col) if m["msg_type"] == "display_data"
            and m["content"].get("metadata", {}).get("kguard", {}).get("event") == event]


def _inner_kernels(km):
    """The ipykernel processes under kguard (the guarded kernels alive)."""
    try:
        kids = psutil.Process(kguard_pid(km)).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for p in kids:
        try:
            if "ipykernel_launcher" in " ".join(p.cmdline()) and p.status() != "zombie":
                out.append(p.pid)
        except psutil.NoSuchProcess:
            pass
    return out


def _status(col):
    reply, msgs = col.run("%kguard status", timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    return stdout_of(msgs)


def _fault(env, col, kc):
    """Trigger the emulated sticky error in the live kernel; return the
    failing request's id once its reply came."""
    msg_id = kc.execute(SETUP + "em.step(1)\nem.step(2)")
    reply = col.wait_reply(msg_id, timeout=60)
    assert reply["content"]["status"] == "error"
    assert "device-side assert triggered" in reply["content"]["evalue"]
    return msg_id


def _assert_down_for_device(env, km, kc, col, status_word):
    # the notice: the device is failing, hardware family, nothing restarted
    notice = wait_until(lambda: _kguard_notices(col, "down"), 90, "the down notice")[0]
    meta = notice["content"]["metadata"]["kguard"]
    text = notice["content"]["data"]["text/plain"]
    assert meta["family"] == "ecc-hardware", meta
    assert "the device is failing" in meta["reason"], meta
    assert "nvidia-smi -q" in text and "rocm-smi" in text, text
    assert "kguard emulation" in meta["reason"]          # never passed off as a real GPU
    # DOWN: requests get KernelDown, no fresh kernel keeps running, no loop
    st = wait_until(lambda: (lambda t: "state DOWN" in t and t)(_status(col)), 60, "state DOWN")
    assert "the device is failing" in st
    wait_until(lambda: not _inner_kernels(km), 30, "the fresh kernel stopped")
    reply, _ = col.run("print('never runs')", timeout=60)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KernelDown"
    assert "the device is failing" in reply["content"]["evalue"]
    assert "kernel #2" in _status(col)                    # one attempt, no restart loop
    # the incident records the probe's own output under "preflight"
    inc = wait_until(lambda: [i for i in env.incidents() if "preflight" in i], 60,
                     "the incident with the pre-flight's output")[0]
    pf = inc["preflight"]
    assert pf["status"] == status_word and pf["verdict"] == status_word, pf
    assert pf["emulated"] is True and "summary" in pf
    assert inc["family"] == "device-assert"                # the same incident as the fault
    return inc


def test_preflight_failing_device_goes_down(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2:once:preflight-fail"})
    km, kc = env.start()
    col = Collector(kc)
    kernel_pid(col)
    _fault(env, col, kc)
    inc = _assert_down_for_device(env, km, kc, col, "failing")
    (dev,) = inc["preflight"]["cuda"]["devices"]
    assert dev["preflight"]["error"]["name"] == "CUDA_ERROR_ECC_UNCORRECTABLE"
    assert inc["preflight"]["exit"] == 1


def test_preflight_hung_device_goes_down(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2:once:preflight-hang",
                  "KGUARD_PREFLIGHT_TIMEOUT": "1"})
    km, kc = env.start()
    col = Collector(kc)
    kernel_pid(col)
    _fault(env, col, kc)
    inc = _assert_down_for_device(env, km, kc, col, "timeout")
    assert inc["preflight"]["exit"] == 2
    assert "preflight-hang" in inc["preflight"]["summary"]


def test_preflight_healthy_restart_is_recorded(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2:once"})
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    _fault(env, col, kc)
    # healthy (no GPU here): the restart goes on as without the probe
    wait_until(lambda: kernel_pid(col) != pid1, 90, "the restarted kernel")
    assert "state READY" in _status(col)
    inc = wait_until(lambda: [i for i in env.incidents() if "preflight" in i], 60,
                     "the incident with the pre-flight's verdict")[0]
    assert inc["preflight"]["status"] == "no-gpu" and inc["preflight"]["verdict"] == "ok"
    assert inc["preflight"]["exit"] == 0
    assert not _kguard_notices(col, "down")


def test_preflight_never_runs_no_probe(env):
    env.spec(env={"KGUARD_EMULATE": "cuda-assert:step=2:once:preflight-fail",
                  "KGUARD_PREFLIGHT": "never"})
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    _fault(env, col, kc)
    wait_until(lambda: kernel_pid(col) != pid1, 90, "the restarted kernel")
    wait_until(lambda: env.incidents() and "versions" in env.incidents()[0], 60,
               "the incident with the probe's versions")
    assert "preflight" not in env.incidents()[0]
    assert not _kguard_notices(col, "down")


def test_preflight_at_first_start(env):
    env.spec(env={"KGUARD_EMULATE": "preflight-fail", "KGUARD_PREFLIGHT": "first"})
    km, kc = env.start()            # kernel_info is answered by kguard even when down
    col = Collector(kc)
    reply, _ = col.run("print('never runs')", timeout=90)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KernelDown"
    assert "the device is failing" in reply["content"]["evalue"]
    st = _status(col)
    assert "state DOWN" in st and "kernel #1" in st
    wait_until(lambda: not _inner_kernels(km), 30, "the first kernel stopped")


def test_install_writes_the_preflight_option(env):
    prefix = env.root / "prefix"
    r = subprocess.run([KGUARD, "install", "--prefix", str(prefix), "--preflight=first",
                        "--preflight-timeout", "2.5"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    spec = json.loads((prefix / "share/jupyter/kernels/python3-kguard/kernel.json").read_text())
    assert spec["env"]["KGUARD_PREFLIGHT"] == "first"
    assert spec["env"]["KGUARD_PREFLIGHT_TIMEOUT"] == "2.5"
    for bad, word in ((["--preflight", "always"], "never, sticky or first"),
                      (["--preflight-timeout", "0"], "(0, 3600]"),
                      (["--preflight-timeout", "ten"], "(0, 3600]")):
        p2 = env.root / ("p-" + bad[1])
        r = subprocess.run([KGUARD, "install", "--prefix", str(p2), *bad], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 100 and word in r.stderr, r.stderr
        assert not p2.exists()                             # nothing written
    r = subprocess.run([KGUARD, "install", "--help"], capture_output=True, text=True,
                       timeout=30)
    assert "--preflight never|sticky|first" in r.stdout


# ---- %kguard doctor ----------------------------------------------------------

def test_inband_doctor_answered_by_kguard(env):
    env.spec(env={"CUDA_VISIBLE_DEVICES": "3"})
    km, kc = env.start()
    col = Collector(kc)
    pid = kernel_pid(col)
    reply, msgs = col.run("%kguard doctor", timeout=120)
    # ipykernel has no %kguard magic: an ok reply means kguard answered it
    assert reply["content"]["status"] == "ok", reply["content"]
    shown = [m for m in msgs if m["msg_type"] == "display_data"]
    assert len(shown) == 1, [m["msg_type"] for m in msgs]
    data = shown[0]["content"]["data"]
    md = data["text/markdown"]
    assert md.startswith("**kguard doctor**") and "### Stack" in md
    assert data["text/plain"] == md
    assert shown[0]["content"]["metadata"]["kguard"]["event"] == "doctor"
    # the kernel's environment and interpreter, not kguard's
    assert "CUDA_VISIBLE_DEVICES=3" in md
    assert "Python %s" % PYTHON in md
    states = [m["content"]["execution_state"] for m in msgs if m["msg_type"] == "status"]
    assert states == ["busy", "idle"]
    # it never ran in the kernel: same process, nothing executed there
    assert kernel_pid(col) == pid
    r2, _ = col.run("pass")
    assert r2["content"]["execution_count"] == 3     # getpid, getpid, pass: no %kguard


def test_inband_doctor_while_another_cell_runs_waits_its_turn(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    kernel_pid(col)
    first = kc.execute("import time; time.sleep(1); print('first')")
    second = kc.execute("%kguard doctor")
    r1 = col.wait_reply(first, timeout=60)
    r2, msgs = col.wait_idle(second, timeout=120)
    assert r1["content"]["status"] == "ok" and r2["content"]["status"] == "ok"
    # the first cell's idle came before the doctor's busy: one at a time
    def when(msg_id, state):
        return [m["header"]["date"] for m in col.iopub[msg_id] if m["msg_type"] == "status"
                and m["content"]["execution_state"] == state][0]
    col.wait_idle(first)
    assert when(second, "busy") >= when(first, "idle")
