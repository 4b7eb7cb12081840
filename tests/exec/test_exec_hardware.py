"""`kguard exec` and a GPU that needs a reset: the job ends with 200 (run it
on other hardware), naming the GPU, instead of restarting on it; a fault of
the code still gets the same-fault-twice rule (86).

The hardware fault's text is the labelled emulation (KGUARD_EMULATE=cuda-ecc);
the GPU's state comes from the labelled fake NVML (tests/gpu/fake_nvml.c,
KG_FAKE_NVML_LIB) loaded through KGUARD_NVML_LIB: the baseline at the start
reads clean, the reading after the fault does not. No GPU is used."""
import os

import pytest

from exec_harness import BIN, GAVE_UP, RETRYABLE, Run, base_env, exec_args, incidents

FAKE_NVML = os.environ.get("KG_FAKE_NVML_LIB", "")
pytestmark = pytest.mark.skipif(not BIN or not FAKE_NVML,
                                reason="KGUARD_BIN or KG_FAKE_NVML_LIB not set")


def test_gpu_needing_reset_ends_with_200_naming_it(tmp_path):
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-ecc:step=5", KGUARD_NVML_LIB=FAKE_NVML,
                   KG_FAKE_NVML="ecc-grow:after=1", KG_FAKE_NVML_DEVICES="2",
                   CUDA_VISIBLE_DEVICES="1,0")
    run = Run(exec_args(tmp_path, "--stall-timeout", "60"), env)
    assert run.wait() == RETRYABLE, run.output()
    out = run.output()
    # the ranks' cuda:1 is NVML's device 0, the one whose count grew
    named = ("GPU 1 (UUID GPU-kguard-fake-0, PCI bus id 00000000:00:00.0) needs a reset: "
             "its uncorrectable ECC error count grew from 0 to 2")
    assert named in out and "drain this node" in out, out
    assert "exit 200 (retryable on other hardware: " + named in out, out
    assert run.count("exec: started") == 1           # never restarted on that GPU
    (inc,) = incidents(tmp_path / "state")
    assert inc["family"] == "ecc-hardware"
    assert inc["policy"]["decision"] == "hardware"
    assert inc["action"] == "drain this node"
    gh = inc["gpu_health"]
    assert gh["verdict"] == "needs-reset" and gh["action"] == "drain this node", gh
    assert gh["device"] == {"index": 1, "uuid": "GPU-kguard-fake-0",
                            "pci_bus_id": "00000000:00:00.0"}


def test_a_code_fault_twice_on_a_healthy_gpu_is_still_permanent(tmp_path):
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-assert:step=5", KGUARD_NVML_LIB=FAKE_NVML,
                   KG_FAKE_NVML="healthy")
    run = Run(exec_args(tmp_path, "--max-restarts", "5"), env)
    assert run.wait() == GAVE_UP, run.output()
    inc = incidents(tmp_path / "state")
    assert [i["policy"]["decision"] for i in inc] == ["restart", "give-up"]
    assert run.count("exec: started") == 2
