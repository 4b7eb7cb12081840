"""`kguard run`: stop, requeue, resume. The executed notebook is written
after every cell (a SIGKILL keeps the finished cells), `--resume` continues
the run (notebook + parameters) from its last sealed checkpoint, another
run's checkpoints are refused, OUT may be papermill's second operand, a bad
--checkpoints is refused before any cell runs, and incidents name their
notebook.

The training notebook is the repository's example (examples/
train_classifier.ipynb) with many steps, stopped once its progress line for
step 100 is out (its checkpoint of step 100 is sealed before that line)."""
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import (EXAMPLE, copy_notebook, kguard_run, result_line, stream_text)

BIN = os.environ.get("KGUARD_BIN")
pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")


def _notebook(d, name, cells):
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "id": "c%d" % i,
                     "execution_count": None, "source": src} for i, src in enumerate(cells)],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                      "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    path = d / name
    path.write_text(json.dumps(nb))
    return path


def _start(args, env):
    return subprocess.Popen([BIN, "run", *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _read_until(proc, text):
    """Lines of proc's stdout until one holds text (the cell is running)."""
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError("no %r on stdout; stderr:\n%s" % (text, proc.stderr.read()))


def test_sigkill_mid_cell_keeps_earlier_cells(workdir):
    d, env = workdir
    nb = _notebook(d, "slow.ipynb", ["print('first cell done')",
                                     "import time\nprint('second running', flush=True)\n"
                                     "time.sleep(120)"])
    out = d / "out.ipynb"
    proc = _start([nb, "-o", out], env)
    _read_until(proc, "second running")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    written = json.loads(out.read_text())
    cells = written["cells"]
    assert stream_text(cells[0]) == "first cell done\n"
    assert cells[0]["execution_count"] == 1
    assert written["metadata"]["kguard"]["run"]["result"] == "running"


def _stopped_training(d, env, *params):
    """The example, stopped by SIGTERM while it trains (step 100 sealed)."""
    nb = copy_notebook(EXAMPLE, d)
    env = dict(env, EXAMPLE_STEPS="100000")
    out = d / "out.ipynb"
    proc = _start([nb, "-o", out, "--checkpoints", d / "ckpt", *params], env)
    _read_until(proc, "step  100")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    return nb, out


def test_resume_after_sigterm(workdir):
    d, env = workdir
    nb, out = _stopped_training(d, env, "-p", "lr", "0.05")
    stopped = json.loads(out.read_text())["metadata"]["kguard"]["run"]
    assert stopped["result"] == "interrupted" and stopped["resumed"] is None
    sealed = sorted(int(p.name.split("-")[1]) for p in (d / "ckpt").glob("step-*.kgckpt.tar"))
    assert sealed and sealed[-1] >= 100, sealed
    last = sealed[-1]
    # Continued: training resumes from the last sealed step and runs to the end.
    run = kguard_run(BIN, nb, dict(env, EXAMPLE_STEPS=str(last + 40)), "-o", str(out),
                     "--checkpoints", str(d / "ckpt"), "-p", "lr", "0.05", "--resume")
    assert run.code == 0, run
    assert "resuming run 'train_classifier.ipynb lr=0.05' from step %d, sealed " % last \
        in run.stderr
    meta = run.meta()["run"]
    assert meta["resumed"] == {"step": last} and meta["run_id"] == \
        "train_classifier.ipynb lr=0.05"
    assert result_line(run.nb)["resumed_from"] == str(last)
    assert "resumed from the checkpoint of step %d" % last in run.stdout
    # Without --resume nothing is resumed.
    fresh = kguard_run(BIN, nb, dict(env, EXAMPLE_STEPS="40"), "-o", str(d / "fresh.ipynb"),
                       "--checkpoints", str(d / "ckpt"), "-p", "lr", "0.05")
    assert fresh.code == 0, fresh
    assert result_line(fresh.nb)["resumed_from"] == "None"
    assert fresh.meta()["run"]["resumed"] is None


def test_other_parameters_refused(workdir):
    d, env = workdir
    nb, out = _stopped_training(d, env, "-p", "lr", "0.05")
    before = out.read_text()
    run = kguard_run(BIN, nb, env, "-o", str(out), "--checkpoints", str(d / "ckpt"),
                     "-p", "lr", "0.1", "--resume")
    assert run.code == 100, run
    lines = [l for l in run.stderr.splitlines() if "--resume" in l]
    assert len(lines) == 1, run.stderr
    assert "'train_classifier.ipynb lr=0.05'" in lines[0]
    assert "'train_classifier.ipynb lr=0.1'" in lines[0]
    assert "kernel" not in run.stderr and out.read_text() == before


def test_positional_output(workdir):
    d, env = workdir
    nb = _notebook(d, "two.ipynb", ["print(1 + 1)"])
    proc = subprocess.run([BIN, "run", str(nb), str(d / "papermill.ipynb")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert stream_text(json.loads((d / "papermill.ipynb").read_text())["cells"][0]) == "2\n"
    assert not (d / "two.kguard.ipynb").exists()
    both = subprocess.run([BIN, "run", str(nb), str(d / "a.ipynb"), "-o", str(d / "b.ipynb")],
                          env=env, capture_output=True, text=True, timeout=60)
    assert both.returncode == 100 and "given twice" in both.stderr


@pytest.mark.parametrize("kind", ["missing-parent", "a-file", "read-only"])
def test_bad_checkpoints_refused_before_any_cell(workdir, kind):
    d, env = workdir
    nb = _notebook(d, "mark.ipynb", ["open('ran', 'w').close()"])
    target = {"missing-parent": Path("/proc/kguard-no/ckpt"), "a-file": d / "file",
              "read-only": d / "ro" / "ckpt"}[kind]
    (d / "file").write_text("")
    (d / "ro").mkdir(mode=0o500)
    if kind == "read-only" and os.access(d / "ro", os.W_OK):
        pytest.skip("running as root: a read-only directory is writable")
    proc = subprocess.run([BIN, "run", str(nb), "--checkpoints", str(target)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 100, proc.stderr
    assert ("--checkpoints %s:" % target) in proc.stderr and "Traceback" not in proc.stderr
    assert not (d / "ran").exists() and not (d / "mark.kguard.ipynb").exists()


def test_incidents_name_their_notebook(workdir):
    """Two notebooks faulting alike: `kguard incident list` tells them apart."""
    d, env = workdir
    env = dict(env, KGUARD_EMULATE="cuda-assert:step=1:once")
    paths = []
    for name in ("first.ipynb", "second.ipynb"):
        env["KGUARD_EMULATE_MARKER"] = str(d / (name + ".marker"))
        nb = _notebook(d, name, ["import kguard.emulate\nkguard.emulate.step(1)",
                                 "print('after')"])
        run = kguard_run(BIN, nb, env)
        assert run.code == 0, run
        paths.append(str(nb))
    listing = subprocess.run([BIN, "incident", "list", "--json"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0, listing.stderr
    wheres = sorted(i["where"] for i in json.loads(listing.stdout))
    assert len(wheres) == 2 and wheres[0] != wheres[1], wheres
    assert wheres[0].startswith("first.ipynb") and wheres[1].startswith("second.ipynb"), wheres
