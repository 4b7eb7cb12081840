"""`kguard run` and the simple mistakes of a first hour: each is answered
before any cell runs, by a message that names the problem once and says
what to do, with the exit code `kguard run --help` gives for it, and
nothing is lost or written.

- an -o that cannot be written (a missing directory, a directory, a file as
  a directory, a read-only place): usage error, no cell ran;
- a kernel that cannot start (its program is missing, or it exits at once):
  111 with the kernel's own words and its kernelspec, never "kernel ready"
  nor the advice about wrong labels, and no notebook written;
- a notebook path that leads nowhere, an empty file, a notebook whose
  kernel is not installed here (with the hint to use --kernel).

Most tests use KGUARD_RUN_PASSTHROUGH (the runner over plain ipykernel);
the kernel-start ones need the supervisor (KGUARD_BIN).
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import PYTHON, kguard_run

PASS = os.environ.get("KGUARD_RUN_PASSTHROUGH")
BIN = os.environ.get("KGUARD_BIN")


def _notebook(path, kernel="python3"):
    """Its only cell leaves a marker in the kernel's working directory: proof
    that a cell ran."""
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                     "execution_count": None, "id": "c0",
                     "source": "open('CELL-RAN', 'w').write('yes')\nprint('ran')"}],
          "metadata": {"kernelspec": {"name": kernel, "display_name": kernel,
                                      "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))
    return path


def _run(binary, args, env, read_only=None):
    """`BINARY run ARGS`; with read_only, that directory is read-only for it
    (a private read-only bind mount as root, mode 0555 otherwise)."""
    cmd = [binary, "run", *args]
    if read_only is not None:
        if os.geteuid() == 0:
            cmd = ["unshare", "-m", "sh", "-c",
                   'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" '
                   '&& exec "$@"', str(read_only), *cmd]
        else:
            read_only.chmod(0o555)
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=150)
    finally:
        if read_only is not None and os.geteuid() != 0:
            read_only.chmod(0o755)
    print("$ %s -> exit %d\n%s" % (" ".join(cmd), proc.returncode, proc.stderr))
    return proc


# ---------------------------------------------------------------------------------------
# Where the executed notebook goes.

@pytest.mark.skipif(not PASS, reason="KGUARD_RUN_PASSTHROUGH not set")
@pytest.mark.parametrize("where,needle", [
    ("missing/deeper/out.ipynb", "missing/deeper does not exist"),
    ("a-directory", "is a directory"),
    ("a-file/out.ipynb", "a-file"),
])
def test_output_path_is_checked_before_any_cell_runs(workdir, where, needle):
    d, env = workdir
    nb = _notebook(d / "nb.ipynb")
    (d / "a-directory").mkdir()
    (d / "a-file").write_text("not a directory")
    out = d / where
    before = sorted(os.listdir(d))
    proc = _run(PASS, [str(nb), "-o", str(out)], env)
    assert proc.returncode == 100, proc.stderr
    assert "-o %s: " % out in proc.stderr and needle in proc.stderr
    # No cell ran, so no work was lost; nothing was written anywhere.
    assert not (d / "CELL-RAN").exists()
    assert sorted(os.listdir(d)) == before
    assert "kernel" not in proc.stderr


@pytest.mark.skipif(not PASS, reason="KGUARD_RUN_PASSTHROUGH not set")
def test_output_in_a_read_only_directory(workdir):
    d, env = workdir
    nb = _notebook(d / "nb.ipynb")
    ro = d / "read-only"
    ro.mkdir()
    proc = _run(PASS, [str(nb), "-o", str(ro / "out.ipynb")], env, read_only=ro)
    assert proc.returncode == 100, proc.stderr
    assert "-o %s: cannot create a file in %s" % (ro / "out.ipynb", ro) in proc.stderr
    assert not (d / "CELL-RAN").exists() and os.listdir(ro) == []


@pytest.mark.skipif(not PASS, reason="KGUARD_RUN_PASSTHROUGH not set")
def test_default_output_beside_a_read_only_notebook(workdir):
    """No -o: the default NOTEBOOK.kguard.ipynb beside a notebook in a
    read-only place is refused at once, with the way out (-o)."""
    d, env = workdir
    ro = d / "shared"
    ro.mkdir()
    nb = _notebook(ro / "nb.ipynb")
    work = d / "work"
    work.mkdir()
    proc = _run(PASS, [str(nb), "--cwd", str(work)], env, read_only=ro)
    assert proc.returncode == 100, proc.stderr
    assert "nb.kguard.ipynb cannot be written" in proc.stderr and "-o OUT" in proc.stderr
    assert not (work / "CELL-RAN").exists()


@pytest.mark.skipif(not PASS, reason="KGUARD_RUN_PASSTHROUGH not set")
def test_checkpoints_that_is_a_file(workdir):
    d, env = workdir
    nb = _notebook(d / "nb.ipynb")
    (d / "ckpt").write_text("a file")
    proc = _run(PASS, [str(nb), "--checkpoints", str(d / "ckpt")], env)
    assert proc.returncode == 100, proc.stderr
    assert "--checkpoints %s: not a directory" % (d / "ckpt") in proc.stderr
    assert not (d / "CELL-RAN").exists() and not (d / "nb.kguard.ipynb").exists()


# ---------------------------------------------------------------------------------------
# The notebook itself.

@pytest.mark.skipif(not PASS, reason="KGUARD_RUN_PASSTHROUGH not set")
def test_notebook_path_mistakes(workdir):
    d, env = workdir
    proc = _run(PASS, [str(d / "nosuch.ipynb")], env)
    assert proc.returncode == 100, proc.stderr
    # The path once, then the problem: never "x: cannot read x".
    assert proc.stderr.count("nosuch.ipynb") == 1
    assert "nosuch.ipynb: no such file" in proc.stderr
    proc = _run(PASS, [str(d)], env)
    assert proc.returncode == 100 and "a directory, not a notebook" in proc.stderr
    (d / "empty.ipynb").write_text("")
    proc = _run(PASS, [str(d / "empty.ipynb")], env)
    assert proc.returncode == 3, proc.stderr
    assert "empty.ipynb: an empty file: not a notebook" in proc.stderr
    assert "syntax error" not in proc.stderr
    assert sorted(os.listdir(d)) == ["empty.ipynb"]


@pytest.mark.skipif(not PASS, reason="KGUARD_RUN_PASSTHROUGH not set")
def test_unknown_kernel_says_how_to_choose_one(workdir):
    d, env = workdir
    nb = _notebook(d / "nb.ipynb", kernel="conda-env-gone-py")
    proc = _run(PASS, [str(nb)], env)
    assert proc.returncode == 3, proc.stderr
    assert 'the notebook\'s kernel "conda-env-gone-py"' in proc.stderr
    assert "--kernel NAME" in proc.stderr and "jupyter kernelspec list" in proc.stderr
    proc = _run(PASS, [str(nb), "-k", "nope-nope"], env)
    assert proc.returncode == 3, proc.stderr
    assert "--kernel nope-nope: no kernelspec named 'nope-nope'" in proc.stderr
    assert "jupyter kernelspec list" in proc.stderr
    assert not (d / "CELL-RAN").exists()


# ---------------------------------------------------------------------------------------
# A kernel that cannot start, through the supervisor.

def _spec(root, name, argv):
    kdir = root / "kernels" / name
    kdir.mkdir(parents=True)
    (kdir / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": name, "language": "python"}))
    return kdir / "kernel.json"


@pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")
@pytest.mark.parametrize("kind", ["missing-program", "exits-at-once"])
def test_kernel_that_cannot_start(workdir, kind):
    d, env = workdir
    root = d / "jupyter"
    if kind == "missing-program":
        argv = [str(d / "no-such-env" / "bin" / "python3"), "-m", "ipykernel_launcher",
                "-f", "{connection_file}"]
    else:
        # What a kernelspec of an environment without ipykernel does.
        argv = [PYTHON, "-c", "import sys; sys.stderr.write('ModuleNotFoundError: No module "
                "named ipykernel_launcher_gone\\n'); sys.exit(1)", "{connection_file}"]
    spec = _spec(root, "broken", argv)
    env["JUPYTER_PATH"] = str(root)
    nb = _notebook(d / "nb.ipynb")
    proc = _run(BIN, [str(nb), "-k", "broken"], env)
    assert proc.returncode == 111, proc.stderr
    err = proc.stderr
    assert 'kernel "broken" could not start' in err
    # Never the story of a kernel that ran, nor advice for a bug in the data.
    assert "kernel ready" not in err and "wrong label" not in err and "gave up" not in err
    assert "%kguard restart" not in err
    # Where to fix it.
    assert "its kernelspec: %s" % spec in err
    if kind == "missing-program":
        assert "%s`: No such file or directory" % argv[0] in err
    else:
        # The kernel's own words, once per start, and a restart count that
        # agrees with them: kguard started it once, then restarted it N times.
        m = re.search(r"ModuleNotFoundError: No module named ipykernel_launcher_gone "
                      r"\((\d+) times\)", err)
        assert m, err
        restarts = re.search(r"\((\d+) restarts within", err)
        assert restarts and int(m.group(1)) == int(restarts.group(1)) + 1, err
    # Nothing ran, nothing was written.
    assert not (d / "CELL-RAN").exists() and not (d / "nb.kguard.ipynb").exists()
