"""A small real PyTorch training for the `kguard exec` tests (CPU).

Deterministic: the batch of step n depends only on n, so a run resumed from
a checkpoint ends with exactly the parameters of a run without faults.
Checkpoints with kguard.save every --every steps; resumes with
kguard.resume(); prints "kguard: completed step N" after each step (the
progress kguard exec reads). Under torchrun (WORLD_SIZE > 1) it trains with
DistributedDataParallel over gloo; under a multi-node kguard exec,
kguard.save/resume put each rank's checkpoints into $KGUARD_CKPT_DIR/rank-R
and read its restore from $KGUARD_RESUME_DIR/rank-R by themselves.

The emulated GPU fault (KGUARD_EMULATE, python/kguard/emulate.py) fires in
rank --fault-rank only. --on-fault hang keeps the poisoned process alive and
blocked (as a rank stuck in its next collective); raise lets it die.
SIGTERM or SIGUSR1 makes it seal the step it is on and exit 0 (pre-emption).
"""
import argparse
import json
import os
import signal
import sys
import threading

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
p.add_argument("--every", type=int, default=3)
p.add_argument("--out", required=True)
p.add_argument("--on-fault", choices=["raise", "hang"], default="raise")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-at-seal", action="store_true",
               help="the emulated fault fires while a checkpoint is being made, not at a "
                    "step's start")
p.add_argument("--hold-at", type=int, default=-1,
               help="before this step, wait until --hold-file exists (a test's go-ahead)")
p.add_argument("--hold-file", default=None)
p.add_argument("--ignore-term", action="store_true",
               help="the poisoned rank ignores SIGTERM (as one stuck in a device call)")
p.add_argument("--wait-signal-at", type=int, default=-1,
               help="after this step, wait (blocked) until a pre-emption signal")
p.add_argument("--sign-with-keys", default=None,
               help="seal with the key pair in this directory instead of kguard exec's own "
                    "(a rank whose KGUARD_KEY_DIR differs: its archives do not verify there)")
p.add_argument("--snapshot-every", type=int, default=0,
               help="kguard.snapshot every this many steps (0: never)")
p.add_argument("--tamper-snapshot-at", type=int, default=-1,
               help="once this step's snapshot is sealed, change a byte of it in kguard's "
                    "memory (as a stray write would)")
p.add_argument("--tamper-rank", type=int, default=-1,
               help="only this rank changes its snapshot (-1: every rank)")
p.add_argument("--step-ms", type=float, default=0,
               help="sleep this long at the start of each step (the device's share of a "
                    "real step: a snapshot and the next step's fault are then never in the "
                    "same millisecond)")
p.add_argument("--die-after-snapshot-at", type=int, default=-1,
               help="exit 1 right after this step's snapshot, the first time only (a "
                    "process whose error text came before a snapshot that still sealed)")
p.add_argument("--hang-once-at", type=int, default=-1,
               help="before this step, block forever, the first time only (a marker in "
                    "$KGUARD_STATE_DIR): a process that stopped making progress")
args = p.parse_args()
if args.sign_with_keys:
    os.environ["KGUARD_KEY_DIR"] = args.sign_with_keys

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
if rank != args.fault_rank:
    os.environ.pop("KGUARD_EMULATE", None)

import torch  # noqa: E402
import kguard  # noqa: E402
from kguard import emulate  # noqa: E402

preempt = threading.Event()


def _on_signal(signo, frame):
    preempt.set()


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGUSR1, _on_signal)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
if world > 1:
    import torch.distributed as dist
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
start = 0
r = kguard.resume()
if r is not None:
    state = r.load()  # under a multi-node kguard exec: this rank's own copy
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = int(state["step"])
    print(f"train_tiny: rank {rank} resumed from step {start} ({r.archive})", flush=True)


def batch(n):
    g = torch.Generator().manual_seed(1000 * n + rank)
    x = torch.randn(16, 8, generator=g)
    y = torch.randint(0, 4, (16,), generator=g)
    return x, y


def save(n):
    kguard.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": n}, n)


def fault_point(n):
    try:
        emulate.step(n)
    except Exception as e:  # the emulated device error
        if args.on_fault == "hang":
            if args.ignore_term:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print(f"{type(e).__name__}: {e}", file=sys.stderr, flush=True)
            threading.Event().wait()  # poisoned, alive, never returns
        raise


for n in range(start + 1, args.steps + 1):
    if n == args.hold_at and args.hold_file:
        import time
        while not os.path.exists(args.hold_file):
            time.sleep(0.05)  # a file the test creates; no other channel to it
    if args.step_ms > 0:
        import time
        time.sleep(args.step_ms / 1000)
    if n == args.hang_once_at:
        marker = os.path.join(os.environ["KGUARD_STATE_DIR"], "train-tiny-hung-once")
        if not os.path.exists(marker):
            open(marker, "w").close()
            print(f"train_tiny: stopped making progress before step {n}", flush=True)
            threading.Event().wait()
    if not args.fault_at_seal:
        fault_point(n)
    x, y = batch(n)
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"kguard: completed step {n}", flush=True)
    if n % args.every == 0:
        if args.fault_at_seal:
            fault_point(n)
        save(n)
    if args.snapshot_every and n % args.snapshot_every == 0:
        snap = kguard.snapshot({"model": model.state_dict(), "opt": opt.state_dict(),
                                "step": n}, n)
        if n == args.tamper_snapshot_at and args.tamper_rank in (-1, rank):
            path = snap.wait()
            with open(path, "r+b") as f:
                f.seek(os.path.getsize(path) - 4096)
                byte = f.read(1)
                f.seek(-1, 1)
                f.write(bytes([byte[0] ^ 0xFF]))
            print(f"train_tiny: changed a byte of the snapshot of step {n}", flush=True)
        died = os.path.join(os.environ.get("KGUARD_STATE_DIR", "."), "train-tiny-died-once")
        if n == args.die_after_snapshot_at and not os.path.exists(died):
            open(died, "w").close()
            print(f"train_tiny: exits after the snapshot of step {n}", flush=True)
            sys.exit(1)
    if n == args.wait_signal_at:
        print("train_tiny: waiting for a pre-emption signal", flush=True)
        while not preempt.wait(0.1):  # signal handlers run between waits
            pass
    if preempt.is_set():
        save(n)
        print(f"train_tiny: pre-empted, sealed step {n}", flush=True)
        sys.exit(0)

if rank == 0:
    params = [t.detach().flatten().tolist() for t in model.parameters()]
    with open(args.out, "w") as f:
        json.dump({"step": args.steps, "params": params}, f)
print("train_tiny: done", flush=True)
