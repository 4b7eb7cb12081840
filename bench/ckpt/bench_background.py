#!/usr/bin/python3
"""Training-loop time saved by kguard.save(..., background=True) (a
documented command, not a test).

    /usr/bin/python3 bench/ckpt/bench_background.py [--bin build/dev/kguard]
                                                    [--size-mib 512] [--rounds 5]

In one process, for --rounds interleaved rounds: the time kguard.save()
blocks the caller with background=False (write + device sync + seal) and
with background=True (write + device sync; the seal runs in another
process; each round waits for it before the next, outside the timing).
Prints medians with min-max and the ratio background / foreground.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "..", "build", "dev", "kguard"))
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kg-bench-bg-")
    os.environ.update(KGUARD_BIN=os.path.abspath(a.bin), KGUARD_KEY_DIR=os.path.join(root, "k"),
                      KGUARD_CKPT_DIR=os.path.join(root, "ck"))
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    import torch
    import kguard

    state = {"w": torch.frombuffer(bytearray(os.urandom(a.size_mib << 20)), dtype=torch.uint8)}
    fg, bg, step = [], [], 0
    try:
        for r in range(a.rounds):
            for mode in (("fg", "bg") if r % 2 == 0 else ("bg", "fg")):
                step += 1
                t0 = time.perf_counter()
                h = kguard.save(state, step, background=(mode == "bg"))
                dt = time.perf_counter() - t0
                if mode == "bg":
                    h.wait()
                (bg if mode == "bg" else fg).append(dt)
                shutil.rmtree(os.environ["KGUARD_CKPT_DIR"], ignore_errors=True)
        ratio = [b / f for b, f in zip(bg, fg)]
        print(f"{a.size_mib} MiB state, {a.rounds} rounds, {os.cpu_count()} cores")
        print(f"foreground save blocks {statistics.median(fg):.2f} s ({min(fg):.2f}-{max(fg):.2f})")
        print(f"background save blocks {statistics.median(bg):.2f} s ({min(bg):.2f}-{max(bg):.2f})")
        print(f"background / foreground {statistics.median(ratio):.2f} "
              f"({min(ratio):.2f}-{max(ratio):.2f}); time saved per save "
              f"{statistics.median(fg) - statistics.median(bg):.2f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
