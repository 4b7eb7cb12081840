"""The example notebook through an installed kguard kernelspec, driven by
Jupyter's own tools instead of `kguard run`: `jupyter nbconvert --execute`
and nbclient (what papermill and CI setups use)."""
import json
import os
import subprocess
import textwrap

import pytest

from conftest import EXAMPLE, PYTHON, RUN_TIMEOUT, copy_notebook, result_line

BIN = os.environ.get("KGUARD_BIN")
pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")


@pytest.fixture
def spec_env(workdir):
    """A kguard kernelspec wrapping python3, installed under a private prefix
    found through JUPYTER_PATH."""
    d, env = workdir
    prefix = d / "prefix"
    subprocess.run([BIN, "install", "--kernel", "python3", "--name", "kguard-test",
                    "--prefix", str(prefix), "--checkpoints", str(d / "ckpt")],
                   check=True, env=env, capture_output=True)
    env["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    return d, env


def test_nbconvert_execute(spec_env):
    d, env = spec_env
    nb = copy_notebook(EXAMPLE, d)
    out = subprocess.run([PYTHON, "-m", "nbconvert", "--to", "notebook", "--execute",
                          "--ExecutePreprocessor.kernel_name=kguard-test",
                          "--ExecutePreprocessor.timeout=120", "--output", "executed",
                          str(nb)], env=env, capture_output=True, text=True,
                         timeout=RUN_TIMEOUT)
    assert out.returncode == 0, out.stderr
    executed = json.loads((d / "executed.ipynb").read_text())
    result = result_line(executed)
    assert result and result["final_step"] == "200" and result["resumed_from"] == "None"
    assert len(list((d / "ckpt").glob("*.kgckpt.tar"))) == 10


NBCLIENT_SCRIPT = textwrap.dedent("""
    import sys
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(sys.argv[1], as_version=4)
    client = NotebookClient(nb, kernel_name="kguard-test", timeout=120,
                            resources={"metadata": {"path": sys.argv[2]}})
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    with client.setup_kernel():
        # Run all: the training cell fails with the emulated device assert,
        # as nbclient reports any cell error.
        failed = None
        for i in code:
            try:
                client.execute_cell(nb.cells[i], i)
            except CellExecutionError as e:
                failed = (i, e.ename)
                break
        print("FAILED", failed[0], failed[1])
        # kguard restarted the kernel behind the same connection: it still
        # answers, in a fresh process. Run all again: training resumes.
        for i in code:
            client.execute_cell(nb.cells[i], i)
    nbformat.write(nb, sys.argv[3])
""")


def test_nbclient_sees_the_error_then_resumes(spec_env):
    d, env = spec_env
    env["KGUARD_EMULATE"] = "cuda-assert:step=60:once"
    nb = copy_notebook(EXAMPLE, d)
    out = subprocess.run([PYTHON, "-c", NBCLIENT_SCRIPT, str(nb), str(d), str(d / "out.ipynb")],
                         env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert out.returncode == 0, out.stderr
    cells = json.loads(nb.read_text())["cells"]
    training_index = [i for i, c in enumerate(cells) if c["cell_type"] == "code"][3]
    assert "FAILED %d AcceleratorError" % training_index in out.stdout, out.stdout
    executed = json.loads((d / "out.ipynb").read_text())
    result = result_line(executed)
    assert result and result["resumed_from"] == "40" and result["final_step"] == "200"
    assert len(list((d / "state" / "incidents").glob("*.json"))) == 1
