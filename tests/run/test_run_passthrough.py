"""`kguard run`'s client and runner against plain ipykernel.

KGUARD_RUN_PASSTHROUGH is a stand-in for the kguard binary whose `kernel`
subcommand does no guarding: it becomes the inner kernel. So these tests pin
down the notebook execution itself (outputs, counts, errors, tags, timeouts,
interrupts, bad files, exit codes) independently of the supervisor; the
supervised paths are in test_run_kguard.py.
"""
import os
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import (NOTEBOOKS, copy_notebook, kguard_run, nbclient_run, stream_text,
                      text_of)

BIN = os.environ.get("KGUARD_RUN_PASSTHROUGH")
pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_RUN_PASSTHROUGH not set")


def _outputs_comparable(cell):
    """What must match nbclient's run: output types, stream texts, rich data."""
    out = []
    for o in cell["outputs"]:
        if o["output_type"] == "stream":
            out.append(("stream", o["name"], text_of(o["text"])))
        elif o["output_type"] in ("display_data", "execute_result"):
            out.append((o["output_type"], {k: text_of(v) for k, v in o["data"].items()}))
        else:
            out.append((o["output_type"], o.get("ename")))
    return out


def test_clean_notebook_matches_nbclient(workdir):
    d, env = workdir
    nb = copy_notebook(NOTEBOOKS / "clean.ipynb", d)
    run = kguard_run(BIN, nb, env)
    assert run.code == 0, run
    ref = nbclient_run(nb, env)
    mine = [c for c in run.nb["cells"] if c["cell_type"] == "code"]
    theirs = [c for c in ref["cells"] if c["cell_type"] == "code"]
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        assert a["execution_count"] == b["execution_count"]
        assert _outputs_comparable(a) == _outputs_comparable(b)
    # The display updated through its display_id shows the final content.
    html = [text_of(o["data"]["text/html"]) for c in mine for o in c["outputs"]
            if o["output_type"] == "display_data"]
    assert html == ["<b>two</b>"]
    # nbformat 4 with a 1-space indent; the run's result in the metadata.
    text = run.out_path.read_text()
    assert text.startswith('{\n "cells": [')
    assert run.nb["nbformat"] == 4
    assert run.meta()["run"]["result"] == "ok"
    assert run.meta()["incidents"] == []


def test_python_exception_stops_like_nbconvert(workdir):
    d, env = workdir
    nb = copy_notebook(NOTEBOOKS / "error.ipynb", d)
    run = kguard_run(BIN, nb, env)
    assert run.code == 1, run
    cells = run.code_cells()
    assert stream_text(cells[0]) == "before\n"
    errors = [o for o in cells[1]["outputs"] if o["output_type"] == "error"]
    assert [e["ename"] for e in errors] == ["ValueError"]
    assert errors[0]["evalue"] == "boom at cell 2"
    assert cells[2]["execution_count"] is None and cells[2]["outputs"] == []
    assert "cell 2 raised ValueError: boom at cell 2" in run.stderr
    assert run.meta()["run"]["result"] == "cell-error"


def test_raises_exception_tag_continues(workdir):
    d, env = workdir
    # ipykernel aborts every execute_request reaching it for this long after
    # an error reply sent with stop_on_error (0 s by default: a race the next
    # cell usually wins). Widened, the race is lost every time unless the
    # tagged cell was sent with stop_on_error false, as nbclient sends it.
    profile = d / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text("c.Kernel.stop_on_error_timeout = 2.0\n")
    env["IPYTHONDIR"] = str(d / "ipython")
    nb = copy_notebook(NOTEBOOKS / "raises.ipynb", d)
    run = kguard_run(BIN, nb, env)
    assert run.code == 0, run
    cells = run.code_cells()
    assert cells[1]["outputs"][0]["ename"] == "ZeroDivisionError"
    assert stream_text(cells[2]) == "after the tagged cell\n"


def test_cell_timeout_interrupts(workdir):
    d, env = workdir
    nb = copy_notebook(NOTEBOOKS / "slow.ipynb", d)
    t0 = time.monotonic()
    run = kguard_run(BIN, nb, env, "--timeout", "2")
    assert run.code == 4, run
    assert time.monotonic() - t0 < 40
    cells = run.code_cells()
    assert [o.get("ename") for o in cells[1]["outputs"]] == ["KeyboardInterrupt"]
    assert cells[2]["execution_count"] is None
    assert run.meta()["run"]["result"] == "timeout"


def test_sigint_interrupts_the_cell(workdir):
    d, env = workdir
    nb = copy_notebook(NOTEBOOKS / "slow.ipynb", d)
    # A short private XDG_RUNTIME_DIR, to check the runtime dir is removed.
    runtime = tempfile.mkdtemp(prefix="kgrt-", dir="/tmp")
    env["XDG_RUNTIME_DIR"] = runtime
    proc = subprocess.Popen([BIN, "run", str(nb)], env=env, stderr=subprocess.PIPE, text=True)
    # The cell touches a marker (in the kernel's cwd, the notebook's
    # directory) once it runs: interrupt it then, not before it started.
    marker = d / "sleeping.marker"
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 130, rest
    assert time.monotonic() - t0 < 30  # the cell's 60 s sleep was interrupted
    assert "interrupting cell 2" in rest
    out = d / "slow.kguard.ipynb"
    assert out.exists()
    assert os.listdir(runtime) == []
    os.rmdir(runtime)


@pytest.mark.parametrize("name,needle", [
    ("not_json.ipynb", "not JSON"),
    ("nbformat3.ipynb", "nbformat 3 is not supported"),
    ("no_cells.ipynb", "no \"cells\""),
    ("unknown_kernel.ipynb", "no-such-kernel-xyz"),
])
def test_bad_notebook(workdir, name, needle):
    d, env = workdir
    nb = copy_notebook(NOTEBOOKS / name, d)
    run = kguard_run(BIN, nb, env)
    assert run.code == 3, run
    assert needle in run.stderr
    assert sorted(os.listdir(d)) == [name]  # nothing written, not even a temp file


def test_unknown_kernel_option(workdir):
    d, env = workdir
    nb = copy_notebook(NOTEBOOKS / "clean.ipynb", d)
    run = kguard_run(BIN, nb, env, "--kernel", "nope-nope")
    assert run.code == 3 and "nope-nope" in run.stderr


def test_output_option_and_usage(workdir):
    d, env = workdir
    nb = copy_notebook(NOTEBOOKS / "raises.ipynb", d)
    out = d / "sub-out.ipynb"
    run = kguard_run(BIN, nb, env, "-o", str(out), "--quiet")
    assert run.code == 0, run
    assert out.exists() and not (d / "raises.kguard.ipynb").exists()
    assert "cell 1/3" not in run.stderr and "executed notebook" in run.stderr
    usage = subprocess.run([BIN, "run"], capture_output=True, text=True, env=env)
    assert usage.returncode == 100
    usage = subprocess.run([BIN, "run", str(nb), "--max-restarts", "x"], capture_output=True,
                           text=True, env=env)
    assert usage.returncode == 100 and "--max-restarts" in usage.stderr
    help_ = subprocess.run([BIN, "run", "--help"], capture_output=True, text=True, env=env)
    assert help_.returncode == 0
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "100", "111", "130"):
        assert "\n  %s" % code in help_.stdout
