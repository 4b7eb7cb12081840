"""`kguard exec` on several hosts: network namespaces on a bridge (netns.py),
one `kguard exec -- torchrun` per host, one gloo rank per host running a
small real DDP training (tests/exec/train_tiny.py) with kguard.save/resume,
and the labelled CPU emulation of GPU faults on one rank only.

The training is deterministic per step, so a job resumed from the agreed
checkpoint must end with exactly the parameters of a fault-free run under
plain torchrun. Skips with the reason when network namespaces cannot be
made (not root, no `ip netns`)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "exec"))
from exec_harness import BIN, GAVE_UP, PYTHON, RETRYABLE, SOURCE, TRAIN, Run, incidents  # noqa: E402
from netns import Hosts, NetnsUnavailable  # noqa: E402

import shutil  # noqa: E402

pytestmark = [pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set"),
              pytest.mark.skipif(not shutil.which("torchrun"),
                                 reason="torchrun not installed (python3-torch)")]
NODES = 2
STEPS = 12


@pytest.fixture
def hosts():
    try:
        with Hosts(NODES) as h:
            yield h
    except NetnsUnavailable as e:
        pytest.skip(f"multi-node fixture unavailable: {e}")


def _env(shared, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGUARD_")}
    env.update(GLOO_SOCKET_IFNAME="eth0", KGUARD_KEY_DIR=str(shared / "keys"),
               PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def _torchrun(h, i, shared, *script_args):
    return ["torchrun", f"--nnodes={NODES}", "--nproc_per_node=1", f"--node_rank={i}",
            f"--master_addr={h.addrs[0]}", "--master_port=29500", "--redirects=2", "--tee=2",
            "--max_restarts=0", str(TRAIN), "--out", str(shared / "out.json"),
            "--steps", str(STEPS), *script_args]


def _secret(shared):
    p = shared / "secret"
    if not p.exists():  # a job started again keeps its secret
        p.write_bytes(os.urandom(32))
        p.chmod(0o600)
    return p


def _agent(shared, *script_args):
    """The same training with kguard as the launcher (no torchrun)."""
    return [PYTHON, str(TRAIN), "--out", str(shared / "out.json"), "--steps", str(STEPS),
            *script_args]


def _start_job(h, shared, fault=None, fault_node=1, kg_opts=(), script_args=(), agent=False,
               fault_env=None, env=None):
    secret = _secret(shared)
    runs = []
    for i in range(NODES):
        extra = dict(env or {})
        if fault and i == fault_node:
            extra["KGUARD_EMULATE"] = fault
        if i == fault_node:
            extra.update(fault_env or {})
        cmd = (_agent(shared, "--fault-rank", str(fault_node), *script_args) if agent else
               _torchrun(h, i, shared, "--fault-rank", str(fault_node), *script_args))
        argv = [BIN, "exec", "--nnodes", str(NODES), "--node-rank", str(i),
                "--coordinator", f"{h.addrs[0]}:29600", "--secret", str(secret),
                "--checkpoints", str(shared / "ckpt"), "--state-dir", str(shared / f"state{i}"),
                "--kill-grace", "3", *kg_opts, "--", *cmd]
        runs.append(Run(h.argv(i, argv), _env(shared, **extra)))
    return runs


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Final parameters of the fault-free job under plain torchrun."""
    shared = tmp_path_factory.mktemp("ref")
    try:
        with Hosts(NODES, tag=f"{os.getpid() % 10000}r") as h:
            env = _env(shared, KGUARD_BIN=BIN, KGUARD_CKPT_DIR=str(shared / "ckpt"),
                       KGUARD_STATE_DIR=str(shared / "state"), PYTHONPATH=str(SOURCE / "python"))
            logs = [open(shared / f"ref-node{i}.log", "wb") for i in range(NODES)]
            procs = [subprocess.Popen(h.argv(i, _torchrun(h, i, shared)), env=env,
                                      stdout=logs[i], stderr=subprocess.STDOUT)
                     for i in range(NODES)]
            codes = [p.wait(timeout=180) for p in procs]
            for f in logs:
                f.close()
            # plain torchrun, no kguard: when it fails, say why (its output)
            assert codes == [0] * NODES, "the reference job (plain torchrun) failed: %s\n%s" % (
                codes, "\n".join((shared / f"ref-node{i}.log").read_text(errors="replace")[-2000:]
                                 for i in range(NODES)))
    except NetnsUnavailable as e:
        pytest.skip(f"multi-node fixture unavailable: {e}")
    return json.loads((shared / "out.json").read_text())["params"]


def _assert_all_resumed(runs, tmp_path, reference, step):
    """Every node's job ends well, every rank resumed from the agreed step,
    and the final parameters equal the fault-free run's."""
    codes = [r.wait(240) for r in runs]
    assert codes == [0, 0], "\n\n".join(r.output() for r in runs)
    for r in runs:
        assert "resumed from step %d" % step in r.output(), r.output()
    assert json.loads((tmp_path / "out.json").read_text())["params"] == reference


def test_poisoned_rank_alive_on_a_peer_host_all_resume_from_the_agreed_step(hosts, tmp_path,
                                                                           reference):
    runs = _start_job(hosts, tmp_path, fault="cuda-illegal-address:step=8:once",
                      kg_opts=("--stall-timeout", "4"), script_args=("--on-fault", "hang"))
    _assert_all_resumed(runs, tmp_path, reference, 6)
    job = [i for i in incidents(tmp_path / "state0") if "job" in i]
    assert len(job) == 1
    root = job[0]["job"]["root_cause"]
    assert root["host"] == "node1" and root["rank"] == 1 and root["family"] == "illegal-address"
    assert job[0]["checkpoint"]["step"] == 6
    # The decision that starts generation 1 is gen-1.json, MAC'd with the job key.
    decisions = sorted((tmp_path / "ckpt" / ".kguard" / "decisions").glob("gen-*.json"))
    assert [p.name for p in decisions] == ["gen-1.json"]
    doc = json.loads(decisions[0].read_text())
    assert len(doc["mac"]) == 64 and json.loads(doc["decision"])["gen"] == 1


def test_kguard_as_the_launcher_poisoned_rank_alive_on_a_peer_all_resume(hosts, tmp_path,
                                                                        reference):
    # No torchrun: kguard starts each host's rank with torchrun's
    # environment (MASTER_ADDR = the coordinator's host, a port the
    # coordinator names per generation). Same job, same final parameters.
    runs = _start_job(hosts, tmp_path, fault="cuda-illegal-address:step=8:once",
                      kg_opts=("--stall-timeout", "4", "--nproc-per-node", "1"),
                      script_args=("--on-fault", "hang"), agent=True)
    _assert_all_resumed(runs, tmp_path, reference, 6)
    job = [i for i in incidents(tmp_path / "state0") if "job" in i]
    assert len(job) == 1 and job[0]["job"]["root_cause"]["rank"] == 1


def test_a_corrupt_archive_on_one_rank_makes_every_rank_fall_back_a_step(hosts, tmp_path,
                                                                          reference):
    runs = _start_job(hosts, tmp_path, fault="cuda-illegal-address:step=8:once",
                      kg_opts=("--stall-timeout", "6"), script_args=("--on-fault", "hang"))
    runs[1].wait_line("sticky error text seen", timeout=180)
    # Rank 0's archive of step 6 rots on the shared disk before the decision.
    victim = next((tmp_path / "ckpt" / "rank-0").glob("step-0000000006-*.kgckpt.tar"))
    data = bytearray(victim.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(b ^ 0xFF for b in data[mid:mid + 64])
    victim.write_bytes(bytes(data))
    _assert_all_resumed(runs, tmp_path, reference, 3)
    # Rank 1's step 6 is newer than the agreed step: quarantined, not deleted.
    assert list((tmp_path / "ckpt" / "rank-1" / "quarantine").rglob("step-0000000006-*"))


def test_a_fault_during_a_seal_quarantines_that_step_everywhere(hosts, tmp_path, reference):
    # Rank 1 is poisoned while checkpointing step 6: it never seals it, rank 0 did.
    runs = _start_job(hosts, tmp_path, fault="cuda-illegal-address:step=6:once",
                      kg_opts=("--stall-timeout", "4"),
                      script_args=("--on-fault", "hang", "--fault-at-seal"))
    _assert_all_resumed(runs, tmp_path, reference, 3)
    assert list((tmp_path / "ckpt" / "rank-0" / "quarantine").rglob("step-0000000006-*"))


def _snapshots(shared):
    """Both nodes' kguards keep snapshots in memory under the test's own
    base (each its own directory, as on two machines)."""
    base = shared / "shm"
    base.mkdir(exist_ok=True)
    return {"KGUARD_SNAPSHOT_BASE": str(base)}


def _memory_of(shared):
    """Snapshot archives left in the nodes' memory: none once both kguards
    ended (each removes its own)."""
    return sorted(p.name for p in (shared / "shm").rglob("*.kgckpt.tar"))


def test_snapshots_in_memory_restore_the_step_before_the_fault_on_every_node(hosts, tmp_path,
                                                                            reference):
    # A snapshot every step, disk checkpoints every 3: rank 1 (node 1) is
    # poisoned once step 9's all-reduce is done, before it seals step 9;
    # rank 0 completes step 9 (disk and memory), one step ahead, and blocks
    # in the next collective. Each node lists its rank's snapshots in its
    # own memory; the coordinator agrees on step 8, which both hold there
    # (a rank keeps its two newest): no step lost but the one in flight.
    runs = _start_job(hosts, tmp_path, fault="cuda-illegal-address:step=9:once",
                      kg_opts=("--stall-timeout", "4"), env=_snapshots(tmp_path),
                      script_args=("--on-fault", "hang", "--fault-at-seal",
                                   "--snapshot-every", "1", "--step-ms", "10"))
    _assert_all_resumed(runs, tmp_path, reference, 8)
    for i, r in enumerate(runs):
        out = r.output()
        assert f"exec: rank {i} restores step 8 from memory, " in out, out
        assert "ranks restored at step 8 (1 of 1 from memory)" in out, out
        assert f"train_tiny: rank {i} resumed from step 8 (" in out, out
    job = [i for i in incidents(tmp_path / "state0") if "job" in i]
    assert job[0]["checkpoint"]["tiers"] == {"0": "memory", "1": "memory"}, job[0]
    # Rank 0's step 9, on disk and in memory, is newer than the agreed step.
    assert "0" in job[0]["checkpoint"]["quarantine"], job[0]
    assert "0" in job[0]["checkpoint"]["quarantine_memory"], job[0]
    assert _memory_of(tmp_path) == []


def test_a_snapshot_one_node_cannot_trust_is_replaced_by_that_ranks_disk_archive(
        hosts, tmp_path, reference):
    # Rank 1's snapshot of step 9 is changed in node 1's memory before the
    # fault at step 10: node 1 names it and does not offer it. Step 9 is
    # still held by every rank, rank 1's on disk (sealed every 3): rank 0
    # restores from memory, rank 1 from disk, and the job ends as one
    # without a fault.
    runs = _start_job(hosts, tmp_path, fault="cuda-illegal-address:step=10:once",
                      kg_opts=("--stall-timeout", "4"), env=_snapshots(tmp_path),
                      script_args=("--on-fault", "hang", "--snapshot-every", "1",
                                   "--step-ms", "10", "--tamper-snapshot-at", "9",
                                   "--tamper-rank", "1"))
    _assert_all_resumed(runs, tmp_path, reference, 9)
    out0, out1 = runs[0].output(), runs[1].output()
    assert "ranks restored at step 9 (1 of 1 from memory)" in out0, out0
    assert "ranks restored at step 9 (0 of 1 from memory)" in out1, out1
    assert "exec: rank 1's snapshot " in out1 and " in memory is not offered: corrupt" in out1, \
        out1
    job = [i for i in incidents(tmp_path / "state0") if "job" in i]
    assert job[0]["checkpoint"]["tiers"] == {"0": "memory", "1": "disk"}, job[0]


def test_sigabrt_on_the_coordinator_host_all_resume(hosts, tmp_path, reference):
    runs = _start_job(hosts, tmp_path, fault="rocm-abort:step=8:once", fault_node=0,
                      kg_opts=("--stall-timeout", "20"))
    _assert_all_resumed(runs, tmp_path, reference, 6)
    job = [i for i in incidents(tmp_path / "state0") if "job" in i]
    assert len(job) == 1 and job[0]["job"]["root_cause"]["host"] == "node0"
    # The healthy peer's failure is recorded as a consequence, not the cause.
    assert [c["node"] for c in job[0]["job"]["consequences"]] == [1]
    # The faulting node's own record keeps the exits of its tree, filled in
    # once the tree was gone (torchrun's error file too when its agent wrote one).
    local = [i for i in incidents(tmp_path / "state0") if "exec" in i]
    assert len(local) == 1 and local[0]["exec"]["exits"], local
    assert "torchelastic_error_file" in local[0]["exec"]


def test_poisoned_rank_alive_on_the_coordinator_host_all_resume(hosts, tmp_path, reference):
    # The coordinator's own node hosts the poisoned rank, which stays alive
    # and blocks its peer in the next collective: the coordinator must still
    # decide for both (it runs outside the tree it kills).
    runs = _start_job(hosts, tmp_path, fault="cuda-illegal-address:step=8:once", fault_node=0,
                      kg_opts=("--stall-timeout", "4"), script_args=("--on-fault", "hang"))
    _assert_all_resumed(runs, tmp_path, reference, 6)
    job = [i for i in incidents(tmp_path / "state0") if "job" in i]
    assert len(job) == 1
    root = job[0]["job"]["root_cause"]
    assert root["host"] == "node0" and root["rank"] == 0 and root["family"] == "illegal-address"


def test_nccl_watchdog_abort_on_a_peer_host_all_resume(hosts, tmp_path, reference):
    # PyTorch's NCCL watchdog meets the device-side assert, writes its abort
    # lines and takes the process down with SIGABRT (emulated text and abort).
    runs = _start_job(hosts, tmp_path, fault="nccl-abort:step=8:once", fault_node=1,
                      kg_opts=("--stall-timeout", "20"))
    _assert_all_resumed(runs, tmp_path, reference, 6)
    job = [i for i in incidents(tmp_path / "state0") if "job" in i]
    assert len(job) == 1
    root = job[0]["job"]["root_cause"]
    assert root["host"] == "node1" and root["rank"] == 1, root
    assert [c["node"] for c in job[0]["job"]["consequences"]] == [0]


def test_same_fault_twice_ends_the_job_with_the_permanent_code(hosts, tmp_path):
    runs = _start_job(hosts, tmp_path, fault="cuda-assert:step=5",
                      kg_opts=("--stall-timeout", "4", "--max-restarts", "5"))
    codes = [r.wait(240) for r in runs]
    assert codes == [GAVE_UP, GAVE_UP], "\n\n".join(r.output() for r in runs)
    for r in runs:
        assert r.count("exec: started") == 2, r.output()


def test_checkpoints_no_node_can_verify_end_the_job_instead_of_a_silent_start_over(hosts,
                                                                                  tmp_path):
    # The nodes verify each other's key probes, but the ranks seal with
    # another key: after the fault the archives of steps 3 and 6 exist and
    # none verifies. Both nodes stop with the permanent code, saying why.
    runs = _start_job(hosts, tmp_path, fault="cuda-assert:step=8:once",
                      kg_opts=("--stall-timeout", "4"),
                      script_args=("--sign-with-keys", str(tmp_path / "other-keys")))
    codes = [r.wait(240) for r in runs]
    assert codes == [GAVE_UP, GAVE_UP], "\n\n".join(r.output() for r in runs)
    for r in runs:
        assert "does not start over" in r.output(), r.output()
        assert r.count("exec: started") == 1, r.output()


def test_sigterm_preemption_on_one_node_ends_the_job_retryable(hosts, tmp_path):
    runs = _start_job(hosts, tmp_path, script_args=("--wait-signal-at", "4"))
    runs[0].wait_line("waiting for a pre-emption signal", timeout=120)
    runs[1].wait_line("waiting for a pre-emption signal", timeout=120)
    runs[1].signal(signal.SIGTERM)
    codes = [r.wait(120) for r in runs]
    assert codes == [RETRYABLE, RETRYABLE], "\n\n".join(r.output() for r in runs)
    # The pre-empted node's rank had the grace to seal the step it was on.
    assert any(p.name.startswith("step-0000000004-")
               for p in (tmp_path / "ckpt" / "rank-1").iterdir()), runs[1].output()


def test_requeue_the_same_commands_after_a_sigterm_resume_from_the_last_common_step(
        hosts, tmp_path, reference):
    # A requeue: SIGTERM to node 0 while steps 3 and 4 are sealed on both ranks.
    def start():
        return _start_job(hosts, tmp_path, script_args=("--wait-signal-at", "4"))
    runs = start()
    for r in runs:
        r.wait_line("waiting for a pre-emption signal", timeout=120)
    runs[0].signal(signal.SIGTERM)
    codes = [r.wait(120) for r in runs]
    assert codes == [RETRYABLE, RETRYABLE], "\n\n".join(r.output() for r in runs)
    for rank in range(NODES):
        assert any(p.name.startswith("step-0000000004-")
                   for p in (tmp_path / "ckpt" / f"rank-{rank}").iterdir())
    runs = start()  # the same two commands; from step 0 they would wait at step 4 again
    try:
        for r in runs:
            r.wait_line("exec: resuming run exec from step 4, sealed by all 2 ranks and "
                        "verified on 2 nodes", timeout=90)
    except AssertionError:
        for r in runs:
            r.proc.kill()
        raise
    _assert_all_resumed(runs, tmp_path, reference, 4)


def _left_over(shared, timeout=20):
    """Pids of processes whose command line names this test's directory
    (a killed kguard's workers), once none is left or timeout seconds
    passed; those still there are SIGKILLed so that the test leaves none."""
    deadline = time.monotonic() + timeout
    while True:
        pids = []
        for p in Path("/proc").iterdir():
            try:
                if p.name.isdigit() and int(p.name) != os.getpid() and str(shared) in (
                        p / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(p.name))
            except (OSError, ValueError):
                pass
        if not pids or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # polling /proc: no event tells that another's process ended
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def test_requeue_after_a_nodes_kguard_was_killed_resumes_from_disk_not_its_memory(
        hosts, tmp_path, reference):
    # Both ranks hold step 5 in memory (disk: step 3) when node 1's kguard
    # is killed: its memory is left without an owner, and node 0 ends the
    # job once node 1 is silent. Started again, the job resumes from the
    # disk's step 3 on both nodes, and the dead kguard's memory is removed.
    env = _snapshots(tmp_path)

    def start(*extra):
        return _start_job(hosts, tmp_path, kg_opts=("--heartbeat-timeout", "4"), env=env,
                          script_args=("--snapshot-every", "1", *extra))
    runs = start("--wait-signal-at", "5")
    for r in runs:
        r.wait_line("waiting for a pre-emption signal", timeout=120)
    runs[1].signal(signal.SIGKILL)
    assert runs[0].wait(120) == RETRYABLE, runs[0].output()
    runs[1].wait(60)
    # The killed kguard's tree went with it: torchrun and its worker too.
    assert _left_over(tmp_path) == []
    assert any(n.startswith("step-0000000005-") for n in _memory_of(tmp_path)), \
        _memory_of(tmp_path)
    runs = start()
    try:
        for r in runs:
            r.wait_line("exec: resuming run exec from step 3, sealed by all 2 ranks", timeout=90)
    except AssertionError:
        for r in runs:
            r.proc.kill()
        raise
    _assert_all_resumed(runs, tmp_path, reference, 3)
    assert any("removed the in-memory snapshots of a kguard that is gone" in r.output()
               for r in runs), "\n\n".join(r.output() for r in runs)
    assert _memory_of(tmp_path) == []


def test_a_network_link_down_is_infrastructure_not_gpu(hosts, tmp_path):
    runs = _start_job(hosts, tmp_path, kg_opts=("--heartbeat-timeout", "4"),
                      script_args=("--wait-signal-at", "4"))
    runs[1].wait_line("waiting for a pre-emption signal", timeout=120)
    subprocess.run(["ip", "link", "set", hosts.veth(1), "down"], check=True)
    codes = [r.wait(120) for r in runs]
    assert codes == [RETRYABLE, RETRYABLE], "\n\n".join(r.output() for r in runs)
    assert incidents(tmp_path / "state0") == [] and incidents(tmp_path / "state1") == []
    assert "lost" in runs[0].output() and "lost" in runs[1].output()


def test_a_node_without_the_shared_directory_refuses(hosts, tmp_path):
    secret = _secret(tmp_path)
    runs = []
    for i in range(NODES):
        argv = [BIN, "exec", "--nnodes", str(NODES), "--node-rank", str(i),
                "--coordinator", f"{hosts.addrs[0]}:29600", "--secret", str(secret),
                "--checkpoints", str(tmp_path / f"local-ckpt{i}"),
                "--state-dir", str(tmp_path / f"state{i}"), "--", "true"]
        runs.append(Run(hosts.argv(i, argv), _env(tmp_path)))
    assert runs[1].wait(60) == 100, runs[1].output()
    assert "shared checkpoint directory" in runs[1].output()
    runs[0].signal(signal.SIGTERM)
    runs[0].wait(60)


FAKE_NVML = os.environ.get("KG_FAKE_NVML_LIB", "")


@pytest.mark.skipif(not FAKE_NVML, reason="KG_FAKE_NVML_LIB not set")
def test_a_gpu_needing_a_reset_on_a_peer_host_ends_the_job_with_200_naming_the_node(hosts,
                                                                                    tmp_path):
    # Node 1's rank meets an uncorrectable ECC error at every start (the
    # labelled emulation); its GPU, read through the labelled fake NVML
    # there only, is clean at the start and not after the fault. The job
    # must not restart on it (which would end with 86 on the second
    # fault): every node ends with 200 naming node 1 and its GPU.
    runs = _start_job(hosts, tmp_path, fault="cuda-ecc:step=5", fault_node=1,
                      kg_opts=("--stall-timeout", "4", "--max-restarts", "5"),
                      fault_env={"KGUARD_NVML_LIB": FAKE_NVML, "KG_FAKE_NVML": "ecc-grow:after=1"})
    codes = [r.wait(240) for r in runs]
    assert codes == [RETRYABLE, RETRYABLE], "\n\n".join(r.output() for r in runs)
    named = ("drain node 1 (host node1): GPU 0 (UUID GPU-kguard-fake-0, PCI bus id "
             "00000000:00:00.0) needs a reset: its uncorrectable ECC error count grew from 0 to 2")
    for r in runs:
        assert r.count("exec: started") == 1, r.output()     # never restarted
        assert "exit 200 (retryable on other hardware: " + named in r.output(), r.output()
    (job,) = [i for i in incidents(tmp_path / "state0") if "job" in i]
    assert job["policy"]["decision"] == "hardware" and job["action"] == "drain this node", job
    assert job["drain_node"] == 1 and job["drain_host"] == "node1", job
    gh = job["gpu_health"]
    assert gh["verdict"] == "needs-reset" and gh["device"]["uuid"] == "GPU-kguard-fake-0", gh
    # Node 1's own record carries the reading it sent.
    local = [i for i in incidents(tmp_path / "state1") if "gpu_health" in i]
    assert len(local) == 1 and local[0]["gpu_health"]["verdict"] == "needs-reset", local
