#!/usr/bin/python3
"""What an in-memory snapshot costs, and what a restore from memory takes,
against memcpy of the same bytes (a documented command, not a test).

    /usr/bin/python3 bench/ckpt/bench_snapshot.py [--bin build/ci/kguard]
                                  [--mib 256,1024] [--rounds 5]

For each state size (one float32 tensor of --mib MiB, as a model's
parameters would be), --rounds times:

  memcpy      dst.copy_(src) of the same bytes (the floor of any copy)
  direct      torch.save of the state into a file on tmpfs (what a script
              would do by hand, nothing verified)
  snapshot    kguard.snapshot(state, step): the call (what the training step
              waits for: the copy into kguard's memory, the device sync) and
              until sealed (hashing and signing, in the background)
  restore     kguard ckpt resume-prepare --memory (the snapshot verified where
              it lies, as after a fault) plus Resume.load() (torch.load of the
              member read from memory, each chunk checked): the restore a
              restarted process waits for; and torch.load of the direct file

Prints medians with min and max, per GiB, and the ratios to memcpy.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stats(v):
    return f"median {statistics.median(v):.3f}  min {min(v):.3f}  max {max(v):.3f} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "build" / "ci" / "kguard"))
    ap.add_argument("--mib", default="256,1024")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    kg = os.path.abspath(a.bin)
    if not os.access(kg, os.X_OK):
        print(f"skipped: no kguard binary at {kg} (--bin)")
        return 77
    base = tempfile.mkdtemp(prefix="kg-bench-snap-", dir="/dev/shm")
    os.chmod(base, 0o700)
    mem = os.path.join(base, "memory")
    os.mkdir(mem, 0o700)
    work = tempfile.mkdtemp(prefix="kg-bench-snap-")
    os.environ.update(KGUARD_BIN=kg, KGUARD_SNAPSHOT_DIR=mem, KGUARD_RUN_ID="bench",
                      KGUARD_KEY_DIR=os.path.join(work, "keys"),
                      KGUARD_CKPT_DIR=os.path.join(work, "ckpt"))
    sys.path.insert(0, str(ROOT / "python"))
    import torch
    import kguard
    from kguard.checkpoint import Resume

    print(f"machine: {os.cpu_count()} cores, torch threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    step = 0
    try:
        for mib in [int(x) for x in a.mib.split(",") if x]:
            n = mib * (1 << 20) // 4
            src = torch.randn(n)
            dst = torch.empty_like(src)
            state = {"w": src}
            gib = mib / 1024
            t = {k: [] for k in ("memcpy", "direct", "call", "sealed", "verify", "load",
                                 "restore", "direct_load")}
            for _ in range(a.rounds):
                t0 = time.perf_counter()
                dst.copy_(src)
                t["memcpy"].append(time.perf_counter() - t0)
                plain = os.path.join(base, "direct.pt")
                t0 = time.perf_counter()
                torch.save(state, plain)
                t["direct"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                torch.load(plain)
                t["direct_load"].append(time.perf_counter() - t0)
                os.unlink(plain)
                step += 1
                t0 = time.perf_counter()
                snap = kguard.snapshot(state, step)
                t["call"].append(time.perf_counter() - t0)
                snap.wait()
                t["sealed"].append(time.perf_counter() - t0)
                before = str(int(time.time() * 1000) + 1000)
                t0 = time.perf_counter()
                out = subprocess.run(
                    [kg, "ckpt", "resume-prepare", "--dir", os.path.join(work, "ckpt"),
                     "--memory", mem, "--before", before, "--incident", f"bench{step}",
                     "--into", os.path.join(work, "restored"), "--run", "bench", "--json",
                     "--progress=none"], check=True, stdout=subprocess.PIPE, text=True).stdout
                t["verify"].append(time.perf_counter() - t0)
                j = json.loads(out)
                assert j["status"] == "restored" and j.get("tier") == "memory", j
                t0 = time.perf_counter()
                r = Resume(j["dir"] or None, j["step"], j["archive"], j["digest"])
                got = r.load()
                t["load"].append(time.perf_counter() - t0)
                t["restore"].append(t["verify"][-1] + t["load"][-1])
                assert torch.equal(got["w"], src)
                del got, r
            mc = statistics.median(t["memcpy"])
            print(f"state {mib} MiB ({a.rounds} rounds):")
            for k, words in (("memcpy", "memcpy (dst.copy_)"),
                             ("direct", "torch.save to tmpfs"),
                             ("call", "kguard.snapshot returns"),
                             ("sealed", "kguard.snapshot sealed"),
                             ("verify", "restore: verify in memory"),
                             ("load", "restore: Resume.load()"),
                             ("restore", "restore: total"),
                             ("direct_load", "torch.load from tmpfs")):
                med = statistics.median(t[k])
                print(f"  {words:28s} {stats(t[k])}; {med / gib:.3f} s/GiB; "
                      f"{med / mc:.1f} x memcpy")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
