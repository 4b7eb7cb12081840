#!/usr/bin/python3
"""Heartbeat latency and peak memory of kguard while a cell prints a burst.

    /usr/bin/python3 bench/relay/bench_heartbeat.py --kguard build-rperf/kguard \
        [--compare before=/path/to/older/kguard] [--runs 3] [--mb 200] [--single-mb 50]

Two workloads, each in a fresh `kguard kernel` over ipykernel (jupyter_client's
KernelManager), for each binary (alternating, --runs times each): a cell that
writes --mb MB to stdout in 1 MB writes (ipykernel batches it into messages
of ~100 MB), and a cell that writes one --single-mb MB string (one message).
Meanwhile a thread pings the heartbeat channel (REQ, like jupyter_client's
HBChannel) every 50 ms and records each echo's latency; the client drains
iopub and notes the largest stream message. Then kguard's VmHWM (peak RSS)
against that largest message, and (peak - RSS at rest) against it, RSS at
rest being kguard's VmRSS once the kernel is ready. Reports, per workload
and binary, the heartbeat latency over all pings of all runs and the ratios'
median and quartiles over runs. A benchmark, not a test: it asserts nothing.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

import zmq
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

INNER = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def pinger(endpoint, stop, lat):
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(endpoint)
    i = 0
    while not stop.is_set():
        t0 = time.perf_counter()
        s.send(b"ping-%d" % i)
        if not s.poll(30000):
            lat.append(float("inf"))
            break
        s.recv()
        lat.append(time.perf_counter() - t0)
        i += 1
        stop.wait(max(0.0, 0.05 - (time.perf_counter() - t0)))
    s.close()


def _status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))


def one_run(ksm, name, code):
    km = KernelManager(kernel_name=name, kernel_spec_manager=ksm)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        rest = _status_kib(km.provisioner.process.pid, "VmRSS")
        info = km.get_connection_info()
        ep = "%s://%s:%d" % (info["transport"], info["ip"], info["hb_port"])
        stop, lat = threading.Event(), []
        t = threading.Thread(target=pinger, args=(ep, stop, lat))
        t.start()
        msg_id = kc.execute(code)
        largest = 0
        while True:
            m = kc.get_iopub_msg(timeout=300)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "stream":
                largest = max(largest, len(m["content"]["text"]))
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
        stop.set()
        t.join()
        kc.get_shell_msg(timeout=60)
        hwm = _status_kib(km.provisioner.process.pid, "VmHWM")
        return lat, hwm, largest, rest
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def _mq(xs):
    """median (Q1-Q3) of xs."""
    if not xs:
        return "-"
    if len(xs) < 2:
        return f"{xs[0]:.2f}"
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return f"{statistics.median(xs):.2f} ({q[0]:.2f}-{q[2]:.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kguard", required=True)
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--single-mb", type=int, default=50,
                    help="also one cell printing one message of this many MB (0: not)")
    args = ap.parse_args()
    workloads = {f"{args.mb} MB in 1 MB writes":
                 f"import sys\nfor _ in range({args.mb}):\n    sys.stdout.write('x' * 1000000)\n"}
    if args.single_mb:
        workloads[f"one {args.single_mb} MB message"] = (
            f"import sys\nsys.stdout.write('x' * {args.single_mb * 1000000})\nsys.stdout.flush()\n")
    bins = {"kguard": os.path.abspath(args.kguard)}
    for c in args.compare:
        n, _, p = c.partition("=")
        bins[n] = os.path.abspath(p)
    root = tempfile.mkdtemp(prefix="kguard-hb-")
    try:
        os.environ["KGUARD_STATE_DIR"] = os.path.join(root, "state")
        for n, exe in bins.items():
            d = os.path.join(root, "kernels", n)
            os.makedirs(d)
            with open(os.path.join(d, "kernel.json"), "w") as f:
                json.dump({"argv": [exe, "kernel", "-f", "{connection_file}", "--"] + INNER,
                           "display_name": n, "language": "python"}, f)
        ksm = KernelSpecManager(kernel_dirs=[os.path.join(root, "kernels")])
        res = {(w, n): {"lat": [], "hwm": [], "largest": [], "rest": []}
               for w in workloads for n in bins}
        for r in range(args.runs):
            for w, code in workloads.items():
                for n in (list(bins) if r % 2 == 0 else list(bins)[::-1]):
                    lat, hwm, largest, rest = one_run(ksm, n, code)
                    d = res[(w, n)]
                    d["lat"] += lat
                    d["hwm"].append(hwm)
                    d["largest"].append(largest)
                    d["rest"].append(rest)
                    print(f"run {r + 1} {w} {n}: {len(lat)} pings, max {max(lat) * 1e3:.1f} ms, "
                          f"peak RSS {hwm / 1024:.0f} MiB, largest message "
                          f"{largest / 2**20:.1f} MiB", file=sys.stderr)
        print(f"{args.runs} runs per binary and workload; ratios: median (Q1-Q3) over runs")
        for (w, n), d in res.items():
            lat = sorted(d["lat"])
            p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
            ratios = [h * 1024 / l for h, l in zip(d["hwm"], d["largest"]) if l]
            extra = [(h - r) * 1024 / l for h, r, l in zip(d["hwm"], d["rest"], d["largest"]) if l]
            print(f"  {w}, {n}: heartbeat median {statistics.median(lat) * 1e3:.2f} ms, "
                  f"p99 {p99 * 1e3:.1f} ms, max {lat[-1] * 1e3:.1f} ms ({len(lat)} pings); "
                  f"RSS at rest {statistics.median(d['rest']) / 1024:.1f} MiB; "
                  f"peak RSS {', '.join(f'{h / 1024:.0f}' for h in d['hwm'])} MiB; "
                  f"largest message {max(d['largest']) / 2**20:.1f} MiB; "
                  f"peak/largest {_mq(ratios)} [{', '.join(f'{x:.2f}' for x in ratios)}]; "
                  f"(peak - rest)/largest {_mq(extra)}")
    finally:
        shutil.rmtree(root, True)


if __name__ == "__main__":
    main()
