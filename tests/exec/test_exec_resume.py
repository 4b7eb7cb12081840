"""`kguard exec` continues a run where it stopped: the same command after a
scheduler's SIGTERM (a requeue) starts from the run's last consistent
checkpoint, says so in one line, and ends with exactly the parameters of an
uninterrupted run (train_tiny.py is deterministic per step)."""
import json
import os
import subprocess

import pytest

from exec_harness import (BIN, GAVE_UP, PYTHON, RETRYABLE, SOURCE, TRAIN, Run, base_env,
                          exec_args, reference_params)

pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    return reference_params(tmp_path_factory.mktemp("ref"))


def _final(tmp):
    return json.loads((tmp / "out.json").read_text())["params"]


def _preempted_at(tmp, args, step=4, cwd=None, env=None):
    """Run args until the training waits after `step`, SIGTERM it (a
    scheduler's pre-emption): exit 200 with `step` sealed."""
    run = Run(args + ["--wait-signal-at", str(step)], env or base_env(tmp), cwd=cwd)
    run.wait_line("waiting for a pre-emption signal")
    run.signal(15)
    assert run.wait() == RETRYABLE, run.output()
    assert f"pre-empted, sealed step {step}" in run.output()
    return run


def _start_line(run):
    return next(line for line in run.lines if "exec: resuming run" in line
                or "exec: no checkpoint of run" in line or "exec: --fresh" in line)


def test_a_requeue_continues_from_the_last_step_and_fresh_starts_over(tmp_path, ref):
    _preempted_at(tmp_path, exec_args(tmp_path, "--name", "job"))
    # The same command again (a requeue): from step 4, as if never stopped.
    run = Run(exec_args(tmp_path, "--name", "job"), base_env(tmp_path))
    assert run.wait() == 0, run.output()
    line = _start_line(run)
    assert "resuming run job from step 4, sealed" in line and " ago (" in line, line
    assert "train_tiny: rank 0 resumed from step 4" in run.output()
    assert run.output().index("resuming run job") < run.output().index("exec: started")
    assert _final(tmp_path) == ref
    # --fresh: step 0, the archives stay.
    before = sorted(p.name for p in (tmp_path / "ckpt").iterdir() if p.name.startswith("step-"))
    (tmp_path / "out.json").unlink()
    run = Run(exec_args(tmp_path, "--name", "job", "--fresh"), base_env(tmp_path))
    assert run.wait() == 0, run.output()
    assert "--fresh: run job starts at step 0" in _start_line(run)
    assert "resumed from step" not in run.output()
    assert _final(tmp_path) == ref
    after = {p.name for p in (tmp_path / "ckpt").iterdir()}
    assert set(before) <= after


def test_without_checkpoints_the_default_directory_serves_faults_and_requeues(tmp_path, ref):
    args = [BIN, "exec", "--state-dir", str(tmp_path / "state"), "--name", "job",
            "--stall-timeout", "60", "--", PYTHON, str(TRAIN), "--out", str(tmp_path / "out.json")]
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-assert:step=5:once")
    run = _preempted_at(tmp_path, args, step=7, cwd=tmp_path, env=env)
    out = run.output()
    assert "no checkpoint of run job in kguard-checkpoints: starting fresh" in out, out
    assert "resumed from step 3" in out          # the fault restored from ./kguard-checkpoints
    sealed = {p.name[:15] for p in (tmp_path / "kguard-checkpoints").iterdir()}
    assert {"step-0000000003", "step-0000000007"} <= sealed, sealed
    run = Run(args, base_env(tmp_path), cwd=tmp_path)
    assert run.wait() == 0, run.output()
    assert "resuming run job from step 7" in _start_line(run)
    assert _final(tmp_path) == ref


def test_a_requeue_whose_checkpoints_no_longer_verify_stops_with_86_naming_them(tmp_path):
    other = ["--sign-with-keys", str(tmp_path / "other")]
    _preempted_at(tmp_path, exec_args(tmp_path, "--name", "job", script_args=other))
    run = Run(exec_args(tmp_path, "--name", "job"), base_env(tmp_path))
    assert run.wait() == GAVE_UP, run.output()
    out = run.output()
    assert "checkpoint(s) of run job in" in out and "none verifies" in out, out
    assert "step-0000000004-" in out and "which you do not trust" in out, out
    assert "--fresh" in out
    assert "exec: started" not in out   # nothing ran, nothing was lost


def test_another_runs_and_an_untrusted_keys_checkpoints_are_skipped_and_named(tmp_path, ref):
    _preempted_at(tmp_path, exec_args(tmp_path, "--name", "job"))
    # Newer archives in the same directory: run 'other''s, and one of 'job'
    # sealed with a key kguard does not trust.
    env = base_env(tmp_path, KGUARD_BIN=BIN, KGUARD_CKPT_DIR=str(tmp_path / "ckpt"),
                   KGUARD_STATE_DIR=str(tmp_path / "state2"), PYTHONPATH=str(SOURCE / "python"))
    subprocess.run([PYTHON, str(TRAIN), "--out", str(tmp_path / "o.json"), "--steps", "6",
                    "--every", "6"], env={**env, "KGUARD_RUN_ID": "other"}, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([PYTHON, str(TRAIN), "--out", str(tmp_path / "o.json"), "--steps", "5",
                    "--every", "5", "--sign-with-keys", str(tmp_path / "other")],
                   env={**env, "KGUARD_RUN_ID": "job"}, check=True, stdout=subprocess.DEVNULL)
    run = Run(exec_args(tmp_path, "--name", "job"), base_env(tmp_path))
    assert run.wait() == 0, run.output()
    line = _start_line(run)
    assert "resuming run job from step 4" in line, line
    assert "skipped step 5: signed by a key you do not trust" in line, line
    assert "step 6: of run 'other', not this one" in line, line
    assert _final(tmp_path) == ref


def test_keep_reaches_the_ranks_and_is_validated(tmp_path):
    env = base_env(tmp_path)
    r = subprocess.run([BIN, "exec", "--state-dir", str(tmp_path / "state"), "--keep", "2",
                        "--", "sh", "-c", "echo KEEP=$KGUARD_KEEP"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "KEEP=2" in r.stdout
    # The default directory is the first seal's to create, not kguard's.
    assert not (tmp_path / "kguard-checkpoints").exists()
    for bad in ("0", "-1", "x", "2.5"):
        r = subprocess.run([BIN, "exec", "--keep", bad, "--", "true"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 100, (bad, r.stderr)
        assert "--keep needs a positive number" in r.stderr
