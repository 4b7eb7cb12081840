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
Not measured yet (issue 15): the same job under torchrun alone, bad-resume
trials, the deterministic-bug count and goodput.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--stall", type=float, default=4.0)
    a = ap.parse_args()
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
