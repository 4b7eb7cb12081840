"""Checkpoints that kguard can verify, and a check of class targets before a loss.

save() writes with torch.save into a private temporary directory, then
synchronises the device: a checkpoint written after a sticky device fault
would hold garbage copied from a poisoned context, and the sync is what
reveals the fault. Only if the sync succeeds is the directory sealed into a
signed archive by `kguard ckpt seal`. resume() finds what kguard verified
after a forced restart (environment variables set by the supervisor) and
reads its members in place (kguard.archive), each checked as it is read.
"""
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import pace as _pace

__all__ = ["save", "resume", "check_targets", "Resume", "PendingSeal"]


def _bin():
    return os.environ.get("KGUARD_BIN") or "kguard"


def _rank_dir_rank():
    """This process's rank when kguard exec runs it as one rank of a
    multi-node job ($KGUARD_CKPT_LAYOUT=rank-dirs and WORLD_SIZE > 1), else
    None. Rank R then seals into $KGUARD_CKPT_DIR/rank-R, on storage every
    node shares, and kguard exec restores it into $KGUARD_RESUME_DIR/rank-R."""
    if os.environ.get("KGUARD_CKPT_LAYOUT") != "rank-dirs":
        return None
    rank, world = _rank_world()
    return rank if world > 1 else None


def _ckpt_dir():
    base = os.environ.get("KGUARD_CKPT_DIR") or "kguard-checkpoints"
    rank = _rank_dir_rank()
    if rank is None:
        return base
    sub = f"rank-{rank}"
    # A script written for the old contract joined rank-$RANK itself.
    return base if os.path.basename(os.path.normpath(base)) == sub else os.path.join(base, sub)


def _synchronize(torch):
    """Wait for every queued device operation; raise if the device failed."""
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        cuda.synchronize()
    try:
        from . import emulate  # written by the emulation module's owner
    except ImportError:
        emulate = None
    if emulate is not None and (emulate.active() or emulate.poisoned()):
        emulate.synchronize()


def _rank_world():
    """(rank, world size) of this process: $KGUARD_RANK or $RANK, and
    $WORLD_SIZE (torchrun's variables); (0, 1) outside a multi-rank job."""
    try:
        world = int(os.environ.get("WORLD_SIZE") or 1)
        rank = int(os.environ.get("KGUARD_RANK") or os.environ.get("RANK") or 0)
    except ValueError as exc:
        raise ValueError(f"RANK/KGUARD_RANK and WORLD_SIZE must be integers: {exc}") from None
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not within WORLD_SIZE {world}")
    return rank, world


class PendingSeal:
    """A background seal started by save(..., background=True).

    The seal runs in its own process and session: it finishes even if this
    kernel is killed (the staging directory's lock passes to it), and it
    starts only after the previous background seal of this process ended,
    so a later step is never sealed first.
    """

    def __init__(self, proc, stage, step, out):
        self.step = step
        self._proc, self._stage, self._out = proc, stage, out
        self._path = None

    def done(self):
        """True once the seal process has ended (sealed or failed)."""
        return self._proc.poll() is not None

    def wait(self, timeout=None):
        """Wait for the seal; return the archive's path or raise
        RuntimeError saying why it failed."""
        if self._path is None:
            rc = self._proc.wait(timeout)
            self._out.seek(0)
            text = self._out.read().decode(errors="replace").strip()
            if rc != 0:
                raise RuntimeError(self._failed(rc, text))
            self._path = self._sealed(text)
        return self._path

    def _failed(self, rc, text):
        """Why the seal process (exit rc, output text) failed, in words."""
        return f"kguard ckpt seal of step {self.step} failed (exit {rc}): {text}"

    def _sealed(self, text):
        """The archive's path, from the seal process's output text."""
        return text.splitlines()[-1]

    def __repr__(self):
        state = "done" if self.done() else "sealing"
        return f"{type(self).__name__}(step={self.step}, {state})"


_last_background = None


def _disk_words(ckpt_dir, exc):
    """exc in words, saying so plainly when ckpt_dir's filesystem is full."""
    try:
        st = os.statvfs(ckpt_dir)
        full = st.f_bavail * st.f_frsize < (1 << 20)
    except OSError:
        full = False
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if full or getattr(exc, "errno", None) == 28:
        return f"no space left on the device holding {ckpt_dir}: {text}"
    return text


def _locked_staging(ckpt_dir):
    """A new staging directory in ckpt_dir and an fd holding its flock.

    Beside the archives (same filesystem, no surprise tmpfs limits); the dot
    name is never taken for a checkpoint by `kguard ckpt list/latest`. The
    lock is held while we write (and, for a background seal, by the seal
    process until it ends): `kguard ckpt gc` and every seal remove staging
    directories whose lock is free, i.e. whose writer died mid-save. So does
    another rank's seal between our mkdtemp and our flock: checked by inode
    after locking, as the C seal does with its temporary, and taken anew."""
    for _ in range(100):
        tmp = tempfile.mkdtemp(prefix=".kguard-save-", dir=ckpt_dir)
        try:
            lock = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            continue                      # collected before we opened it
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.stat(tmp).st_ino == os.fstat(lock).st_ino:
                return tmp, lock
        except FileNotFoundError:
            pass                          # collected before we locked it
        os.close(lock)
    raise RuntimeError(f"kguard.save: no staging directory in {ckpt_dir} stayed ours "
                       "(removed again and again before it was locked)")


def _env_positive(name, what):
    """$name as a positive integer, None when unset or empty; ValueError
    naming it and what it is for otherwise."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name} must be a positive integer ({what}), got {text!r}")
    return value


def _keep(keep):
    """The number of checkpoints save() keeps: keep, else $KGUARD_KEEP
    (what `kguard exec/run/install --keep N` set), else None (all)."""
    if keep is None:
        return _env_positive("KGUARD_KEEP", "how many checkpoints kguard.save keeps")
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValueError(f"keep must be a positive integer (how many checkpoints "
                         f"kguard.save keeps), got {keep!r}")
    return keep


def _seal_cmd(stage, step, into, shard=True):
    """`kguard ckpt seal` of the staging directory as step into a directory,
    as this process's rank of the run (the shard options when several,
    unless shard is False: an archive of its own in a rank's directory)."""
    cmd = [_bin(), "ckpt", "seal", stage, "--step", str(step), "--run", _run_id(),
           "--into", into]
    rank, world = _rank_world()
    if world > 1 and shard:
        cmd += ["--rank", str(rank), "--world-size", str(world)]
    return cmd


def _seal_in_background(cmd, lock):
    """Start cmd (a seal) in its own process and session, holding the
    staging directory's lock, its output kept in a file that outlives this
    process (a pipe would not). Returns (process, output file)."""
    out = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, pass_fds=(lock,),
                            start_new_session=True)
    return proc, out


def _step_and_name(step, name):
    """step as an int, once it and the member name are checked (ValueError
    saying what is wrong)."""
    step = int(step)
    if step < 0:
        raise ValueError(f"step must be a non-negative integer, got {step}")
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"name must be a plain file name, got {name!r}")
    return step


def save(state, step, name="state.pt", background=False, keep=None):
    """Save state for step and seal it; return the archive's path.

    state is anything torch.save accepts. The archive goes to
    $KGUARD_CKPT_DIR (default ./kguard-checkpoints; under a multi-node
    `kguard exec`, its subdirectory rank-$RANK), sealed by $KGUARD_BIN
    (default `kguard` on PATH), run id $KGUARD_RUN_ID (default "default").
    If the device synchronisation raises, nothing is sealed and the error is
    re-raised; if sealing fails, RuntimeError says why. Once the device
    synchronised, kguard exec is told the step is done (kguard.step).

    background=True returns a PendingSeal as soon as the state is written
    and the device synchronised; the archive is hashed, signed and synced
    by a separate process while training goes on (.wait() gives the path).
    The seal records the time the state was captured, so a seal still
    running at a later fault is not taken for one made after it.

    keep=N (default $KGUARD_KEEP, else every checkpoint is kept): once the
    new archive is sealed (for a background seal: by its process, after
    its own seal), this run's older checkpoints are removed down to the
    newest N that verify, never one an open incident needs or one being
    read (`kguard ckpt seal --keep`). A bad value raises ValueError.
    """
    global _last_background
    import torch

    step = _step_and_name(step, name)
    keep = _keep(keep)
    ckpt_dir = _ckpt_dir()
    os.makedirs(ckpt_dir, exist_ok=True)
    tmp, lock = _locked_staging(ckpt_dir)
    handed_over = False
    try:
        try:
            torch.save(state, os.path.join(tmp, name))
        except (OSError, RuntimeError) as exc:
            # torch.save's own words for a full disk name neither the
            # directory nor the step; nothing is sealed, earlier archives
            # are untouched, and the staging directory goes (finally).
            raise RuntimeError(f"kguard.save: writing step {step} into {ckpt_dir} failed "
                               f"({_disk_words(ckpt_dir, exc)}); nothing was sealed and "
                               f"earlier checkpoints are unchanged") from exc
        _synchronize(torch)  # raises on a faulted device: never seal then
        captured_ms = int(time.time() * 1000)
        # The step is done on a device that still answers: under kguard
        # exec that is the job's progress (its pace), with nothing printed.
        _pace.step(step)
        cmd = _seal_cmd(tmp, step, ckpt_dir)
        if keep is not None:
            cmd += ["--keep", str(keep)]
        if background:
            # Dated when the state was captured, not when the seal ends: a
            # seal still running at a later fault is not taken for one made
            # after it. (A foreground seal keeps its end time, as before.)
            cmd += ["--time", str(captured_ms)]
            prev = _last_background
            if prev is not None and not prev.done():
                cmd += ["--after", prev._stage]
            cmd += ["--remove-dir"]
            proc, out = _seal_in_background(cmd, lock)
            handed_over = True
            _last_background = PendingSeal(proc, tmp, step, out)
            return _last_background
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(
                f"kguard ckpt seal failed for step {step} into {ckpt_dir} (exit "
                f"{proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout.strip().splitlines()[-1]
    finally:
        if not handed_over:
            shutil.rmtree(tmp, ignore_errors=True)
        os.close(lock)


class Resume:
    """What kguard restored before starting this kernel (kguard.resume()).

    step: the restored step (int, or None if unknown). archive: the
    verified checkpoint's path. digest: "blake2b-256:<hex>" of the manifest
    kguard verified, or None. skipped: [(archive, reason)] of the newer
    checkpoints resume(latest=True) passed over (empty otherwise). tier:
    "memory" when kguard restored a snapshot from its memory
    (kguard.snapshot), "disk" for an archive in the checkpoint directory.

    load(name) / open(name) read a member, every byte checked against the
    archive's signed digests as it is read (in place from an uncompressed
    archive, or from the copy kguard restored a compressed one into): a
    member changed since kguard verified it raises
    kguard.archive.CheckpointError before torch.load sees any of it.

    dir: a directory holding the members, for code that opens files
    itself. When kguard had to copy the checkpoint (zstd archives, multi-node
    ranks) it is that copy; otherwise the archive is restored, verified and
    read-only, into $KGUARD_STATE_DIR/restored/ on first use (a full copy:
    prefer load() and open(), which need none). Raises
    kguard.archive.CheckpointError, naming load() and open(), when no such
    copy can be made.
    """

    def __init__(self, dir, step, archive, digest=None):
        self._dir = dir or None
        self.step = step
        self.archive = archive
        self.digest = digest
        self.skipped = []
        self.tier = None
        self._archive = None
        self._materialised = None

    @property
    def in_place(self):
        """True when kguard made no copy: members are read straight from the
        archive (reading r.dir would make one)."""
        return not self._dir and self._materialised is None

    @property
    def dir(self):
        """A directory holding the checkpoint's members (see the class)."""
        if self._dir:
            return self._dir
        if self._materialised is None:
            self._materialised = self._materialise()
        return self._materialised

    def _target(self):
        """(archive, expected manifest digest) of this process's checkpoint:
        the archive itself, or this rank's shard of a checkpoint set."""
        from .archive import Archive, CheckpointError

        if not self.archive.endswith(".kgset.tar"):
            return self.archive, self.digest
        # A checkpoint set: this rank's shard, as the signed index names it.
        top = Archive(self.archive, expect_digest=self.digest, prechecked=bool(self.digest))
        with top.open("KGUARD-SET.json") as f:
            index = json.load(f)
        rank, world = _rank_world()
        if world != index["world_size"]:
            raise CheckpointError(f"{self.archive}: a set of {index['world_size']} ranks, "
                                  f"but WORLD_SIZE is {world}")
        shard = next(s for s in index["shards"] if s["rank"] == rank)
        path = os.path.join(os.path.dirname(self.archive), shard["archive"])
        return path, shard["manifest_digest"]

    def _open_archive(self):
        from .archive import Archive

        # With the digest kguard handed over, resume-prepare has just
        # verified every byte of this archive (of every shard of a set, or
        # while restoring the copy): members are then read once, each chunk
        # checked as it is read. Without it, each member is checked whole
        # before any byte is returned, then chunk by chunk again as it is
        # served.
        pre = bool(self.digest)
        if self._dir:
            return Archive(self.archive, expect_digest=self.digest, prechecked=pre,
                           copy_dir=self._dir)
        path, digest = self._target()
        return Archive(path, expect_digest=digest, prechecked=pre)

    def _materialise(self):
        """Restore the archive, verified and read-only, into the state
        directory (private to this user), once per checkpoint."""
        from .archive import Archive, CheckpointError

        how = ("r.load(name) and r.open(name) read the checkpoint in place, "
               "without a copy")
        if not self.archive:
            raise CheckpointError(f"kguard: no archive to make r.dir from; {how}")
        path, digest = self._target()
        if not digest:
            digest = Archive(path).manifest_digest
        digest = digest.split(":", 1)[-1]
        base = os.path.join(_state_dir(), "restored")
        os.makedirs(base, mode=0o700, exist_ok=True)
        dest = os.path.join(base, "resume-" + digest[:32])
        if os.path.isdir(dest):
            return dest  # made (and verified) by an earlier kernel
        proc = subprocess.run([_bin(), "ckpt", "restore", "--read-only", "--private",
                               "--digest", digest, path, dest], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, check=False)
        if proc.returncode != 0 and not os.path.isdir(dest):
            raise CheckpointError(f"kguard: r.dir needs a verified copy of {path} in {base}, "
                                  f"which failed (exit {proc.returncode}): "
                                  f"{proc.stderr.strip()}; {how}")
        return dest

    def members(self):
        """The member names of the checkpoint, as its signed manifest lists
        them (for a multi-node rank's copy without its archive: the files of
        the copy)."""
        if self._archive is None and (self.archive or not self._dir):
            self._archive = self._open_archive()
        if self._archive is not None:
            return self._archive.members()
        out = []
        for root, _, files in os.walk(self._dir):
            out += [os.path.relpath(os.path.join(root, f), self._dir) for f in files]
        return sorted(out)

    def open(self, name="state.pt"):
        """A binary file object of the named member; every byte read from it
        was checked against the signed digests (raises
        kguard.archive.CheckpointError before returning when the member does
        not match)."""
        if self._dir and not self.archive:
            # A multi-node rank's copy, restored (verified) by kguard exec
            # into its private state directory; no archive names its digests.
            return open(os.path.join(self._dir, name), "rb")
        if self._archive is None:
            self._archive = self._open_archive()
        return self._archive.open(name)

    def load(self, name="state.pt", map_location=None, **kwargs):
        """torch.load of the named member, read through open(): torch.load
        sees only bytes that match the signed digests."""
        import torch

        with self.open(name) as f:
            return torch.load(f, map_location=map_location, **kwargs)

    def __repr__(self):
        return f"Resume(dir={self._dir!r}, step={self.step!r}, archive={self.archive!r})"


def _state_dir():
    """kguard's state directory, as kguard computes it: $KGUARD_STATE_DIR
    (kguard sets it for the kernels it starts), else
    $XDG_STATE_HOME/kguard, else ~/.local/state/kguard."""
    d = os.environ.get("KGUARD_STATE_DIR")
    if d:
        return d
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return os.path.join(xdg, "kguard")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "kguard")


def _archive_path(archive):
    """The archive as the kernel can open it: kguard may hand over a path
    relative to its own working directory; the archive always lies at the
    top of $KGUARD_CKPT_DIR."""
    if not archive or os.path.isfile(archive):
        return archive
    alt = os.path.join(_ckpt_dir(), os.path.basename(archive))
    return alt if os.path.isfile(alt) else None


def _rank_memory(base, rank):
    """This rank's snapshot in memory that kguard exec chose for it, when
    the agreed step is there: (archive, digest) from the pointer
    $KGUARD_RESUME_DIR/rank-R.memory.json, else None."""
    try:
        with open(os.path.join(base, f"rank-{rank}.memory.json"), encoding="utf-8") as f:
            ptr = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"kguard exec's pointer to rank {rank}'s snapshot in {base} "
                           f"cannot be read ({exc})") from None
    archive = ptr.get("archive") if isinstance(ptr, dict) else None
    if not isinstance(archive, str):
        raise RuntimeError(f"kguard exec's pointer to rank {rank}'s snapshot in {base} "
                           f"names no archive")
    digest = ptr.get("digest")
    return archive, digest if isinstance(digest, str) else None


def _rank_resume(rank):
    """(dir, archive) restored for this rank of a multi-node kguard exec job:
    kguard exec restores every rank of a node into $KGUARD_RESUME_DIR/rank-R
    and names one archive (its first rank's) in $KGUARD_RESUME_ARCHIVE (a
    rank restored from memory has a pointer instead: _rank_memory)."""
    base = os.environ.get("KGUARD_RESUME_DIR") or None
    if not base:
        return None, None
    d = os.path.join(base, f"rank-{rank}")
    if not os.path.isdir(d):
        raise RuntimeError(f"kguard exec restored step {os.environ.get('KGUARD_RESUME_STEP')} "
                           f"into {base}, but not rank {rank}'s checkpoint ({d} is missing): "
                           f"starting this rank over would make the ranks disagree")
    archive = _archive_path(os.environ.get("KGUARD_RESUME_ARCHIVE") or None)
    mine = os.path.abspath(_ckpt_dir())
    if archive and os.path.dirname(os.path.abspath(archive)) != mine:
        archive = None  # another rank's archive: the restored copy in d is ours
    return d, archive


def _adopt_handover(environ=None):
    """A warm standby kernel (`kguard kernel --standby`) was started before
    the restore it resumes from existed: when kguard promotes it, it writes
    what a cold start would have had in its environment (KGUARD_RESUME_*,
    KGUARD_INCIDENT) to $KGUARD_HANDOVER_FILE, a JSON object in kguard's
    private runtime directory. Adopt it into the environment, once."""
    environ = os.environ if environ is None else environ
    path = environ.get("KGUARD_HANDOVER_FILE")
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return  # still a standby, or promoted with nothing to hand over
    except (OSError, ValueError) as e:
        raise RuntimeError(f"kguard: the restore handed to this kernel ({path}) "
                           f"cannot be read: {e}") from e
    if not isinstance(data, dict):
        raise RuntimeError(f"kguard: the restore handed to this kernel ({path}) "
                           f"is not a JSON object")
    for key, value in data.items():
        if key.startswith("KGUARD_") and isinstance(value, str):
            environ[key] = value
    environ.pop("KGUARD_HANDOVER_FILE", None)


def _run_id():
    """The run this process saves as and resumes: $KGUARD_RUN_ID (kguard
    exec --name sets it; a kernelspec's env may), else "default"."""
    return os.environ.get("KGUARD_RUN_ID") or "default"


def _latest_in(where, run, mem=None):
    """`kguard ckpt latest WHERE --json --run RUN [--memory MEM]`'s answer
    (a dict), or None when neither WHERE nor MEM exists. With MEM the
    command chooses between the two as after a fault: disk archives not
    newer than the chosen snapshot are never verified. Raises
    CheckpointError when the choice itself failed."""
    from .archive import CheckpointError

    if not os.path.isdir(where) and not (mem and os.path.isdir(mem)):
        return None
    memory = ["--memory", mem] if mem else []
    proc = subprocess.run([_bin(), "ckpt", "latest", where, "--json", "--run", run, *memory,
                           "--progress=none"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=False)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        out = None
    if not isinstance(out, dict) or out.get("status") == "failed":
        why = (out or {}).get("error") or proc.stderr.strip() or f"exit {proc.returncode}"
        raise CheckpointError(f"kguard: choosing the last checkpoint of run {run} in "
                              f"{where}{f' or in kguard memory ({mem})' if mem else ''} "
                              f"failed: {why}")
    return out


def _latest():
    """The last consistent state of this process's run, chosen as after a
    fault (`kguard ckpt latest --json [--memory]`): the newer of the
    snapshots in kguard's memory ($KGUARD_SNAPSHOT_DIR, kept across the
    kernel's restarts while kguard runs) and the checkpoint directory, in
    one choice that verifies no disk archive older than the chosen snapshot:
    a Resume, or None. Says on stderr what was chosen and each checkpoint
    passed over, with the reason."""
    ckpt_dir, run = _ckpt_dir(), _run_id()
    mem = os.environ.get("KGUARD_SNAPSHOT_DIR") or None
    out = _latest_in(ckpt_dir, run, mem) or {}
    skipped = [(s.get("archive"), s.get("reason")) for s in out.get("skipped") or []]
    for archive, reason in skipped:
        print(f"kguard: skipped {os.path.basename(archive or '?')}: {reason}", file=sys.stderr)
    if out.get("status") != "restored":
        print(f"kguard: no consistent checkpoint of run {run} in {ckpt_dir}"
              f"{' or in kguard memory' if mem else ''}: starting fresh", file=sys.stderr)
        return None
    tier = out.get("tier") or "disk"
    r = Resume(None, out.get("step"), out.get("archive_abs") or out.get("archive"),
               out.get("digest"))
    r.skipped = skipped
    r.tier = tier
    if out.get("compression") == "zstd":
        r.dir  # noqa: B018 -- a zstd archive is read from a verified, read-only copy
    print(f"kguard: resuming run {run} from step {r.step} ({os.path.basename(r.archive)}"
          f"{' in kguard memory' if tier == 'memory' else ''}, sealed {out.get('sealed_at')}, "
          f"verified)", file=sys.stderr)
    return r


def resume(latest=False):
    """Return a Resume if kguard restored a checkpoint for this kernel
    (KGUARD_RESUME_ARCHIVE, with KGUARD_RESUME_DIR when members were copied
    out, KGUARD_RESUME_STEP, optional KGUARD_RESUME_DIGEST), else None.

    Under a multi-node `kguard exec` (WORLD_SIZE > 1), each rank gets its own
    restored copy, $KGUARD_RESUME_DIR/rank-$RANK: Resume.dir names it, so
    load("state.pt") reads this rank's state, as in a single process.

    latest=True: when kguard restored nothing for this process (a plain
    restart, a notebook opened again), the last consistent checkpoint of
    this run: the newest snapshot in kguard's memory (kguard.snapshot) or
    archive or set of run $KGUARD_RUN_ID (default "default") in
    $KGUARD_CKPT_DIR (default ./kguard-checkpoints) that is
    sealed, signed by a key you trust and verifies completely, chosen as
    after a fault; quarantined ones are never seen. What was chosen, and
    each newer checkpoint passed over with the reason, is printed on
    stderr and kept in Resume.skipped. None when there is none."""
    _adopt_handover()
    got = _restored()
    if got is not None or not latest:
        return got
    return _latest()


def _restored():
    """The checkpoint kguard restored for this process, or None."""
    rank = _rank_dir_rank()
    digest = os.environ.get("KGUARD_RESUME_DIGEST") or None
    tier = os.environ.get("KGUARD_RESUME_TIER") or "disk"
    if rank is not None:
        base = os.environ.get("KGUARD_RESUME_DIR") or None
        memory = _rank_memory(base, rank) if base else None
        if memory is not None:
            d, (archive, digest), tier = None, memory, "memory"
        else:
            (d, archive), tier = _rank_resume(rank), "disk"
    else:
        d = os.environ.get("KGUARD_RESUME_DIR") or None
        archive = _archive_path(os.environ.get("KGUARD_RESUME_ARCHIVE") or None)
    if d and not os.path.isdir(d):
        d = None
    if not d and not archive:
        return None
    step = os.environ.get("KGUARD_RESUME_STEP")
    try:
        step = int(step) if step not in (None, "") else None
    except ValueError:
        step = None
    r = Resume(d, step, archive, digest)
    r.tier = tier
    return r


def check_targets(target, classes, ignore_index=-100, logits=None):
    """Check class-index targets before they reach a loss on the device.

    A target outside [0, classes) makes the CUDA loss kernel fail with a
    device-side assert that poisons the whole process, reported later and
    elsewhere; here it is a plain ValueError naming the offending values.
    Accepts what nll_loss/cross_entropy take as class indices: a torch.long
    tensor of shape [N] or [N, d1, d2, ...] (segmentation: [N, H, W]) with
    at least one entry that is not ignore_index. With logits (the model's
    output, [N, C] or [N, C, d1, ...]) the shapes are checked against each
    other too, which tells one-hot or probability targets (shaped like the
    logits) from class indices. Returns target unchanged.
    """
    import torch

    if not isinstance(target, torch.Tensor):
        raise ValueError(f"target must be a torch.Tensor of class indices, "
                         f"got {type(target).__name__}")
    if isinstance(classes, bool) or not isinstance(classes, int) or classes < 1:
        raise ValueError(f"classes must be a positive integer, got {classes!r}")
    onehot = ("for one-hot or probability targets use argmax(dim=1), or a loss that "
              "takes probabilities")
    if logits is not None:
        shape, want = list(target.shape), list(logits.shape)
        if shape == want:
            raise ValueError(f"target has the logits' shape {want}: one-hot or probability "
                             f"targets, not class indices; {onehot}")
        if len(want) < 2 or shape != want[:1] + want[2:]:
            raise ValueError(f"target shape {shape} does not fit logits of shape {want}: "
                             f"class indices have the logits' shape without the class "
                             f"dimension (dim 1), i.e. {want[:1] + want[2:]}")
        if want[1] != classes:
            raise ValueError(f"logits have {want[1]} classes (dim 1), classes={classes}")
    if target.dim() < 1:
        raise ValueError(f"target must have shape [N] or [N, d1, ...] (one class index per "
                         f"sample or per position), got a scalar")
    if target.dtype != torch.long:
        floats = target.dtype.is_floating_point
        raise ValueError(
            f"target must have dtype torch.long (int64 class indices), got "
            f"{target.dtype}; " + (onehot if floats else
                                   "convert with target.long() only if the values "
                                   "really are class indices"))
    t = target.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    keep = t != ignore_index
    if t.numel() == 0 or not bool(keep.any()):
        raise ValueError(
            f"target has no entries other than ignore_index={ignore_index} "
            f"({t.numel()} entries); the mean loss would be NaN")
    bad = keep & ((t < 0) | (t >= classes))
    if bool(bad.any()):
        where = bad.nonzero().tolist()
        shown = ", ".join(
            f"target {int(t[tuple(w)])} out of range [0, {classes}) at index "
            f"{w[0] if len(w) == 1 else tuple(w)}" for w in where[:5])
        more = f" (and {len(where) - 5} more)" if len(where) > 5 else ""
        raise ValueError(shown + more)
    return target
