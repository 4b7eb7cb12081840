"""What the pre-flight probe costs, as a ratio against the floor of any
helper child: `kguard --version` (one exec of the same binary, nothing else).

    /usr/bin/python3 bench/doctor/bench_preflight.py --bin build/dev/kguard [--rounds 7] [--n 20]

Per round, the two commands alternate (which goes first alternates between
rounds) n times each; the table gives each round's medians and their ratio,
then the median and the spread of the per-round figures. On a GPU machine the
pre-flight's own work (context creation, the PTX JIT, one launch per device)
dominates; set KGUARD_CUDA_LIB to compare drivers. No GPU is needed: without
one the probe's cost is its two process starts and the failed dlopen.
"""
import argparse
import os
import statistics
import subprocess
import time


def once(argv):
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=20)
    a = ap.parse_args()
    probe = [a.bin, "doctor", "--preflight", "--json"]
    floor = [a.bin, "--version"]
    rows = []
    for r in range(a.rounds):
        tp, tf = [], []
        for _ in range(a.n):
            pair = [(probe, tp), (floor, tf)]
            for argv, out in (pair if r % 2 == 0 else pair[::-1]):
                out.append(once(argv))
        mp, mf = statistics.median(tp), statistics.median(tf)
        rows.append((mp, mf, mp / mf, os.getloadavg()[0]))
        print("round %d: pre-flight %.1f ms, floor %.1f ms, ratio %.2f, load %.1f" % (
            r + 1, mp, mf, mp / mf, rows[-1][3]))
    for i, name in ((0, "pre-flight ms"), (1, "floor ms"), (2, "ratio")):
        v = [row[i] for row in rows]
        print("%-14s median %.2f (%.2f-%.2f)" % (name, statistics.median(v), min(v), max(v)))
    print("added per restart: %.1f ms (median of per-round differences)" % statistics.median(
        [row[0] - row[1] for row in rows]))


if __name__ == "__main__":
    main()
