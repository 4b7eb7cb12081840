"""A job that tells kguard its pace without printing a progress line: a
step every --step-s seconds, kguard.save every --save-every steps (and,
with --step-calls, kguard.step(n) after every step). At --fault-step it
raises a CUDA error, catches it, prints its traceback and blocks, as a rank
stuck in its next collective does: it neither exits nor prints again."""
import argparse
import sys
import time
import traceback

import kguard


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--step-s", type=float, default=0.1)
    ap.add_argument("--save-every", type=int, default=5, help="0: never save")
    ap.add_argument("--step-calls", action="store_true", help="kguard.step(n) after each step")
    ap.add_argument("--fault-step", type=int, default=-1)
    a = ap.parse_args()
    r = kguard.resume()
    start = r.step + 1 if r else 1
    for n in range(start, a.steps + 1):
        time.sleep(a.step_s)   # the step's work
        if n == a.fault_step and not r:
            try:
                raise RuntimeError("CUDA error: device-side assert triggered")
            except RuntimeError:
                traceback.print_exc()
                sys.stderr.flush()
                time.sleep(3600)   # blocked in the next collective
        if a.step_calls:
            kguard.step(n)
        if a.save_every and n % a.save_every == 0:
            kguard.save({"step": n}, n)


if __name__ == "__main__":
    main()
