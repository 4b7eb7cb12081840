"""Time to detect a poisoned rank, split into its parts, over many trials;
and the no-false-kill soak (issue 15, part 1).

    /usr/bin/python3 bench/resilience/detect.py detect [--trials 200] [--stall S]
        [--on-fault hang|die] [--step-ms 50]
    /usr/bin/python3 bench/resilience/detect.py soak [--steps 1000] [--stall S] [--step-ms 20]
    (--kguard PATH, default build/dev/kguard; --short: a few trials / 60 steps,
    what ctest -L bench runs)

One host, `kguard exec [--stall-timeout S] -- python3 noisy_job.py` (no torch:
a trial starts in ~0.1 s). detect: the job trains (steps of --step-ms,
"kguard: completed step N"), and at a random step prints PyTorch's illegal
memory access traceback; --on-fault hang (default): the rank stays alive and
blocked, as a poisoned rank in its next collective, so the only proof is
the stall; die: it exits 1 after the text. Parts, all on this machine's
wall clock:
  suspect  the job's first error line written -> kguard's "sticky error text
           seen" (kguard read the line and classified it; log timestamp, ms)
  prove    -> kguard's "proven" line (hang: the --stall-timeout deadline;
           die: the exit of the process)
  kill     -> the job's tree killed (kguard's "killing the command's whole
           tree now": a proven fault gets SIGKILL at once, no grace)
  total    first error line -> the tree killed
Reports median, p99 and worst of each, and the load average.
soak: the same job fault-free for --steps steps, a noisy line on stderr
every step (warnings, a caught non-GPU traceback, a caught traceback with
the CUDA device-side assert text on a healthy device, a caught CUDA OOM, a
gloo warning), under the same --stall-timeout: kills must be 0 (counted:
kguard's proofs, restarts, a non-zero exit), suspicions raised and cleared
are counted.
"""
import argparse
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kglog import log_times

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).resolve().parent / "noisy_job.py"
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def _env(tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGUARD_")}
    env.update(PYTHONPATH=str(ROOT / "python"), KGUARD_KEY_DIR=str(tmp / "keys"),
               PYTHONDONTWRITEBYTECODE="1")
    return env


def _first(rows, text):
    return next((t for t, msg in rows if text in msg), None)


def _exec(tmp, job_args, timeout):
    stall = [] if ARGS.stall is None else ["--stall-timeout", str(ARGS.stall)]
    cmd = [ARGS.kguard, "exec", "--state-dir", str(tmp / "state"), "--max-restarts", "0",
           *stall, "--kill-grace", "2", "--",
           PY, str(JOB), "--report", str(tmp / "report.jsonl"), *job_args]
    p = subprocess.run(cmd, env=_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    rep = [json.loads(x) for x in (tmp / "report.jsonl").read_text().splitlines()] \
        if (tmp / "report.jsonl").exists() else []
    return p.returncode, p.stdout, rep


def _stall_words():
    return ("--stall-timeout %g" % ARGS.stall if ARGS.stall is not None
            else "with its default stall (4 x the job's longest step gap, 1.5-60 s)")


def _pct(v, q):
    """The q-quantile, nearest rank (p99 of 200 is the 3rd worst, of 100 the 2nd)."""
    s = sorted(v)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def detect():
    rng = random.Random(ARGS.seed)
    rows, failed = [], 0
    load0 = os.getloadavg()[0]
    for i in range(ARGS.trials):
        with tempfile.TemporaryDirectory(prefix="kg-detect-") as d:
            tmp = Path(d)
            k = rng.randint(4, 12)
            code, out, rep = _exec(tmp, ["--steps", "40", "--step-ms", str(ARGS.step_ms),
                                         "--fault-step", str(k), "--on-fault", ARGS.on_fault],
                                   timeout=120)
            logs = log_times(out)
            t_err = next((e["t"] for e in rep if e["event"] == "error-line"), None)
            # A proven fault's tree is killed at once (SIGKILL: the job cannot
            # say it received it), so the kill is kguard's own line; a job
            # that reports a TERM (an older kguard, a grace) is taken at its word.
            t_term = next((e["t"] for e in rep if e["event"] == "term"), None)
            if t_term is None:
                t_term = _first(logs, "killing the command's whole tree")
            t_sus = _first(logs, "sticky error text seen")
            t_proof = _first(logs, "proven")
            if None in (t_err, t_sus, t_proof) or (ARGS.on_fault == "hang" and t_term is None):
                failed += 1
                print(f"trial {i}: incomplete (exit {code}); output ends:\n{out[-1500:]}")
                continue
            r = {"suspect": t_sus - t_err, "prove": t_proof - t_sus}
            if t_term is not None:
                r["kill"] = t_term - t_proof
                r["total"] = t_term - t_err
            else:   # die: nothing left to kill; the decision is the end
                r["total"] = t_proof - t_err
            rows.append(r)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
          f"load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    print(f"time to detect: 1 host, kguard exec {_stall_words()}, poisoned rank "
          f"{'stays alive and blocked' if ARGS.on_fault == 'hang' else 'exits 1 after the text'}"
          f", steps of {ARGS.step_ms:g} ms, {len(rows)} of {ARGS.trials} trials complete")
    for k in ("suspect", "prove", "kill", "total"):
        v = [r[k] for r in rows if k in r]
        if v:
            print(f"  {k:8s} median {1000 * statistics.median(v):8.1f} ms   p99 "
                  f"{1000 * _pct(v, 0.99):8.1f}   worst {1000 * max(v):8.1f}   (n={len(v)})")
    return 0 if rows and not failed else 1


def soak():
    with tempfile.TemporaryDirectory(prefix="kg-soak-") as d:
        tmp = Path(d)
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        code, out, rep = _exec(tmp, ["--steps", str(ARGS.steps), "--step-ms",
                                     str(ARGS.step_ms), "--noise"],
                               timeout=60 + ARGS.steps * (ARGS.step_ms / 1000 + 0.5))
        wall = time.monotonic() - t0
        logs = log_times(out)
        done = [e["step"] for e in rep if e["event"] == "done"]
        starts = sum(1 for _, m in logs if "exec: started" in m)
        proofs = sum(1 for _, m in logs if "proven" in m)
        terms = sum(1 for e in rep if e["event"] == "term")
        sus = sum(1 for _, m in logs if "sticky error text seen" in m)
        cleared = sum(1 for _, m in logs if "was not a fault" in m)
        # stdout and stderr share one pipe here: lines may interleave
        steps = len(set(re.findall(r"kguard: completed step (\d+)", out)))
        tracebacks = out.count("Traceback (most recent call last)")
        kills = proofs + terms + (starts - 1) + (code != 0)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
              f"load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end")
        print(f"no-false-kill soak: 1 host, kguard exec {_stall_words()}, "
              f"{ARGS.steps} fault-free steps of {ARGS.step_ms:g} ms with a noisy stderr line "
              f"each ({tracebacks} tracebacks, {out.count('Warning')} warnings), {wall:.0f} s")
        print(f"  steps completed {steps} (job done: {bool(done)}), exit {code}, starts "
              f"{starts}; suspicions raised {sus}, cleared by progress {cleared}; proofs "
              f"{proofs}, SIGTERMs {terms}: KILLS {proofs + terms}")
        ok = code == 0 and steps == ARGS.steps and starts == 1 and kills == 0
        if not ok:
            print("  FALSE KILL or incomplete soak; kguard's lines:\n" +
                  "\n".join(m for _, m in logs)[-3000:])
        return 0 if ok else 1


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["detect", "soak"])
    ap.add_argument("--kguard", default=str(ROOT / "build" / "dev" / "kguard"))
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--stall", type=float, default=None,
                    help="--stall-timeout for kguard exec (default: kguard's own, which "
                         "follows the job's pace)")
    ap.add_argument("--step-ms", type=float, default=None,
                    help="default 50 (detect), 20 (soak)")
    ap.add_argument("--on-fault", choices=["hang", "die"], default="hang")
    ap.add_argument("--random-state", dest="seed", metavar="N", type=int, default=None,
                    help="initialise the random generator with this integer, for a repeatable run")
    ap.add_argument("--short", action="store_true", help="3 trials / 60 steps (ctest)")
    ARGS = ap.parse_args()
    if ARGS.step_ms is None:
        ARGS.step_ms = 50.0 if ARGS.what == "detect" else 20.0
    if ARGS.short:
        ARGS.trials, ARGS.steps = 3, 60
    if not os.access(ARGS.kguard, os.X_OK):
        print(f"skipped: no kguard binary at {ARGS.kguard} (--kguard)")
        return 77
    return {"detect": detect, "soak": soak}[ARGS.what]()


if __name__ == "__main__":
    sys.exit(main())
