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
and compared before any of its bytes is served; a read of whole chunks (one
tensor of torch.load) is read and hashed piece by piece into the caller's
buffer, returning only once every chunk matched (zeroed otherwise); a read
far from the window
(a zip reader looking at the end first) has its chunk hashed through a small
buffer, keeping only the bytes around it. When kguard verified the
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
and sizes must agree exactly with the authenticated manifest. Memory: one
64 MiB chunk buffer per thread and 2 MiB around the last read outside the
window (version 2), or one 4 MiB piece (version 1), whatever the member size.

A restored copy (a zstd archive decompressed by kguard, copy_dir=) is read
the same way: the archive's manifest is authenticated, and each member is
read from its file in the copy, every byte checked against the manifest's
digests before it is served. A copy swapped or altered after kguard
restored it raises CheckpointError; torch.load never sees its bytes.
"""
import ctypes
import ctypes.util
import fcntl
import hashlib
import hmac
import io
import json
import mmap
import os
import stat
import subprocess
import tarfile
import threading

__all__ = ["CheckpointError", "Archive", "PIECE"]

PIECE = 4 << 20
_MANIFEST = "KGUARD-MANIFEST.json"
_SIGNATURE = "KGUARD-MANIFEST.sig"


class CheckpointError(RuntimeError):
    """The archive cannot be read as the sealed checkpoint it claims to be."""


def _sodium():
    """libsodium (which kguard itself links), or None. Its BLAKE2b hashes a
    buffer in place, where CPython's bundled one copies every byte into its
    own block buffer first (a third of the reader's CPU in a profile: 1.5
    against 1.8-4.2 s per GiB, depending on the piece size); ctypes releases
    the GIL for the call, so threads hash on every core."""
    global _SODIUM
    if _SODIUM is None:
        _SODIUM = False
        for name in ("libsodium.so.23", "libsodium.so", ctypes.util.find_library("sodium")):
            if not name:
                continue
            try:
                lib = ctypes.CDLL(name)
                lib.crypto_generichash_statebytes.restype = ctypes.c_size_t
                lib.crypto_generichash_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                        ctypes.c_size_t, ctypes.c_size_t]
                lib.crypto_generichash_update.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                          ctypes.c_ulonglong]
                lib.crypto_generichash_final.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                         ctypes.c_size_t]
                _SODIUM = lib
                break
            except (OSError, AttributeError):
                continue
    return _SODIUM or None


_SODIUM = None


class _SodiumB2:
    """BLAKE2b-256 through libsodium: update() and digest(), as hashlib's."""

    def __init__(self, lib, data=b""):
        self._lib = lib
        self._st = ctypes.create_string_buffer(lib.crypto_generichash_statebytes())
        lib.crypto_generichash_init(self._st, None, 0, 32)
        if data:
            self.update(data)

    def update(self, data):
        n = len(memoryview(data).cast("B")) if not isinstance(data, bytes) else len(data)
        if not n:
            return
        try:
            arr = (ctypes.c_char * n).from_buffer(data)   # writable: hashed where it lies
        except TypeError:
            arr = bytes(data)                              # read-only: a copy
        self._lib.crypto_generichash_update(self._st, arr, n)

    def digest(self):
        out = ctypes.create_string_buffer(32)
        st = ctypes.create_string_buffer(self._st.raw, len(self._st))  # final() ends a state
        self._lib.crypto_generichash_final(st, out, 32)
        return out.raw


def _b2(data=b""):
    """A BLAKE2b-256 hasher (no key): libsodium's when it loads, else hashlib's."""
    lib = _sodium()
    if lib is not None:
        return _SodiumB2(lib, data)
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
        self._ident = None
        # Read under the archive's shared lock: not pruned while we look.
        lock = _read_lock(archive) if copy_dir is None else None
        try:
            if lock is not None:
                st = os.fstat(lock)
                self._ident = (st.st_dev, st.st_ino)
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
            if m.get("compression") != "none" and self.copy_dir is None:
                raise CheckpointError(f"{archive}: compressed ({m.get('compression')}); "
                                      f"members can only be read from a restored copy")
            self._listed = {e["path"]: e for e in m["members"]}
            _check_paths(archive, self._listed)
            self._offsets = self._locate_copy() if self.copy_dir is not None else self._locate()
        finally:
            if lock is not None:
                os.close(lock)

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
                                  int(self.manifest["chunk_size"]), self.prechecked,
                                  ident=self._ident)
        else:
            raw = _VerifiedMember(path, member, offset, e["size"],
                                  bytes.fromhex(e["blake2b"]), ident=self._ident)
        return io.BufferedReader(raw, buffer_size=1 << 20)


def _read_lock(path):
    """An fd of the archive holding its shared flock: `kguard ckpt prune`
    and `kguard.save(keep=N)` take that lock exclusively, without waiting,
    before removing an archive, and keep one whose lock is held. Raises
    CheckpointError when the file cannot be opened or was removed."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot be opened: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        if os.fstat(fd).st_nlink == 0:
            # Pruned between our open and our lock: it is no longer there.
            raise CheckpointError(f"{path}: removed (pruned) while it was being opened")
    except BaseException:
        os.close(fd)
        raise
    return fd


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
    """Version 2 chunks of one member, each read into a reused buffer,
    hashed and compared with the manifest's digest on a worker thread
    (os.preadv and hashlib release the GIL, so every core hashes) before any
    of it is served.

    A sequential reader (torch.load) is served from a window: while chunk i
    is served, the chunks after it are read and hashed, one per worker, each
    worker through its own file description (so the kernel's read-ahead
    follows it) in pieces of READ bytes; every byte is read and hashed once.
    Memory: one chunk buffer per worker (threads + EXTRA), whatever the
    size. The chunk being served holds one of them: when it is done, its
    buffer takes the next chunk while the others are still being hashed,
    so n workers keep about n cores busy; a buffer more (EXTRA = 1) would
    win back the copy-out time per chunk, about a tenth, for another 64 MiB.

    A read that jumps out of the window (a zip reader looking at the end of
    the file first) is served without disturbing it: that chunk is hashed
    through a small buffer in the calling thread and only the SIDE bytes on
    each side of the read, taken from the very reads that were hashed, are
    kept and served once the digest matched. A chunk asked for again after
    it left the window is read and checked again, never served unchecked.
    """

    READ = 256 << 10    # bytes per preadv: what is hashed next is still in L2
    SIDE = 1 << 20      # bytes kept each side of a read outside the window
    EXTRA = 0           # buffers besides one per worker (see above)

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
        self._nbuf = min(self.n, self._ahead + self.EXTRA)
        self._pool = ThreadPoolExecutor(max_workers=self._ahead)
        self._local = threading.local()   # each worker's own fd
        self._fds = []                    # every fd the workers opened
        self._fds_lock = threading.Lock()
        self._free = []                   # spare buffers
        self._made = 0                    # buffers allocated so far
        self._slots = {}                  # chunk -> Future of its verified memoryview (LRU order)
        self._owner = {}                  # chunk -> its buffer
        self._side = None                 # (start, memoryview) verified bytes outside the window
        self._next = None                 # where the last read ended

    def _want(self, i):
        return min(self._cs, self._size - i * self._cs)

    def _worker_fd(self):
        """This worker's own description of the archive: the same file (by
        inode), reopened so that read-ahead sees one sequential reader; the
        shared fd when that is not possible."""
        fd = getattr(self._local, "fd", None)
        if fd is None:
            fd = self._fd
            try:
                mine = os.open(f"/proc/self/fd/{self._fd}", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                mine = -1
            if mine >= 0:
                a, b = os.fstat(mine), os.fstat(self._fd)
                if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
                    fd = mine
                    with self._fds_lock:
                        self._fds.append(mine)
                else:
                    os.close(mine)
            self._local.fd = fd
        return fd

    def _mismatch(self, i, want):
        start = i * self._cs
        return CheckpointError(
            f"{self._name}: does not match its digest (chunk {i}, bytes {start}.."
            f"{start + max(want, 1) - 1}); none of that chunk was returned")

    def _fill(self, i, view):
        """Worker: read chunk i into view (exactly its length), hashing it as
        it arrives; raise CheckpointError unless it matches."""
        fd = self._worker_fd()
        hot = getattr(self._local, "hot", None)
        if hot is None:   # this worker's piece buffer: read and hashed while in cache
            hot = self._local.hot = memoryview(bytearray(self.READ))
        want = len(view)
        h = _b2()
        base = self._off + i * self._cs
        done = 0
        while done < want:
            got = os.preadv(fd, [hot[:min(self.READ, want - done)]], base + done)
            if got <= 0:
                raise CheckpointError(f"{self._name}: archive ends inside the member")
            h.update(hot[:got])
            view[done:done + got] = hot[:got]   # the bytes that were hashed
            done += got
        if not hmac.compare_digest(h.digest(), self._digests[i]):
            raise self._mismatch(i, want)
        return view

    def _load(self, i, buf):
        """Worker: chunk i into the window's buffer buf."""
        return self._fill(i, memoryview(buf)[:self._want(i)])

    def _take(self, keep, wait):
        """A buffer for a new chunk: a spare one, a new one within the budget,
        or the least recently used chunk's outside keep (a range of chunk
        numbers), waiting for one still being read only when wait is true.
        None when there is none to take."""
        if self._free:
            return self._free.pop()
        if self._made < self._nbuf:
            self._made += 1
            return _buffer(self._cs if self.n > 1 else self._want(0))
        out = [k for k in self._slots if k not in keep]
        if not out and wait:   # every buffer is in the window: its far end gives way
            out = [max(self._slots)]
        ready = [k for k in out if self._slots[k].done()]
        for k in ready or (out if wait else []):
            try:
                self._slots[k].result()
            except CheckpointError:
                pass  # reported if and when that chunk is asked for
            self._drop(k)
            return self._free.pop()
        return None

    def _drop(self, i):
        self._slots.pop(i, None)
        buf = self._owner.pop(i, None)
        if buf is not None:
            self._free.append(buf)

    def get(self, i):
        """Chunk i's bytes (a memoryview), verified; the window after it
        is read ahead. Raises CheckpointError."""
        keep = range(i, min(self.n, i + self._ahead + 1))
        if i not in self._slots:
            buf = self._take(keep, wait=True)
            self._owner[i] = buf
            self._slots[i] = self._pool.submit(self._load, i, buf)
        self._slots[i] = self._slots.pop(i)  # most recently used
        for k in keep:
            if k not in self._slots:
                buf = self._take(keep, wait=False)
                if buf is None:
                    break
                self._owner[k] = buf
                self._slots[k] = self._pool.submit(self._load, k, buf)
        try:
            return self._slots[i].result()
        except BaseException:
            self._drop(i)
            raise

    def _side_read(self, i, pos):
        """Verify chunk i through a small buffer (calling thread), keeping
        the SIDE bytes each side of pos from the reads that were hashed."""
        start, want = i * self._cs, self._want(i)
        lo, hi = max(start, pos - self.SIDE), min(start + want, pos + self.SIDE)
        keep = bytearray(hi - lo)
        piece = memoryview(bytearray(min(self.READ, want) or 1))
        h = _b2()
        at = start
        while at < start + want:
            part = piece[:min(self.READ, start + want - at)]
            got = os.preadv(self._fd, [part], self._off + at)
            if got <= 0:
                raise CheckpointError(f"{self._name}: archive ends inside the member")
            h.update(part[:got])
            a, z = max(at, lo), min(at + got, hi)
            if a < z:
                keep[a - lo:z - lo] = part[a - at:z - at]
            at += got
        if not hmac.compare_digest(h.digest(), self._digests[i]):
            raise self._mismatch(i, want)
        self._side = (lo, memoryview(keep))

    def at(self, pos):
        """Verified bytes of the member from pos on (a memoryview of at least
        one byte; pos < size). Raises CheckpointError."""
        i = pos // self._cs
        side = self._side
        if side and side[0] <= pos < side[0] + len(side[1]) and i not in self._slots:
            view = side[1][pos - side[0]:]
        elif self._next is None or pos == self._next or i in self._slots:
            view = self.get(i)[pos - i * self._cs:]
        else:  # a jump out of the window: leave the window as it is
            self._side_read(i, pos)
            view = self._side[1][pos - self._side[0]:]
        return view

    def served(self, end):
        """The caller took the bytes up to end (to tell sequential reads from jumps)."""
        self._next = end

    def readinto(self, pos, b):
        """Fill b with verified bytes of the member from pos (< size); return
        how many. Whole chunks that b covers from a chunk boundary (torch.load
        reads each tensor with one readinto) are read straight into b and
        hashed there by the workers, those already in the window copied from
        it; the call returns only once every one of them matched, and on a
        mismatch the bytes written into b are zeroed before CheckpointError
        is raised, so b never keeps a byte of a chunk that did not match.
        Anything else is served from the window."""
        cs = self._cs
        end = min(self._size, pos + len(b))
        i = pos // cs
        whole = []
        if pos % cs == 0:
            for j in range(i, self.n):
                if min((j + 1) * cs, self._size) > end:
                    break
                whole.append(j)
        try:
            out = memoryview(b).cast("B") if whole else None
        except TypeError:   # not a plain contiguous buffer: through the window
            out = None
        if not out:
            view = self.at(pos)
            n = min(len(b), len(view))
            b[:n] = view[:n]  # one copy, not two
            self.served(pos + n)
            return n
        work = []
        for j in whole:
            dst = out[(j - i) * cs:(j - i) * cs + self._want(j)]
            fut = self._slots.get(j)
            work.append((j, dst, fut if fut is not None
                         else self._pool.submit(self._fill, j, dst)))
        total = min((whole[-1] + 1) * cs, self._size) - pos
        err = None
        for j, dst, fut in work:
            try:
                got = fut.result()
                if got is not dst:   # from the window's buffer
                    dst[:] = got
            except BaseException as e:      # wait for every one before zeroing
                if err is None:
                    err = e
            if j in self._slots:
                self._drop(j)
        if err is not None:
            zero = bytes(min(total, 1 << 20))
            for at in range(0, total, len(zero)):
                n = min(len(zero), total - at)
                out[at:at + n] = zero[:n]
            raise err
        self.served(pos + total)
        return total

    def close(self):
        for fut in list(self._slots.values()):
            try:
                fut.result()
            except BaseException:
                pass
        self._pool.shutdown(wait=True)
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()
        self._slots.clear()
        self._owner.clear()
        self._free.clear()
        self._side = None


def _buffer(size):
    """A chunk buffer, its pages allocated at once (MAP_POPULATE): first
    touching 64 MiB page by page cost 0.27 s of CPU on the project's VM, in
    one call 0.02 s. Unmapped when the last reference goes."""
    if size == 0:
        return bytearray()
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
    return mmap.mmap(-1, size, flags=flags)


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
                 prechecked=False, ident=None):
        super().__init__()
        self._name = f"{path}:{name}"
        self._off, self._size, self._pos = offset, size, 0
        self._psize = chunk_size
        self._cache_idx, self._cache = -1, b""
        self._chunks = None
        self._fd = -1
        if ident is None:   # a member of a restored copy
            self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        else:               # the archive itself: read under its shared lock
            self._fd = _read_lock(path)
            st = os.fstat(self._fd)
            if (st.st_dev, st.st_ino) != ident:
                os.close(self._fd)
                self._fd = -1
                raise CheckpointError(f"{path}: replaced since its manifest was authenticated")
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
            self._chunks._drop(i)

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
        if self._chunks is not None:
            n = self._chunks.readinto(self._pos, b)
            self._pos += n
            return n
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
