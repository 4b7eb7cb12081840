#!/usr/bin/env python3
"""Soak: N forced restarts of a kernel under kguard, through the real binary.

usage: soak.py --bin KGUARD [--restarts 1000] [--max-rss-growth-kib 512]

Starts kguard through jupyter_client's KernelManager (as Jupyter does) with
the labelled CPU emulation of a CUDA device-side assert (KGUARD_EMULATE; no
GPU). Each round runs a cell that hits the emulated assert: kguard sees a
sticky error, closes the gate and restarts the kernel; the round ends when
the fresh kernel answers. (When the restart policy stops automatic restarts,
e.g. after the same failure twice in a row, the round sends `%kguard
restart` instead, which is a forced restart too.) kguard's open fds,
threads and RSS are printed after a warm-up (--warmup rounds: every code
path touched and malloc's arenas settled; the first ~10 restarts grow RSS
by a few hundred KiB, then it stays flat) and at the end; exit 0 when fds did not
grow, threads are equal and RSS grew by at most --max-rss-growth-kib, else 1.

The test command runs 20 rounds (ctest -R soak.short); the documented soak
is the default 1000 (about an hour on 2 cores).
"""
import argparse
import json
import os
import queue
import sys
import tempfile
import time

from jupyter_client import KernelManager

SETUP = "import kguard.emulate as em\n"


def probe(pid):
    # kguard's helpers (device probe, checkpoint child) hold a few pipes
    # while they run, so a single count swings by 3-7 between rounds: the
    # fewest fds over a 1 s sample is the count of what kguard itself keeps.
    fds, until = None, time.monotonic() + 1.0
    while fds is None or time.monotonic() < until:
        n = len(os.listdir("/proc/%d/fd" % pid))
        fds = n if fds is None else min(fds, n)
        time.sleep(0.02)
    status = open("/proc/%d/status" % pid).read().split("\n")
    val = {ln.split(":")[0]: ln.split(":")[1].strip() for ln in status if ":" in ln}
    return {"fds": fds, "threads": int(val["Threads"]), "rss_kib": int(val["VmRSS"].split()[0])}


def wait_reply(kc, msg_id, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            m = kc.get_shell_msg(timeout=0.5)
        except queue.Empty:
            continue
        if m["parent_header"].get("msg_id") == msg_id:
            return m
    raise SystemExit("soak: no reply to %s within %s s" % (msg_id, timeout))


def drain_iopub(kc):
    try:
        while True:
            kc.get_iopub_msg(timeout=0.001)
    except queue.Empty:
        pass


def one_round(kc, i):
    """Hit the emulated assert, then wait until a fresh kernel answers."""
    r = wait_reply(kc, kc.execute(SETUP + "em.step(2)  # round %d" % i), 120)
    down = "down" in json.dumps(r.get("metadata", {}).get("kguard", {}))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        drain_iopub(kc)
        code = "%kguard restart" if down else "1"
        r = wait_reply(kc, kc.execute(code), 120)
        c = r["content"]
        if c["status"] == "ok" and code == "1":
            return
        if c["status"] == "error" and c.get("ename") == "KernelDown":
            down = True
        elif code != "1":
            down = False
    raise SystemExit("soak: the kernel did not come back in round %d" % i)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--restarts", type=int, default=1000)
    ap.add_argument("--max-rss-growth-kib", type=int, default=512)
    ap.add_argument("--warmup", type=int, default=None,
                    help="rounds before the first probe (default: restarts/4, at most 10)")
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kguard-soak-")
    kdir = os.path.join(root, "jpath", "kernels", "kgsoak")
    os.makedirs(kdir)
    with open(os.path.join(kdir, "kernel.json"), "w") as f:
        json.dump({"argv": [os.path.abspath(a.bin), "kernel", "-f", "{connection_file}",
                            "--name", "kgsoak", "--", sys.executable, "-m",
                            "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": "kguard soak", "language": "python",
                   "env": {"KGUARD_EMULATE": "cuda-assert:step=2"}}, f)
    os.environ.update(JUPYTER_PATH=os.path.join(root, "jpath"),
                      KGUARD_STATE_DIR=os.path.join(root, "state"),
                      JUPYTER_RUNTIME_DIR=os.path.join(root, "rt"))
    km = KernelManager(kernel_name="kgsoak")
    km.start_kernel(cwd=root)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    pid = km.provisioner.process.pid
    try:
        t0 = time.monotonic()
        print("launch (kernel ready, no restart yet): fds %(fds)d, threads %(threads)d, "
              "RSS %(rss_kib)d KiB" % probe(pid), flush=True)
        warm = a.warmup if a.warmup is not None else max(1, min(10, a.restarts // 4))
        for i in range(warm):
            one_round(kc, i)
        start = probe(pid)
        print(("start (after round %d): fds %%(fds)d, threads %%(threads)d, RSS %%(rss_kib)d KiB"
               % warm) % start, flush=True)
        for i in range(warm, a.restarts):
            one_round(kc, i)
            if (i + 1) % (10 if a.restarts <= 200 else 50) == 0:
                print("  %d restarts, %.0f s: %s" % (i + 1, time.monotonic() - t0, probe(pid)),
                      flush=True)
        end = probe(pid)
        print("end (after round %d): fds %d, threads %d, RSS %d KiB (%+d KiB); %.1f s"
              % (a.restarts, end["fds"], end["threads"], end["rss_kib"],
                 end["rss_kib"] - start["rss_kib"], time.monotonic() - t0))
    finally:
        kc.stop_channels()
        km.shutdown_kernel()   # graceful: kguard exits by itself (and LSan can report)
    # fds may be one lower at the end (a helper's pipe open at the first
    # probe); a leak only ever raises them.
    flat = (end["fds"] <= start["fds"] and end["threads"] == start["threads"]
            and end["rss_kib"] - start["rss_kib"] <= a.max_rss_growth_kib)
    print("flat" if flat else "NOT FLAT")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
