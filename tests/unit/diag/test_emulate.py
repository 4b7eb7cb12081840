"""kguard emulation (python/kguard/emulate.py): exact texts, the raw fd-2 line,
poisoning, the once marker, and the label-4 bug through step(targets, classes).
Each scenario runs in a fresh interpreter, as a kernel would."""
import json
import os
import signal
import subprocess
import sys

import pytest

SRC = os.environ.get("KGUARD_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
PY = os.environ.get("KGUARD_PYTHON", sys.executable)

CUDA_710 = ("CUDA error: device-side assert triggered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so "
            "the stacktrace below might be incorrect.\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
HIP_719 = ("HIP error: unspecified launch failure\n"
           "HIP kernel errors might be asynchronously reported at some other API call, so "
           "the stacktrace below might be incorrect.\n"
           "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
           "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\n")
ASSERT_3 = ("../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
            "block: [0,0,0], thread: [3,0,0] Assertion `t >= 0 && t < n_classes` failed.\n")

# The child reports every step's outcome as JSON on stdout (sys.stdout), while
# the emulation writes device lines to fd 2 directly.
DRIVER = r'''
import json, sys
from kguard import emulate
out = []
def attempt(fn):
    try:
        fn()
        out.append({"ok": True})
    except BaseException as e:
        out.append({"ok": False, "type": type(e).__name__, "msg": str(e),
                    "code": getattr(e, "error_code", None),
                    "runtime": isinstance(e, RuntimeError),
                    "notes": getattr(e, "__notes__", [])})
%s
sys.stdout.write(json.dumps({"results": out, "poisoned": emulate.poisoned()}))
'''


def run(body, env_extra=None, tmp_path=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("KGUARD_EMULATE", "CUDA_LAUNCH_BLOCKING", "KGUARD_EMULATE_MARKER",
                        "KGUARD_EMULATE_RUN_DIR")}
    env["PYTHONPATH"] = os.path.join(SRC, "python")
    if tmp_path is not None:
        env["KGUARD_STATE_DIR"] = str(tmp_path)
    env.update(env_extra or {})
    p = subprocess.run([PY, "-c", DRIVER % body], env=env, capture_output=True, text=True,
                       timeout=60)
    return p


def results(p):
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_cuda_assert_exact_text_raw_line_and_poison(tmp_path):
    p = run("for i in range(1, 6): attempt(lambda: emulate.step(i))\n"
            "attempt(emulate.synchronize)",
            {"KGUARD_EMULATE": "cuda-assert:step=3"}, tmp_path)
    r = results(p)
    res = r["results"]
    assert [x["ok"] for x in res] == [True, True, False, False, False, False]
    first = res[2]
    assert first["type"] == "AcceleratorError" and first["runtime"]
    assert first["code"] == 710
    assert first["msg"] == CUDA_710
    assert any("kguard emulation" in n for n in first["notes"]) or sys.version_info < (3, 11)
    # poisoned: every later step and synchronize raise the same error
    assert all(x["msg"] == CUDA_710 and x["code"] == 710 for x in res[3:])
    assert r["poisoned"] is True
    # the kernel-side line went to fd 2 (not sys.stdout), once, in the real format
    assert p.stderr.count(ASSERT_3) == 1
    assert "kguard emulation" in p.stderr
    assert "Assertion" not in p.stdout


def test_raw_fd2_bypasses_sys_stderr(tmp_path):
    # Even with sys.stderr redirected (as ipykernel does), the line hits fd 2.
    p = run("import io; sys.stderr = io.StringIO()\n"
            "attempt(lambda: emulate.step(1))",
            {"KGUARD_EMULATE": "cuda-assert"}, tmp_path)
    results(p)
    assert ASSERT_3 in p.stderr


def test_cuda_launch_blocking_drops_async_hint(tmp_path):
    r = results(run("attempt(lambda: emulate.step(1))",
                    {"KGUARD_EMULATE": "cuda-assert", "CUDA_LAUNCH_BLOCKING": "1"}, tmp_path))
    msg = r["results"][0]["msg"]
    assert msg.startswith("CUDA error: device-side assert triggered\n")
    assert "asynchronously" not in msg


def test_rocm_assert_is_719(tmp_path):
    p = run("attempt(lambda: emulate.step(5)); attempt(lambda: emulate.step(6))",
            {"KGUARD_EMULATE": "rocm-assert:step=5"}, tmp_path)
    r = results(p)
    first, second = r["results"]
    assert first["type"] == "AcceleratorError" and first["code"] == 719
    assert first["msg"] == HIP_719
    assert "CUDA_LAUNCH_BLOCKING" not in first["msg"]
    assert second["msg"] == HIP_719
    assert "Assertion `" not in p.stderr  # asserts are compiled out on ROCm


def test_rocm_abort_dies_by_sigabrt(tmp_path):
    p = run("attempt(lambda: emulate.step(1))", {"KGUARD_EMULATE": "rocm-abort"}, tmp_path)
    assert p.returncode == -signal.SIGABRT
    assert "Device-side assertion `t >= 0 && t < n_classes' failed." in p.stderr
    assert "HSA_STATUS_ERROR_EXCEPTION" in p.stderr


@pytest.mark.parametrize("kind,etype,start", [
    ("cuda-oom", "OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
                                     "a total capacity of 79.15 GiB of which 1.02 GiB is free."),
    ("rocm-oom", "OutOfMemoryError", "HIP out of memory. Tried to allocate"),
    ("device-mismatch", "RuntimeError", "Expected all tensors to be on the same device, but "
                                        "found at least two devices, cuda:0 and cpu!"),
    ("no-kernel-image", "AcceleratorError",
     "CUDA error: no kernel image is available for execution on the device\n"),
    ("operator-unavailable", "NotImplementedError", "Could not run 'aten::"),
    ("cublas", "RuntimeError", "CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling"),
])
def test_non_sticky_kinds_do_not_poison(tmp_path, kind, etype, start):
    r = results(run("attempt(lambda: emulate.step(5)); attempt(lambda: emulate.step(6));"
                    "attempt(emulate.synchronize)",
                    {"KGUARD_EMULATE": kind + ":step=5"}, tmp_path))
    first, second, sync = r["results"]
    assert first["type"] == etype and first["msg"].startswith(start)
    assert second["ok"] and sync["ok"]
    assert r["poisoned"] is False


def test_once_marker_across_processes(tmp_path):
    marker = tmp_path / "once.marker"
    env = {"KGUARD_EMULATE": "cuda-assert:step=2:once", "KGUARD_EMULATE_MARKER": str(marker)}
    body = "for i in range(1, 4): attempt(lambda: emulate.step(i))"
    r1 = results(run(body, env, tmp_path))
    assert [x["ok"] for x in r1["results"]] == [True, False, False]
    assert marker.exists()
    r2 = results(run(body, env, tmp_path))  # the restarted kernel: no fault again
    assert [x["ok"] for x in r2["results"]] == [True, True, True]
    assert r2["poisoned"] is False


def test_once_marker_in_state_dir(tmp_path):
    env = {"KGUARD_EMULATE": "cuda-oom:once"}
    results(run("attempt(lambda: emulate.step(0))", env, tmp_path))
    assert (tmp_path / "emulate-once-cuda-oom").exists()


def test_run_dir_records_what_fired_and_keeps_once_per_run(tmp_path):
    """Under `kguard run`/`exec` (KGUARD_EMULATE_RUN_DIR) the emulation
    records that it fired, `:once` means once per run (a new run directory
    fires again), and a marker that stops it is named."""
    body = "attempt(lambda: emulate.step(1))"
    for run_no in (1, 2):
        run_dir = tmp_path / ("run%d" % run_no)
        run_dir.mkdir()
        env = {"KGUARD_EMULATE": "cuda-oom:once", "KGUARD_EMULATE_RUN_DIR": str(run_dir)}
        r = results(run(body, env, tmp_path))
        assert [x["ok"] for x in r["results"]] == [False]
        assert (run_dir / "fired").read_text() == "cuda-oom at step 1\n"
        assert (run_dir / "emulate-once-cuda-oom").exists()
    assert not (tmp_path / "emulate-once-cuda-oom").exists()
    # The same run again (a restarted kernel): the marker stops it, and says so.
    run_dir = tmp_path / "run2"
    (run_dir / "fired").unlink()
    env = {"KGUARD_EMULATE": "cuda-oom:once", "KGUARD_EMULATE_RUN_DIR": str(run_dir)}
    r = results(run(body, env, tmp_path))
    assert [x["ok"] for x in r["results"]] == [True]
    assert not (run_dir / "fired").exists()
    assert (run_dir / "blocked").read_text() == str(run_dir / "emulate-once-cuda-oom") + "\n"
    # Never reached: nothing recorded.
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    results(run("pass", {"KGUARD_EMULATE": "cuda-oom", "KGUARD_EMULATE_RUN_DIR": str(quiet)},
                tmp_path))
    assert list(quiet.iterdir()) == []


def test_stderr_only(tmp_path):
    p = run("for i in range(1, 5): attempt(lambda: emulate.step(i))\n"
            "attempt(emulate.synchronize)",
            {"KGUARD_EMULATE": "cuda-assert:stderr-only:step=3"}, tmp_path)
    r = results(p)
    assert all(x["ok"] for x in r["results"])
    assert r["poisoned"] is False
    assert p.stderr.count(ASSERT_3) == 1


def test_label_4_bug_through_targets(tmp_path):
    # The seed's example: classes=4, targets [0, 2, 4] must be rejected.
    p = run("attempt(lambda: emulate.step(1, targets=[0, 1, 2, 3, -100], classes=4))\n"
            "attempt(lambda: emulate.step(2, targets=[0, 2, 4], classes=4))\n"
            "attempt(lambda: emulate.step(3, targets=[0, 1], classes=4))", {}, tmp_path)
    r = results(p)
    ok, bad, after = r["results"]
    assert ok["ok"]
    assert bad["type"] == "AcceleratorError" and bad["code"] == 710 and bad["msg"] == CUDA_710
    assert after["msg"] == CUDA_710  # poisoned
    assert ("nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [2,0,0] "
            "Assertion `t >= 0 && t < n_classes` failed.\n") in p.stderr


def test_label_4_bug_with_torch_tensor(tmp_path):
    pytest.importorskip("torch")
    p = run("import torch\n"
            "attempt(lambda: emulate.step(1, targets=torch.tensor([0, 2, 4]), classes=4))",
            {"KGUARD_EMULATE": "rocm-assert:step=1000"}, tmp_path)
    r = results(p)
    assert r["results"][0]["msg"] == HIP_719


def test_bad_spec_is_a_clear_error(tmp_path):
    r = results(run("attempt(lambda: emulate.step(1))", {"KGUARD_EMULATE": "cuda-bogus"},
                    tmp_path))
    x = r["results"][0]
    assert x["type"] == "ValueError" and "kguard emulation" in x["msg"] and "cuda-bogus" in x["msg"]


def test_inactive_without_env(tmp_path):
    r = results(run("attempt(lambda: [emulate.step(i) for i in range(100)])\n"
                    "out.append({'active': emulate.active()})", {}, tmp_path))
    assert r["results"][0]["ok"] and r["results"][1]["active"] is False


def test_probe_prints_one_json_object():
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))
    p = subprocess.run([PY, "-m", "kguard.probe"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0
    d = json.loads(p.stdout)
    for key in ("python", "torch", "cuda", "hip", "backend", "device_count", "devices"):
        assert key in d
    assert d["backend"] in ("cuda", "rocm", "cpu", "unknown")
