"""Resilience against torchrun alone (issue 15): the deterministic bug, bad
resumes and goodput, on one host with `torchrun` (gloo, CPU; its own rendezvous port).

    python3 bench/resilience/versus_torchrun.py detbug   [--trials 3] [--max-restarts 3]
                                                         [--on-fault raise|hang]
    python3 bench/resilience/versus_torchrun.py badresume [--trials 50] [--ballast-mb 32]
    python3 bench/resilience/versus_torchrun.py goodput  [--steps 60] [--faults 3] [--trials 3]
    (goodput, detbug: --launchers torchrun,kguard-torchrun,kguard,kguard-standby,
    kguard-snapshot: torchrun alone; kguard exec -- torchrun; kguard exec
    --nproc-per-node N -- python job.py, kguard starting the ranks; the same with
    --standby; and with the job snapshotting every step into kguard's memory)
    (--kguard PATH: the binary, default build/dev/kguard; --short: one small
    trial each, what `ctest -L bench` runs; exit 77 = skipped, no torchrun)

The job is bench/resilience/job.py (real CPU work per step, one all-reduce,
checkpoints every --every steps; emulated CUDA texts, no GPU).

detbug     the same illegal memory access at the same step at every start:
           how many starts before each stops, and with which exit code.
           kguard exec (its restart budget and same-failure stop, permanent
           exit 86) against torchrun --max_restarts N (fails with 1 after N+1).
badresume  N trials: the 2-rank job checkpoints with both savers (kguard.save
           shards, and torch.save files in place), and at a random moment
           (uniform over the run, so inside seals and writes as often as
           they take time) SIGKILL hits rank 0, rank 1 or the whole process
           tree. Then both resume rules are asked what they would load on
           that same damage: torchrun-alone's "newest file per rank"
           (torch.load) and kguard's (`kguard ckpt latest`: the newest
           complete set whose shards verify, loaded through kguard.resume).
           Counted: resumes from a torn file (incomplete), from files that
           were never checked (unverified), from steps that differ across
           ranks (inconsistent). "Newer than the fault" needs a process that
           keeps writing after a sticky fault; a SIGKILL leaves none, so it is
           0 for both here by construction (kguard's exec tests cover it).
           Kills during restores are not drawn (a restore is read-only here).
goodput    the 2-rank job with an injected sticky fault every
           steps/(faults+1) steps (the rank raises and dies; --kinds in turn,
           default three different CUDA errors: kguard exec stops a job whose
           same failure comes back twice in a row, so --kinds with one kind
           measures that rule instead): time of a
           fault-free run of the same job divided by the time with faults,
           under kguard exec (resumes the verified set) and under torchrun
           --max_restarts (resumes the newest files).

Reports each figure per trial with median/min/max and the machine.
"""
import argparse
import glob
import json
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).resolve().parent / "job.py"
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
GAVE_UP = 86


def _env(tmp, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KGUARD_") and k not in ("RANK", "WORLD_SIZE")}
    env.update(PYTHONPATH=str(ROOT / "python"), KGUARD_KEY_DIR=str(tmp / "keys"),
               KGUARD_BIN=ARGS.kguard, KGUARD_STATE_DIR=str(tmp / "state"),
               PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def free_port():
    """A port free now on localhost (the kernel's pick; a small race remains)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(nproc, restarts, *job_args):
    # Not --standalone: Debian's torch 1.13 gives every --standalone job the
    # rendezvous store localhost:29400, and a second job on the host becomes
    # a client of the first one's store; when that job ends its store goes
    # and the other torchrun exits 1 ("RendezvousConnectionError ... Broken
    # pipe"). Our own rendezvous on a free port keeps trials (and other
    # users' jobs) apart. --redirects/--tee: torch 1.13 fails without a value.
    return ["torchrun", "--nnodes=1", "--rdzv_backend=c10d",
            f"--rdzv_endpoint=localhost:{free_port()}", f"--nproc_per_node={nproc}",
            f"--max_restarts={restarts}", "--redirects=2", "--tee=2", str(JOB), *job_args]


def _kguard_exec(tmp, restarts, cmd, *opts, stall="10"):
    st = ["--stall-timeout", stall] if stall else []
    return [ARGS.kguard, "exec", "--checkpoints", str(tmp / "ckpt"), "--state-dir",
            str(tmp / "state"), "--max-restarts", str(restarts), "--kill-grace", "3",
            *st, *opts, "--", *cmd]


# Who launches the ranks, for goodput and detbug:
#   torchrun         torchrun --max_restarts N alone (no kguard; newest-file resume)
#   kguard-torchrun  kguard exec -- torchrun ... (kguard outside torchrun's agent)
#   kguard           kguard exec --nproc-per-node N -- python job.py (kguard starts the ranks)
#   kguard-standby   the same with --standby (warm standby ranks)
#   kguard-snapshot  kguard-standby, and the job snapshots every step into kguard's
#                    memory (kguard.snapshot): a fault loses one step
LAUNCHERS = ("torchrun", "kguard-torchrun", "kguard", "kguard-standby", "kguard-snapshot")


def _launch(who, tmp, nproc, restarts, job, stall="10"):
    if who == "torchrun":
        return _torchrun(nproc, restarts, "--saver", "plain", *job)
    if who == "kguard-torchrun":
        return _kguard_exec(tmp, restarts, _torchrun(nproc, 0, "--saver", "kguard", *job),
                            stall=stall)
    standby = who in ("kguard-standby", "kguard-snapshot")
    extra = ["--nproc-per-node", str(nproc)] + (["--standby"] if standby else [])
    snap = ["--snapshot-every", "1"] if who == "kguard-snapshot" else []
    return _kguard_exec(tmp, restarts, [PY, str(JOB), "--saver", "kguard", *job, *snap],
                        *extra, stall=stall)


def _run(cmd, env, timeout):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout, start_new_session=True, text=True)
    return p.returncode, time.monotonic() - t0, p.stdout


def _events(report):
    if not report.exists():
        return []
    return [json.loads(line) for line in report.read_text().splitlines() if line.strip()]


def _stats(v):
    return (f"median {statistics.median(v):.3g}  min {min(v):.3g}  max {max(v):.3g}  "
            f"(n={len(v)})")


# ---- detbug ----------------------------------------------------------------

def _proof_delays(out):
    """Seconds from each sticky text kguard saw to its proof, in order."""
    from kglog import log_times
    seen, delays = None, []
    for t, msg in log_times(out):
        if "sticky error text seen" in msg and seen is None:
            seen = t
        elif ("proven" in msg) and seen is not None:
            delays.append(t - seen)
            seen = None
    return delays


def detbug():
    rows = []
    whos = [w for w in ARGS.launchers if w not in ("kguard-standby", "kguard-snapshot")]
    for _ in range(ARGS.trials):
        for who in whos:
            tmp = Path(tempfile.mkdtemp(prefix="kg-detbug-"))
            rep = tmp / "report.jsonl"
            job = ["--steps", "12", "--every", "3", "--fault-steps", "5", "--fault-always",
                   "--on-fault", ARGS.on_fault, "--report", str(rep)]
            env = _env(tmp, KGUARD_CKPT_DIR=str(tmp / "ckpt"))
            # The job's own pace judges a poisoned rank that stays alive.
            cmd = _launch(who, tmp, 1, ARGS.max_restarts, job,
                          stall=None if ARGS.on_fault == "hang" else "10")
            rc, wall, out = _run(cmd, env, 600)
            starts = sum(1 for e in _events(rep) if e["event"] == "start")
            rows.append((who, starts, rc, wall, _proof_delays(out)))
            if ARGS.verbose:
                print(out[-3000:])
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"deterministic bug (illegal memory access at step 5 at every start, the rank "
          f"{'stays alive' if ARGS.on_fault == 'hang' else 'raises'}), restart budget "
          f"{ARGS.max_restarts} for all, {ARGS.trials} trial(s):")
    for who in whos:
        r = [x for x in rows if x[0] == who]
        print(f"  {who:16s} starts {sorted({x[1] for x in r})}  exit codes "
              f"{sorted({x[2] for x in r})}  wall s {_stats([x[3] for x in r])}")
        for g in range(2):
            d = [x[4][g] for x in r if len(x[4]) > g]
            if d:
                print(f"  {'':16s} start {g + 1}: sticky text -> proof s {_stats(d)}")
    ok = all(x[2] == GAVE_UP and x[1] <= 2 for x in rows if x[0] != "torchrun")
    return 0 if ok else 1


# ---- badresume -------------------------------------------------------------

def _plain_pick(ckpt):
    """torchrun-alone's rule: each rank's newest file; what torch.load says."""
    import torch

    picks = []
    for r in range(2):
        files = sorted(glob.glob(str(ckpt / "plain" / f"rank-{r}" / "step-*.pt")),
                       key=os.path.getmtime)
        if not files:
            picks.append(None)
            continue
        try:
            picks.append(int(torch.load(files[-1])["step"]))
        except Exception:
            picks.append("torn")
    return picks


def _kguard_pick(ckpt, tmp):
    """kguard's rule: `kguard ckpt latest` (a complete verified set), each rank
    loaded through kguard.resume() as after a restore."""
    env = _env(tmp)
    p = subprocess.run([ARGS.kguard, "ckpt", "latest", str(ckpt)], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return [None, None]
    archive = p.stdout.strip().splitlines()[-1]
    picks = []
    code = ("import kguard,sys\nr=kguard.resume()\nprint(int(r.load()['step']))")
    for r in range(2):
        e = dict(env, KGUARD_RESUME_ARCHIVE=archive, KGUARD_CKPT_DIR=str(ckpt), RANK=str(r),
                 WORLD_SIZE="2")
        q = subprocess.run([PY, "-c", code], env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        picks.append(int(q.stdout.strip()) if q.returncode == 0 else "torn")
    return picks


def _judge(picks):
    if picks == [None, None]:
        return "start over"
    if "torn" in picks:
        return "incomplete"
    if picks[0] != picks[1]:
        return "inconsistent"
    return "ok"


def badresume():
    rng = random.Random(ARGS.seed)
    tally = {"kguard": {}, "torchrun": {}}
    hit_write = 0
    for i in range(ARGS.trials):
        tmp = Path(tempfile.mkdtemp(prefix="kg-bad-"))
        ckpt = tmp / "ckpt"
        rep = tmp / "report.jsonl"
        env = _env(tmp, KGUARD_CKPT_DIR=str(ckpt))
        cmd = _torchrun(2, 0, "--saver", "both", "--steps", str(ARGS.steps), "--every", "2",
                        "--ballast-mb", str(ARGS.ballast_mb), "--report", str(rep))
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        # Wait for both ranks to run, then draw the moment and the victim.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            ev = _events(rep)
            if sum(1 for e in ev if e["event"] == "start") >= 2:
                break
            time.sleep(0.05)   # polling a file another process writes; no sync exists
        pids = {e["rank"]: e["pid"] for e in _events(rep) if e["event"] == "start"}
        time.sleep(rng.uniform(0.0, ARGS.window))   # the random moment of the fault
        victim = rng.choice(["rank 0", "rank 1", "tree"])
        try:
            if victim == "tree":
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                os.kill(pids[int(victim[-1])], signal.SIGKILL)
        except (ProcessLookupError, KeyError):
            pass
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        time.sleep(0.5)   # an orphaned seal (rank killed, its seal child not) may finish
        torn_write = any(n.startswith(".") for n in os.listdir(ckpt)) if ckpt.exists() else False
        plain = _plain_pick(ckpt)
        kg = _kguard_pick(ckpt, tmp)
        hit_write += torn_write or "torn" in plain
        for who, picks in (("torchrun", plain), ("kguard", kg)):
            v = _judge(picks)
            tally[who][v] = tally[who].get(v, 0) + 1
        if ARGS.verbose:
            print(f"trial {i}: {victim}: newest-file {plain}, kguard {kg}")
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"bad resumes: {ARGS.trials} trial(s), 2 ranks, SIGKILL of rank 0, rank 1 or the "
          f"tree at a random moment, checkpoint every 2 steps with {ARGS.ballast_mb} MB "
          f"ballast; {hit_write} kill(s) interrupted a write or a seal")
    for who, rule in (("torchrun", "newest file per rank, torch.load, unverified"),
                      ("kguard", "kguard ckpt latest: complete verified set")):
        t = tally[who]
        bad = sum(t.get(k, 0) for k in ("incomplete", "inconsistent"))
        print(f"  {who:8s} ({rule}): " + ", ".join(f"{k} {v}" for k, v in sorted(t.items()))
              + f"; bad {bad}")
    return 0 if sum(tally["kguard"].get(k, 0) for k in ("incomplete", "inconsistent")) == 0 else 1


# ---- goodput ---------------------------------------------------------------

def goodput():
    every = max(1, ARGS.steps // (ARGS.faults + 1))
    faults = ",".join(str(every * (k + 1) + 1) for k in range(ARGS.faults))
    res = {w: [] for w in ARGS.launchers}
    failed = {}
    for _ in range(ARGS.trials):
        for who in ARGS.launchers:
            walls = []
            for fs in ("", faults):
                tmp = Path(tempfile.mkdtemp(prefix="kg-good-"))
                rep = tmp / "report.jsonl"
                env = _env(tmp, KGUARD_CKPT_DIR=str(tmp / "ckpt"))
                job = ["--steps", str(ARGS.steps), "--every", str(ARGS.every), "--work",
                       "160" if not ARGS.step_ms else "60", "--step-ms", str(ARGS.step_ms),
                       "--fault-steps", fs, "--fault-rank", "1", "--marks", str(tmp),
                       "--fault-kinds", ARGS.kinds, "--report", str(rep)]
                cmd = _launch(who, tmp, 2, ARGS.faults + 2, job)
                rc, wall, out = _run(cmd, env, 900)
                done = any(e["event"] == "done" for e in _events(rep))
                if rc != 0 or not done:
                    # Reported, not hidden: e.g. kguard's same-failure stop (86) when
                    # every periodic fault has the same text (--kinds with one kind).
                    print(f"  {who}: the job did not finish (exit {rc}) after "
                          f"{sum(1 for e in _events(rep) if e['event'] == 'start')} rank start(s), "
                          f"{wall:.1f} s; its output ends:\n" + "\n".join(
                              l for l in out.splitlines() if not l.startswith("[default")
                          )[-1500:])
                    failed[who] = failed.get(who, 0) + 1
                    # Kept whole for the post-mortem: the workers' own lines
                    # (left out above), kguard's log and incidents.
                    (tmp / "output.txt").write_text(out)
                    print(f"  kept: {tmp} (output.txt, state/)")
                    break
                walls.append(wall)
                shutil.rmtree(tmp, ignore_errors=True)
            if len(walls) == 2:
                res[who].append((walls[0], walls[1]))
                print(f"  trial: {who} fault-free {walls[0]:.1f} s, with faults {walls[1]:.1f} s, "
                      f"goodput {walls[0] / walls[1]:.3f}, load {os.getloadavg()[0]:.1f}",
                      flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    print(f"goodput: 2 ranks, {ARGS.steps} steps"
          f"{f' of {ARGS.step_ms:g} ms + work' if ARGS.step_ms else ''}, checkpoint every "
          f"{ARGS.every}, sticky faults "
          f"({ARGS.kinds} in turn) at steps {faults} (rank 1 raises), {ARGS.trials} trial(s)")
    for who, r in res.items():
        if r:
            print(f"  {who:16s} fault-free s {_stats([a for a, _ in r])}; with faults s "
                  f"{_stats([b for _, b in r])}; goodput {_stats([a / b for a, b in r])}")
            cost = [(b - a) / ARGS.faults for a, b in r]
            if ARGS.faults:
                # The cost of one fault (lost steps since the checkpoint, the
                # restart) does not depend on the job's length: a 10-minute
                # job with a fault every 2 minutes (4 faults) from it.
                print(f"  {'':16s} cost per fault s {_stats(cost)}; projected goodput of a "
                      f"10-minute job with 4 faults {_stats([600 / (600 + 4 * c) for c in cost])}")
        if failed.get(who):
            print(f"  {who:16s} {failed[who]} trial(s) did not finish")
    # Against torchrun alone, trial by trial (the same trial ran them all
    # under the same load).
    base = res.get("torchrun") or []
    for who, r in res.items():
        if who == "torchrun" or not r or len(r) != len(base) or not ARGS.faults:
            continue
        gain = [a / b - ta / tb for (a, b), (ta, tb) in zip(r, base)]
        ratio = [(b - a) / max(tb - ta, 1e-9) for (a, b), (ta, tb) in zip(r, base)]
        print(f"  {who:16s} goodput minus torchrun's {_stats(gain)}; cost per fault / "
              f"torchrun's {_stats(ratio)}")
    return 0 if not failed else 1


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["detbug", "badresume", "goodput"])
    ap.add_argument("--kguard", default=str(ROOT / "build" / "dev" / "kguard"))
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--max-restarts", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--faults", type=int, default=3)
    ap.add_argument("--every", type=int, default=5, help="goodput: checkpoint every N steps")
    ap.add_argument("--step-ms", type=float, default=0,
                    help="goodput: a sleep per step (the device's share), so that steps "
                         "keep their length on a loaded CPU; 0: CPU work only (160x160)")
    ap.add_argument("--ballast-mb", type=float, default=32)
    ap.add_argument("--kinds", default="cuda-illegal-address,cuda-launch-failure,cuda-assert",
                    help="goodput: the emulated sticky faults, in turn (one kind: every "
                         "fault has the same text, which kguard's same-failure rule stops)")
    ap.add_argument("--window", type=float, default=8.0,
                    help="badresume: the kill falls uniformly in this many seconds after start")
    ap.add_argument("--random-state", dest="seed", metavar="N", type=int, default=None,
                    help="initialise the random generator with this integer, for a repeatable run")
    ap.add_argument("--launchers", default=",".join(LAUNCHERS),
                    help="goodput, detbug: who starts the ranks, in turn (%s)"
                         % ", ".join(LAUNCHERS))
    ap.add_argument("--on-fault", choices=["raise", "hang"], default="raise",
                    help="detbug: the poisoned rank raises, or stays alive (judged by the pace)")
    ap.add_argument("--short", action="store_true", help="one small trial (the ctest version)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ARGS = ap.parse_args()
    ARGS.launchers = [w for w in ARGS.launchers.split(",") if w]
    if not set(ARGS.launchers) <= set(LAUNCHERS):
        ap.error(f"--launchers: known are {', '.join(LAUNCHERS)}")
    if ARGS.short:
        ARGS.trials, ARGS.steps, ARGS.faults, ARGS.window = 1, 16, 1, 3.0
        # torchrun alone and kguard's fastest path (its ranks, standbys):
        # kguard exec -- torchrun is driven by the exec and multinode tests.
        if ARGS.launchers == list(LAUNCHERS):
            ARGS.launchers = ["torchrun", "kguard-standby"]
        ARGS.ballast_mb = min(ARGS.ballast_mb, 8)
    if not shutil.which("torchrun"):
        print("skipped: torchrun not installed (python3-torch)")
        return 77
    if not os.access(ARGS.kguard, os.X_OK):
        print(f"skipped: no kguard binary at {ARGS.kguard} (--kguard)")
        return 77
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    return {"detbug": detbug, "badresume": badresume, "goodput": goodput}[ARGS.what]()


if __name__ == "__main__":
    sys.exit(main())
