"""kguard.snapshot(state, step): the training state in kguard's memory.

A snapshot is an ordinary sealed kguard archive (digests and the run's
signature over its manifest), written on tmpfs into the memory directory of
the kguard that supervises this process ($KGUARD_SNAPSHOT_DIR, set by
`kguard exec` and the guarded kernel). It outlives this process, so after a
sticky device fault kguard restores the newest snapshot sealed before the
fault from memory, and only falls back to the disk checkpoints
(kguard.save) when no snapshot is newer or none verifies. The memory is
kguard's: when kguard ends, its snapshots go with it (persist them to disk
with persist_every / persist_seconds).

snapshot() returns once the state is copied into memory and the device
synchronised; the seal (hashing, signing) runs in its own process while
training goes on. At most one snapshot is being sealed per process: a
snapshot() called while the previous one is still sealing waits for it.
"""
import atexit
import os
import shutil
import subprocess
import sys
import time

from . import checkpoint as _ckpt
from . import pace as _pace

__all__ = ["snapshot", "Snapshot", "SnapshotRefused"]

# What one snapshot needs beside the state: the manifest, the tar headers,
# torch.save's pickle of the structure.
_SLACK = 16 << 20


class SnapshotRefused(MemoryError):
    """The state would not fit in memory beside what is there: nothing was
    taken, and the newest snapshot stays."""


class Snapshot(_ckpt.PendingSeal):
    """A snapshot taken by kguard.snapshot: its seal runs in the background.

    step: the step it holds. wait(): the sealed archive's path in kguard's
    memory (raises RuntimeError saying why when the seal failed, also when
    persisting it did). persisted: the path of its copy on disk once wait()
    returned, when this step was persisted, else None. waited_s: how long
    snapshot() waited for the previous snapshot's seal."""

    def __init__(self, proc, stage, step, out):
        super().__init__(proc, stage, step, out)
        self.persisted = None
        self.waited_s = 0.0

    def _failed(self, rc, text):
        return f"kguard.snapshot: sealing step {self.step} failed (exit {rc}): {text}"

    def _sealed(self, text):
        # stdout: the archive's path, then "persisted: PATH" when copied to
        # disk; the memory prune's lines (stderr) come among them.
        lines = text.splitlines()
        self.persisted = next((ln.split(": ", 1)[1] for ln in lines
                               if ln.startswith("persisted: ")), None)
        return next((ln for ln in lines if ln.startswith("/")), None)


_last = None            # the previous Snapshot of this process
_last_persist = None    # time.monotonic() of the last persisted snapshot


def _tensor_bytes(obj, seen, depth=0):
    """The bytes of the tensors and arrays in obj (dicts, lists, tuples,
    objects with a state_dict), each storage counted once."""
    if depth > 64:
        return 0
    storage = getattr(obj, "untyped_storage", None) or getattr(obj, "storage", None)
    if callable(storage) and hasattr(obj, "element_size"):   # a torch.Tensor
        try:
            s = storage()
            size = s.nbytes() if hasattr(s, "nbytes") else s.size() * obj.element_size()
            key = (s.data_ptr(), size)
        except (RuntimeError, TypeError, AttributeError):
            return 0
        if key in seen:
            return 0
        seen.add(key)
        return size
    nbytes = getattr(obj, "nbytes", None)      # a numpy array
    if isinstance(nbytes, int):
        return nbytes
    if isinstance(obj, dict):
        return sum(_tensor_bytes(v, seen, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_tensor_bytes(v, seen, depth + 1) for v in obj)
    if isinstance(obj, (bytes, bytearray, str)):
        return len(obj)
    return 0


def _meminfo_available():
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room():
    """Bytes this process's cgroup (v2) may still use, or None if unlimited."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            rel = next((ln.split(":", 2)[2].strip() for ln in f if ln.startswith("0::")), None)
        if rel is None:
            return None
        base = os.path.join("/sys/fs/cgroup", rel.lstrip("/"))
        with open(os.path.join(base, "memory.max"), encoding="ascii") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(base, "memory.current"), encoding="ascii") as f:
            current = int(f.read().strip())
        return max(int(limit) - current, 0)
    except (OSError, ValueError, StopIteration):
        return None


def _words(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def _room(memdir):
    """(bytes free for a new snapshot, what limits it) over the memory
    directory's filesystem, MemAvailable and the cgroup's limit."""
    st = os.statvfs(memdir)
    limits = [(st.f_bavail * st.f_frsize, f"free space of {memdir}'s filesystem")]
    avail = _meminfo_available()
    if avail is not None:
        limits.append((avail, "MemAvailable"))
    cg = _cgroup_room()
    if cg is not None:
        limits.append((cg, "this cgroup's memory.max"))
    return min(limits)


def _check_room(state, step, memdir):
    need_state = _tensor_bytes(state, set())
    # The copy being sealed beside the state it came from: the staging
    # file and the archive it is sealed into exist together until the
    # seal ends (then the staging file goes).
    need = 2 * need_state + _SLACK
    room, what = _room(memdir)
    override = os.environ.get("KGUARD_TEST_SNAPSHOT_ROOM")
    if override:
        room, what = int(override), "KGUARD_TEST_SNAPSHOT_ROOM"
    if need > room:
        prev = f"; the newest snapshot (step {_last.step}) stays" if _last is not None else ""
        if what.startswith("free space"):
            what += (": a container's /dev/shm is often 64 MiB (docker run --shm-size, a "
                     "Kubernetes emptyDir with medium: Memory), or set KGUARD_SNAPSHOT_BASE "
                     "for kguard to a larger tmpfs")
        raise SnapshotRefused(
            f"kguard.snapshot: step {step}'s state ({_words(need_state)}) does not fit in "
            f"memory: a snapshot needs {_words(need)} (the copy being sealed beside it) and "
            f"{_words(room)} is free ({what}). Nothing was taken{prev}. Snapshot less state "
            f"(model and optimizer), or fewer ranks per node, or rely on kguard.save.")
    return need_state


def _persist_due(step, every, seconds, world):
    """Whether this step's snapshot is also written to disk."""
    global _last_persist
    if every is None:
        every = _ckpt._env_positive("KGUARD_PERSIST_EVERY", "persist every Nth snapshot to disk")
    if seconds is None:
        seconds = _ckpt._env_positive("KGUARD_PERSIST_SECONDS", "persist a snapshot every T seconds")
    for name, v in (("persist_every", every), ("persist_seconds", seconds)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
            raise ValueError(f"{name} must be a positive number, got {v!r}")
    if seconds is not None and world > 1:
        raise ValueError("persist_seconds cannot be used with several ranks: each rank "
                         "would persist different steps; use persist_every (the same "
                         "steps on every rank)")
    now = time.monotonic()
    if _last_persist is None:
        _last_persist = now
    due = (every is not None and step % int(every) == 0) or (
        seconds is not None and now - _last_persist >= seconds)
    if due:
        _last_persist = now
    return due


def _memdir():
    memdir = os.environ.get("KGUARD_SNAPSHOT_DIR")
    if not memdir:
        raise RuntimeError(
            "kguard.snapshot: no kguard memory to hold the snapshot ($KGUARD_SNAPSHOT_DIR is "
            "unset): run this under `kguard exec` or in a kguard kernel, which own that "
            "memory; outside them, kguard.save writes checkpoints to disk")
    if not os.path.isdir(memdir):
        raise RuntimeError(
            f"kguard.snapshot: the memory directory {memdir} is gone: the kguard that owned "
            f"it ended, and this process should have ended with it")
    return memdir


def _take_previous():
    """Wait for the previous snapshot's seal (at most one in flight);
    re-raise its failure here, where the loop sees it (once). Returns how
    long it waited."""
    global _last
    prev, t0 = _last, time.monotonic()
    if prev is None:
        return 0.0
    try:
        prev.wait()
    except RuntimeError:
        _last = None
        raise
    return time.monotonic() - t0


def snapshot(state, step, name="state.pt", persist_every=None, persist_seconds=None,
             keep=None):
    """Copy state into kguard's memory as the snapshot of step; return a
    Snapshot whose seal runs in the background.

    state is what kguard.save takes (anything torch.save accepts; device
    tensors are copied to host memory). The device is synchronised first:
    a state copied from a faulted device is never sealed (the sync raises,
    and so does snapshot()). A state that would not fit in memory (tmpfs
    space, MemAvailable, the cgroup's limit) raises SnapshotRefused before
    anything is written. The previous snapshot's failure (if its seal
    failed) is raised here.

    persist_every=K (default $KGUARD_PERSIST_EVERY, `kguard exec
    --persist-every`): every snapshot whose step is a multiple of K is also
    copied to the checkpoint directory as a normal sealed archive, by the
    seal process, after the seal (the step never waits for the disk);
    persist_seconds=T (default $KGUARD_PERSIST_SECONDS; one rank only): one
    every T seconds. keep=N (default $KGUARD_KEEP) prunes the disk
    checkpoints after each persist as kguard.save(keep=N) does.
    """
    global _last
    import torch

    step = _ckpt._step_and_name(step, name)
    memdir = _memdir()
    world = _ckpt._rank_world()[1]
    # Several nodes: each rank keeps its own newest snapshot, an archive of
    # its own in memdir/rank-R (the nodes agree on the step, as on disk).
    node_rank = _ckpt._rank_dir_rank()
    into = memdir if node_rank is None else os.path.join(memdir, f"rank-{node_rank}")
    if into != memdir:
        try:
            os.mkdir(into, 0o700)
        except FileExistsError:
            pass
    keep = _ckpt._keep(keep)
    waited = _take_previous()
    _check_room(state, step, memdir)
    persist = _persist_due(step, persist_every, persist_seconds, world)
    tmp, lock = _ckpt._locked_staging(memdir)
    handed_over = False
    try:
        try:
            torch.save(state, os.path.join(tmp, name))
        except (OSError, RuntimeError) as exc:
            raise RuntimeError(f"kguard.snapshot: copying step {step} into {memdir} failed "
                               f"({exc}); nothing was sealed, the newest snapshot "
                               f"stays") from exc
        _ckpt._synchronize(torch)  # a faulted device raises: never seal its copy
        captured_ms = int(time.time() * 1000)
        _pace.step(step)
        cmd = _ckpt._seal_cmd(tmp, step, into, shard=node_rank is None) + [
            "--time", str(captured_ms), "--remove-dir", "--snapshot", "--progress=none"]
        if node_rank is not None:
            # Ranks can be a step apart at a fault: the step they all hold
            # is then this rank's one before its newest.
            cmd += ["--snapshot-keep", "2"]
        if persist:
            ckpt_dir = _ckpt._ckpt_dir()
            os.makedirs(ckpt_dir, exist_ok=True)
            cmd += ["--persist-into", ckpt_dir]
            if keep is not None:
                cmd += ["--persist-keep", str(keep)]
        proc, out = _ckpt._seal_in_background(cmd, lock)
        handed_over = True
        _last = Snapshot(proc, tmp, step, out)
        _last.waited_s = waited
        return _last
    finally:
        if not handed_over:
            shutil.rmtree(tmp, ignore_errors=True)
        os.close(lock)


def wait_all():
    """Wait for this process's snapshot seal in flight, if any; return the
    newest Snapshot (None if none was taken)."""
    if _last is not None:
        _last.wait()
    return _last


def _at_exit():
    """A process that ends normally leaves its last snapshot sealed: kguard
    may end right after it, and a seal still running then would be lost."""
    if _last is not None:
        try:
            _last.wait(timeout=600)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"kguard.snapshot: the last snapshot (step {_last.step}) was not sealed: "
                  f"{exc}", file=sys.stderr)


atexit.register(_at_exit)


