"""Read the members of a sealed, uncompressed checkpoint in place.

After a fault kguard verifies the checkpoint where it lies instead of
copying it (a second copy of a 20 GB checkpoint in the home directory is
what users cannot afford). The kernel then reads members straight from the
archive. Nothing here trusts the file between that verification and the
read: the signed manifest is authenticated again (`kguard ckpt manifest`),
its digest must be the one kguard verified, and every byte handed to the
caller comes from a buffer whose digest was checked first.

Version 2 (one digest per 64 MiB chunk): chunks are read into reused
buffers, a window ahead of the reader on one thread per core, each hashed
and compared before any of its bytes is served. When kguard verified the
whole archive just before (the supervisor's resume-prepare; the caller says
so with prechecked=True and the manifest digest it verified), that is the
only pass: every byte is read and hashed once, and a chunk changed since
raises when it is reached, before torch.load sees any of it. Otherwise
every chunk is checked before the first byte is returned (a mismatch
anywhere, even in the last byte, raises and nothing is returned), and
again as it is served.

Version 1 (one digest per member): the member is read whole and checked,
recording a BLAKE2b digest of each piece of PIECE bytes, before a byte is
returned; reads are then served piece by piece, each piece re-read and
compared with its recorded digest.

Member offsets come from the tar headers (stdlib tarfile); names, types
and sizes must agree exactly with the authenticated manifest. Memory: a
few chunk buffers ((threads + 2) x 64 MiB) or one 4 MiB piece (version 1),
whatever the member size.

A restored copy (a zstd archive decompressed by kguard, copy_dir=) is read
the same way: the archive's manifest is authenticated, and each member is
read from its file in the copy, every byte checked against the manifest's
digests before it is served. A copy swapped or altered after kguard
restored it raises CheckpointError; torch.load never sees its bytes.
"""
import hashlib
import hmac
import io
import json
import os
import stat
import subprocess
import tarfile

__all__ = ["CheckpointError", "Archive", "PIECE"]

PIECE = 4 << 20
_MANIFEST = "KGUARD-MANIFEST.json"
_SIGNATURE = "KGUARD-MANIFEST.sig"


class CheckpointError(RuntimeError):
    """The archive cannot be read as the sealed checkpoint it claims to be."""


def _b2(data=b""):
    return hashlib.blake2b(data, digest_size=32)


class Archive:
    """An uncompressed kguard checkpoint opened for reading in place.

    archive: its path. kguard_bin: the kguard executable (default
    $KGUARD_BIN, else `kguard`). expect_digest: hex BLAKE2b-256 of the
    manifest that must be found (what the supervisor verified), or None.
    prechecked: kguard verified every byte of the archive with that
    manifest digest just before (`kguard ckpt resume-prepare`), so version 2
    members are read in one pass, each chunk checked as it is read, instead
    of being checked whole first (ignored without expect_digest).
    copy_dir: a directory kguard restored the archive into (compressed
    archives cannot be read in place): members are read from its files,
    each checked against the archive's manifest as it is read.
    Raises CheckpointError when the manifest does not authenticate, the
    archive is compressed (without copy_dir), or its headers (or the copy's
    files) disagree with the manifest.
    """

    def __init__(self, archive, kguard_bin=None, expect_digest=None, prechecked=False,
                 copy_dir=None):
        self.path = archive
        self.copy_dir = copy_dir
        self.prechecked = bool(prechecked and expect_digest)
        exe = kguard_bin or os.environ.get("KGUARD_BIN") or "kguard"
        proc = subprocess.run([exe, "ckpt", "manifest", archive], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, check=False)
        if proc.returncode != 0:
            raise CheckpointError(f"{archive}: manifest not authenticated (exit "
                                  f"{proc.returncode}): {proc.stderr.strip()}")
        info = json.loads(proc.stdout)
        self.manifest_digest = info["manifest_digest"]
        if expect_digest:
            want = expect_digest.split(":", 1)[-1]
            if not hmac.compare_digest(want, self.manifest_digest):
                raise CheckpointError(
                    f"{archive}: manifest digest {self.manifest_digest[:16]}... is not the "
                    f"one kguard verified ({want[:16]}...): the file was replaced")
        m = info["manifest"]
        self.manifest = m
        self.step = m.get("step")
        self.signer = info.get("signer")
        if m.get("compression") != "none" and copy_dir is None:
            raise CheckpointError(f"{archive}: compressed ({m.get('compression')}); "
                                  f"members can only be read from a restored copy")
        self._listed = {e["path"]: e for e in m["members"]}
        _check_paths(archive, self._listed)
        self._offsets = self._locate_copy() if copy_dir is not None else self._locate()

    def _locate(self):
        """Data offset of each listed member, from the tar headers."""
        offsets = {}
        try:
            with tarfile.open(self.path, "r:") as tf:
                while True:
                    ti = tf.next()
                    if ti is None:
                        break
                    if ti.name in (_MANIFEST, _SIGNATURE) and ti.name not in offsets:
                        offsets[ti.name] = None
                        continue
                    e = self._listed.get(ti.name)
                    if e is None or ti.name in offsets:
                        raise CheckpointError(f"{self.path}: member {ti.name!r} is not listed "
                                              f"in the manifest or appears twice")
                    if not ti.isreg() or ti.sparse is not None or ti.size != e["size"]:
                        raise CheckpointError(f"{self.path}: member {ti.name!r} is not a "
                                              f"regular file of {e['size']} bytes")
                    offsets[ti.name] = ti.offset_data
        except (tarfile.TarError, OSError) as exc:
            raise CheckpointError(f"{self.path}: unreadable tar headers: {exc}") from exc
        missing = [p for p in self._listed if p not in offsets]
        if missing:
            raise CheckpointError(f"{self.path}: listed member {missing[0]!r} is missing")
        return offsets

    def _locate_copy(self):
        """Every listed member is a regular file of the listed size in the
        copy (offset 0); the copy itself is a directory of this user's."""
        try:
            st = os.lstat(self.copy_dir)
        except OSError as exc:
            raise CheckpointError(f"{self.copy_dir}: the restored copy is gone: {exc}") from exc
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise CheckpointError(f"{self.copy_dir}: the restored copy is not a directory of "
                                  f"yours (replaced?)")
        offsets = {}
        for p, e in self._listed.items():
            f = os.path.join(self.copy_dir, p)
            try:
                st = os.lstat(f)
            except OSError as exc:
                raise CheckpointError(f"{self.copy_dir}: member {p!r} is missing from the "
                                      f"restored copy: {exc}") from exc
            if not stat.S_ISREG(st.st_mode) or st.st_size != e["size"]:
                raise CheckpointError(f"{self.copy_dir}: member {p!r} is not a regular file "
                                      f"of {e['size']} bytes in the restored copy")
            offsets[p] = 0
        return offsets

    def _source(self, member):
        """(file, offset) where member's bytes are."""
        if self.copy_dir is not None:
            return os.path.join(self.copy_dir, member), 0
        return self.path, self._offsets[member]

    def members(self):
        """Member paths, as listed in the manifest."""
        return list(self._listed)

    def open(self, member):
        """A read-only, seekable binary file of member whose bytes all passed
        their digest (see the module's docstring). Raises CheckpointError
        (before returning) when the member does not match its digest."""
        e = self._listed.get(member)
        if e is None:
            raise CheckpointError(f"{self.path}: no member {member!r} "
                                  f"(members: {', '.join(sorted(self._listed))})")
        path, offset = self._source(member)
        if "chunks" in e:  # version 2: one digest per chunk_size bytes
            raw = _VerifiedMember(path, member, offset, e["size"],
                                  None, [bytes.fromhex(d) for d in e["chunks"]],
                                  int(self.manifest["chunk_size"]), self.prechecked)
        else:
            raw = _VerifiedMember(path, member, offset, e["size"],
                                  bytes.fromhex(e["blake2b"]))
        return io.BufferedReader(raw, buffer_size=1 << 20)


def _check_paths(archive, listed):
    """The same member names the C reader accepts (FORMAT.md), and the same
    refusals: a name holding NUL (JSON's \\u0000), which C strings would cut
    short, or a name that is also a directory of another member (a and a/b),
    which no directory could restore."""
    for p in listed:
        if "\0" in p:
            raise CheckpointError(f"{archive}: manifest member {p!r} holds a NUL character")
        parts = p.split("/")
        for k in range(1, len(parts)):
            if "/".join(parts[:k]) in listed:
                raise CheckpointError(f"{archive}: manifest lists {'/'.join(parts[:k])!r} both "
                                      f"as a file and as a directory of {p!r}")


class _Chunks:
    """Version 2 chunks of one member, each read once into a reused buffer,
    hashed and compared with the manifest's digest on a worker thread
    (os.preadv and hashlib release the GIL) before any of it is served.

    A window of chunks after the one being served is read ahead, so a
    sequential reader (torch.load) gets every core's BLAKE2b at once and
    each byte is read and hashed once. A chunk asked for again after it
    left the window (a seek back) is read and checked again, never served
    unchecked. Memory: (threads + KEEP + 1) chunk buffers, whatever the size.
    """

    KEEP = 1  # verified chunks kept besides the window (zip readers seek to the end)

    def __init__(self, fd, name, offset, size, chunk_size, digests, threads):
        from concurrent.futures import ThreadPoolExecutor

        self._fd, self._name, self._off, self._size = fd, name, offset, size
        self._cs = chunk_size
        self._digests = digests
        self.n = max(1, (size + chunk_size - 1) // chunk_size)
        if len(digests) != self.n:
            raise CheckpointError(f"{name}: manifest lists {len(digests)} chunk digests "
                                  f"for {self.n} chunks")
        self._ahead = max(1, threads)
        self._pool = ThreadPoolExecutor(max_workers=self._ahead)
        self._free = []           # spare buffers
        self._inflight = {}       # chunk -> Future of its verified memoryview
        self._ready = {}          # chunk -> verified memoryview (insertion = age)
        self._owner = {}          # chunk -> its buffer

    def _want(self, i):
        return min(self._cs, self._size - i * self._cs)

    def _load(self, i, buf):
        want = self._want(i)
        view = memoryview(buf)[:want]
        got = os.preadv(self._fd, [view], self._off + i * self._cs) if want else 0
        if got != want:
            raise CheckpointError(f"{self._name}: archive ends inside the member")
        if not hmac.compare_digest(_b2(view).digest(), self._digests[i]):
            start = i * self._cs
            raise CheckpointError(
                f"{self._name}: does not match its digest (chunk {i}, bytes {start}.."
                f"{start + max(want, 1) - 1}); none of that chunk was returned")
        return view

    def _schedule(self, i):
        if i >= self.n or i in self._ready or i in self._inflight:
            return
        buf = self._free.pop() if self._free else bytearray(self._cs if self.n > 1
                                                               else self._want(0))
        self._owner[i] = buf
        self._inflight[i] = self._pool.submit(self._load, i, buf)

    def _release(self, i):
        self._ready.pop(i, None)
        buf = self._owner.pop(i, None)
        if buf is not None and len(buf) == self._cs:
            self._free.append(buf)

    def _reap(self, i):
        """Wait for chunk i's read; on a mismatch its buffer goes back and
        the error is raised."""
        fut = self._inflight.pop(i)
        try:
            view = fut.result()
        except BaseException:
            self._release(i)
            raise
        self._ready[i] = view
        return view

    def get(self, i):
        """Chunk i's bytes (a memoryview), verified. Raises CheckpointError."""
        view = self._ready.pop(i, None)
        if view is not None:
            self._ready[i] = view  # most recently used
        # Chunks in flight outside [i, i + ahead] are not wanted now.
        for k in [k for k in self._inflight if not i <= k <= i + self._ahead]:
            try:
                self._reap(k)
            except CheckpointError:
                pass  # reported if and when it is asked for
            self._release(k)
        for k in range(i, min(self.n, i + self._ahead + 1)):
            self._schedule(k)
        if view is None:
            view = self._reap(i)
        # Keep the KEEP most recently used chunks outside the window.
        old = [k for k in self._ready if not i <= k <= i + self._ahead]
        for k in old[:max(0, len(old) - self.KEEP)]:
            self._release(k)
        return view

    def close(self):
        for k in list(self._inflight):
            try:
                self._reap(k)
            except BaseException:
                pass
        self._pool.shutdown(wait=True)
        self._ready.clear()
        self._owner.clear()
        self._free.clear()


def _threads():
    """Hashing threads: one per core the process may use, at most 8 (each
    holds a 64 MiB chunk: 8 hash 5-8 GB/s, more than most disks read)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(8, n))


class _VerifiedMember(io.RawIOBase):
    def __init__(self, path, name, offset, size, digest, chunks=None, chunk_size=PIECE,
                 prechecked=False):
        super().__init__()
        self._name = f"{path}:{name}"
        self._off, self._size, self._pos = offset, size, 0
        self._psize = chunk_size
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self._cache_idx, self._cache = -1, b""
        self._chunks = None
        try:
            if chunks is None:
                self._pieces = self._check_whole(digest)
            else:
                self._chunks = _Chunks(self._fd, self._name, offset, size, chunk_size,
                                       chunks, _threads())
                if not prechecked:
                    self._check_chunks()
        except BaseException:
            if self._chunks is not None:
                self._chunks.close()
                self._chunks = None
            # Closed here and forgotten: close() (also run when the object
            # is collected) must not close the number again, by then
            # perhaps another file's.
            os.close(self._fd)
            self._fd = -1
            raise

    def _check_chunks(self):
        """Version 2, when nothing verified this archive just before: every
        chunk against the manifest before anything is returned (so a
        mismatch anywhere raises before the first byte). The chunks are then
        checked again as they are served."""
        for i in range(self._chunks.n):
            self._chunks.get(i)
        for i in range(self._chunks.n):
            self._chunks._release(i)

    def _read_piece_raw(self, i):
        start = i * self._psize
        want = min(self._psize, self._size - start)
        buf = os.pread(self._fd, want, self._off + start)
        if len(buf) != want:
            raise CheckpointError(f"{self._name}: archive ends inside the member")
        return buf

    def _check_whole(self, digest):
        whole, pieces = _b2(), []
        n = (self._size + PIECE - 1) // PIECE
        for i in range(n):
            buf = self._read_piece_raw(i)
            whole.update(buf)
            pieces.append(_b2(buf).digest())
        if not hmac.compare_digest(whole.digest(), digest):
            raise CheckpointError(f"{self._name}: does not match its digest; nothing of it "
                                  f"was read")
        return pieces

    def _piece(self, i):
        if self._chunks is not None:
            return self._chunks.get(i)
        if i != self._cache_idx:
            buf = self._read_piece_raw(i)
            if not hmac.compare_digest(_b2(buf).digest(), self._pieces[i]):
                raise CheckpointError(f"{self._name}: changed on disk after it was verified")
            self._cache_idx, self._cache = i, buf
        return self._cache

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, pos, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + pos < 0:
            raise ValueError("negative seek position")
        self._pos = base + pos
        return self._pos

    def readinto(self, b):
        if self._pos >= self._size:
            return 0
        i, within = divmod(self._pos, self._psize)
        piece = self._piece(i)
        n = min(len(b), len(piece) - within)
        b[:n] = memoryview(piece)[within:within + n]  # one copy, not two
        self._pos += n
        return n

    def close(self):
        if not self.closed and self._fd >= 0:
            if self._chunks is not None:
                self._chunks.close()
                self._chunks = None
            os.close(self._fd)
            self._fd = -1
            self._cache = b""
        super().close()
