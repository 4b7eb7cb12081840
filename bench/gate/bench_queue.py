#!/usr/bin/python3
"""What kguard's one-execute-in-flight queue costs per cell.

    /usr/bin/python3 bench/gate/bench_queue.py --kguard build/kguard \
        [--baseline OTHER_KGUARD] [--cells 200] [--rounds 5]

kguard forwards the next queued execute_request only once the previous one's
reply has reached it (so a cell never waits inside a kernel that may be
poisoned). With plain ipykernel the next request is already in the kernel's
queue. This measures, per path (ipykernel directly, kguard, and optionally a
baseline kguard binary, e.g. one built before the queue existed):
  * "Run All": N cells of `pass` sent at once, time until the last reply and
    idle, per cell,
  * one cell at a time: median round trip of execute_request("pass").
Paths are interleaved round by round; medians over rounds. A benchmark, not a
test: it asserts nothing.
"""
import argparse
import json
import os
import queue
import statistics
import tempfile
import time

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

DIRECT = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def write_spec(root, name, argv):
    d = os.path.join(root, "kernels", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": argv, "display_name": name, "language": "python"}, f)


def drain_until(kc, want_replies, want_idles, deadline):
    """Collect replies and idles for the given msg_ids."""
    replies, idles = set(), set()
    while not (want_replies <= replies and want_idles <= idles):
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        try:
            m = kc.get_shell_msg(timeout=0.001)
            replies.add(m["parent_header"].get("msg_id"))
            continue
        except queue.Empty:
            pass
        try:
            m = kc.get_iopub_msg(timeout=0.01)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                idles.add(m["parent_header"].get("msg_id"))
        except queue.Empty:
            pass


def run_all(kc, n):
    t0 = time.perf_counter()
    ids = {kc.execute("pass") for _ in range(n)}
    drain_until(kc, ids, ids, time.monotonic() + 120)
    return (time.perf_counter() - t0) / n


def round_trip(kc, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        i = kc.execute("pass")
        drain_until(kc, {i}, {i}, time.monotonic() + 30)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kguard", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--cells", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kg-bench-gate-")
    os.environ["KGUARD_STATE_DIR"] = os.path.join(root, "state")
    paths = {"ipykernel": DIRECT,
             "kguard": [os.path.abspath(a.kguard), "kernel", "-f", "{connection_file}", "--"]
             + DIRECT}
    if a.baseline:
        paths["baseline"] = [os.path.abspath(a.baseline), "kernel", "-f", "{connection_file}",
                             "--"] + DIRECT
    for name, argv in paths.items():
        write_spec(root, name, argv)
    ksm = KernelSpecManager(kernel_dirs=[os.path.join(root, "kernels")])
    clients = {}
    for name in paths:
        km = KernelManager(kernel_name=name, kernel_spec_manager=ksm)
        km.start_kernel(cwd=root)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        run_all(kc, 20)   # warm-up
        clients[name] = (km, kc)
    res = {name: {"run_all": [], "rtt": []} for name in paths}
    for _ in range(a.rounds):
        for name, (km, kc) in clients.items():
            res[name]["run_all"].append(run_all(kc, a.cells))
            res[name]["rtt"].append(round_trip(kc, 50))
    for name, (km, kc) in clients.items():
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    base = statistics.median(res["ipykernel"]["run_all"])
    print("%-10s %18s %14s %18s" % ("path", "Run All µs/cell", "vs ipykernel", "round trip µs"))
    for name, r in res.items():
        ra = statistics.median(r["run_all"])
        print("%-10s %18.0f %14.2f %18.0f" % (name, ra * 1e6, ra / base,
                                             statistics.median(r["rtt"]) * 1e6))


if __name__ == "__main__":
    main()
