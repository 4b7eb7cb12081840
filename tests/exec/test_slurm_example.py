"""examples/slurm/train.sbatch on a requeue, driven with a fake `srun` and
`scontrol` on PATH (and a `torchrun` that runs train_tiny.py): a SIGTERM
to the batch shell reaches the training through kguard exec, which seals and
exits 200; the script requeues; the same script run again (the requeued
job) continues from the sealed step and ends with the parameters of an
uninterrupted run."""
import json
import os
import signal
import socket
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
                '  "update "*) echo "$*" >> "$FAKE_SLURM_LOG/updated" ;;\n'
                '  *) echo "fake scontrol: $*" >&2; exit 1 ;;\nesac\n',
    # torchrun ... train.py: the tiny training, as the one process of this node.
    "torchrun": '#!/bin/bash\nexec "$KGUARD_PYTHON" "$FAKE_TRAIN" --out "$FAKE_OUT" '
                '--wait-signal-at 4\n',
}


def _slurm_env(tmp_path, **extra):
    """The fake srun/scontrol/torchrun on PATH and a job's Slurm variables."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in FAKES.items():
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    (bindir / "kguard").symlink_to(BIN)
    return base_env(tmp_path, PATH=f"{bindir}:{os.environ['PATH']}", SHARED=str(tmp_path / "job"),
                    SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="localhost", SLURM_NNODES="1",
                    SLURM_NODEID="0", SLURM_RESTART_COUNT="0", FAKE_SLURM_LOG=str(tmp_path),
                    FAKE_TRAIN=str(TRAIN), FAKE_OUT=str(tmp_path / "out.json"),
                    KGUARD_PYTHON=PYTHON, **extra)


SCRIPT = str(SOURCE / "examples" / "slurm" / "train.sbatch")


def test_a_requeued_job_continues_from_the_last_step(tmp_path):
    ref = reference_params(tmp_path)
    env = _slurm_env(tmp_path)
    script = SCRIPT
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
    # A pre-emption is no reason to leave a node out.
    assert not (tmp_path / "updated").exists()


FAKE_NVML = os.environ.get("KG_FAKE_NVML_LIB", "")


@pytest.mark.skipif(not FAKE_NVML, reason="KG_FAKE_NVML_LIB not set")
def test_a_gpu_needing_a_reset_requeues_the_job_without_its_node(tmp_path):
    # An uncorrectable ECC error (the labelled emulation) and the GPU's
    # count grown after it (the labelled fake NVML): kguard exits 200 and
    # names this host in its drain file; the script requeues the job with
    # that node excluded.
    env = _slurm_env(tmp_path, KGUARD_EMULATE="cuda-ecc:step=2", KGUARD_NVML_LIB=FAKE_NVML,
                     KG_FAKE_NVML="ecc-grow:after=1")
    run = Run(["bash", SCRIPT], env, cwd=tmp_path)
    assert run.wait() == RETRYABLE, run.output()
    host = socket.gethostname()
    drain = (tmp_path / "job" / "state-0" / "exec" / "train" / "drain").read_text().splitlines()
    assert drain[0] == host and "needs a reset" in drain[1], drain
    assert "a GPU on %s needs a reset: requeued without %s" % (host, host) in run.output()
    assert (tmp_path / "requeued").read_text().split() == ["4242"]
    assert (tmp_path / "updated").read_text().split() == [
        "update", "JobId=4242", "ExcludedNodeList=" + host]
