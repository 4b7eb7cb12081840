"""kguard.save(..., background=True): returns once the state is written and
the device synchronised; the seal runs in its own process, in step order,
survives the kernel's death, and a seal killed before it finished leaves
nothing that could be chosen.

Seals are held at a gate: KGUARD_BIN is a wrapper that opens the fifo
GATE/step-N (blocking until the test opens it for writing) before exec'ing
the real `kguard`, so each stage is reached by synchronisation, not timing.
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.environ.get("KGUARD_SOURCE_DIR", "../.."), "python"))
import torch  # noqa: E402

import kguard  # noqa: E402
from kguard import checkpoint as kc  # noqa: E402
from conftest import BIN, run  # noqa: E402

PYDIR = os.path.join(os.environ.get("KGUARD_SOURCE_DIR", "../.."), "python")


def wait_for(cond, deadline_s, what):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def gated(tmp_path, monkeypatch, keyenv):
    gate = tmp_path / "gate"
    gate.mkdir()
    wrapper = tmp_path / "kguard-gated"
    wrapper.write_text(
        "#!/bin/sh\n"
        "step=''; prev=''\n"
        "for a in \"$@\"; do [ \"$prev\" = --step ] && step=$a; prev=$a; done\n"
        f"[ -n \"$step\" ] && [ -p '{gate}/step-'$step ] && cat '{gate}/step-'$step >/dev/null\n"
        f"exec '{os.path.abspath(BIN)}' \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("KGUARD_BIN", str(wrapper))
    monkeypatch.setenv("KGUARD_CKPT_DIR", str(tmp_path / "ck"))
    monkeypatch.setattr(kc, "_last_background", None)

    class Gate:
        dir = gate
        ck = tmp_path / "ck"

        def hold(self, step):
            os.mkfifo(gate / f"step-{step}")

        def release(self, step):
            fd = os.open(gate / f"step-{step}", os.O_WRONLY)  # waits for the seal to reach it
            os.close(fd)

    return Gate()


def archives(ck):
    return sorted(n for n in os.listdir(ck) if not n.startswith(".") and n != "quarantine")


def holders_of(path):
    """PIDs with path open (the seal waiting on the previous one's lock)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def waiting_at(fifo):
    """PIDs of gate waiters (cat blocked opening fifo)."""
    pids = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(fifo).encode() in f.read().split(b"\0"):
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def test_background_seals_finish_in_step_order(gated):
    gated.hold(1)
    gated.hold(2)
    h1 = kguard.save({"s": torch.ones(3)}, 1, background=True)
    h2 = kguard.save({"s": torch.ones(3) * 2}, 2, background=True)
    assert isinstance(h1, kguard.PendingSeal) and not h1.done() and not h2.done()
    assert archives(gated.ck) == []  # returned before anything was sealed
    stage1 = h1._stage
    # Let step 2 go first: it must wait for step 1's seal (it opens step 1's
    # staging directory and blocks on its lock).
    gated.release(2)
    wait_for(lambda: len(holders_of(stage1)) >= 2, 30, "step 2's seal to wait on step 1's")
    assert not h2.done() and archives(gated.ck) == []
    gated.release(1)
    p1, p2 = h1.wait(60), h2.wait(60)
    assert os.stat(p1).st_ctime_ns <= os.stat(p2).st_ctime_ns
    rows = json.loads(run("ckpt", "list", str(gated.ck), "--json", check=True).stdout)
    assert [(r["step"], r["status"]) for r in rows] == [(2, "valid"), (1, "valid")]
    assert not os.path.exists(stage1) and not os.path.exists(h2._stage)


KERNEL = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
import torch, kguard
h = kguard.save({"w": torch.arange(5.0)}, 7, background=True)
print(h._stage, int(time.time() * 1000), flush=True)
os.kill(os.getpid(), 9)   # the kernel dies at a fault with its seal in flight
"""


def test_seal_in_flight_completes_after_the_kernel_dies(gated):
    gated.hold(7)
    k = subprocess.run([sys.executable, "-c", KERNEL, PYDIR], stdout=subprocess.PIPE,
                       text=True, env=os.environ.copy())
    assert k.returncode == -signal.SIGKILL
    stage, died_ms = k.stdout.split()
    # The dead kernel's lock passed to the seal: gc keeps its staging dir.
    assert "1 still being written" in run("ckpt", "gc", str(gated.ck), check=True).stdout
    gated.release(7)
    path = wait_for(lambda: archives(gated.ck), 60, "the seal to finish")
    wait_for(lambda: not os.path.exists(stage), 30, "the staging directory to go")
    rows = json.loads(run("ckpt", "list", str(gated.ck), "--json", check=True).stdout)
    assert [(r["step"], r["status"]) for r in rows] == [(7, "valid")]
    # Sealed with the time the state was captured: before the fault.
    assert rows[0]["sealed_at_ms"] <= int(died_ms)
    assert len(path) == 1


def test_seal_killed_before_it_finished_is_discarded(gated):
    gated.hold(8)
    h = kguard.save({"w": torch.zeros(4)}, 8, background=True)
    pgid = h._proc.pid  # its own session and group
    wait_for(lambda: waiting_at(gated.dir / "step-8"), 30, "the seal to reach the gate")
    os.killpg(pgid, signal.SIGKILL)
    with pytest.raises(RuntimeError, match="seal of step 8 failed"):
        h.wait(30)
    assert archives(gated.ck) == []
    assert "removed 1 " in run("ckpt", "gc", str(gated.ck), check=True).stdout
    assert os.listdir(gated.ck) == []


def test_failed_sync_starts_no_background_seal(gated, monkeypatch):
    def boom(torch_mod):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    monkeypatch.setattr(kc, "_synchronize", boom)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        kguard.save({"x": 1}, 9, background=True)
    assert os.listdir(gated.ck) == []
