"""Issue 13: `kguard doctor`, its pre-flight probe and `kguard incident
export`, driven through the real binary on this CPU-only machine. Device
failures come from the labelled emulation (KGUARD_EMULATE=preflight-fail /
preflight-hang); incidents are produced by a real guarded ipykernel under the
CPU emulation of a device-side assert."""
import getpass
import json
import os
import socket
import subprocess

import pytest

from conftest import KGUARD, Collector, kernel_pid, wait_until

STUB = "/usr/local/cuda/lib64/stubs/libcuda.so"


def doctor(*args, env=None, timeout=120):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([KGUARD, "doctor", *args], capture_output=True, text=True,
                          timeout=timeout, env=e)


def test_doctor_cpu_machine_useful_answer(env):
    env.spec(name="kg-diag", env={"CUDA_LAUNCH_BLOCKING": "1"},
             kg_args=("--checkpoints", str(env.root / "ckpts")))
    r = doctor("--kernel", "kg-diag")
    assert r.returncode in (0, 1), r.stderr
    out = r.stdout
    # a useful answer without any GPU software: the driver is missing, the stack named
    assert "no GPU driver found" in out and "libcuda.so.1" in out
    assert "CPU-only" in out or "not importable" in out
    # the kernelspec's variable applies, and a diagnostic switch left on is flagged
    assert "WARNING CUDA_LAUNCH_BLOCKING=1 [diagnostic]" in out
    # the guarded kernelspec, its checkpoints, keys and incidents
    assert "kg-diag" in out and "guarded by kguard" in out
    assert str(env.root / "ckpts") in out and str(env.state) in out
    # json: the same facts, machine-readable
    r = doctor("--kernel", "kg-diag", "--json")
    rep = json.loads(r.stdout)
    assert rep["stack"]["decision"] in ("cpu", "unknown")
    assert rep["drivers"]["cuda"]["loaded"] is False
    assert rep["kernel"] == {"name": "kg-diag", "source": "kernelspec", "guarded": True,
                             "interpreter": rep["kernel"]["interpreter"]}
    (var,) = [v for v in rep["env"] if v["name"] == "CUDA_LAUNCH_BLOCKING"]
    assert var["level"] == "warn"
    spec = [k for k in rep["kernelspecs"] if k["name"] == "kg-diag"][0]
    assert spec["guarded"] and spec["checkpoints"] == str(env.root / "ckpts")
    assert any("CUDA_LAUNCH_BLOCKING=1" in w for w in rep["warnings"])


def test_doctor_diagnostic_run_is_not_flagged(env):
    env.spec(name="kg-d", env={"CUDA_LAUNCH_BLOCKING": "1", "KGUARD_DIAGNOSTIC": "1"})
    rep = json.loads(doctor("--kernel", "kg-d", "--json").stdout)
    (var,) = [v for v in rep["env"] if v["name"] == "CUDA_LAUNCH_BLOCKING"]
    assert rep["diagnostic_run"] is True and var["level"] == "info"


def test_doctor_markdown_and_usage(env):
    env.spec(name="kg-md")
    r = doctor("--format=markdown")
    assert r.stdout.startswith("**kguard doctor**") and "### Stack" in r.stdout
    assert doctor("--kernel", "no-such-kernel").returncode == 100
    assert doctor("--format", "yaml").returncode == 100
    assert doctor("--timeout", "0").returncode == 100


def test_doctor_unusable_python_is_stated(env):
    rep = json.loads(doctor("--python", str(env.root / "no-python"), "--json").stdout)
    assert rep["stack"]["decision"] == "unknown"
    assert "could not be asked" in rep["stack"]["why"]


def test_doctor_names_an_unusable_snapshot_directory(env):
    # the room of kguard.snapshot, read where kguard will write: a base that
    # is missing is a warning (snapshots are optional), never a problem
    missing = env.root / "no-shm"
    r = doctor("--python", str(env.root / "no-python"), "--json",
               env={"KGUARD_SNAPSHOT_BASE": str(missing)})
    rep = json.loads(r.stdout)
    assert rep["snapshots"] == {"base": str(missing), "error": "No such file or directory"}
    (w,) = [w for w in rep["warnings"] if "in-memory snapshots" in w]
    assert str(missing) in w and "kguard.save" in w and "KGUARD_SNAPSHOT_BASE" in w
    assert not any("snapshot" in p for p in rep["problems"])
    # the default base, as the run will find it, with its room
    rep = json.loads(doctor("--python", str(env.root / "no-python"), "--json",
                            env={"KGUARD_SNAPSHOT_BASE": ""}).stdout)
    assert rep["snapshots"]["base"] == "/dev/shm"
    if "error" not in rep["snapshots"]:
        assert 0 <= rep["snapshots"]["free_bytes"] <= rep["snapshots"]["total_bytes"]


@pytest.mark.skipif(not os.path.exists(STUB), reason="no CUDA toolkit stub here")
def test_doctor_against_the_stub_driver(env):
    # the toolkit's stub has every symbol and answers 34 to every call: the
    # dlopen path, the symbol table and the error naming all run for real
    r = doctor("--json", env={"KGUARD_CUDA_LIB": STUB})
    cu = json.loads(r.stdout)["drivers"]["cuda"]
    assert cu["loaded"] is True and "CUDA_ERROR_STUB_LIBRARY (34)" in cu["error"]
    r = doctor("--preflight", env={"KGUARD_CUDA_LIB": STUB})
    assert r.returncode == 0 and "no-gpu" in r.stdout


def test_preflight_no_gpu_is_healthy():
    r = doctor("--preflight", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)
    assert res["status"] == "no-gpu" and res["emulated"] is False


def test_preflight_emulated_failure():
    r = doctor("--preflight", "--json", env={"KGUARD_EMULATE": "cuda-assert:preflight-fail"})
    assert r.returncode == 1
    res = json.loads(r.stdout)
    assert res["status"] == "failing" and res["emulated"] is True
    (dev,) = res["cuda"]["devices"]
    assert dev["preflight"]["error"]["code"] == 214
    assert "kguard emulation" in dev["name"] and "nvidia-smi -q" in res["summary"]
    r = doctor("--preflight", env={"KGUARD_EMULATE": "preflight-fail"})
    assert r.returncode == 1 and "FAILED at synchronize" in r.stdout


def test_preflight_emulated_hang_is_bounded():
    r = doctor("--preflight", "--json", "--timeout", "1",
               env={"KGUARD_EMULATE": "preflight-hang"}, timeout=30)
    assert r.returncode == 2
    res = json.loads(r.stdout)
    assert res["status"] == "timeout" and res["emulated"] is True
    assert "preflight-hang" in res["summary"]


# ---- incident export ------------------------------------------------------

SECRET_DIR = "private-project-x"


def _incident(env, kind="cuda-assert:step=2"):
    env.spec(env={"KGUARD_EMULATE": kind, "HF_TOKEN": "hf_thisisnotarealtoken"})
    km, kc = env.start()
    col = Collector(kc)
    pid1 = kernel_pid(col)
    code = ("import os, kguard.emulate as em\n"
            "data = os.path.join(os.path.expanduser('~'), %r, 'labels.csv')\n"
            "em.step(1)\nem.step(2)" % SECRET_DIR)
    msg_id = kc.execute(code)
    col.wait_reply(msg_id, timeout=60)
    wait_until(lambda: kernel_pid(col) != pid1, 60, "the restarted kernel")
    wait_until(lambda: env.incidents() and "versions" in env.incidents()[0], 60,
               "the incident with the probe's versions")
    return env.incidents()[0], code


def test_export_real_emulated_incident(env):
    inc, code = _incident(env)
    r = subprocess.run([KGUARD, "incident", "export", inc["id"]], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    md = r.stdout
    assert md.startswith("## GPU error repro: device-assert (cuda)")
    assert "**Emulated**" in md                       # never passed off as a real GPU
    assert "device-side assert triggered" in md
    assert "Assertion `t >= 0 && t < n_classes` failed." in md
    assert "`nll_loss_forward_reduce_cuda_kernel_2d`" in md
    assert "`../aten/src/ATen/native/cuda/Loss.cu:250`" in md
    assert "| Python | " in md and "| PyTorch | " in md
    # removed: the cell code, the user, the host, paths
    assert SECRET_DIR not in md and "em.step(2)" not in md
    user, host = getpass.getuser(), socket.gethostname()
    for word in (user, host):
        if len(word) >= 3:
            assert word not in md.replace("<%s>" % word, "")
    assert os.path.expanduser("~") + "/" not in md
    # JSON, to a file, with the code asked for
    out = env.root / "repro.json"
    r = subprocess.run([KGUARD, "incident", "export", inc["id"], "--json", "--include-code",
                        "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    assert rep["emulated"] is True and rep["incident"] == inc["id"]
    assert rep["operator"]["kernel"] == "nll_loss_forward_reduce_cuda_kernel_2d"
    assert SECRET_DIR in rep["cell_code"] and "em.step(2)" in rep["cell_code"]
    assert rep["versions"]["python"]
    # listed
    r = subprocess.run([KGUARD, "incident", "list"], capture_output=True, text=True, timeout=60)
    assert inc["id"] in r.stdout and "device-assert" in r.stdout


def test_export_rejects_bad_input(env, tmp_path):
    def run(*a):
        return subprocess.run([KGUARD, "incident", *a], capture_output=True, text=True,
                              timeout=60)
    r = run("export", "20260101T000000Z-000000")
    assert r.returncode == 100 and "no incident 20260101T000000Z-000000" in r.stderr
    r = run("export", "../../etc/passwd")
    assert r.returncode == 100
    bogus = tmp_path / "x.json"
    bogus.write_text('{"id": "x"}')
    r = run("export", str(bogus))
    assert r.returncode == 100 and "not a kguard incident record" in r.stderr
    bogus.write_text("not json")
    assert run("export", str(bogus)).returncode == 100
    assert run("frobnicate").returncode == 100
