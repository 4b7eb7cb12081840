"""Issue 2: real frontends through the kguard kernelspec, and the CLI."""
import json
import os
import subprocess
import sys

import nbformat
from nbclient import NotebookClient

from conftest import KGUARD, PYTHON, Collector, kernel_pid, stdout_of, wait_until


def _install(env, *args):
    r = subprocess.run([KGUARD, "install", "--prefix", str(env.root / "prefix"), *args],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r


def test_install_wraps_python3(env, monkeypatch):
    r = _install(env, "--checkpoints", "ck")
    d = env.root / "prefix" / "share" / "jupyter" / "kernels" / "python3-kguard"
    spec = json.loads((d / "kernel.json").read_text())
    assert spec["display_name"] == "Python 3 (kguard)"
    assert spec["language"] == "python"
    assert spec["argv"][0] == os.path.realpath(KGUARD)
    assert spec["argv"][1:4] == ["kernel", "-f", "{connection_file}"]
    i = spec["argv"].index("--")
    assert spec["argv"][i - 2:i] == ["--checkpoints", "ck"]
    assert spec["argv"][i + 1:] == ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f",
                                    "{connection_file}"]
    assert (d / "logo-64x64.png").exists()
    # the installed spec really works through jupyter_client
    monkeypatch.setenv("JUPYTER_PATH", str(env.root / "prefix" / "share" / "jupyter"))
    km, kc = env.start("python3-kguard")
    col = Collector(kc)
    reply, msgs = col.run("import os; print(os.environ['KGUARD_CKPT_DIR'])")
    assert stdout_of(msgs).strip() == str(env.work / "ck")
    # errors
    r = subprocess.run([KGUARD, "install", "--kernel", "no-such-kernel", "--prefix",
                        str(env.root / "p2")], capture_output=True, text=True)
    assert r.returncode == 100 and "no-such-kernel" in r.stderr


def test_jupyter_console(env):
    env.spec("kgc")
    r = subprocess.run(["jupyter-console", "--simple-prompt", "--kernel", "kgc",
                        "--ZMQTerminalInteractiveShell.kernel_timeout=60"],
                       input="print(6*7)\nexit\n", capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PATH="/usr/bin:/bin"))
    assert "42" in r.stdout, (r.stdout, r.stderr)


def test_nbclient_notebook(env):
    env.spec("kgnb")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 21"),
                nbformat.v4.new_code_cell("print(x * 2)"),
                nbformat.v4.new_code_cell("from IPython.display import Markdown\n"
                                          "Markdown('**kguard**')")]
    client = NotebookClient(nb, kernel_name="kgnb", timeout=60, startup_timeout=60)
    client.execute()
    assert nb.cells[1].outputs[0]["text"] == "42\n"
    assert nb.cells[2].outputs[0]["data"]["text/markdown"] == "**kguard**"
    assert nb.metadata["language_info"]["name"] == "python"


def test_restart_cli_exit_0_means_restarted(env):
    """`kguard restart -f` exits 0 only once the fresh kernel is ready (its
    help says 0 means restarted): a request sent right after it runs in
    the fresh kernel with no wait, and kguard is READY."""
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    r = subprocess.run([KGUARD, "restart", "-f", km.connection_file], capture_output=True,
                       text=True, timeout=150)
    assert r.returncode == 0, r.stderr
    assert "restarted: kernel #2 is ready" in r.stdout, r.stdout
    reply, msgs = col.run("%kguard status")
    assert "state READY, kernel #2" in stdout_of(msgs), stdout_of(msgs)
    assert kernel_pid(col) != pid1


def test_inband_replies_carry_the_kernels_count(env):
    """A `%kguard` cell runs no code in the kernel: its reply carries the
    kernel's count as the kernel itself would for a request that stores no
    history (its last cell's), and after a restart the fresh kernel's (0),
    never the dead kernel's; the first cell of the fresh kernel is 1."""
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    for code in ("1", "2", "3"):
        col.run(code)
    reply, _ = col.run("%kguard status")
    assert reply["content"]["execution_count"] == 3
    reply, _ = col.run("%kguard restart")
    assert reply["content"]["status"] == "ok"

    def fresh_status():
        reply, msgs = col.run("%kguard status", timeout=60)
        return reply if "state READY, kernel #2" in stdout_of(msgs) else None

    reply = wait_until(fresh_status, 60, "the fresh kernel")
    assert reply["content"]["execution_count"] == 0, reply["content"]
    reply, _ = col.run("4", timeout=60)
    assert reply["content"]["execution_count"] == 1
    reply, _ = col.run("%kguard status")
    assert reply["content"]["execution_count"] == 1


def test_restart_cli_and_inband(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    r = subprocess.run([KGUARD, "restart", "-f", km.connection_file], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    pid2 = kernel_pid(col)            # held until the fresh kernel is ready
    assert pid2 != pid1
    reply, msgs = col.run("%kguard status")
    assert reply["content"]["status"] == "ok"
    assert "state READY" in stdout_of(msgs)
    reply, msgs = col.run("%kguard frobnicate")
    assert reply["content"]["status"] == "error"
    r = subprocess.run([KGUARD, "restart", "-f", str(env.root / "missing.json")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 100
