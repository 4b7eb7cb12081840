#!/usr/bin/python3
"""Relay floor benchmark: what kguard adds per round trip over the cheapest
relay, without ipykernel in the way.

    /usr/bin/python3 bench/relay/bench_floor.py --kguard build-rperf/kguard [--rounds 7]
        [--compare before=/path/to/older/kguard]

Kernel: bench/relay/zero_kernel.c (answers execute_request at once: busy,
reply, idle; "stream N SIZE" publishes N stream messages first). Client:
bench/relay/lean_client.c (signs a request, waits for its reply and its idle,
parses nothing). Both are compiled into the run's temporary directory (cc,
pkg-config libzmq libcjson libsodium), like the floor relay
bench/relay/floor_proxy.c. Paths, all tcp on 127.0.0.1 at the front:
  direct  lean_client -> zero_kernel
  floor   lean_client -> floor_proxy -> zero_kernel (ipc)
  kguard  lean_client -> kguard kernel -> zero_kernel (ipc)
  NAME    the same with another kguard binary (--compare, e.g. main's)
Each round starts every path, then runs the lean client on each in rotated
order: --pings round trips (after 50 warm-up ones) and --stream-runs runs of
--stream-n messages of --stream-size bytes. Per path and round: the median
round trip; across rounds: the median of the per-round differences to the
floor (microseconds) with their min..max, the throughput ratio to the floor,
and kguard's VmRSS after the round trips (at rest, before any stream) and
VmHWM after the streams (peak).
A benchmark, not a test: it asserts nothing.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client.connect import write_connection_file

HERE = os.path.dirname(os.path.abspath(__file__))


def build(root, name, libs):
    src = os.path.join(HERE, name + ".c")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs"] + libs,
                           capture_output=True, text=True, check=True).stdout.split()
    out = os.path.join(root, name)
    cc = subprocess.run(["cc", "-O2", src] + flags + ["-o", out], capture_output=True, text=True)
    if cc.returncode != 0:
        sys.exit(f"bench_floor: cannot compile {src}:\n{cc.stderr}")
    return out


def conn(root, name, transport="tcp"):
    ip = "127.0.0.1" if transport == "tcp" else os.path.join(root, name + "-ipc")
    path, _ = write_connection_file(os.path.join(root, name + ".json"), ip=ip,
                                    key=b"bench-shared-key", transport=transport)
    return path


def start_paths(root, bins, kguards, rnd):
    """Start every path; return {name: (front connection file, [processes], kguard pid)}."""
    paths = {}
    front = conn(root, f"direct{rnd}")
    paths["direct"] = (front, [subprocess.Popen([bins["zero_kernel"], front])], None)
    back = conn(root, f"floor-back{rnd}", "ipc")
    front = conn(root, f"floor{rnd}")
    procs = [subprocess.Popen([bins["zero_kernel"], back])]
    procs.append(subprocess.Popen([bins["floor_proxy"], front, back]))
    paths["floor"] = (front, procs, None)
    for name, exe in kguards.items():
        front = conn(root, f"{name}{rnd}")
        env = dict(os.environ, KGUARD_STATE_DIR=os.path.join(root, f"state-{name}"))
        p = subprocess.Popen([exe, "kernel", "-f", front, "--", bins["zero_kernel"],
                              "{connection_file}"], env=env, stderr=subprocess.DEVNULL)
        paths[name] = (front, [p], p.pid)
    return paths


def stop_paths(paths):
    for _, procs, _ in paths.values():
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def spread(v, digits=1):
    """median [Q1..Q3] (min..max) of the per-round figures."""
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
    f = f".{digits}f"
    return (f"{statistics.median(v):{f}} [{q[0]:{f}}..{q[2]:{f}}] "
            f"({min(v):{f}}..{max(v):{f}})")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kguard", required=True)
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=PATH",
                    help="another kguard binary measured side by side")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pings", type=int, default=2000)
    ap.add_argument("--stream-runs", type=int, default=3)
    ap.add_argument("--stream-n", type=int, default=200)
    ap.add_argument("--stream-size", type=int, default=100000)
    args = ap.parse_args()
    kguards = {"kguard": os.path.abspath(args.kguard)}
    for c in args.compare:
        name, _, path = c.partition("=")
        if not path or name in ("direct", "floor", "kguard"):
            ap.error(f"--compare {c}: expected NAME=PATH with a new NAME")
        kguards[name] = os.path.abspath(path)
    root = tempfile.mkdtemp(prefix="kguard-floor-")
    try:
        libs = ["libzmq", "libcjson", "libsodium"]
        bins = {n: build(root, n, libs) for n in ("zero_kernel", "lean_client", "floor_proxy")}
        names = ["direct", "floor"] + list(kguards)
        rtt = {n: [] for n in names}          # per-round medians, us
        tput = {n: [] for n in names}         # per-round medians, B/s
        rest, peak = {n: [] for n in kguards}, {n: [] for n in kguards}
        for r in range(args.rounds):
            paths = start_paths(root, bins, kguards, r)
            try:
                order = names[r % len(names):] + names[:r % len(names)]
                # Round trips first, then kguard's RSS at rest, then the streams.
                for phase in ("pings", "streams"):
                    for n in order:
                        argv = [bins["lean_client"], paths[n][0]]
                        argv += ([str(args.pings)] if phase == "pings" else
                                 ["0", str(args.stream_runs), str(args.stream_n),
                                  str(args.stream_size)])
                        out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
                        if out.returncode != 0:
                            sys.exit(f"bench_floor: lean_client on {n}: {out.stderr.strip()}")
                        d = json.loads(out.stdout)
                        if phase == "pings":
                            rtt[n].append(statistics.median(d["rtt_us"]))
                        else:
                            tput[n].append(statistics.median(d["stream_Bps"]))
                    for n in kguards:
                        if phase == "pings":
                            rest[n].append(status_kib(paths[n][2], "VmRSS"))
                        else:
                            peak[n].append(status_kib(paths[n][2], "VmHWM"))
            finally:
                stop_paths(paths)
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{n} {rtt[n][-1]:.1f} us {tput[n][-1] / 1e6:.0f} MB/s" for n in names),
                file=sys.stderr)
        print(f"zero-work kernel, lean client, {args.rounds} rounds x {args.pings} round trips; "
              f"streams of {args.stream_n} x {args.stream_size} B")
        print("per-round median round trip, us: median [quartiles] (min..max over rounds)")
        for n in names:
            print(f"  {n:10} {spread(rtt[n])}")
        print("difference to the floor per round, us: median [quartiles] (min..max)")
        for n in ["direct"] + list(kguards):
            print(f"  {n:10} {spread([a - b for a, b in zip(rtt[n], rtt['floor'])])}")
        print("stream throughput, MB/s, and ratio to the floor per round: median [quartiles] (min..max)")
        for n in names:
            ratio = [a / b for a, b in zip(tput[n], tput["floor"])]
            print(f"  {n:10} {spread([t / 1e6 for t in tput[n]])}  x{spread(ratio, 2)}")
        for n in kguards:
            print(f"  {n} RSS at rest {spread([k / 1024 for k in rest[n]])} MiB, "
                  f"peak {spread([k / 1024 for k in peak[n]])} MiB")
        print(json.dumps({"rtt_us": rtt, "tput_Bps": tput, "rest_kib": rest, "peak_kib": peak}),
              file=sys.stderr)
    finally:
        shutil.rmtree(root, True)


if __name__ == "__main__":
    main()
