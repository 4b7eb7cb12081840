"""examples/slurm/train.sbatch on a requeue, driven with a fake `srun` and
`scontrol` on PATH (and a `torchrun` that runs train_tiny.py): a SIGTERM
to the batch shell reaches the training through kguard exec, which seals and
exits 200; the script requeues; the same script run again (the requeued
job) continues from the sealed step and ends with the parameters of an
uninterrupted run."""
import json
import os
import signal
import subprocess

import pytest

from exec_harness import BIN, PYTHON, RETRYABLE, SOURCE, TRAIN, Run, base_env, reference_params

pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")

FAKES = {
    # srun OPTIONS... COMMAND: one task, this machine, as the job's step.
    "srun": '#!/bin/bash\nwhile [ "${1#--}" != "$1" ]; do shift; done\nexec "$@"\n',
    "scontrol": '#!/bin/bash\ncase "$1 $2" in\n'
                '  "show hostnames") echo localhost ;;\n'
                '  "requeue "*) echo "$2" >> "$FAKE_SLURM_LOG/requeued" ;;\n'
                '  *) echo "fake scontrol: $*" >&2; exit 1 ;;\nesac\n',
    # torchrun ... train.py: the tiny training, as the one process of this node.
    "torchrun": '#!/bin/bash\nexec "$KGUARD_PYTHON" "$FAKE_TRAIN" --out "$FAKE_OUT" '
                '--wait-signal-at 4\n',
}


def test_a_requeued_job_continues_from_the_last_step(tmp_path):
    ref = reference_params(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in FAKES.items():
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    (bindir / "kguard").symlink_to(BIN)
    env = base_env(tmp_path, PATH=f"{bindir}:{os.environ['PATH']}", SHARED=str(tmp_path / "job"),
                   SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="localhost", SLURM_NNODES="1",
                   SLURM_NODEID="0", SLURM_RESTART_COUNT="0", FAKE_SLURM_LOG=str(tmp_path),
                   FAKE_TRAIN=str(TRAIN), FAKE_OUT=str(tmp_path / "out.json"),
                   KGUARD_PYTHON=PYTHON)
    script = str(SOURCE / "examples" / "slurm" / "train.sbatch")
    run = Run(["bash", script], env, cwd=tmp_path)
    run.wait_line("waiting for a pre-emption signal")
    run.signal(signal.SIGTERM)     # scancel, or the time limit
    assert run.wait() == RETRYABLE, run.output()
    assert "requeueing" in run.output()
    assert (tmp_path / "requeued").read_text().split() == ["4242"]
    # The requeued job: the same script, SLURM_RESTART_COUNT one more.
    run = Run(["bash", script], {**env, "SLURM_RESTART_COUNT": "1"}, cwd=tmp_path)
    assert run.wait() == 0, run.output()
    out = run.output()
    assert "resuming run train from step 4" in out, out
    assert "training finished" in out
    assert json.loads((tmp_path / "out.json").read_text())["params"] == ref
