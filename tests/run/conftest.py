"""Shared helpers of the `kguard run` tests.

Every test runs in its own temporary directory with its own KGUARD_STATE_DIR
and checkpoint directory, so incidents, logs, checkpoints and the emulation's
`once` marker never leak between tests.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE / "notebooks"
SOURCE = Path(os.environ.get("KGUARD_SOURCE_DIR", HERE.parents[1]))
EXAMPLE = SOURCE / "examples" / "train_classifier.ipynb"
PYTHON = os.environ.get("KGUARD_PYTHON", sys.executable)

# One notebook run: generous, but far below the ctest TIMEOUT.
RUN_TIMEOUT = 150


class Run:
    """The result of one `kguard run`."""

    def __init__(self, proc, out_path):
        self.code = proc.returncode
        self.stderr = proc.stderr
        self.stdout = proc.stdout
        self.out_path = out_path
        self.nb = json.loads(out_path.read_text()) if out_path.exists() else None

    def code_cells(self):
        return [c for c in self.nb["cells"] if c["cell_type"] == "code"]

    def meta(self):
        return self.nb["metadata"]["kguard"]

    def __repr__(self):
        return "<run exit %s>\n--- stderr ---\n%s" % (self.code, self.stderr)


def text_of(value):
    """nbformat stores multi-line strings as lists of lines."""
    return "".join(value) if isinstance(value, list) else value


def stream_text(cell, name="stdout"):
    return "".join(text_of(o["text"]) for o in cell["outputs"]
                   if o["output_type"] == "stream" and o["name"] == name)


def result_line(nb):
    for cell in nb["cells"]:
        for line in stream_text(cell).splitlines() if cell["cell_type"] == "code" else []:
            if line.startswith("RESULT "):
                return dict(kv.split("=", 1) for kv in line.split()[1:])
    return None


@pytest.fixture
def workdir(tmp_path):
    """A private directory with state and checkpoint dirs; returns (dir, env)."""
    env = dict(os.environ)
    env["KGUARD_STATE_DIR"] = str(tmp_path / "state")
    env["KGUARD_CKPT_DIR"] = str(tmp_path / "ckpt")
    for key in ("KGUARD_EMULATE", "KGUARD_EMULATE_MARKER", "EXAMPLE_LABEL4_AT_STEP",
                "EXAMPLE_SKIP_CHECK", "JUPYTER_PATH"):
        env.pop(key, None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return tmp_path, env


def copy_notebook(src, dest_dir):
    dest = Path(dest_dir) / Path(src).name
    shutil.copyfile(src, dest)
    return dest


def kguard_run(binary, notebook, env, *args, timeout=RUN_TIMEOUT):
    """Run `BINARY run NOTEBOOK ARGS` and load the notebook it wrote (default
    output path unless -o is in args)."""
    out = Path(str(notebook)[:-len(".ipynb")] + ".kguard.ipynb")
    if "-o" in args:
        out = Path(args[list(args).index("-o") + 1])
    proc = subprocess.run([binary, "run", str(notebook), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)
    # Shown by pytest only when the test fails (assertion messages are cut).
    print("$ kguard run %s %s -> exit %d\n%s" % (notebook, " ".join(args), proc.returncode,
                                                 proc.stderr))
    return Run(proc, out)


def nbclient_run(notebook, env, kernel_name="python3"):
    """Execute notebook with nbclient and plain ipykernel, in a subprocess with
    env (so the kernel inherits it); returns the executed notebook."""
    out = Path(str(notebook)[:-len(".ipynb")] + ".nbclient.ipynb")
    code = ("import nbformat, nbclient, sys\n"
            "nb = nbformat.read(sys.argv[1], as_version=4)\n"
            "nbclient.NotebookClient(nb, kernel_name=sys.argv[3], timeout=120,\n"
            "    resources={'metadata': {'path': sys.argv[4]}}).execute()\n"
            "nbformat.write(nb, sys.argv[2])\n")
    subprocess.run([PYTHON, "-c", code, str(notebook), str(out), kernel_name,
                    str(Path(notebook).parent)], env=env, check=True, timeout=RUN_TIMEOUT,
                   capture_output=True)
    return json.loads(out.read_text())
