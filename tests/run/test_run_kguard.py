"""`kguard run` end to end through the real supervisor (`kguard kernel`),
with the example training notebook and the labelled CPU emulation of GPU
faults (KGUARD_EMULATE).

The example's batches depend only on the step number and its checkpoints hold
the model and optimizer state, so a run that was restored from a checkpoint
must end with exactly the RESULT of an uninterrupted run: the strongest check
that the right checkpoint was restored and resumed.
"""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import (EXAMPLE, NOTEBOOKS, SOURCE, copy_notebook, kguard_run, nbclient_run,
                      result_line, stream_text)

BIN = os.environ.get("KGUARD_BIN")
pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")


def _run_example(workdir, *args, **env_extra):
    d, env = workdir
    env.update(env_extra)
    nb = copy_notebook(EXAMPLE, d)
    return kguard_run(BIN, nb, env, "--checkpoints", str(d / "ckpt"), *args), d, env


@pytest.fixture(scope="module")
def clean_result(tmp_path_factory):
    """The example run cleanly through kguard, and through nbclient with plain
    ipykernel (kguard's Python package on its path), once for the module."""
    d = tmp_path_factory.mktemp("clean")
    env = dict(os.environ)
    for key in ("KGUARD_EMULATE", "EXAMPLE_LABEL4_AT_STEP", "EXAMPLE_SKIP_CHECK"):
        env.pop(key, None)
    env["KGUARD_STATE_DIR"] = str(d / "state")
    nb = copy_notebook(EXAMPLE, d)
    run = kguard_run(BIN, nb, env, "--checkpoints", str(d / "ckpt"))
    ref_dir = d / "ref"
    ref_dir.mkdir()
    ref_env = dict(env, KGUARD_BIN=BIN, KGUARD_CKPT_DIR=str(d / "ref-ckpt"),
                   KGUARD_STATE_DIR=str(d / "ref-state"),
                   PYTHONPATH=str(SOURCE / "python"))
    ref = nbclient_run(copy_notebook(EXAMPLE, ref_dir), ref_env)
    return run, ref


def test_clean_example(clean_result):
    run, ref = clean_result
    assert run.code == 0, run
    result = result_line(run.nb)
    assert result is not None, run
    assert result["final_step"] == "200" and result["resumed_from"] == "None"
    assert float(result["accuracy"]) > 0.9 and float(result["loss"]) < 0.5
    assert run.meta()["run"]["restarts"] == 0 and run.meta()["incidents"] == []
    # The RESULT line reaches the terminal (standard output), as the demo says.
    assert "RESULT final_step=200" in run.stdout
    # Deterministic cells print the same as a direct nbclient run's, and so
    # does the whole training (fixed seeds, single thread).
    mine = run.code_cells()
    theirs = [c for c in ref["cells"] if c["cell_type"] == "code"]
    for i in range(len(mine)):
        assert stream_text(mine[i]) == stream_text(theirs[i]), "code cell %d" % (i + 1)
    assert result_line(ref) == result


@pytest.mark.parametrize("kind,family", [("cuda-assert", "device-assert"),
                                         ("rocm-assert", None)])
def test_emulated_assert_restarts_once_and_resumes(workdir, clean_result, kind, family):
    run, d, env = _run_example(workdir, KGUARD_EMULATE="%s:step=60:once" % kind)
    assert run.code == 0, run
    meta = run.meta()
    assert meta["run"]["restarts"] == 1, run
    # Checkpoints every 20 steps, fault at step 60 before its save: 40 is the
    # last one sealed before the fault.
    assert meta["run"]["restored_step"] == 40
    result = result_line(run.nb)
    assert result["resumed_from"] == "40" and result["final_step"] == "200", run
    assert result == dict(result_line(clean_result[0].nb), resumed_from="40")
    training = run.code_cells()[3]
    assert stream_text(training).startswith("resumed from the checkpoint of step 40\n")

    incidents = [i for i in meta["incidents"] if i["event"] == "sticky-restart"]
    assert len(incidents) == 1, meta["incidents"]
    inc = incidents[0]
    # Cell 4 as kguard's notice and In [4] count it (the 4th code cell; the
    # notebook's 5th cell, index 4, after its markdown title).
    assert inc["restored_step"] == 40 and inc["cell"] == 4 and inc["cell_index"] == 4
    assert "Cell [4]" in inc["notice"]
    if family:
        assert inc["family"] == family
    path = Path(inc["incident_path"])
    assert path.parent == d / "state" / "incidents" and path.exists()
    record = json.loads(path.read_text())
    assert record["id"] == inc["incident"]
    # The terminal story: restart, restore, incident and notebook paths, with
    # one numbering of cells: the 4th code cell is cell 4 in every line, as
    # in the notice (Cell [4]) and the notebook (In [4]); markdown cells are
    # not counted.
    assert "cell 4/5: BATCH = 64" in run.stderr
    assert "cell 4: sticky device error" in run.stderr
    assert "cell 5 was held back" in run.stderr
    assert "running cells 1-4 again in the fresh kernel" in run.stderr
    assert not re.search(r"cells? \d+\.\.\d+|cell 6\b|\[\d+/\d+\] cell", run.stderr)
    # What the training printed is shown as it ran, the RESULT line included.
    assert "resumed from the checkpoint of step 40" in run.stdout
    assert "RESULT final_step=200" in run.stdout and "resumed_from=40" in run.stdout
    assert "kernel restarted" in run.stderr
    assert "checkpoint of step 40 verified and restored" in run.stderr
    assert "incident record:   %s" % path in run.stderr
    assert "executed notebook: %s" % run.out_path in run.stderr


def test_snapshots_restore_the_step_before_the_fault_from_memory(workdir, clean_result):
    # The example snapshots every step into the guarded kernel's memory
    # (kguard.snapshot), and checkpoints to disk every 20: the fault at step
    # 60 loses one step, the restarted kernel resumes from 59 in memory, and
    # the run ends exactly as the uninterrupted one.
    d, _ = workdir
    shm = d / "shm"
    shm.mkdir()
    run, d, env = _run_example(workdir, KGUARD_EMULATE="cuda-assert:step=60:once",
                               EXAMPLE_SNAPSHOT_EVERY="1", KGUARD_SNAPSHOT_BASE=str(shm))
    assert run.code == 0, run
    meta = run.meta()
    assert meta["run"]["restarts"] == 1 and meta["run"]["restored_step"] == 59, run
    result = result_line(run.nb)
    assert result == dict(result_line(clean_result[0].nb), resumed_from="59"), run
    assert "checkpoint of step 59 verified and restored (%s/kguard-%d/" % (shm, os.getuid()) \
        in run.stderr, run.stderr
    # The memory was the kernel supervisor's: gone with it.
    assert list((shm / ("kguard-%d" % os.getuid())).iterdir()) == []


def test_same_assert_every_time_gives_up(workdir):
    run, d, env = _run_example(workdir, KGUARD_EMULATE="cuda-assert:step=60")
    assert run.code == 2, run
    meta = run.meta()
    assert meta["run"]["result"] == "gave-up"
    assert meta["run"]["restarts"] == 1  # the second, identical failure: no more restarts
    assert any(i["event"] == "down" for i in meta["incidents"]), meta["incidents"]
    assert "gave up" in run.stderr
    # The reason is said once, with advice that works for an unattended run
    # (not the notebook's `%kguard restart`).
    assert run.stderr.count("the same failure happened twice") == 1, run
    assert "Run `%kguard restart` in a cell" not in run.stderr
    assert "run the notebook again: with --resume" in run.stderr
    # The evaluation cell never ran.
    assert run.code_cells()[4]["execution_count"] is None
    assert result_line(run.nb) is None


def test_label4_is_caught_by_check_targets(workdir):
    """The seed's point: the bad label is rejected on the CPU with a clear
    message, before any device sees it; no restart."""
    run, d, env = _run_example(workdir, EXAMPLE_LABEL4_AT_STEP="60")
    assert run.code == 1, run
    assert run.meta()["run"]["restarts"] == 0
    errors = [o for o in run.code_cells()[3]["outputs"] if o["output_type"] == "error"]
    assert len(errors) == 1
    assert "4" in errors[0]["evalue"], errors[0]


def test_label4_unchecked_asserts_and_gives_up(workdir):
    """Without check_targets, the emulated CUDA loss asserts on the label; the
    label is in the data, so the fault repeats after the restart: DOWN."""
    run, d, env = _run_example(workdir, EXAMPLE_LABEL4_AT_STEP="60", EXAMPLE_SKIP_CHECK="1",
                               KGUARD_EMULATE="cuda-assert:step=100000")
    assert run.code == 2, run
    assert any(i.get("family") == "device-assert" for i in run.meta()["incidents"])


def test_python_exception_through_kguard(workdir):
    d, env = workdir
    run = kguard_run(BIN, copy_notebook(NOTEBOOKS / "error.ipynb", d), env)
    assert run.code == 1, run
    cells = run.code_cells()
    assert cells[1]["outputs"][-1]["ename"] == "ValueError"
    assert cells[2]["execution_count"] is None
    assert run.meta()["run"]["restarts"] == 0


def test_raises_exception_through_kguard(workdir):
    d, env = workdir
    run = kguard_run(BIN, copy_notebook(NOTEBOOKS / "raises.ipynb", d), env)
    assert run.code == 0, run
    assert stream_text(run.code_cells()[2]) == "after the tagged cell\n"


@pytest.mark.parametrize("name", ["not_json.ipynb", "nbformat3.ipynb", "no_cells.ipynb",
                                  "unknown_kernel.ipynb"])
def test_bad_notebook_through_kguard(workdir, name):
    d, env = workdir
    run = kguard_run(BIN, copy_notebook(NOTEBOOKS / name, d), env)
    assert run.code == 3, run
    assert run.nb is None and sorted(os.listdir(d)) == [name]


def test_kguard_kernelspec_is_not_wrapped_twice(workdir):
    """--kernel naming an installed kguard kernelspec runs it as it is."""
    d, env = workdir
    prefix = d / "prefix"
    subprocess.run([BIN, "install", "--kernel", "python3", "--name", "py-guarded",
                    "--prefix", str(prefix)], check=True, env=env, capture_output=True)
    env["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    run = kguard_run(BIN, copy_notebook(NOTEBOOKS / "raises.ipynb", d), env,
                     "--kernel", "py-guarded")
    assert run.code == 0, run
    assert run.meta()["run"]["kernel"] == "py-guarded"
    assert "already a kguard wrapper" in run.stderr
    log = [l for l in run.stderr.splitlines() if "kernel log:" in l][0].split()[-1]
    supervising = [l for l in Path(log).read_text().splitlines() if "supervising" in l]
    assert supervising and all("/usr/bin/python3" in l for l in supervising), supervising


def test_notice_names_the_cell_when_its_reply_comes_first(workdir):
    """The failing cell's execute_reply can reach kguard before its error
    (ipykernel sends iopub from a thread of its own). The notice must still
    name the cell as the notebook does (Cell [3], In [3]), not guess from
    the last count seen. The cell delays its own error output by a second
    (IPython's _showtraceback on a timer), so the reply comes first every
    time."""
    d, env = workdir
    assert_text = ("CUDA error: device-side assert triggered\\nCUDA kernel errors might be "
                   "asynchronously reported at some other API call")
    delayed = ("import os, threading\n"
               "if not os.path.exists('fired'):\n"
               "    open('fired', 'w').close()\n"
               "    ip = get_ipython(); show = ip._showtraceback\n"
               "    ip._showtraceback = lambda *a: threading.Timer(1.0, show, a).start()\n"
               "    raise RuntimeError('%s')\n" % assert_text)
    cells = ["x = 1", "y = 2", delayed, "print('after', x + y)"]
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "id": "c%d" % i,
                     "execution_count": None, "source": src} for i, src in enumerate(cells)],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                      "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (d / "late.ipynb").write_text(json.dumps(nb))
    run = kguard_run(BIN, d / "late.ipynb", env)
    assert run.code == 0, run
    incidents = [i for i in run.meta()["incidents"] if i["event"] == "sticky-restart"]
    assert len(incidents) == 1, run.meta()["incidents"]
    assert incidents[0]["cell"] == 3
    assert "Cell [3]" in incidents[0]["notice"], incidents[0]["notice"]
    record = json.loads(Path(incidents[0]["incident_path"]).read_text())
    assert record["cell"]["execution_count"] == 3
    assert "cell 3: sticky device error" in run.stderr
    assert "after 3" in run.stdout
