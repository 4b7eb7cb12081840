"""The device-side harness and kguard doctor's driver code, run here against
fake_libcuda (a labelled kguard emulation of the CUDA driver API: kernels run
on the CPU by name; its device is named "kguard emulation: fake CUDA
driver"). This proves the harness that tests/gpu/run-on-device.sh runs on a
GPU machine, and the dlopen/query/pre-flight paths of kguard doctor, without a
GPU; it proves nothing about a GPU."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
KGUARD = os.environ["KGUARD_BIN"]
FAKE = os.environ["KG_FAKE_LIBCUDA"]
PYTHON = os.environ.get("KGUARD_PYTHON", sys.executable)


def run(args, **env):
    e = dict(os.environ, KGUARD_CUDA_LIB=FAKE)
    e.update(env)
    return subprocess.run(args, capture_output=True, text=True, timeout=240, env=e)


def test_doctor_lists_the_device_and_judges_the_arch():
    r = run([KGUARD, "doctor", "--json"])
    rep = json.loads(r.stdout)
    cu = rep["drivers"]["cuda"]
    assert cu["loaded"] and cu["driver_version"] == "12.4" and cu["device_count"] == 1
    (dev,) = rep["devices"]
    assert dev["name"] == "kguard emulation: fake CUDA driver"
    assert dev["capability"] == "9.0" and dev["ecc"] is True
    assert dev["total_bytes"] == 80 << 30 and dev["used_bytes"] == 500 << 20
    # CPU-only torch here with a device present: said, not hidden
    if rep["stack"]["decision"] == "cpu":
        assert any("torch is CPU-only" in w for w in rep["warnings"])


def test_preflight_healthy_then_failing_then_hung():
    r = run([KGUARD, "doctor", "--preflight", "--json"])
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["status"] == "healthy", r.stdout
    (dev,) = res["cuda"]["devices"]
    assert dev["preflight"]["ok"] is True   # module loaded, kg_fill ran, value read back
    # NVML (the same fake library): who holds memory, the probe itself left out
    r = run([KGUARD, "doctor", "--preflight", "--json"], KGUARD_NVML_LIB=FAKE)
    (dev,) = json.loads(r.stdout)["cuda"]["devices"]
    assert dev["pci_bus_id"] == "00000000:65:00.0"
    assert dev["processes"] == [{"pid": 4242, "used_bytes": 1 << 30}]
    r = run([KGUARD, "doctor", "--preflight"], KGUARD_NVML_LIB=FAKE)
    assert "held by pid 4242 1024 MiB" in r.stdout
    r = run([KGUARD, "doctor", "--preflight", "--json"], KGFX_FAKE_FAIL="ecc")
    res = json.loads(r.stdout)
    assert r.returncode == 1 and res["status"] == "failing"
    err = res["cuda"]["devices"][0]["preflight"]["error"]
    assert (err["step"], err["code"], err["name"]) == ("synchronize", 214,
                                                       "CUDA_ERROR_ECC_UNCORRECTABLE")
    r = run([KGUARD, "doctor", "--preflight", "--json", "--timeout", "1"], KGFX_FAKE_FAIL="hang")
    assert r.returncode == 2 and json.loads(r.stdout)["status"] == "timeout"


@pytest.mark.parametrize("check", ["driver-assert", "driver-trap", "kernel-assert", "preflight",
                                   "doctor"])
def test_real_device_checks_pass_on_the_fake_driver(check):
    r = run([PYTHON, os.path.join(HERE, "real_device.py"), check])
    assert r.returncode == 0, r.stdout + r.stderr
    # the kernel's own output may share our stdout: find the verdict line
    verdicts = [l for l in r.stdout.splitlines() if l.startswith(("PASS ", "SKIP ", "FAIL "))]
    assert verdicts and verdicts[-1].startswith("PASS %s:" % check), r.stdout
    if check == "kernel-assert":   # detected from the (fake) driver's own output
        assert "assertion line recorded" in verdicts[-1]
