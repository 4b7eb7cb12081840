"""A GPU that needs a reset sends the guarded kernel DOWN with the hardware
notice (drain this node), never into a restart loop.

The hardware fault is the labelled emulation (KGUARD_EMULATE=cuda-ecc, the
uncorrectable ECC error's text); the GPU's state comes from the labelled
fake NVML (tests/gpu/fake_nvml.c, KG_FAKE_NVML_LIB), loaded by kguard
through KGUARD_NVML_LIB: the baseline at the first start reads clean, the
reading before the restart does not. No GPU is used. `kguard doctor`
shows the same reading per GPU.
"""
import json
import os
import subprocess

from conftest import KGUARD, Collector, kernel_pid, stdout_of, wait_until

FAKE_NVML = os.environ.get("KG_FAKE_NVML_LIB", "")


def _notices(col, event):
    col._drain(0.05)
    return [m for msgs in col.iopub.values() for m in msgs
            if m["msg_type"] == "display_data"
            and m["content"].get("metadata", {}).get("kguard", {}).get("event") == event]


def test_gpu_needing_reset_goes_down_with_the_hardware_notice(env):
    assert FAKE_NVML, "KG_FAKE_NVML_LIB names the fake NVML library"
    env.spec(env={"KGUARD_EMULATE": "cuda-ecc:step=2:once",
                  "KGUARD_NVML_LIB": FAKE_NVML,
                  "KG_FAKE_NVML": "retired-pending:after=1",
                  "KGUARD_PREFLIGHT": "never"})
    km, kc = env.start()
    col = Collector(kc)
    kernel_pid(col)
    msg_id = kc.execute("import kguard.emulate as em\nem.step(1)\nem.step(2)")
    reply = col.wait_reply(msg_id, timeout=60)
    assert reply["content"]["status"] == "error"
    assert "uncorrectable ECC error encountered" in reply["content"]["evalue"]
    notice = wait_until(lambda: _notices(col, "down"), 90, "the down notice")[0]
    meta = notice["content"]["metadata"]["kguard"]
    assert meta["family"] == "ecc-hardware", meta
    reason = meta["reason"]
    assert "GPU 0 (UUID GPU-kguard-fake-0, PCI bus id 00000000:00:00.0) needs a reset" in reason
    assert "retired pages are pending" in reason and "Drain this node" in reason, reason
    assert not _notices(col, "sticky-restart")
    # DOWN on the first kernel: no restart was tried on that GPU
    reply, msgs = col.run("%kguard status", timeout=60)
    status = stdout_of(msgs)
    assert "state DOWN" in status and "kernel #1" in status, status
    reply, _ = col.run("print('never runs')", timeout=60)
    assert reply["content"]["ename"] == "KernelDown"
    inc = wait_until(lambda: [i for i in env.incidents() if "gpu_health" in i], 60,
                     "the incident with the health reading")[0]
    gh = inc["gpu_health"]
    assert gh["verdict"] == "needs-reset" and gh["action"] == "drain this node", gh
    assert gh["device"] == {"index": 0, "uuid": "GPU-kguard-fake-0",
                            "pci_bus_id": "00000000:00:00.0"}
    assert gh["baseline"][0]["retired_pages_pending"] is False
    assert gh["now"][0]["retired_pages_pending"] is True
    assert inc["family"] == "ecc-hardware"


def _doctor(env, *args, **extra):
    e = dict(os.environ)
    e.update(extra)
    # A Python that is not there: the stack is not asked, only the GPUs.
    return subprocess.run([KGUARD, "doctor", "--python", str(env.root / "no-python"), *args],
                          capture_output=True, text=True, timeout=120, env=e)


def test_doctor_shows_each_gpus_health_reading(env):
    assert FAKE_NVML, "KG_FAKE_NVML_LIB names the fake NVML library"
    fake = dict(KGUARD_NVML_LIB=FAKE_NVML, KG_FAKE_NVML_DEVICES="2",
                KG_FAKE_NVML="remap-pending:device=1")
    r = _doctor(env, **fake)
    assert r.returncode == 1, r.stdout + r.stderr      # a GPU that needs a reset is a problem
    out = r.stdout
    assert ("GPU 0 (UUID GPU-kguard-fake-0, PCI bus id 00000000:00:00.0): ok; retired pages "
            "pending: no; row remapping pending: no, failed: no; uncorrectable ECC errors "
            "(volatile): 0") in out, out
    assert ("GPU 1 (UUID GPU-kguard-fake-1, PCI bus id 00000000:01:00.0): ok; retired pages "
            "pending: no; row remapping pending: yes, failed: no") in out, out
    problems = out[out.index("\nProblems"):]
    assert "GPU 1 (UUID GPU-kguard-fake-1, PCI bus id 00000000:01:00.0) needs a reset" in problems
    rep = json.loads(_doctor(env, "--json", **fake).stdout)
    gh = rep["gpu_health"]
    assert gh["verdict"] == "needs-reset" and gh["device"]["index"] == 1, gh
    assert [d["row_remap_pending"] for d in gh["now"]] == [False, True]
    assert [d["ecc_uncorrected_volatile"] for d in gh["now"]] == [0, 0]
    # Healthy GPUs: read, no problem; without NVML: said, not guessed.
    rep = json.loads(_doctor(env, "--json", **{**fake, "KG_FAKE_NVML": "healthy"}).stdout)
    assert rep["gpu_health"]["verdict"] == "healthy" and len(rep["gpu_health"]["now"]) == 2
    assert not any("needs a reset" in p for p in rep["problems"]), rep["problems"]
    r = _doctor(env, KGUARD_NVML_LIB=str(env.root / "no-libnvidia-ml.so"))
    assert "GPU health (NVML)\n  not read: " in r.stdout, r.stdout
