#!/usr/bin/python3
"""Relay benchmark: the same jupyter_client workload on ipykernel directly and
through `kguard kernel`, in one run, reported as ratios.

    /usr/bin/python3 bench/relay/bench_relay.py --kguard build/ci/kguard

Measures, for each path:
  * median round trip of execute_request("pass") (after a warm-up),
  * stream throughput: bytes/s of printed lines delivered on iopub (20 MB),
  * kernel start to ready (start_kernel until kernel_info_reply),
  * kguard's own peak RSS (VmHWM of the kguard process, not the kernel).
Both kernels run side by side in each round and the workload alternates
between them ping by ping (and stream by stream, the order swapped every
round), so load from the rest of the machine hits both paths alike.
Figures are medians over rounds; each ratio is the median of the per-round
ratios. Targets (issue 2): round trip kguard/direct <= 1.05, throughput >= 0.95,
kguard RSS < 8 MiB. This is a benchmark, never a test: it asserts nothing.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

DIRECT_ARGV = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def write_spec(root, name, argv):
    d = os.path.join(root, "kernels", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": argv, "display_name": name, "language": "python"}, f)


def start(ksm, name):
    km = KernelManager(kernel_name=name, kernel_spec_manager=ksm)
    t0 = time.perf_counter()
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc, time.perf_counter() - t0


def run_cell(kc, code, timeout=120):
    """Execute code; return (seconds until the reply and iopub idle, bytes of stream text)."""
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    nbytes = 0
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            nbytes += len(msg["content"]["text"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    kc.get_shell_msg(timeout=timeout)
    return time.perf_counter() - t0, nbytes


def kguard_rss_kib(km):
    """VmHWM of the kguard process (the one jupyter_client launched)."""
    pid = km.provisioner.process.pid if km.provisioner else km.kernel.pid
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kguard", required=True, help="path of the kguard binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pings", type=int, default=300, help="execute('pass') round trips per round")
    ap.add_argument("--stream-mb", type=float, default=20.0)
    args = ap.parse_args()

    root = tempfile.mkdtemp(prefix="kguard-bench-")
    os.environ["KGUARD_STATE_DIR"] = os.path.join(root, "state")
    write_spec(root, "direct", DIRECT_ARGV)
    write_spec(root, "kguard", [os.path.abspath(args.kguard), "kernel", "-f", "{connection_file}", "--"] + DIRECT_ARGV)
    ksm = KernelSpecManager(kernel_dirs=[os.path.join(root, "kernels")])

    lines = int(args.stream_mb * 1e6 / 100)
    stream_code = f"import sys\nline = 'x' * 99 + '\\n'\nfor _ in range({lines}): sys.stdout.write(line)\nsys.stdout.flush()"
    res = {p: {"rtt": [], "tput": [], "start": [], "rss": []} for p in ("direct", "kguard")}

    for r in range(args.rounds):
        order = ("direct", "kguard") if r % 2 == 0 else ("kguard", "direct")
        kernels = {}
        try:
            for path in order:
                km, kc, t_start = start(ksm, path)
                kernels[path] = (km, kc)
                res[path]["start"].append(t_start)
            for path in order:
                for _ in range(20):
                    run_cell(kernels[path][1], "pass")
            rtts = {p: [] for p in order}
            for i in range(args.pings):
                for path in (order if i % 2 == 0 else order[::-1]):
                    rtts[path].append(run_cell(kernels[path][1], "pass")[0])
            for path in order:
                res[path]["rtt"].append(statistics.median(rtts[path]))
                secs, nbytes = run_cell(kernels[path][1], stream_code)
                res[path]["tput"].append(nbytes / secs)
            res["kguard"]["rss"].append(kguard_rss_kib(kernels["kguard"][0]))
        finally:
            for km, kc in kernels.values():
                kc.stop_channels()
                km.shutdown_kernel(now=False)
        d, k = res["direct"], res["kguard"]
        print(f"round {r + 1}/{args.rounds}: round trip x{k['rtt'][-1] / d['rtt'][-1]:.3f}, "
              f"throughput x{k['tput'][-1] / d['tput'][-1]:.3f}", file=sys.stderr)

    med = {p: {k: statistics.median(v) for k, v in d.items() if v} for p, d in res.items()}
    d, k = med["direct"], med["kguard"]
    # Ratios are medians of the per-round ratios: both paths of a round ran
    # side by side under the same load, rounds did not.
    ratio = {m: statistics.median(a / b for a, b in zip(res["kguard"][m], res["direct"][m]))
             for m in ("rtt", "tput", "start")}
    print(f"{'metric':34} {'direct':>12} {'kguard':>12} {'ratio':>8}  target")
    print(f"{'execute(pass) round trip, median':34} {d['rtt']*1e3:10.3f}ms {k['rtt']*1e3:10.3f}ms {ratio['rtt']:8.3f}  <= 1.05")
    print(f"{'stream throughput':34} {d['tput']/1e6:9.2f}MB/s {k['tput']/1e6:9.2f}MB/s {ratio['tput']:8.3f}  >= 0.95")
    print(f"{'kernel start to ready':34} {d['start']:11.3f}s {k['start']:11.3f}s {ratio['start']:8.3f}")
    print(f"{'kguard peak RSS (VmHWM)':34} {'':>12} {k['rss']/1024:9.2f}MiB {'':>8}  < 8 MiB")
    print(json.dumps({"direct": d, "kguard": k}), file=sys.stderr)


if __name__ == "__main__":
    main()
