"""A training stand-in for the detection benchmark (bench/resilience/detect.py):
no torch import (so a trial starts in ~0.1 s), steps of --step-ms (sleep:
the device's time, the CPU idle), "kguard: completed step N" after each.

  --noise          every step writes one of: a UserWarning, a
                   DeprecationWarning, a caught non-GPU traceback, a caught
                   traceback whose text is PyTorch's CUDA device-side assert
                   (the device is healthy: the script printed an error it
                   handled), a caught CUDA out-of-memory traceback, a gloo
                   warning line; in turn
  --fault-step K   at step K the rank prints PyTorch's illegal memory access
                   traceback (emulated text, kguard.emulate.message) on fd 2;
                   --on-fault hang: it stays alive and blocked, as a poisoned
                   rank in its next collective; die: it exits 1
Times (time.time(), this machine's clock) go to --report as JSON lines:
{"event": "error-line", "t"} just before the fault's first line is written,
{"event": "term", "t"} when SIGTERM arrives (then exit 143), {"event": "done"}.
"""
import argparse
import json
import os
import signal
import sys
import time
import traceback
import warnings

from kguard import emulate

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=100)
ap.add_argument("--step-ms", type=float, default=50)
ap.add_argument("--noise", action="store_true")
ap.add_argument("--fault-step", type=int, default=0)
ap.add_argument("--on-fault", choices=["hang", "die"], default="hang")
ap.add_argument("--report", required=True)
a = ap.parse_args()


def report(event, **kw):
    with open(a.report, "a") as f:
        f.write(json.dumps(dict(event=event, t=time.time(), pid=os.getpid(), **kw)) + "\n")


def on_term(signo, frame):
    report("term")
    os._exit(143)


signal.signal(signal.SIGTERM, on_term)
warnings.simplefilter("always")


def noise(n):
    k = n % 6
    if k == 0:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass "
                      "the indexing argument.", UserWarning)
    elif k == 1:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated.", DeprecationWarning)
    elif k == 2:
        try:
            {}["labels"]
        except KeyError:
            traceback.print_exc()
    elif k == 3:
        # A caught GPU error text on a healthy device: e.g. a test of an
        # error handler, or a message logged from another process's report.
        try:
            raise RuntimeError(emulate.message("cuda-assert")[0])
        except RuntimeError:
            traceback.print_exc()
            print("(caught; the device is healthy, training goes on)", file=sys.stderr)
    elif k == 4:
        try:
            raise RuntimeError(emulate.message("cuda-oom")[0])
        except RuntimeError:
            traceback.print_exc()
    else:
        print("[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a "
              "(local) address. Using the loopback address as fallback.", file=sys.stderr)
    sys.stderr.flush()


for n in range(1, a.steps + 1):
    if n == a.fault_step:
        text = emulate.message("cuda-illegal-address")[0]
        report("error-line", step=n)
        os.write(2, ("Traceback (most recent call last):\n  File \"train.py\", line 88, in "
                     "<module>\n    loss.backward()\ntorch.AcceleratorError: " + text).encode())
        if a.on_fault == "die":
            sys.exit(1)
        while True:
            signal.pause()
    time.sleep(a.step_ms / 1000)   # the device's share of a step
    if a.noise:
        noise(n)
    print(f"kguard: completed step {n}", flush=True)
report("done", step=a.steps)
