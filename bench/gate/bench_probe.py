#!/usr/bin/python3
"""What the device probe costs (issue 16): from the end of a cell that
printed GPU error text (a suspicion) to kguard's decision.

    /usr/bin/python3 bench/gate/bench_probe.py --kguard build/dev/kguard \
        [--cells 50] [--rounds 5]

Per round, through one guarded kernel, interleaved cell by cell: N cells that print a
plain line (baseline) and N cells that print "RuntimeError: CUDA error:
device-side assert triggered" (each a suspicion: kguard holds the cell's
reply and idle, runs its silent probe, finds a healthy device on this CPU
machine and lets them go). Reported: median round trip per cell of each,
their difference (the probe's cost as a user sees it), the spread over
rounds, and the probe times kguard logged ("device probe passed after N
ms": its own view, from sending the probe to its reply). A benchmark, not a
test: it asserts nothing.
"""
import argparse
import glob
import json
import os
import queue
import re
import statistics
import subprocess
import tempfile
import time

from jupyter_client import KernelManager

PLAIN = "print('epoch 3 loss 0.25')"
SUSPECT = "print('RuntimeError: CUDA error: device-side assert triggered')"


def round_trip(kc, code):
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    got_reply = got_idle = False
    while not (got_reply and got_idle):
        try:
            m = kc.get_shell_msg(timeout=0.001)
            got_reply |= m["parent_header"].get("msg_id") == msg_id
        except queue.Empty:
            pass
        try:
            m = kc.get_iopub_msg(timeout=0.005)
            got_idle |= (m["parent_header"].get("msg_id") == msg_id
                         and m["msg_type"] == "status"
                         and m["content"]["execution_state"] == "idle")
        except queue.Empty:
            pass
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kguard", required=True)
    ap.add_argument("--cells", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kg-bench-probe-")
    os.environ["KGUARD_STATE_DIR"] = os.path.join(root, "state")
    os.environ["JUPYTER_PATH"] = root
    d = os.path.join(root, "kernels", "kg")
    os.makedirs(d)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": [os.path.abspath(a.kguard), "kernel", "-f", "{connection_file}",
                            "--", "/usr/bin/python3", "-m", "ipykernel_launcher", "-f",
                            "{connection_file}"],
                   "display_name": "kg", "language": "python"}, f)
    km = KernelManager(kernel_name="kg")
    km.start_kernel(stderr=subprocess.DEVNULL)   # kguard logs a line per probe
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    plain, suspect = [], []
    try:
        for _ in range(a.rounds):
            p, s = [], []
            for _ in range(a.cells):   # interleaved cell by cell
                p.append(round_trip(kc, PLAIN))
                s.append(round_trip(kc, SUSPECT))
            plain.append(statistics.median(p) * 1e3)
            suspect.append(statistics.median(s) * 1e3)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    logs = "".join(open(p).read() for p in glob.glob(os.path.join(
        os.environ["KGUARD_STATE_DIR"], "logs", "kguard-*.log")))
    probe = [int(x) for x in re.findall(r"device probe passed after (\d+) ms", logs)]
    diff = [s - p for p, s in zip(plain, suspect)]

    def q(xs):
        xs = sorted(xs)
        return "%.2f (rounds %.2f-%.2f)" % (statistics.median(xs), xs[0], xs[-1])
    print("plain cell round trip, ms:      ", q(plain))
    print("suspect cell round trip, ms:    ", q(suspect))
    print("probe cost per suspect cell, ms:", q(diff))
    if probe:
        qs = statistics.quantiles(probe, n=4) if len(probe) > 1 else [probe[0]] * 3
        print("kguard's logged probe time, ms:  median %d (quartiles %d-%d, n=%d)"
              % (statistics.median(probe), qs[0], qs[2], len(probe)))


if __name__ == "__main__":
    main()
