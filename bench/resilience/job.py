"""The training job of the resilience comparisons (bench/resilience/versus_torchrun.py).

Runs under `torchrun` on one host (one or more ranks, gloo) with or without
`kguard exec` around it. Each step is real CPU work (matrix products, about
--step-ms long on the machine that calibrates it) plus one all-reduce, so a
rank that stops stops the others. Every --every steps it checkpoints with
one of two savers:

  --saver kguard   kguard.save (a verified shard per rank; kguard.resume()
                   on restart: what kguard exec restored)
  --saver plain    torch.save straight into $CKPT/plain/rank-R/step-N.pt,
                   and on restart torch.load of the newest file by mtime:
                   the "newest file" resume of a script under torchrun alone

--snapshot-every K also seals the state into kguard's memory every K steps
(kguard.snapshot; kguard.resume() then returns whichever is newer).

Faults (the emulated CUDA texts, python/kguard/emulate.py):
  --fault-steps 5,40   a sticky fault at each listed step (--fault-kinds in
                       turn; default an illegal memory access), once per
                       step across restarts (a marker file in --marks), or
                       at every start (--fault-always: a deterministic bug)
  --on-fault hang      the poisoned rank stays alive and blocked (as one stuck
                       in its next collective); default: it raises and dies

Writes one JSON line per start to --report (rank, resumed step, what was
loaded) and prints "kguard: completed step N" after each step. --timeline
adds one "timeline" line per start with the wall-clock times of: entry
(the interpreter runs this file), imported (torch and kguard imported),
rendezvous (the process group initialised), loaded (the resume loaded),
first_step (the first step completed). (No SIGTERM handler: a Python one
would defer TERM while a rank blocks in a collective, unlike torchrun's
workers, which die on it at once.)
"""
import time  # noqa: I001 - first, so entry is the interpreter's start

T_ENTRY = time.time()
import argparse  # noqa: E402
import glob
import json
import os
import sys
import threading

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--every", type=int, default=5)
p.add_argument("--work", type=int, default=60, help="matrix size of each step's work")
p.add_argument("--step-ms", type=float, default=0,
               help="a sleep per step besides the work: the device's share of a step, "
                    "which keeps step times steady on a loaded CPU")
p.add_argument("--saver", choices=["kguard", "plain", "both"], default="kguard",
               help="both: seal with kguard and write the plain file (bad-resume trials "
                    "judge both resume rules on the same damage); resumes as kguard")
p.add_argument("--ballast-mb", type=float, default=0,
               help="extra state per checkpoint, so that writes take time a kill can hit")
p.add_argument("--fault-steps", default="")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-kinds", default="cuda-illegal-address",
               help="emulated kinds, used in turn by the listed fault steps")
p.add_argument("--fault-always", action="store_true")
p.add_argument("--on-fault", choices=["raise", "hang"], default="raise")
p.add_argument("--marks", default="")
p.add_argument("--hold-at", type=int, default=-1,
               help="before this step, wait until --hold-file exists (a harness's go-ahead, "
                    "e.g. once kguard's warm standbys are ready)")
p.add_argument("--hold-file", default=None)
p.add_argument("--snapshot-every", type=int, default=0,
               help="kguard.snapshot every this many steps (the state in kguard's memory, "
                    "restored first after a fault); 0: never")
p.add_argument("--report", required=True)
p.add_argument("--timeline", action="store_true")
args = p.parse_args()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import kguard  # noqa: E402
from kguard import emulate  # noqa: E402

T_IMPORTED = time.time()
rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
if world > 1:
    dist.init_process_group("gloo")
T_RDZV = time.time()
torch.manual_seed(0)
w = torch.randn(args.work, args.work) / args.work ** 0.5
ckpt = os.environ.get("KGUARD_CKPT_DIR") or "ckpt"
plain_dir = os.path.join(ckpt, "plain", f"rank-{rank}")
faults = sorted(int(s) for s in args.fault_steps.split(",") if s)
kinds = args.fault_kinds.split(",")


def report(**kw):
    with open(args.report, "a") as f:
        f.write(json.dumps(dict(rank=rank, pid=os.getpid(), t=time.time(), **kw)) + "\n")


ballast = torch.randn(int(args.ballast_mb * 2**20 / 4)) if args.ballast_mb > 0 else None


def state(n):
    return {"w": w.clone(), "step": n, "check": float(w.sum()), "ballast": ballast}


def load_plain():
    files = sorted(glob.glob(os.path.join(plain_dir, "step-*.pt")), key=os.path.getmtime)
    if not files:
        return None, None
    try:
        return torch.load(files[-1]), files[-1]
    except Exception as e:  # a torn file: the naive script dies here
        report(event="resume", step=None, source=files[-1], error=f"{type(e).__name__}: {e}")
        raise


start = 0
if args.saver in ("kguard", "both"):
    r = kguard.resume()
    if r is not None:
        s = r.load()
        w, start = s["w"], int(s["step"])
        report(event="resume", step=start, source=r.archive or r.dir, verified=True,
               intact=abs(float(w.sum()) - s["check"]) < 1e-3)
else:
    s, src = load_plain()
    if s is not None:
        w, start = s["w"], int(s["step"])
        report(event="resume", step=start, source=src, verified=False,
               intact=abs(float(w.sum()) - s["check"]) < 1e-3)
report(event="start", step=start)
T_LOADED = time.time()


def fault(n):
    if rank != args.fault_rank or n not in faults:
        return
    if not args.fault_always:
        mark = os.path.join(args.marks, f"fault-{n}")
        try:
            os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    kind = kinds[faults.index(n) % len(kinds)]
    report(event="fault", step=n, kind=kind)
    try:
        emulate._fire(kind, n)
    except Exception as e:
        if args.on_fault == "hang":
            print(f"{type(e).__name__}: {e}", file=sys.stderr, flush=True)
            threading.Event().wait()
        raise


def save(n):
    if args.saver in ("kguard", "both"):
        kguard.save(state(n), n)
        if args.saver == "kguard":
            return
    os.makedirs(plain_dir, exist_ok=True)
    torch.save(state(n), os.path.join(plain_dir, f"step-{n:06d}.pt"))


for n in range(start + 1, args.steps + 1):
    if n == args.hold_at and args.hold_file:
        while not os.path.exists(args.hold_file):
            time.sleep(0.05)  # the harness creates it; no other channel to it
    fault(n)
    x = w
    for _ in range(20):
        x = torch.tanh(x @ w)
    w = w + 1e-3 * x
    if args.step_ms > 0:
        time.sleep(args.step_ms / 1000)
    if world > 1:
        dist.all_reduce(w)
        w /= world
    print(f"kguard: completed step {n}", flush=True)
    if args.timeline and n == start + 1:
        report(event="timeline", step=start, entry=T_ENTRY, imported=T_IMPORTED,
               rendezvous=T_RDZV, loaded=T_LOADED, first_step=time.time())
    if args.snapshot_every and n % args.snapshot_every == 0:
        kguard.snapshot(state(n), n)
    if n % args.every == 0:
        save(n)
report(event="done", step=args.steps)
if world > 1:
    dist.destroy_process_group()
