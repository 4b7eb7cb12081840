#!/usr/bin/python3
"""Relay benchmark: the same jupyter_client workload on ipykernel directly,
through the cheapest possible ZeroMQ relay (the floor) and through
`kguard kernel`, in one run, reported as ratios to the direct path.

    /usr/bin/python3 bench/relay/bench_relay.py --kguard build/ci/kguard

The floor is bench/relay/floor_proxy.c, compiled into the run's temporary
directory at start (cc + pkg-config libzmq libcjson): one thread, one zmq_poll
loop, forwarding each multipart message byte for byte between the frontend's
five tcp channels and a kernel's ipc channels, with no HMAC, no parsing, no
processing (both sides share the key). What it costs over the direct path is
what any libzmq relay costs on this machine (the extra I/O-thread hops and
socket copies); what kguard costs over the floor is kguard's own work.

Measures, for each path:
  * median round trip of execute_request("pass") (after a warm-up),
  * stream throughput: bytes/s of printed lines delivered on iopub (20 MB),
    --streams runs per path per round, the round's figure is their median,
  * kernel start to ready (start_kernel until kernel_info_reply; for the floor
    it includes starting floor_proxy),
  * kguard's own RSS (the kguard process, not the kernel): VmRSS idle after
    the warm-up, VmHWM (peak) after the streams, and VmRSS at least 2 s after
    kguard's last stream ended (kguard returns freed message memory ~0.5 s
    after a burst).
All three kernels run side by side in each round and the workload rotates
among them ping by ping and stream run by stream run (the order also rotated
every round), so load from the rest of the machine hits all paths alike.
Figures are medians over rounds; each ratio is the median of the per-round
ratios; the quartiles of the per-run throughput ratios show the spread.
Targets: issue 2, against the direct path: round trip <= 1.05, throughput
>= 0.95, kguard RSS < 8 MiB; issue 9, against the floor (what kguard adds to
any relay): round trip <= 1.01, throughput >= 0.98. The kguard/floor ratios
are the medians of the per-round ratios, printed with their quartiles (the
paths of a round share the machine's load; rounds do not). This is a
benchmark, never a test: it asserts nothing.

--aa puts a second floor in kguard's place (bench/relay/floor_kernel.py, an
A/A run): its ratios to the floor show the benchmark's own resolution on the
machine, against which a kguard/floor target can be read.
"""
import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client import BlockingKernelClient, KernelManager
from jupyter_client.connect import write_connection_file
from jupyter_client.kernelspec import KernelSpecManager

DIRECT_ARGV = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
PATHS = ("direct", "floor", "kguard")


def write_spec(root, name, argv):
    d = os.path.join(root, "kernels", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": argv, "display_name": name, "language": "python"}, f)


def build_floor(root):
    """Compile floor_proxy.c into root; return the binary's path or exit with why not."""
    for tool in ("cc", "pkg-config"):
        if not shutil.which(tool):
            sys.exit(f"bench_relay: '{tool}' not found; it is needed to build the floor relay")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor_proxy.c")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libzmq", "libcjson"],
                           capture_output=True, text=True)
    if flags.returncode != 0:
        sys.exit(f"bench_relay: pkg-config libzmq libcjson failed: {flags.stderr.strip()}")
    out = os.path.join(root, "floor_proxy")
    cc = subprocess.run(["cc", "-O2", src] + flags.stdout.split() + ["-o", out],
                        capture_output=True, text=True)
    if cc.returncode != 0:
        sys.exit(f"bench_relay: cannot compile {src}:\n{cc.stderr}")
    return out


class Path:
    """One kernel of a round: its manager, client and (floor only) relay process."""

    def __init__(self, km):
        self.km, self.kc, self.proxy, self.start = km, None, None, None

    def stop(self):
        # Each step on its own, so that one failing still stops the rest.
        if self.kc is not None:
            try:
                self.kc.stop_channels()
            except Exception as e:
                print(f"bench_relay: stop_channels: {e}", file=sys.stderr)
        if self.proxy is not None:
            self.proxy.terminate()
            try:
                self.proxy.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proxy.kill()
                self.proxy.wait()
        try:
            self.km.shutdown_kernel(now=False)
        except Exception as e:
            print(f"bench_relay: shutdown_kernel: {e}; killing", file=sys.stderr)
            self.km.shutdown_kernel(now=True)


def start(ksm, name, kernels):
    km = KernelManager(kernel_name=name, kernel_spec_manager=ksm)
    p = kernels[name] = Path(km)
    t0 = time.perf_counter()
    km.start_kernel()
    p.kc = km.client()
    p.kc.start_channels()
    p.kc.wait_for_ready(timeout=60)
    p.start = time.perf_counter() - t0


def start_floor(ksm, root, floor_bin, rnd, kernels):
    """ipykernel on ipc, floor_proxy relaying it to a tcp FRONT file, a client on FRONT."""
    km = KernelManager(kernel_name="direct", kernel_spec_manager=ksm, transport="ipc")
    km.ip = os.path.join(root, f"floor-k{rnd}")
    p = kernels["floor"] = Path(km)
    t0 = time.perf_counter()
    km.start_kernel()
    with open(km.connection_file) as f:
        back = json.load(f)
    front, _ = write_connection_file(os.path.join(root, f"floor-front{rnd}.json"), ip="127.0.0.1",
                                     key=back["key"].encode(), transport="tcp",
                                     signature_scheme=back["signature_scheme"])
    p.proxy = subprocess.Popen([floor_bin, front, km.connection_file])
    p.kc = BlockingKernelClient()
    p.kc.load_connection_file(front)
    p.kc.start_channels()
    try:
        p.kc.wait_for_ready(timeout=60)
    except RuntimeError as e:
        raise RuntimeError(f"floor path not ready (floor_proxy exit status {p.proxy.poll()})") from e
    p.start = time.perf_counter() - t0


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


def proc_status_kib(km, field):
    """A VmXXX field of /proc/PID/status of the process jupyter_client launched (kguard)."""
    pid = km.provisioner.process.pid if km.provisioner else km.kernel.pid
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def rotate(seq, n):
    n %= len(seq)
    return seq[n:] + seq[:n]


def quartiles(v):
    return statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kguard", required=True, help="path of the kguard binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pings", type=int, default=300, help="execute('pass') round trips per round")
    ap.add_argument("--streams", type=int, default=5, help="stream runs per path per round")
    ap.add_argument("--stream-mb", type=float, default=20.0)
    ap.add_argument("--aa", action="store_true",
                    help="A/A control: a second floor relay in kguard's place (--kguard is then ignored)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary directory (kguard's state and logs) and print it")
    args = ap.parse_args()
    if min(args.rounds, args.pings, args.streams) < 1:
        ap.error("--rounds, --pings and --streams must be at least 1")

    root = tempfile.mkdtemp(prefix="kguard-bench-")
    if args.keep:
        atexit.register(print, f"kept {root}", file=sys.stderr)
    else:
        atexit.register(shutil.rmtree, root, True)
    floor_bin = build_floor(root)
    os.environ["KGUARD_STATE_DIR"] = os.path.join(root, "state")
    write_spec(root, "direct", DIRECT_ARGV)
    if args.aa:
        os.environ["KG_FLOOR_BIN"] = floor_bin
        relay = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor_kernel.py")]
    else:
        relay = [os.path.abspath(args.kguard)]
    write_spec(root, "kguard", relay + ["kernel", "-f", "{connection_file}", "--"] + DIRECT_ARGV)
    name = "floor2" if args.aa else "kguard"   # what the kguard column holds
    ksm = KernelSpecManager(kernel_dirs=[os.path.join(root, "kernels")])

    lines = int(args.stream_mb * 1e6 / 100)
    stream_code = f"import sys\nline = 'x' * 99 + '\\n'\nfor _ in range({lines}): sys.stdout.write(line)\nsys.stdout.flush()"
    res = {p: {"rtt": [], "tput": [], "start": []} for p in PATHS}
    rss = {"idle": [], "peak": [], "after": []}
    run_ratio = {"floor": [], "kguard": []}  # stream run s of a path / run s of direct
    stream_bytes = set()

    for r in range(args.rounds):
        order = rotate(PATHS, r)
        kernels = {}
        try:
            for path in order:
                if path == "floor":
                    start_floor(ksm, root, floor_bin, r, kernels)
                else:
                    start(ksm, path, kernels)
                res[path]["start"].append(kernels[path].start)
            for path in order:
                for _ in range(20):
                    run_cell(kernels[path].kc, "pass")
            kg_km = kernels["kguard"].km
            rss["idle"].append(proc_status_kib(kg_km, "VmRSS"))
            rtts = {p: [] for p in order}
            for i in range(args.pings):
                for path in rotate(order, i):
                    rtts[path].append(run_cell(kernels[path].kc, "pass")[0])
            tputs = {p: [] for p in order}
            for s in range(args.streams):
                for path in rotate(order, s):
                    secs, nbytes = run_cell(kernels[path].kc, stream_code)
                    stream_bytes.add(nbytes)
                    tputs[path].append(nbytes / secs)
                    if path == "kguard":
                        kg_end = time.monotonic()
            rss["peak"].append(proc_status_kib(kg_km, "VmHWM"))
            # A measurement delay, not synchronisation: kguard's trim runs on a timer.
            time.sleep(max(0.0, kg_end + 2.0 - time.monotonic()))
            rss["after"].append(proc_status_kib(kg_km, "VmRSS"))
            for path in order:
                res[path]["rtt"].append(statistics.median(rtts[path]))
                res[path]["tput"].append(statistics.median(tputs[path]))
            for path in run_ratio:
                run_ratio[path] += [a / b for a, b in zip(tputs[path], tputs["direct"])]
        finally:
            for p in kernels.values():
                p.stop()
        d, f, k = (res[p] for p in PATHS)
        print(f"round {r + 1}/{args.rounds}: round trip floor x{f['rtt'][-1] / d['rtt'][-1]:.3f} "
              f"{name} x{k['rtt'][-1] / d['rtt'][-1]:.3f}, throughput floor x{f['tput'][-1] / d['tput'][-1]:.3f} "
              f"{name} x{k['tput'][-1] / d['tput'][-1]:.3f}", file=sys.stderr)

    med = {p: {k: statistics.median(v) for k, v in d.items() if v} for p, d in res.items()}
    med["kguard"].update({"rss_" + k: statistics.median(v) for k, v in rss.items()})
    # Ratios are medians of the per-round ratios: the paths of a round ran
    # side by side under the same load, rounds did not.
    ratio = {p: {m: statistics.median(a / b for a, b in zip(res[p][m], res["direct"][m]))
                 for m in ("rtt", "tput", "start")} for p in ("floor", "kguard")}
    d, f, k = (med[p] for p in PATHS)
    fr, kr = ratio["floor"], ratio["kguard"]
    print(f"{'metric':34} {'direct':>12} {'floor':>12} {name:>12} {'floor/direct':>13} {name + '/direct':>14}  target")
    print(f"{'execute(pass) round trip, median':34} {d['rtt']*1e3:10.3f}ms {f['rtt']*1e3:10.3f}ms "
          f"{k['rtt']*1e3:10.3f}ms {fr['rtt']:13.3f} {kr['rtt']:14.3f}  <= 1.05")
    print(f"{'stream throughput':34} {d['tput']/1e6:9.2f}MB/s {f['tput']/1e6:9.2f}MB/s "
          f"{k['tput']/1e6:9.2f}MB/s {fr['tput']:13.3f} {kr['tput']:14.3f}  >= 0.95")
    print(f"{'kernel start to ready':34} {d['start']:11.3f}s {f['start']:11.3f}s {k['start']:11.3f}s "
          f"{fr['start']:13.3f} {kr['start']:14.3f}  -")
    # kguard's own memory is what it holds at rest; the peak adds the
    # multi-MB output messages in flight, which no relay can hold less of.
    for key, label, target in () if args.aa else (("idle", "kguard RSS idle (VmRSS)", "< 8 MiB"),
                               ("peak", "kguard peak RSS (VmHWM)", "- (+ messages in flight)"),
                               ("after", "kguard RSS 2 s after streams", "< 8 MiB")):
        print(f"{label:34} {'-':>12} {'-':>12} {k['rss_' + key]/1024:9.2f}MiB {'-':>13} {'-':>14}  {target}")
    print(f"stream bytes per run: {sorted(stream_bytes)}")
    for path, v in run_ratio.items():
        q1, q2, q3 = quartiles(v)
        print(f"per-run throughput {name if path == 'kguard' else path}/direct (n={len(v)}): "
              f"Q1 {q1:.3f}, median {q2:.3f}, Q3 {q3:.3f}")
    # What kguard adds to the cheapest relay (issue 9's targets).
    kf = {m: [a / b for a, b in zip(res["kguard"][m], res["floor"][m])] for m in ("rtt", "tput")}
    for m, label, target in (("rtt", f"round trip {name}/floor", "<= 1.01"),
                             ("tput", f"throughput {name}/floor", ">= 0.98")):
        q1, q2, q3 = quartiles(kf[m])
        print(f"{label} per round (n={len(kf[m])}): median {q2:.3f} (Q1 {q1:.3f}, Q3 {q3:.3f}, "
              f"min {min(kf[m]):.3f}, max {max(kf[m]):.3f})  target {target}")
    print(json.dumps({"direct": d, "floor": f, "kguard": k, "ratio": ratio, "run_ratio": run_ratio}),
          file=sys.stderr)


if __name__ == "__main__":
    main()
