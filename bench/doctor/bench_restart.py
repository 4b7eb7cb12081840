#!/usr/bin/python3
"""What a sticky restart costs, phase by phase, what the pre-flight probe
adds to it when it overlaps the fresh kernel's start, and what a warm
standby (`kguard kernel --standby`) takes off (issue 13).

    /usr/bin/python3 bench/doctor/bench_restart.py --kguard build/dev/kguard \
        [--rounds 5] [--per-round 3]

Three guarded ipykernels run side by side under the CPU emulation of a
device-side assert (KGUARD_EMULATE=cuda-assert:step=2, no GPU): one with the
pre-flight off (KGUARD_PREFLIGHT=never), one with it on (the default,
sticky), and one with it on and a warm standby (its restarts wait until
kguard has logged the standby warm, as faults minutes apart would; the
standby's RSS is its memory cost). Each holds one signed checkpoint (step 1) so the restore is real.
Restarts alternate between the two kernels (which goes first alternates
between rounds); each restart is a cell whose code differs from the last
(so the policy's "same failure twice" rule does not stop restarts), and the
restart budget and back-off are set out of the way.

Phases, from kguard's own log (KGUARD_LOG_LEVEL=info, ms timestamps):
  evidence   the sticky error seen -> STOPPING (the failing cell's reply)
  kill       STOPPING -> the old kernel's group reaped
  restore    RESTORING -> RESTORED (`kguard ckpt resume-prepare`)
  own        kguard's other work: reaped -> fresh kernel spawned, minus the
             restore, plus READY -> the restart notice sent
  start      fresh kernel spawned -> READY (with the pre-flight on: READY
             waits for both the kernel and the probe's verdict)
  total      the sticky error seen -> READY
and, with the pre-flight on: the probe's own time, and how many restarts
it held READY back (its verdict came after the kernel was up).
What the pre-flight adds = the difference of the per-round medians of
`start` (and of `total`) between the two kernels, with the spread over
rounds. A benchmark: it asserts nothing.

"""
import argparse
import glob
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import time

import psutil
from jupyter_client import KernelManager

# kguard's log-line reader, shared with the resilience harnesses.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resilience"))
from kglog import log_times  # noqa: E402


def read_log(state):
    """(epoch milliseconds, message) of each kguard log line in state's logs."""
    out = []
    for p in sorted(glob.glob(os.path.join(state, "logs", "kguard-*.log"))):
        with open(p, errors="replace") as f:
            out += [(t * 1000.0, text) for t, text in log_times(f.read())]
    return out


def phases(log, gen):
    """The phases of the restart from kernel #gen to #gen+1, or None."""
    t = {}
    started_old = None
    for ms, text in log:
        if text.startswith("kernel #%d started" % gen):
            started_old = ms
        if started_old is None:
            continue
        if "fault" not in t and text.startswith("sticky GPU error"):
            t["fault"] = ms
        elif "fault" in t:
            if "stopping" not in t and re.match(r"state \w+ --\w+--> STOPPING", text):
                t["stopping"] = ms
            elif "stopped" not in t and text.startswith("kernel #%d stopped" % gen):
                t["stopped"] = ms
            elif "restoring" not in t and text.endswith("--> RESTORING"):
                t["restoring"] = ms
            elif "restored" not in t and text.startswith("state RESTORING --RESTORED-->"):
                t["restored"] = ms
            elif "started" not in t and text.startswith("kernel #%d started" % (gen + 1)):
                t["started"] = ms
            elif "started" in t and "pf" not in t and text.startswith("pre-flight probe:"):
                t["pf"] = ms
                m = re.search(r" in (\d+) ms", text)
                t["pf_ms"] = float(m.group(1)) if m else float("nan")
            elif "started" in t and "ready" not in t and text.endswith("--KERNEL_READY--> READY"):
                t["ready"] = ms
            elif "ready" in t and text.startswith("notice to the notebook: sticky-restart"):
                t["notice"] = ms
                break
    need = ("fault", "stopping", "stopped", "restoring", "restored", "started", "ready",
            "notice")
    if not all(k in t for k in need):
        return None
    restore = t["restored"] - t["restoring"]
    r = {
        "evidence": t["stopping"] - t["fault"],
        "kill": t["stopped"] - t["stopping"],
        "restore": restore,
        "own": (t["started"] - t["stopped"]) - restore + (t["notice"] - t["ready"]),
        "start": t["ready"] - t["started"],
        "total": t["ready"] - t["fault"],
    }
    if "pf" in t:
        r["pf_ms"] = t["pf_ms"]
        r["pf_held"] = 1.0 if t["pf"] >= t["ready"] else 0.0
    return r


def spec(root, name, kguard, env, extra=()):
    d = os.path.join(root, "kernels", name)
    os.makedirs(d)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": [kguard, "kernel", "-f", "{connection_file}", "--name", name,
                            "--max-restarts", "1000", "--backoff", "0.001", "--backoff-max",
                            "0.001", *extra, "--", "/usr/bin/python3", "-m", "ipykernel_launcher",
                            "-f", "{connection_file}"],
                   "display_name": name, "language": "python", "env": env}, f)


class Kernel:
    def __init__(self, name, work):
        self.km = KernelManager(kernel_name=name)
        self.km.start_kernel(cwd=work, stderr=subprocess.DEVNULL)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        self.gen = 1
        self.standby = False
        self.rss = []

    def wait(self, msg_id, pred, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                m = self.kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") == msg_id and pred(m):
                return m
        raise RuntimeError("timed out")

    def run(self, code, timeout=120):
        msg_id = self.kc.execute(code)
        self.wait(msg_id, lambda m: m["msg_type"] == "status"
                  and m["content"]["execution_state"] == "idle", timeout)
        while True:   # drain the shell replies
            try:
                self.kc.get_shell_msg(timeout=0.01)
            except queue.Empty:
                break

    def standby_warm(self):
        """True when kguard has logged the latest standby warm."""
        started = ready = -1
        for i, (_, text) in enumerate(read_log(self.state)):
            if text.startswith("warm standby started"):
                started = i
            elif text.startswith("warm standby ready"):
                ready = i
        return ready > started >= 0

    def standby_rss_mib(self):
        for p in psutil.Process(self.km.provisioner.process.pid).children():
            try:
                if p.environ().get("KGUARD_STANDBY") == "1":
                    return p.memory_info().rss / 2**20
            except psutil.Error:
                pass
        return float("nan")

    def restart_once(self, tag):
        if self.standby:
            deadline = time.monotonic() + 120
            while not self.standby_warm():
                if time.monotonic() > deadline:
                    raise RuntimeError("the standby never became warm")
                time.sleep(0.1)   # a benchmark's wait for a log line, not a test
            self.rss.append(self.standby_rss_mib())
        msg_id = self.kc.execute("em.step(2)  # %s" % tag)
        self.wait(msg_id, lambda m: m["msg_type"] == "display_data"
                  and m["content"].get("metadata", {}).get("kguard", {}).get("event")
                  == "sticky-restart", 120)
        self.gen += 1
        # the fresh kernel: the emulation module again (the restart notice is
        # sent once it is READY)
        self.run("import kguard.emulate as em")

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def q(xs):
    xs = sorted(x for x in xs if x == x)
    if not xs:
        return "n/a"
    return "%7.1f (%.1f-%.1f)" % (statistics.median(xs), xs[0], xs[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kguard", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=3)
    a = ap.parse_args()
    kguard = os.path.abspath(a.kguard)
    root = tempfile.mkdtemp(prefix="kg-bench-restart-")
    os.environ["JUPYTER_PATH"] = root
    keys = os.path.join(root, "keys")
    os.environ["KGUARD_KEY_DIR"] = keys
    subprocess.run([kguard, "keygen"], check=True, capture_output=True)
    base = {"KGUARD_EMULATE": "cuda-assert:step=2", "KGUARD_LOG_LEVEL": "info",
            "KGUARD_KEY_DIR": keys}
    kernels = {}
    names = ("never", "sticky", "standby")
    for name, mode, extra in (("never", "never", ()), ("sticky", "sticky", ()),
                              ("standby", "sticky", ("--standby",))):
        work = os.path.join(root, "work-" + name)
        os.makedirs(work)
        env = dict(base, KGUARD_PREFLIGHT=mode,
                   KGUARD_STATE_DIR=os.path.join(root, "state-" + name))
        spec(root, name, kguard, env, extra)
        k = Kernel(name, work)
        k.state = env["KGUARD_STATE_DIR"]
        k.standby = bool(extra)
        k.run("import kguard, kguard.emulate as em\nkguard.save({'w': 1}, step=1)\nem.step(1)")
        kernels[name] = k
    per = {n: [] for n in kernels}   # per round: list of phase dicts
    n = 0
    try:
        for r in range(a.rounds):
            order = list(names) if r % 2 == 0 else list(reversed(names))
            got = {name: [] for name in kernels}
            for i in range(a.per_round):
                for name in order:
                    k = kernels[name]
                    n += 1
                    k.restart_once("restart %d" % n)
                    ph = phases(read_log(k.state), k.gen - 1)
                    if ph:
                        got[name].append(ph)
            for name in kernels:
                per[name].append(got[name])
            print("round %d done, load %.1f" % (r + 1, os.getloadavg()[0]), flush=True)
    finally:
        for k in kernels.values():
            k.close()
    keys_shown = ("evidence", "kill", "restore", "own", "start", "total")
    print("\nms per restart: median of the per-round medians (min-max over rounds)")
    print("%-10s %-22s %-22s %-22s" % ("phase", "pre-flight off", "pre-flight on",
                                        "on + warm standby"))
    med = {}
    for key in keys_shown + ("pf_ms", "pf_held"):
        row = []
        for name in names:
            rounds = [statistics.median([p[key] for p in rs if key in p])
                      for rs in per[name] if any(key in p for p in rs)]
            med[(name, key)] = rounds
            row.append(q(rounds))
        print("%-10s %-22s %-22s %-22s" % (key, row[0], row[1], row[2]))
    for key in ("start", "total"):
        d = [b - a_ for a_, b in zip(med[("never", key)], med[("sticky", key)])]
        print("pre-flight adds to %-5s: %s ms (per-round differences)" % (key, q(d)))
    print("(pf_ms: the probe's own time; pf_held: share of restarts whose READY waited "
          "for the probe's verdict)")
    d = [b - a_ for a_, b in zip(med[("sticky", "total")], med[("standby", "total")])]
    print("the warm standby changes total by: %s ms (per-round differences)" % q(d))
    print("the standby's RSS (MiB, what it costs while it waits): %s"
          % q(kernels["standby"].rss))
    print("restarts measured: %s" % " + ".join(str(sum(len(x) for x in per[n])) for n in names))


if __name__ == "__main__":
    main()
