"""A restore never races a background seal in flight (issue 11's rule: a
seal still running at a fault is either finished and sealed, if its device
sync completed before the fault, or discarded, never half-present).

`kguard.save(..., background=True)` returns after the device sync; its seal
runs in its own process and outlives the faulted kernel. Each seal here is
stopped at a chosen stage by the documented hook KGUARD_TEST_SEAL_HOLD=
STAGE:LOCK (the seal creates LOCK.STAGE, then waits for a shared lock on
LOCK, which the test holds exclusively), so every case is reached by
synchronisation, not timing. Then `kguard ckpt resume-prepare` runs:
- the seal is let go: resume-prepare waited, and restores the new step;
- the seal is killed: resume-prepare goes on and restores the older step;
  the leftovers are never chosen;
- the seal makes no progress for --seal-wait-stall-ms: it is excluded
  (recorded in "waited") and the older step restored.
"""
import fcntl
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
from conftest import BIN  # noqa: E402

STAGES = ["start", "written", "synced", "renamed"]


def wait_for(cond, deadline_s, what):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def ck(tmp_path, monkeypatch, keyenv):
    monkeypatch.setenv("KGUARD_BIN", os.path.abspath(BIN))
    monkeypatch.setenv("KGUARD_CKPT_DIR", str(tmp_path / "ck"))
    monkeypatch.setattr(kc, "_last_background", None)
    for k in ("KGUARD_RESUME_DIR", "KGUARD_RESUME_ARCHIVE", "KGUARD_RESUME_DIGEST",
              "KGUARD_TEST_SEAL_HOLD", "RANK", "KGUARD_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    return tmp_path


def held_seal(ck, monkeypatch, stage, step=2):
    """A background seal of step, stopped at stage. Returns (pending, lock fd)."""
    lock = ck / "hold.lock"
    lock.touch()
    fd = os.open(lock, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    monkeypatch.setenv("KGUARD_TEST_SEAL_HOLD", f"{stage}:{lock}")
    pending = kguard.save({"w": torch.full((1000,), float(step))}, step, background=True)
    monkeypatch.delenv("KGUARD_TEST_SEAL_HOLD")
    wait_for(lambda: os.path.exists(f"{lock}.{stage}") or pending.done(), 60,
             f"the seal to reach {stage}")
    assert not pending.done(), "the seal ended instead of stopping at the hook"
    return pending, fd


def start_resume(ck, *extra):
    return subprocess.Popen(
        [BIN, "ckpt", "resume-prepare", "--dir", str(ck / "ck"), "--before", "99999999999999",
         "--incident", "f1", "--into", str(ck / "never"), "--json", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_until_waiting(proc):
    """stderr lines of proc until it says it waits for a writer."""
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "waiting for" in line:
            return lines
    raise AssertionError(f"resume-prepare never waited: {''.join(lines)}")


def finish(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out)


@pytest.mark.parametrize("stage", STAGES)
def test_restore_waits_for_a_seal_in_flight_and_restores_it(ck, monkeypatch, stage):
    kguard.save({"w": torch.full((1000,), 1.0)}, 1)
    pending, lock = held_seal(ck, monkeypatch, stage)
    proc = start_resume(ck)
    read_until_waiting(proc)
    # Still waiting for as long as the seal is held: nothing chosen yet.
    assert proc.poll() is None
    os.close(lock)  # let the seal go on
    res = finish(proc)
    assert res["status"] == "restored" and res["step"] == 2
    assert pending.wait(60) == res["archive"]
    assert [w["outcome"] for w in res["waited"]] and \
        all(w["outcome"] == "ended" for w in res["waited"])
    assert not [n for n in os.listdir(ck / "ck") if n.startswith(".kguard-save-")]


@pytest.mark.parametrize("stage", STAGES)
def test_a_seal_killed_in_flight_is_never_half_present(ck, monkeypatch, stage):
    kguard.save({"w": torch.full((1000,), 1.0)}, 1)
    pending, lock = held_seal(ck, monkeypatch, stage)
    proc = start_resume(ck)
    read_until_waiting(proc)
    os.kill(pending._proc.pid, signal.SIGKILL)
    res = finish(proc)
    os.close(lock)
    if stage == "renamed":
        # Its archive was in place before it was killed: finished and sealed.
        assert res["status"] == "restored" and res["step"] == 2
    else:
        # Killed before its rename: only dot-named leftovers, never chosen.
        assert res["status"] == "restored" and res["step"] == 1
        assert not [n for n in os.listdir(ck / "ck")
                    if n.startswith("step-0000000002") and not n.startswith(".")]
    assert all(w["outcome"] == "ended" for w in res["waited"])


def test_a_seal_making_no_progress_is_excluded_not_waited_for_forever(ck, monkeypatch):
    kguard.save({"w": torch.full((1000,), 1.0)}, 1)
    pending, lock = held_seal(ck, monkeypatch, "written")
    proc = start_resume(ck, "--seal-wait-stall-ms", "1500")
    res = finish(proc)
    assert res["status"] == "restored" and res["step"] == 1
    assert [w["outcome"] for w in res["waited"]] == ["excluded"] * len(res["waited"])
    assert res["waited"] and res["waited"][0]["waited_ms"] >= 1500
    # Let go, it still ends sealed and whole (a candidate for a later restore).
    os.close(lock)
    assert subprocess.run([BIN, "ckpt", "verify", pending.wait(60)]).returncode == 0


def test_no_writer_no_wait(ck):
    kguard.save({"w": torch.full((1000,), 1.0)}, 1)
    res = finish(start_resume(ck, "--seal-wait-stall-ms", "0"))
    assert res["status"] == "restored" and res["step"] == 1 and res["waited"] == []


def test_another_writers_gc_never_takes_a_seal_about_to_be_renamed(ck, monkeypatch):
    """Ranks of one job seal into one directory, and every seal begins by
    collecting the temporaries whose writer is gone (no lock held). A seal
    between its last write and its rename holds its lock still: the other
    rank's collection leaves it alone, and the seal ends in place (it failed
    with 'renaming into place ...: No such file' when the lock went with an
    early close)."""
    pending, lock = held_seal(ck, monkeypatch, "synced")
    r = subprocess.run([BIN, "ckpt", "gc", str(ck / "ck")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    os.close(lock)
    path = pending.wait(60)
    assert subprocess.run([BIN, "ckpt", "verify", path]).returncode == 0
