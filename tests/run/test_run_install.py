"""`kguard install` as a user meets it: kernelspec names checked as Jupyter
checks them (nothing written otherwise), the restart policy written into the
kernelspec, and any kernelspec wrapped: a non-Python one (the fake kernel in
fakelang/, started as {resource_dir}/fakelang-kernel) is installed with every
resource file, relayed, and restarted when it dies, through jupyter_client."""
import json
import os
import shutil
import subprocess
import textwrap

import pytest

from conftest import HERE, PYTHON

BIN = os.environ.get("KGUARD_BIN")
pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ)
    e["JUPYTER_DATA_DIR"] = str(tmp_path / "data")
    e["KGUARD_STATE_DIR"] = str(tmp_path / "state")
    e.pop("JUPYTER_PATH", None)
    return e


def _install(env, *args):
    return subprocess.run([BIN, "install", *args], env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("name,needle", [
    ("..", "directory reference"), (".", "directory reference"),
    ("a b", "a space"), ("say\"hi\"", "'\"'"), ("x'y", "'''"), ("a/b", "'/'"),
    ("k" * 256, "256 characters, at most 255"), ("", "at least one character"),
    ("caf\u00e9", "byte 0xc3"),
])
def test_bad_names_write_nothing(tmp_path, env, name, needle):
    prefix = tmp_path / "prefix"
    out = _install(env, "--name", name, "--prefix", str(prefix))
    assert out.returncode == 100, out
    assert needle in out.stderr and "invalid kernelspec name" in out.stderr
    assert not prefix.exists()
    assert not (tmp_path / "data").exists()


def test_names_jupyter_accepts(tmp_path, env):
    prefix = tmp_path / "prefix"
    name = "Py_3.11-" + "k" * 247                   # 255 characters, mixed case
    out = _install(env, "--name", name, "--prefix", str(prefix))
    assert out.returncode == 0, out.stderr
    kdir = prefix / "share" / "jupyter" / "kernels" / name.lower()
    assert (kdir / "kernel.json").exists()
    # jupyter_client finds it under the same (lowercased) name.
    code = ("import sys; from jupyter_client.kernelspec import KernelSpecManager as K\n"
            "print(K().get_kernel_spec(sys.argv[1]).resource_dir)")
    found = subprocess.run([PYTHON, "-c", code, name.lower()], capture_output=True, text=True,
                           env=dict(env, JUPYTER_PATH=str(prefix / "share" / "jupyter")))
    assert found.stdout.strip() == str(kdir), found.stderr


POLICY = ["--max-restarts", "5", "--restart-window", "60", "--backoff", "0.5",
          "--backoff-max", "10", "--stale-window", "2"]


def test_policy_written_into_argv(tmp_path, env):
    prefix = tmp_path / "prefix"
    out = _install(env, "--name", "pol", "--prefix", str(prefix), *POLICY)
    assert out.returncode == 0, out.stderr
    argv = json.loads((prefix / "share/jupyter/kernels/pol/kernel.json").read_text())["argv"]
    assert argv[1] == "kernel"
    head = argv[:argv.index("--")]
    for flag, value in zip(POLICY[::2], POLICY[1::2]):
        assert head[head.index(flag) + 1] == value, flag


def test_standby_written_and_starts(tmp_path, env):
    """--standby-imports implies --standby: the flag in argv, the modules in
    the kernelspec's env, and `kguard kernel` accepts what was written."""
    prefix = tmp_path / "prefix"
    out = _install(env, "--name", "warm", "--prefix", str(prefix),
                   "--standby-imports", "json,os.path")
    assert out.returncode == 0, out.stderr
    spec = json.loads((prefix / "share/jupyter/kernels/warm/kernel.json").read_text())
    assert "--standby" in spec["argv"][:spec["argv"].index("--")]
    assert spec["env"]["KGUARD_STANDBY_IMPORTS"] == "json,os.path"
    env["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    assert _drive(env, "warm", "1 + 1").returncode == 0


def test_keep_written_into_env(tmp_path, env):
    """--keep N: the kernelspec's env carries KGUARD_KEEP, kguard.save's default."""
    prefix = tmp_path / "prefix"
    out = _install(env, "--name", "kept", "--prefix", str(prefix), "--keep", "3")
    assert out.returncode == 0, out.stderr
    spec = json.loads((prefix / "share/jupyter/kernels/kept/kernel.json").read_text())
    assert spec["env"]["KGUARD_KEEP"] == "3"


@pytest.mark.parametrize("bad", ["0", "-2", "3x", "", "1000001"])
def test_keep_must_be_a_count(tmp_path, env, bad):
    prefix = tmp_path / "prefix"
    out = _install(env, "--prefix", str(prefix), "--keep", bad)
    assert out.returncode == 100, out
    assert "--keep needs a count of checkpoints" in out.stderr
    assert not prefix.exists()


@pytest.mark.parametrize("bad", ["", "torch,", ",torch", "a..b", "9lives", "torch numpy",
                                 "os;rm"])
def test_standby_imports_must_be_module_names(tmp_path, env, bad):
    prefix = tmp_path / "prefix"
    out = _install(env, "--prefix", str(prefix), "--standby-imports", bad)
    assert out.returncode == 100, out
    assert "Python module names" in out.stderr
    assert not prefix.exists()


@pytest.mark.parametrize("args,needle", [
    (["--max-restarts", "-1"], "whole number of restarts from 0 to 1000"),
    (["--max-restarts", "2.5"], "whole number"),
    (["--max-restarts", "1001"], "whole number"),
    (["--restart-window", "0"], "positive number of seconds"),
    (["--backoff", "-1"], "positive number of seconds"),
    (["--backoff-max", "abc"], "positive number of seconds"),
    (["--stale-window", "nan"], "positive number of seconds"),
    (["--backoff", "5", "--backoff-max", "2"], "longer than --backoff-max"),
])
def test_bad_policy_values(tmp_path, env, args, needle):
    prefix = tmp_path / "prefix"
    out = _install(env, "--prefix", str(prefix), *args)
    assert out.returncode == 100, out
    assert needle in out.stderr
    assert not prefix.exists()


def test_policy_kernel_starts(tmp_path, env):
    """The written argv must be one `kguard kernel` accepts (its options are
    implemented by the supervisor core)."""
    help_text = subprocess.run([BIN, "kernel", "--help"], capture_output=True,
                               text=True).stdout
    if "--restart-window" not in help_text or "--stale-window" not in help_text:
        pytest.skip("`kguard kernel --help` does not list the restart-policy options yet")
    prefix = tmp_path / "prefix"
    assert _install(env, "--name", "pol", "--prefix", str(prefix), *POLICY).returncode == 0
    env["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    out = _drive(env, "pol", "1 + 1")
    assert out.returncode == 0, out.stderr


DRIVE = textwrap.dedent("""
    import json, sys
    from jupyter_client.manager import start_new_kernel
    km, kc = start_new_kernel(kernel_name=sys.argv[1], startup_timeout=60)
    try:
        info = kc.kernel_info(reply=True, timeout=30)["content"]
        out = {"language": info["language_info"]["name"], "cells": []}
        for code in sys.argv[2:]:
            outputs = []
            reply = kc.execute_interactive(code, timeout=60,
                                           output_hook=lambda m: outputs.append(m))
            out["cells"].append({
                "status": reply["content"]["status"],
                "ename": reply["content"].get("ename"),
                "count": reply["content"].get("execution_count"),
                "stdout": "".join(m["content"]["text"] for m in outputs
                                  if m["msg_type"] == "stream"),
                "kguard": [m["content"].get("metadata", {}).get("kguard") for m in outputs
                           if m["msg_type"] == "display_data"],
            })
        print(json.dumps(out))
    finally:
        km.shutdown_kernel(now=True)
""")


def _drive(env, kernel, *cells):
    return subprocess.run([PYTHON, "-c", DRIVE, kernel, *cells], env=env, capture_output=True,
                          text=True, timeout=240)


def test_non_python_kernel_wrapped_relayed_restarted(tmp_path, env):
    share = tmp_path / "share" / "jupyter"
    shutil.copytree(HERE / "fakelang", share / "kernels" / "fakelang")
    env["JUPYTER_PATH"] = str(share)
    prefix = tmp_path / "prefix"
    out = _install(env, "--kernel", "fakelang", "--prefix", str(prefix))
    assert out.returncode == 0, out.stderr
    kdir = prefix / "share" / "jupyter" / "kernels" / "fakelang-kguard"
    spec = json.loads((kdir / "kernel.json").read_text())
    assert spec["language"] == "fakelang"
    assert spec["argv"][spec["argv"].index("--") + 1] == "{resource_dir}/fakelang-kernel"
    # kguard kernel learns the language before the kernel's first reply, so
    # no Python-only helper (version or device probe) is ever run against it.
    head = spec["argv"][:spec["argv"].index("--")]
    assert head[head.index("--language") + 1] == "fakelang"
    # Every resource file is carried over, executables stay executable.
    for rel in ("fakelang-kernel", "logo-32x32.png", "extra/data.txt"):
        assert (kdir / rel).read_bytes() == (HERE / "fakelang" / rel).read_bytes(), rel
    assert os.access(kdir / "fakelang-kernel", os.X_OK)

    env["JUPYTER_PATH"] = "%s:%s" % (prefix / "share" / "jupyter", share)
    out = _drive(env, "fakelang-kguard", "echo hello\nvalue 1", "die", "echo after")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["language"] == "fakelang"
    hello, died, after = res["cells"]
    assert hello["status"] == "ok" and hello["stdout"] == "hello\n"
    # The kernel died mid-request: kguard answers it and says so ...
    assert died["status"] == "error" and died["ename"] == "KernelDied", died
    assert any(k and k.get("event") == "kernel-died" for k in died["kguard"]), died
    # ... and the next request runs in a fresh fakelang process.
    assert after["status"] == "ok" and after["stdout"] == "after\n"
    assert after["count"] == 1
    # One kguard restarted it (kernel #2), with nothing failing on the way
    # (a Python-only helper run against it would warn here).
    logs = list((tmp_path / "state" / "logs").glob("kguard-*.log"))
    assert len(logs) == 1, logs
    log = logs[0].read_text()
    assert "kernel #2 ready" in log, log
    warnings = [l for l in log.splitlines() if " W: " in l and "died on its own" not in l]
    assert warnings == [], log


def test_kguard_run_through_the_wrapper_of_a_non_python_kernel(tmp_path, env):
    """`kguard run --kernel fakelang-kguard` launches the installed wrapper as
    it is, filling {resource_dir} with the wrapper's directory (which holds the
    copied launcher), with the wrapped spec itself gone."""
    share = tmp_path / "share" / "jupyter"
    shutil.copytree(HERE / "fakelang", share / "kernels" / "fakelang")
    env["JUPYTER_PATH"] = str(share)
    prefix = tmp_path / "prefix"
    assert _install(env, "--kernel", "fakelang", "--prefix", str(prefix)).returncode == 0
    # Only the wrapper is findable now: the launcher must come from its copy.
    shutil.rmtree(share)
    env["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    env["KGUARD_CKPT_DIR"] = str(tmp_path / "ckpt")
    nb = tmp_path / "f.ipynb"
    cells = [{"cell_type": "code", "metadata": {}, "source": s, "outputs": [],
              "execution_count": None} for s in ("echo one", "value 2")]
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                              "nbformat_minor": 4}))
    out = subprocess.run([BIN, "run", str(nb), "--kernel", "fakelang-kguard"], env=env,
                         capture_output=True, text=True, timeout=150)
    assert out.returncode == 0, out.stderr
    done = json.loads((tmp_path / "f.kguard.ipynb").read_text())
    assert "".join(done["cells"][0]["outputs"][0]["text"]) == "one\n"
    assert done["metadata"]["kguard"]["run"]["kernel"] == "fakelang-kguard"
