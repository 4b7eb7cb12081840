"""Resilience benchmark (part): how fast `kguard exec` finds a poisoned rank
that stays alive and how fast the whole multi-node job trains again.

    sudo python3 bench/resilience/exec_resume.py [--trials 5] [--nodes 2] [--stall 4]

Hosts are network namespaces on a bridge (tests/multinode/netns.py), one
`kguard exec -- torchrun` per host, one gloo rank each, the small DDP
training of tests/exec/train_tiny.py; rank 1 gets the emulated "illegal
memory access" at step 8 and stays alive, blocked (KGUARD_EMULATE). Times
are the arrival of output lines at this script (monotonic clock):
  detect   first error line -> the fault proven on its node (the stall
           deadline, --stall, dominates: the rank is alive and silent)
  decide   proven -> every node has the coordinator's decision (stop both
           trees, TERM grace, list + verify + quarantine, restore)
  resume   decision -> every rank completed its first step after restart
           (process start, torch import, rendezvous, load)
  total    first error line -> every rank trained again
Reports median, min and max over the trials, and the machine. A short
version (one trial) runs in the test command (ctest -R bench.resilience) so
the harness cannot rot; it exits 77 (skipped) without network namespaces.
--baseline torchrun runs the same job under torchrun alone (--max_restarts 3,
no kguard): a poisoned rank that stays alive is never stopped (gloo waits
out its 30-minute timeout), so the comparison there is one trial capped at
--hang-cap seconds; with the poisoned rank raising (--on-fault raise), it is
first error line -> every rank completed a step again (from step 0: torchrun
alone has no resume of its own). The deterministic bug, bad resumes and
goodput against torchrun alone: bench/resilience/versus_torchrun.py.
"""
import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "exec"))
sys.path.insert(0, str(ROOT / "tests" / "multinode"))
os.environ.setdefault("KGUARD_BIN", str(ROOT / "build" / "dev" / "kguard"))
os.environ.setdefault("KGUARD_SOURCE_DIR", str(ROOT))

import test_multinode as tm  # noqa: E402
from netns import Hosts, NetnsUnavailable  # noqa: E402


def trial(nodes, stall):
    tm.NODES = nodes
    with tempfile.TemporaryDirectory() as d, Hosts(nodes) as h:
        shared = Path(d)
        runs = tm._start_job(h, shared, fault="cuda-illegal-address:step=8:once",
                             kg_opts=("--stall-timeout", str(stall)),
                             script_args=("--on-fault", "hang"))
        codes = [r.wait(300) for r in runs]
        if codes != [0] * nodes:
            raise SystemExit("a trial failed:\n" + "\n\n".join(r.output() for r in runs))
        f = runs[1]
        t_err = f.first_time("an illegal memory access")
        t_proof = f.first_time("proven on this node")
        t_dec = max(r.first_time("coordinator decided restart") for r in runs)
        t_step = max(r.first_time("kguard: completed step 7", after=t_dec) for r in runs)
        return {"detect": t_proof - t_err, "decide": t_dec - t_proof,
                "resume": t_step - t_dec, "total": t_step - t_err}


def trial_torchrun(nodes, on_fault, cap):
    """The same job under torchrun alone: seconds from the first error line
    to every rank training again, or None if not within cap."""
    tm.NODES = nodes
    with tempfile.TemporaryDirectory() as d, Hosts(nodes) as h:
        shared = Path(d)
        runs = []
        for i in range(nodes):
            argv = [a if not a.startswith("--max_restarts") else "--max_restarts=3"
                    for a in tm._torchrun(h, i, shared, "--fault-rank", "1",
                                          "--on-fault", on_fault)]
            extra = {"KGUARD_EMULATE": "cuda-illegal-address:step=8:once"} if i == 1 else {}
            env = tm._env(shared, KGUARD_BIN=tm.BIN, KGUARD_CKPT_DIR=str(shared / "ckpt"),
                          KGUARD_STATE_DIR=str(shared / "state"),
                          PYTHONPATH=str(tm.SOURCE / "python"), **extra)
            runs.append(tm.Run(h.argv(i, argv), env))
        try:
            for r in runs:
                r.proc.wait(cap)
        except Exception:
            pass
        t_err = runs[1].first_time("an illegal memory access")
        again = [r.first_time("kguard: completed step 1", after=t_err or 0) for r in runs]
        for r in runs:   # TERM: torchrun's agent then stops its workers
            if r.proc.poll() is None:
                r.proc.terminate()
                try:
                    r.proc.wait(20)
                except Exception:
                    r.proc.kill()
                    r.proc.wait()
        if t_err is None or None in again:
            return None
        return max(again) - t_err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--stall", type=float, default=4.0)
    ap.add_argument("--baseline", choices=["torchrun"], default=None)
    ap.add_argument("--on-fault", choices=["raise", "hang"], default="raise",
                    help="--baseline: the poisoned rank raises (dies) or stays alive")
    ap.add_argument("--hang-cap", type=float, default=120.0)
    a = ap.parse_args()
    if a.baseline:
        try:
            v = [trial_torchrun(a.nodes, a.on_fault, a.hang_cap) for _ in range(a.trials)]
        except NetnsUnavailable as e:
            print(f"skipped: network namespaces unavailable: {e}")
            sys.exit(77)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
        print(f"torchrun alone (--max_restarts 3), {a.nodes} hosts (netns), poisoned rank "
              f"{'raises' if a.on_fault == 'raise' else 'stays alive'}, {a.trials} trials")
        got = [x for x in v if x is not None]
        if got:
            print(f"  total   median {statistics.median(got):6.2f} s   min {min(got):6.2f}   "
                  f"max {max(got):6.2f}")
        if len(got) < len(v):
            print(f"  {len(v) - len(got)} trial(s) not training again within {a.hang_cap:g} s")
        return
    try:
        rows = [trial(a.nodes, a.stall) for _ in range(a.trials)]
    except NetnsUnavailable as e:
        print(f"skipped: network namespaces unavailable: {e}")
        sys.exit(77)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    print(f"{a.nodes} hosts (netns), 1 gloo rank each, stall deadline {a.stall} s, "
          f"{a.trials} trials")
    for k in ("detect", "decide", "resume", "total"):
        v = [r[k] for r in rows]
        print(f"  {k:7s} median {statistics.median(v):6.2f} s   min {min(v):6.2f}   "
              f"max {max(v):6.2f}")


if __name__ == "__main__":
    main()
