"""`kguard exec` starting the ranks itself (--nproc-per-node), end to end:
torchrun's environment contract, a poisoned rank killed at once, warm
standby ranks; the real binary over tests/exec/train_tiny.py (2 gloo ranks,
CPU) with the labelled emulation of GPU faults."""
import json

import pytest

from exec_harness import BIN, Run, base_env, exec_args, incidents

pytestmark = pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")


def _final(tmp):
    return json.loads((tmp / "out.json").read_text())["params"]


def _plain(tmp, *cmd, name="job", opts=()):
    return Run([BIN, "exec", "--state-dir", str(tmp / "state"), "--name", name, *opts, "--",
                *cmd], base_env(tmp))


ENV_DUMP = """
import json, os, sys
names = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
         "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID",
         "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_MAX_RESTARTS", "ROLE_RANK", "ROLE_WORLD_SIZE",
         "GROUP_WORLD_SIZE", "TORCHELASTIC_USE_AGENT_STORE"]
out = sys.argv[1]
with open(os.path.join(out, "env-" + os.environ["RANK"] + ".json"), "w") as f:
    json.dump({n: os.environ.get(n) for n in names}, f)
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
"""


def test_kguard_starts_the_ranks_with_torchruns_environment(tmp_path):
    import shutil
    import subprocess
    script = tmp_path / "dump.py"
    script.write_text(ENV_DUMP)
    mine, theirs = tmp_path / "kguard", tmp_path / "torchrun"
    mine.mkdir()
    theirs.mkdir()
    run = _plain(tmp_path, "/usr/bin/python3", str(script), str(mine),
                 opts=("--nproc-per-node", "2"))
    assert run.wait(120) == 0, run.output()
    got = [json.loads((mine / f"env-{r}.json").read_text()) for r in range(2)]
    for r, e in enumerate(got):
        assert (e["RANK"], e["LOCAL_RANK"], e["WORLD_SIZE"], e["LOCAL_WORLD_SIZE"],
                e["GROUP_RANK"], e["ROLE_RANK"], e["GROUP_WORLD_SIZE"]) == \
            (str(r), str(r), "2", "2", "0", str(r), "1")
        assert e["TORCHELASTIC_RESTART_COUNT"] == "0" and e["TORCHELASTIC_RUN_ID"] == "job"
        assert e["MASTER_ADDR"] == "127.0.0.1" and int(e["MASTER_PORT"]) > 0
        assert e["TORCHELASTIC_ERROR_FILE"].endswith(f"error-0-{r}.json")
    # torchrun sets the same variables for the same script.
    if shutil.which("torchrun"):
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = base_env(tmp_path)
        subprocess.run(["torchrun", "--nnodes=1", "--nproc_per_node=2", "--rdzv_backend=c10d",
                        f"--rdzv_endpoint=127.0.0.1:{port}", "--redirects=2", "--tee=2",
                        str(script), str(theirs)], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        ref = json.loads((theirs / "env-0.json").read_text())
        assert {k for k, v in ref.items() if v is not None} <= set(got[0]), ref


def test_a_poisoned_rank_that_ignores_term_is_killed_at_once_and_all_ranks_resume(tmp_path):
    # Rank 1 prints the illegal memory access and stays alive, deaf to TERM;
    # rank 0 blocks in the next all-reduce. The stall proves it, the tree is
    # killed at once (a --kill-grace of 600 s is never waited for), both
    # ranks resume from step 6 and end as a fault-free 2-rank run under
    # torchrun does.
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-illegal-address:step=8:once")
    run = Run(exec_args(tmp_path, "--nproc-per-node", "2", "--kill-grace", "600",
                        "--stall-timeout", "3",
                        script_args=["--fault-rank", "1", "--on-fault", "hang",
                                     "--ignore-term"]), env)
    assert run.wait(240) == 0, run.output()
    out = run.output()
    assert "killing rank 1 (the poisoned one)" in out, out
    assert "did not stop within its grace" not in out
    assert out.count("resumed from step 6") == 2, out
    assert _final(tmp_path) == _torchrun_reference(tmp_path)
    inc = incidents(tmp_path / "state")
    assert len(inc) == 1 and inc[0]["exec"]["rank"] == 1, inc


def _torchrun_reference(tmp):
    """The fault-free 2-rank job's final parameters under plain torchrun."""
    import shutil
    import socket
    import subprocess
    from exec_harness import SOURCE, TRAIN
    if not shutil.which("torchrun"):
        pytest.skip("torchrun not installed (python3-torch)")
    d = tmp / "ref2"
    d.mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = base_env(d, KGUARD_BIN=BIN, KGUARD_CKPT_DIR=str(d / "ckpt"),
                   KGUARD_STATE_DIR=str(d / "state"), PYTHONPATH=str(SOURCE / "python"))
    subprocess.run(["torchrun", "--nnodes=1", "--nproc_per_node=2", "--rdzv_backend=c10d",
                    f"--rdzv_endpoint=127.0.0.1:{port}", "--redirects=2", "--tee=2", str(TRAIN),
                    "--out", str(d / "out.json")], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180)
    return json.loads((d / "out.json").read_text())["params"]


def test_warm_standby_ranks_take_over_after_a_fault(tmp_path):
    # Both ranks' standbys (torch imported, no device touched) are warm
    # before rank 1 is poisoned at step 8; they become the ranks of
    # generation 1, resume from step 6 and end as the fault-free run.
    go = tmp_path / "go"
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-illegal-address:step=8:once")
    run = Run(exec_args(tmp_path, "--nproc-per-node", "2", "--standby",
                        script_args=["--fault-rank", "1", "--hold-at", "7",
                                     "--hold-file", str(go)]), env)
    run.wait_line("warm standby for rank 0 ready", timeout=180)
    run.wait_line("warm standby for rank 1 ready", timeout=180)
    go.touch()
    assert run.wait(240) == 0, run.output()
    out = run.output()
    assert "cold start" not in out, out
    assert out.count("resumed from step 6") == 2, out
    # Generation 1's ranks are the standbys' processes.
    pids = {line.split("(pid ")[1].split(",")[0] for line in out.splitlines()
            if "warm standby for rank" in line and "ready" in line}
    assert len(pids) >= 2
    assert _final(tmp_path) == _torchrun_reference(tmp_path)


def test_a_standby_that_died_means_a_cold_start_said_so(tmp_path):
    import os
    import re
    import signal as sig
    go = tmp_path / "go"
    env = base_env(tmp_path, KGUARD_EMULATE="cuda-illegal-address:step=8:once")
    run = Run(exec_args(tmp_path, "--nproc-per-node", "2", "--standby",
                        script_args=["--fault-rank", "1", "--hold-at", "7",
                                     "--hold-file", str(go)]), env)
    i = run.wait_line("warm standby for rank 1 ready", timeout=180)
    os.kill(int(run.lines[i].split("(pid ")[1].split(",")[0]), sig.SIGKILL)
    run.wait_line("warm standby for rank 1 died before it was needed", timeout=60)
    go.touch()
    assert run.wait(240) == 0, run.output()
    out = run.output()
    # Its replacement may still be importing when the fault comes: either
    # way rank 1 starts cold, and says so.
    assert re.search(r"no warm standby for rank 1 \((none is running|still importing)\): "
                     r"cold start", out), out
    assert out.count("resumed from step 6") == 2, out


def test_standby_needs_kguard_to_start_a_python_program(tmp_path):
    import subprocess
    for cmd in (["torchrun", "--nproc_per_node=2", "x.py"], ["sh", "-c", "true"]):
        r = subprocess.run([BIN, "exec", "--state-dir", str(tmp_path / "s"), "--standby", "--",
                            *cmd], capture_output=True, text=True, env=base_env(tmp_path))
        assert r.returncode == 100, r.stderr
        assert "--standby needs" in r.stderr
