"""Bad resumes, many cheap trials (issue 15, part 3): what each resume rule
loads after a SIGKILL at a random moment, including during seals and during
the restore itself, and after a sticky fault the job wrote past.

    /usr/bin/python3 bench/resilience/bad_resumes.py [--trials 1000] [--random-state N]
        [--ballast-kb 256] [--kguard build/dev/kguard] [--jsonl out.jsonl]
    (--short: 12 trials, what ctest -L bench runs; exit 77 = skipped, no torch)

One host, no torchrun: the harness imports torch and kguard once and forks
each trial's job from itself (a torch import costs ~2 s here, a fork ~ms),
so 1,000 trials fit in well under an hour on 2 loaded vCPUs. A trial's job is
an "agent" in its own session (what `torchrun` is: one process group) with
2 ranks that train a tiny model (16x16 matrix, --ballast-kb of extra state),
exchange their parameters through pipes every step (an all-reduce: a rank
whose peer died reads EOF and exits, as gloo raises "Connection closed by
peer"), and checkpoint every step with both savers:

  kguard  kguard.save (a verified shard per rank: staging dir, then
          `kguard ckpt seal`: hash, sign, fsync, rename)
  plain   torch.save straight into plain/rank-R/step-N.pt (what a script
          under torchrun alone does; resumed as "the newest file per rank")

Each trial draws one fault:
  kill-rank0, kill-rank1  SIGKILL one rank (its seal child, if any, lives on)
  kill-tree               SIGKILL the whole process group (a host going down)
  sticky                  rank R prints an emulated illegal memory access at a
                          random step and both ranks train and checkpoint 0-2
                          more steps (the all-reduce spreads the poisoned
                          values: their states are garbage, flagged), then the
                          tree is SIGKILLed (as a supervisor or the scheduler)
and one moment: half the kills land uniformly in the run, half are aimed into
a save (after a rank announced it, a uniform delay within the typical save
time). A third of the trials also SIGKILL the first restore
(`kguard ckpt resume-prepare`) at a uniform moment in its typical duration,
and judge the retry.

Then both rules are asked what they resume, on the same damage:
  newest file  each rank torch.load()s its newest plain file by mtime
  kguard       `kguard ckpt resume-prepare --before T` (what `kguard exec`
               runs after a fault at T; T = the fault's first error line, or
               for a plain kill the moment of judging, as a scheduler
               restart would), then each rank loads through kguard.resume()
               with the environment kguard exec sets.
Counted per rule: incomplete (a torn file: the load raises), newer than the
fault (a state saved after the sticky text: flagged garbage), inconsistent
(the ranks load different steps), unverified (a resume from bytes nothing
checked; every newest-file resume is one), plus ok / start over. A resume is
bad if incomplete, newer than the fault or inconsistent; the kguard count of
bad resumes must be 0 (exit 1 otherwise, and with every trial's record in
--jsonl to investigate).
"""
import argparse
import glob
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["OMP_NUM_THREADS"] = "1"   # no thread pools: the harness forks
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
FAULTS = ("kill-rank0", "kill-rank1", "kill-tree", "sticky")
BAD = ("incomplete", "newer-than-fault", "inconsistent")


def _now_ms():
    return int(time.time() * 1000)


# ---- the job (runs in forked children) --------------------------------------

def _rank(rank, rd, wr, events, ckpt, plain, steps, sticky_step, sticky_rank, extra,
          ballast):
    import torch
    import kguard

    os.environ.update(RANK=str(rank), WORLD_SIZE="2", KGUARD_CKPT_DIR=str(ckpt))
    torch.manual_seed(rank)
    w = torch.randn(16, 16) / 4
    poisoned = False

    def say(*parts):
        os.write(events, (" ".join(str(p) for p in (rank, _now_ms(), *parts)) + "\n").encode())

    for n in range(1, steps + 1):
        if n == sticky_step and rank == sticky_rank:
            say("fault", n)           # its first error line (the time T)
        if n >= sticky_step:
            poisoned = True           # the all-reduce spreads it to every rank
            if n > sticky_step + extra:
                say("hang", n)        # blocked, as a poisoned rank in a collective
                signal.pause()
        w = torch.tanh(w @ w.T) + 1e-3 * w
        os.write(wr, w.numpy().tobytes())
        got = b""
        while len(got) < w.numel() * 4:
            b = os.read(rd, w.numel() * 4 - len(got))
            if not b:
                say("peer-gone", n)   # gloo: "Connection closed by peer"
                os._exit(1)
            got += b
        w = (w + torch.frombuffer(bytearray(got), dtype=torch.float32).view(16, 16)) / 2
        state = {"w": w, "step": n, "poisoned": poisoned, "ballast": ballast}
        say("saving", n)
        kguard.save(state, n)
        os.makedirs(plain, exist_ok=True)
        torch.save(state, os.path.join(plain, f"step-{n:06d}.pt"))
        say("saved", n)
    say("done", steps)
    os._exit(0)


def _agent(events, ckpt, plain_root, steps, sticky_step, sticky_rank, extra, ballast_kb):
    """The trial's process group: 2 ranks, like torchrun's agent."""
    import torch

    os.setsid()
    ballast = torch.zeros(ballast_kb * 256) + 1
    a_r, b_w = os.pipe()
    b_r, a_w = os.pipe()
    pids = []
    for rank, (rd, wr) in enumerate(((a_r, a_w), (b_r, b_w))):
        pid = os.fork()
        if pid == 0:
            try:
                for fd in (a_r, a_w, b_r, b_w):
                    if fd not in (rd, wr):
                        os.close(fd)
                _rank(rank, rd, wr, events, ckpt, os.path.join(plain_root, f"rank-{rank}"),
                      steps, sticky_step, sticky_rank, extra, ballast)
            finally:
                os._exit(3)
        pids.append(pid)
    for fd in (a_r, a_w, b_r, b_w):
        os.close(fd)
    os.write(events, f"agent {_now_ms()} pids {pids[0]} {pids[1]}\n".encode())
    for _ in pids:
        os.wait()
    os._exit(0)


# ---- judging ----------------------------------------------------------------

def _load_child(fn):
    """Run fn() in a forked child; its JSON result, or {"error": ...}."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = fn()
        except BaseException as e:  # noqa: BLE001 - the verdict, whatever it is
            out = {"error": f"{type(e).__name__}: {e}"[:300]}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        data += b
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"error": "the loader died"}


def _state_summary(s):
    return {"step": int(s["step"]), "poisoned": bool(s["poisoned"])}


def newest_file(tmp):
    import torch

    picks = []
    for r in range(2):
        files = sorted(glob.glob(str(tmp / "plain" / f"rank-{r}" / "step-*.pt")),
                       key=os.path.getmtime)
        if not files:
            picks.append(None)
            continue
        try:
            picks.append(dict(_state_summary(torch.load(files[-1])), verified=False))
        except Exception as e:  # a torn file: the resumed script dies here
            picks.append({"error": f"{type(e).__name__}: {e}"[:200]})
    return picks


def _resume_prepare(tmp, before, tag, kill_after=None):
    argv = [ARGS.kguard, "ckpt", "resume-prepare", "--dir", str(tmp / "ckpt"), "--before",
            str(before), "--incident", tag, "--into", str(tmp / f"restored-{tag}"), "--json"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=ENV, text=True)
    if kill_after is not None:
        try:
            p.wait(kill_after)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return None, True
    out = p.communicate()[0]
    try:
        return json.loads(out.strip().splitlines()[-1]), False
    except (ValueError, IndexError):
        return {"status": "garbled", "out": out[-300:]}, False


def kguard_rule(tmp, before, kill_restore):
    """resume-prepare as kguard exec runs it (killed once first if drawn),
    then each rank's kguard.resume().load() with the env exec sets."""
    killed = False
    if kill_restore is not None:
        _, killed = _resume_prepare(tmp, before, "first", kill_after=kill_restore)
    j, _ = _resume_prepare(tmp, before, "retry")
    if j.get("status") != "restored":
        return [None, None], j, killed

    def load(rank):
        def fn():
            import kguard

            os.environ.update(RANK=str(rank), WORLD_SIZE="2", KGUARD_CKPT_DIR=str(tmp / "ckpt"),
                              KGUARD_RESUME_ARCHIVE=j.get("archive_abs") or j["archive"],
                              KGUARD_RESUME_STEP=str(j["step"]),
                              KGUARD_RESUME_DIGEST=j.get("digest") or "")
            if j.get("dir"):
                os.environ["KGUARD_RESUME_DIR"] = j["dir"]
            r = kguard.resume()
            return dict(_state_summary(r.load()), verified=True)
        return fn
    return [_load_child(load(r)) for r in range(2)], j, killed


def judge(picks):
    if picks == [None, None]:
        return "start over"
    if any(p is None or "error" in p for p in picks):
        return "incomplete"     # a torn file, or one rank with nothing to load
    if any(p["poisoned"] for p in picks):
        return "newer-than-fault"
    if picks[0]["step"] != picks[1]["step"]:
        return "inconsistent"
    return "ok"


# ---- one trial --------------------------------------------------------------

def _events(buf):
    return [line.split() for line in buf.decode(errors="replace").splitlines()]


def trial(i, rng, save_ms):
    tmp = Path(tempfile.mkdtemp(prefix="kg-badres-", dir=ARGS.tmp))
    fault = rng.choice(FAULTS)
    aimed = rng.random() < 0.5
    kill_restore = rng.uniform(0, ARGS.restore_ms / 1000) if rng.random() < 1 / 3 else None
    steps = 40
    sticky_step = rng.randint(2, 6) if fault == "sticky" else 10 ** 9
    sticky_rank = rng.randint(0, 1)
    extra = rng.randint(0, 2)
    rd, wr = os.pipe()
    os.set_blocking(rd, False)
    agent = os.fork()
    if agent == 0:
        os.close(rd)
        try:
            _agent(wr, str(tmp / "ckpt"), str(tmp / "plain"), steps, sticky_step, sticky_rank,
                   extra, ARGS.ballast_kb)
        finally:
            os._exit(3)
    os.close(wr)
    buf = b""
    t0 = time.monotonic()
    window = rng.uniform(0.05, ARGS.window)
    fault_ms = None
    deadline = t0 + 60
    saving_seen = 0
    while time.monotonic() < deadline:
        try:
            b = os.read(rd, 65536)
            if b == b"":
                break
            buf += b
        except BlockingIOError:
            pass
        ev = _events(buf)
        pids = next((e[3:5] for e in ev if e[0] == "agent"), None)
        if fault == "sticky":
            f = next((e for e in ev if len(e) > 2 and e[2] == "fault"), None)
            if f and fault_ms is None:
                fault_ms = int(f[1])
                t_fault = time.monotonic()
            # the tree is killed at a random moment after the fault (aimed:
            # into a save the ranks make past the fault, when there is one)
            if fault_ms is not None:
                late = [e for e in ev if len(e) > 2 and e[2] == "saving"
                        and int(e[1]) >= fault_ms]
                hung = sum(1 for e in ev if len(e) > 2 and e[2] == "hang")
                if aimed and late and extra > 0:
                    time.sleep(rng.uniform(0, save_ms / 1000))
                    break
                if hung >= 2 or (not aimed and time.monotonic() - t_fault > window / 4):
                    break
        elif aimed:
            sv = [e for e in ev if len(e) > 2 and e[2] == "saving"]
            if pids and len(sv) > saving_seen and int(sv[-1][3]) >= 2 and \
                    time.monotonic() - t0 > window / 2:
                time.sleep(rng.uniform(0, save_ms / 1000))
                break
            saving_seen = len(sv)
        elif pids and time.monotonic() - t0 >= window:
            break
        time.sleep(0.002)   # polling a pipe whose writer may be killed; no sync exists
    pids = next((e[3:5] for e in _events(buf) if e[0] == "agent"), None)
    try:
        if fault in ("kill-tree", "sticky") or not pids:
            os.killpg(agent, signal.SIGKILL)
        else:
            os.kill(int(pids[int(fault[-1])]), signal.SIGKILL)
    except ProcessLookupError:
        pass
    # The survivors end on their own (EOF from the dead peer) or are reaped
    # with the group; a lone seal child of a killed rank may finish: wait.
    end = time.monotonic() + 30
    reaped = False
    while time.monotonic() < end:
        if not reaped and os.waitpid(agent, os.WNOHANG)[0] == agent:
            reaped = True
        try:
            os.killpg(agent, 0)   # any member left (a zombie agent counts)?
        except ProcessLookupError:
            break
        time.sleep(0.01)      # waiting for processes we cannot be told about
    else:
        os.killpg(agent, signal.SIGKILL)
    if not reaped:
        os.waitpid(agent, 0)
    try:
        buf += os.read(rd, 1 << 20)
    except (BlockingIOError, OSError):
        pass
    os.close(rd)
    ev = _events(buf)
    in_save = {}
    for e in ev:
        if len(e) > 3 and e[2] in ("saving", "saved"):
            in_save[e[0]] = e[2] == "saving"
    hit_save = any(in_save.values()) or any(n.startswith(".") for n in os.listdir(tmp / "ckpt")) \
        if (tmp / "ckpt").exists() else False
    before = fault_ms if fault == "sticky" and fault_ms is not None else _now_ms()
    plain = newest_file(tmp)
    kg, j, restore_killed = kguard_rule(tmp, before, kill_restore)
    row = {"trial": i, "fault": fault, "aimed": aimed, "hit_save": bool(hit_save),
           "restore_killed": restore_killed, "kill_s_after_start": round(time.monotonic() - t0, 3),
           "sticky_step": sticky_step if fault == "sticky" else None,
           "newest_file": {"picks": plain, "verdict": judge(plain)},
           "kguard": {"picks": kg, "verdict": judge(kg), "status": j.get("status"),
                      "step": j.get("step")}}
    shutil.rmtree(tmp, ignore_errors=True)
    return row


def _save_ms():
    """The typical time of one step's saves here (both savers), to aim kills."""
    import torch
    import kguard

    tmp = Path(tempfile.mkdtemp(prefix="kg-badres-cal-", dir=ARGS.tmp))
    os.environ["KGUARD_CKPT_DIR"] = str(tmp / "ckpt")
    state = {"w": torch.zeros(16, 16), "step": 0, "poisoned": False,
             "ballast": torch.zeros(ARGS.ballast_kb * 256)}
    t = []
    for n in range(5):
        t0 = time.monotonic()
        kguard.save(state, n)
        torch.save(state, str(tmp / f"p{n}.pt"))
        t.append(time.monotonic() - t0)
    t0 = time.monotonic()
    _resume_prepare(tmp, _now_ms(), "cal")
    rp = time.monotonic() - t0
    del os.environ["KGUARD_CKPT_DIR"]
    shutil.rmtree(tmp, ignore_errors=True)
    return 1000 * sorted(t)[2], 1000 * rp


def main():
    global ARGS, ENV
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kguard", default=str(ROOT / "build" / "dev" / "kguard"))
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--random-state", dest="seed", metavar="N", type=int, default=None,
                    help="initialise the random generator with this integer, for a repeatable run")
    ap.add_argument("--ballast-kb", type=int, default=256)
    ap.add_argument("--window", type=float, default=1.5,
                    help="unaimed kills fall uniformly in this many seconds after start")
    ap.add_argument("--tmp", default=None, help="where trials write (default: the temp dir)")
    ap.add_argument("--jsonl", default=None, help="one JSON line per trial")
    ap.add_argument("--short", action="store_true", help="12 trials (the ctest version)")
    ARGS = ap.parse_args()
    if ARGS.short:
        ARGS.trials = 12
    try:
        import torch  # noqa: F401
        import kguard  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e}")
        return 77
    if not os.access(ARGS.kguard, os.X_OK):
        print(f"skipped: no kguard binary at {ARGS.kguard} (--kguard)")
        return 77
    keys = tempfile.mkdtemp(prefix="kg-badres-keys-")
    os.environ.update(KGUARD_BIN=ARGS.kguard, KGUARD_KEY_DIR=keys,
                      PYTHONDONTWRITEBYTECODE="1")
    for k in ("KGUARD_RESUME_DIR", "KGUARD_RESUME_ARCHIVE", "KGUARD_CKPT_LAYOUT", "RANK",
              "WORLD_SIZE"):
        os.environ.pop(k, None)
    ENV = dict(os.environ)
    save_ms, restore_ms = _save_ms()
    ARGS.restore_ms = max(restore_ms, 5.0)
    rng = random.Random(ARGS.seed)
    out = open(ARGS.jsonl, "w") if ARGS.jsonl else None
    tally = {"newest file": {}, "kguard": {}}
    hits = {"save": 0, "restore": 0}
    unverified = {"newest file": 0, "kguard": 0}
    t_start = time.monotonic()
    load0 = os.getloadavg()[0]
    done = 0
    for i in range(ARGS.trials):
        row = trial(i, rng, save_ms)
        done += 1
        hits["save"] += row["hit_save"]
        hits["restore"] += row["restore_killed"]
        for who, key in (("newest file", "newest_file"), ("kguard", "kguard")):
            v = row[key]["verdict"]
            tally[who][v] = tally[who].get(v, 0) + 1
            unverified[who] += sum(1 for p in row[key]["picks"]
                                   if p and "error" not in p and not p["verified"])
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()
        if ARGS.trials >= 50 and (i + 1) % 50 == 0:
            print(f"  {i + 1} trials, {time.monotonic() - t_start:.0f} s, kguard "
                  f"{tally['kguard']}, newest file {tally['newest file']}", flush=True)
    wall = time.monotonic() - t_start
    shutil.rmtree(keys, ignore_errors=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
          f"load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    print(f"bad resumes: {done} trials in {wall:.0f} s ({wall / max(done, 1):.2f} s each), "
          f"2 ranks, checkpoint every step ({ARGS.ballast_kb} KB ballast; one step's saves "
          f"~{save_ms:.0f} ms, a restore ~{ARGS.restore_ms:.0f} ms); faults drawn from "
          f"{', '.join(FAULTS)}; {hits['save']} kills hit a save in progress, "
          f"{hits['restore']} killed a restore (then retried)")
    bad = {}
    for who in ("newest file", "kguard"):
        t = tally[who]
        bad[who] = sum(t.get(k, 0) for k in BAD)
        print(f"  {who:11s} " + ", ".join(f"{k} {v}" for k, v in sorted(t.items()))
              + f"; unverified rank resumes {unverified[who]}; BAD {bad[who]} of {done}")
    counted = {who: sum(tally[who].values()) for who in tally}
    if counted != {"newest file": done, "kguard": done}:
        print(f"harness error: verdicts {counted} do not add up to {done} trials")
        return 2
    return 0 if bad["kguard"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
