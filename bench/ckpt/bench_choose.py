#!/usr/bin/python3
"""The start-time choice among many archives (a documented command, not a
test): what `kguard.resume(latest=True)` and a requeue pay to find the run's
last consistent checkpoint.

    /usr/bin/python3 bench/ckpt/bench_choose.py [--bin build/ci/kguard]
                                  [--archives 100] [--mib 64] [--rounds 5]

Seals --archives checkpoints of one run (one member of --mib MiB of random
bytes each; one in ten of another run) into a temporary directory, then
times, --rounds times (warm page cache), `kguard ckpt latest DIR --json
--run R` (manifests authenticated, the chosen archive verified once) against
`kguard ckpt verify` of that one archive alone and `kguard ckpt manifest`
of every archive: the choice should cost one verify plus the manifests.
Prints the median of each.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd, env):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/ci/kguard")
    ap.add_argument("--archives", type=int, default=100)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    kg = os.path.abspath(a.bin)
    with tempfile.TemporaryDirectory(prefix="kg-bench-choose-") as tmp:
        env = dict(os.environ, KGUARD_KEY_DIR=os.path.join(tmp, "keys"))
        ck, payload = os.path.join(tmp, "ck"), os.path.join(tmp, "payload")
        os.makedirs(payload)
        with open(os.path.join(payload, "state.pt"), "wb") as f:
            f.write(os.urandom(a.mib << 20))
        t0 = int(time.time() * 1000) - a.archives * 1000
        for i in range(a.archives):
            run_id = "other" if i % 10 == 9 else "bench"
            subprocess.run([kg, "ckpt", "seal", payload, "--step", str(i), "--run", run_id,
                            "--into", ck, "--time", str(t0 + i * 1000), "--progress=none"],
                           check=True, stdout=subprocess.DEVNULL, env=env)
        names = sorted(os.listdir(ck))
        chosen = os.path.join(ck, names[-2])      # the newest of run "bench"
        rows = {"latest --json (the choice)": [kg, "ckpt", "latest", ck, "--json", "--run",
                                                "bench", "--progress=none"],
                "verify of the chosen one": [kg, "ckpt", "verify", chosen, "--progress=none"],
                f"{a.archives} x ckpt manifest (processes)": None}
        got = {k: [] for k in rows}
        for _ in range(a.rounds):
            for k, cmd in rows.items():
                if cmd is None:
                    t = time.perf_counter()
                    for n in names:
                        subprocess.run([kg, "ckpt", "manifest", os.path.join(ck, n)],
                                       check=True, stdout=subprocess.DEVNULL, env=env)
                    got[k].append(time.perf_counter() - t)
                else:
                    got[k].append(timed(cmd, env))
        print(f"{a.archives} archives of {a.mib} MiB, {a.rounds} rounds, warm cache, "
              f"{os.cpu_count()} cores")
        for k, v in got.items():
            print(f"  {k:32s} median {statistics.median(v) * 1000:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
