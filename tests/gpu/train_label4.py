"""A small deterministic training with the label-4 bug, for `kguard exec` on a
GPU (tests/gpu/exec_checks.py drives it).

An MLP over 4 classes on cuda:0 (every rank of a `--nproc-per-node` job on
the same device, DistributedDataParallel over gloo: NCCL refuses two ranks on
one GPU), `kguard.save` every --every steps, `kguard: completed step N`
after each step. The batch of step n depends only on n and the rank, and the
run uses PyTorch's deterministic algorithms (CUBLAS_WORKSPACE_CONFIG set
before torch loads cuBLAS, fixed seeds), so a run resumed from a checkpoint
ends with exactly the parameters of a run without the fault.

--bad once|always|never puts the target 4 into rank --bad-rank's batch of
step --bad-step: `once` only the first time (a marker file), `always` at
every start (the same bug after every restore). On CUDA, cross_entropy with
that target is the genuine nll_loss device-side assert, surfacing at the
loss's `.item()`. --device cpu-emulated trains on the CPU and lets kguard's
labelled emulation (kguard.emulate.step with the targets) raise the CUDA
assert's exact text instead: it proves this script and its driver, never a
GPU.

It prints one line `label4: EVENT {json}` per event, with wall-clock times
(the driver compares them across processes): `start` (the interpreter ran
the script's first line; how long `import torch` and the CUDA context took
in this process; whether torch was already imported, as in a warm standby),
`resumed`, `fault`, `first-step` (the first step this process completed),
`done` (the digest of the final state_dict, written to --out too).
"""
import time

T_SCRIPT = time.time()
import sys  # noqa: E402

PREIMPORTED = "torch" in sys.modules   # a warm standby imported it already
import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--every", type=int, default=4)
p.add_argument("--bad-step", type=int, default=10)
p.add_argument("--bad", choices=["once", "always", "never"], default="once")
p.add_argument("--bad-rank", type=int, default=0)
p.add_argument("--marker", help="--bad once: the file that says the bad label was used")
p.add_argument("--device", choices=["cuda", "cpu-emulated"], default="cuda")
p.add_argument("--hold-file", help="before --bad-step, wait until this file exists "
                                   "(the driver's go-ahead once kguard's standbys are warm)")
p.add_argument("--out", required=True, help="the final digest, as JSON (rank 0 writes it)")
args = p.parse_args()
rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
generation = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
# cuBLAS reads it when torch creates its handle: deterministic GEMMs.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def event(name, **facts):
    facts.update(rank=rank, pid=os.getpid(), t=time.time())
    print("label4: %s %s" % (name, json.dumps(facts, sort_keys=True)), flush=True)


t0 = time.time()
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
t_import = time.time() - t0
import kguard  # noqa: E402
from kguard import emulate  # noqa: E402

torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
t_ctx = None
if args.device == "cuda":
    if not torch.cuda.is_available():
        print("label4: no CUDA device visible to torch %s" % torch.__version__, file=sys.stderr)
        sys.exit(3)
    dev = torch.device("cuda", 0)
    t0 = time.time()
    torch.zeros(1, device=dev)   # the CUDA context of this process
    torch.cuda.synchronize(dev)
    t_ctx = time.time() - t0
else:
    dev = torch.device("cpu")
event("start", script=T_SCRIPT, import_torch_s=t_import, cuda_context_s=t_ctx,
      torch_preimported=PREIMPORTED, generation=generation, device=str(dev),
      torch=torch.__version__)

model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, 4)).to(dev)
net = model
if world > 1:
    import torch.distributed as dist
    dist.init_process_group("gloo")
    net = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[0] if dev.type == "cuda" else None)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
start = 0
r = kguard.resume()
if r is not None:
    state = r.load(map_location=dev)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = int(state["step"])
    event("resumed", step=start)


def bad_now(n):
    if args.bad == "never" or n != args.bad_step or rank != args.bad_rank:
        return False
    if args.bad == "always":
        return True
    try:
        os.close(os.open(args.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        return False


def batch(n):
    g = torch.Generator().manual_seed(1000 * n + rank)
    x = torch.randn(64, 32, generator=g)
    y = torch.randint(0, 4, (64,), generator=g)
    if bad_now(n):
        y[7] = 4       # the bug: a fifth class in a 4-class problem
    return x.to(dev), y.to(dev)


first = True
for n in range(start + 1, args.steps + 1):
    if n == args.bad_step and args.hold_file:
        while not os.path.exists(args.hold_file):
            time.sleep(0.05)   # a file the driver creates; no other channel to it
    x, y = batch(n)
    opt.zero_grad()
    logits = net(x)
    try:
        if args.device == "cpu-emulated":
            emulate.step(n, targets=y, classes=4)   # labelled emulation of the assert
        loss = F.cross_entropy(logits, y)
        loss.item()        # synchronises: a device-side assert surfaces here
    except RuntimeError as e:
        event("fault", step=n, error=str(e).splitlines()[0])
        raise
    loss.backward()
    opt.step()
    print("kguard: completed step %d" % n, flush=True)
    if first:
        event("first-step", step=n)
        first = False
    if n % args.every == 0:
        kguard.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": n}, n)

h = hashlib.sha256()
for k, v in sorted(model.state_dict().items()):
    h.update(k.encode())
    h.update(v.detach().cpu().contiguous().numpy().tobytes())
digest = h.hexdigest()
event("done", step=args.steps, digest=digest)
if rank == 0:
    with open(args.out, "w") as f:
        json.dump({"digest": digest, "steps": args.steps}, f)
if world > 1:
    torch.distributed.destroy_process_group()
