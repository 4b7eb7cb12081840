"""`kguard exec` with in-memory snapshots (kguard.snapshot): a fault
restores the newest state sealed before it from kguard's memory (one step
lost, not a checkpoint interval), ending exactly as an uninterrupted run;
what is not trustworthy in memory (sealed after the fault's first sign,
changed since it was sealed) is named and the disk checkpoint used; a
state that does not fit is refused before anything is written; two ranks
restore the newest step both sealed; a kguard that died leaves nothing a
later start would take from memory: it continues from disk."""
import json
import os
import signal
import subprocess

import pytest

from exec_harness import (BIN, PYTHON, SOURCE, Run, base_env, exec_args, reference_params)

pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")


def _env(tmp, **extra):
    shm = tmp / "shm"
    shm.mkdir(exist_ok=True)
    return base_env(tmp, KGUARD_SNAPSHOT_BASE=str(shm), **extra)


def _final(tmp):
    return json.loads((tmp / "out.json").read_text())["params"]


def _memory_dirs(tmp):
    user = tmp / "shm" / f"kguard-{os.getuid()}"
    return sorted(p.name for p in user.iterdir()) if user.is_dir() else []


def test_a_fault_restores_the_step_before_it_from_memory(tmp_path):
    # Snapshots every step, disk checkpoints every 25: the fault at step 50
    # loses one step, not 25, and the run ends as an uninterrupted one.
    env = _env(tmp_path, KGUARD_EMULATE="cuda-assert:step=50:once")
    run = Run(exec_args(tmp_path, "--name", "job", script_args=[
        "--steps", "60", "--every", "25", "--snapshot-every", "1", "--step-ms", "10"]), env)
    assert run.wait(240) == 0, run.output()
    out = run.output()
    assert "restored step 49 from memory, " in out, out
    assert "train_tiny: rank 0 resumed from step 49" in out, out
    assert _final(tmp_path) == reference_params(tmp_path, steps=60)
    # kguard's memory ends with kguard.
    assert _memory_dirs(tmp_path) == []


def test_a_snapshot_sealed_after_the_first_error_text_is_never_restored(tmp_path):
    # The error text at step 50 comes before that step's snapshot, which
    # still seals (stderr-only: nothing raised in this process), then the
    # process fails. The snapshot is the newest in memory (it replaced 49):
    # named and skipped; the disk checkpoint of step 25 is restored.
    env = _env(tmp_path, KGUARD_EMULATE="cuda-assert:step=50:once:stderr-only")
    run = Run(exec_args(tmp_path, "--name", "job", script_args=[
        "--steps", "60", "--every", "25", "--snapshot-every", "1", "--step-ms", "10",
        "--die-after-snapshot-at", "50"]), env)
    assert run.wait(240) == 0, run.output()
    out = run.output()
    assert "skipped the snapshot" in out and "in memory: " in out, out
    assert "step-0000000050-" in out and "at or after the failure" in out, out
    assert "restored step 25 from " in out and "restored step 25 from memory" not in out, out
    assert "train_tiny: rank 0 resumed from step 25" in out, out
    assert _final(tmp_path) == reference_params(tmp_path, steps=60)


def test_a_changed_snapshot_is_refused_and_the_disk_checkpoint_used(tmp_path):
    env = _env(tmp_path, KGUARD_EMULATE="cuda-assert:step=8:once")
    run = Run(exec_args(tmp_path, "--name", "job", script_args=[
        "--steps", "12", "--every", "5", "--snapshot-every", "1",
        "--tamper-snapshot-at", "7"]), env)
    assert run.wait(240) == 0, run.output()
    out = run.output()
    assert "changed a byte of the snapshot of step 7" in out
    skipped = [ln for ln in out.splitlines() if "skipped the snapshot" in ln]
    assert skipped and "step-0000000007-" in skipped[0] and "corrupt" in skipped[0], out
    assert "restored step 5 from " in out, out
    assert _final(tmp_path) == reference_params(tmp_path, steps=12)


def test_two_ranks_restore_the_newest_step_both_sealed(tmp_path):
    from test_exec_ranks import _torchrun_reference
    env = _env(tmp_path, KGUARD_EMULATE="cuda-assert:step=8:once")
    run = Run(exec_args(tmp_path, "--name", "job", "--nproc-per-node", "2", script_args=[
        "--fault-rank", "1", "--snapshot-every", "1", "--every", "5", "--step-ms", "10"]), env)
    assert run.wait(240) == 0, run.output()
    out = run.output()
    assert "restored step 7 from memory, " in out and "set-0000000007" in out, out
    assert out.count("resumed from step 7") == 2, out
    assert _final(tmp_path) == _torchrun_reference(tmp_path)


def test_a_kguard_that_died_leaves_the_next_start_to_resume_from_disk(tmp_path):
    env = _env(tmp_path)
    args = exec_args(tmp_path, "--name", "job", script_args=[
        "--steps", "12", "--every", "3", "--snapshot-every", "1", "--wait-signal-at", "5"])
    run = Run(args, env)
    run.wait_line("waiting for a pre-emption signal")
    assert len(_memory_dirs(tmp_path)) == 1
    # kguard itself is killed (the training dies with it, as the node's
    # processes do in a crash); its memory directory is left behind.
    run.proc.send_signal(signal.SIGKILL)
    run.wait()
    subprocess.run(["pkill", "-KILL", "-f", str(tmp_path / "out.json")], check=False)
    assert len(_memory_dirs(tmp_path)) == 1
    run = Run(exec_args(tmp_path, "--name", "job", script_args=[
        "--steps", "12", "--every", "3", "--snapshot-every", "1"]), env)
    assert run.wait(240) == 0, run.output()
    out = run.output()
    assert "removed the in-memory snapshots of a kguard that is gone" in out, out
    assert "resuming run job from step 3" in out, out
    assert _final(tmp_path) == reference_params(tmp_path, steps=12)
    assert _memory_dirs(tmp_path) == []


def _snapshot_directly(tmp, code, **extra):
    """Run code with kguard's package and a memory directory of its own."""
    mem = tmp / "mem"
    mem.mkdir(exist_ok=True)
    env = base_env(tmp, KGUARD_BIN=BIN, KGUARD_SNAPSHOT_DIR=str(mem),
                   KGUARD_CKPT_DIR=str(tmp / "ckpt"), PYTHONPATH=str(SOURCE / "python"),
                   **extra)
    return subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120), mem


def test_a_state_that_does_not_fit_is_refused_before_anything_is_written(tmp_path):
    code = ("import torch, kguard\n"
            "state = {'w': torch.zeros(1 << 20)}\n"
            "try:\n"
            "    kguard.snapshot(state, 3)\n"
            "except kguard.SnapshotRefused as e:\n"
            "    print('REFUSED', e)\n")
    r, mem = _snapshot_directly(tmp_path, code, KGUARD_TEST_SNAPSHOT_ROOM=str(1 << 20))
    assert r.returncode == 0, r.stderr
    assert "REFUSED kguard.snapshot: step 3's state (4.0 MiB) does not fit in memory" in r.stdout
    assert "1.0 MiB is free (KGUARD_TEST_SNAPSHOT_ROOM)" in r.stdout, r.stdout
    assert list(mem.iterdir()) == []


def test_snapshot_persists_every_kth_and_latest_takes_the_newer_tier(tmp_path):
    code = ("import torch, kguard\n"
            "for n in range(1, 7):\n"
            "    s = kguard.snapshot({'w': torch.full((4,), float(n))}, n, persist_every=4)\n"
            "print('LAST', s.wait(), s.persisted)\n")
    r, mem = _snapshot_directly(tmp_path, code)
    assert r.returncode == 0, r.stderr
    on_disk = sorted(p.name[:15] for p in (tmp_path / "ckpt").iterdir()
                     if p.name.startswith("step-"))
    assert on_disk == ["step-0000000004"], on_disk
    in_memory = sorted(p.name[:15] for p in mem.iterdir() if p.name.startswith("step-"))
    assert in_memory == ["step-0000000006"], in_memory
    assert "LAST " + str(mem) in r.stdout and r.stdout.strip().endswith("None"), r.stdout
    # A kernel restarted by hand (no fault): resume(latest=True) takes the
    # newer of memory and disk, and says which.
    r, _ = _snapshot_directly(tmp_path, "import kguard\n"
                              "r = kguard.resume(latest=True)\n"
                              "print('GOT', r.step, r.tier, float(r.load()['w'][0]))\n")
    assert r.returncode == 0, r.stderr
    assert "GOT 6 memory 6.0" in r.stdout, r.stdout + r.stderr
    assert "in kguard memory, sealed" in r.stderr, r.stderr
    env_less = base_env(tmp_path, PYTHONPATH=str(SOURCE / "python"))
    r = subprocess.run([PYTHON, "-c", "import kguard, torch; kguard.snapshot({}, 1)"],
                       env=env_less, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "run this under `kguard exec`" in r.stderr, r.stderr
