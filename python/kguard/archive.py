"""Read the members of a sealed, uncompressed checkpoint in place.

After a fault kguard verifies the checkpoint where it lies instead of
copying it (a second copy of a 20 GB checkpoint in the home directory is
what users cannot afford). The kernel then reads members straight from the
archive. Nothing here trusts the file between that verification and the
read: the signed manifest is authenticated again (`kguard ckpt manifest`),
and every byte handed to the caller comes from a buffer whose digest was
checked:

1. the member is read once, whole, and checked before a single byte is
   returned (a mismatch anywhere, even in the last byte, raises): in a
   version 2 archive each chunk against the manifest's chunk digest, on
   several threads; in a version 1 archive its BLAKE2b-256 against the
   manifest's, recording a BLAKE2b digest of each piece of PIECE bytes;
2. reads are then served piece by piece, each piece read into memory and
   its digest compared with the one recorded in step 1 before any of it is
   copied out; a file changed since step 1 raises.

Member offsets come from the tar headers (stdlib tarfile); names, types
and sizes must agree exactly with the authenticated manifest. Memory: one
piece (4 MiB; version 2: one 64 MiB chunk, a few during step 1), whatever
the member size.
"""
import hashlib
import hmac
import io
import json
import os
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
    Raises CheckpointError when the manifest does not authenticate, the
    archive is compressed, or its headers disagree with the manifest.
    """

    def __init__(self, archive, kguard_bin=None, expect_digest=None):
        self.path = archive
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
        if m.get("compression") != "none":
            raise CheckpointError(f"{archive}: compressed ({m.get('compression')}); "
                                  f"members can only be read from a restored copy")
        self._listed = {e["path"]: e for e in m["members"]}
        self._offsets = self._locate()

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
        if "chunks" in e:  # version 2: one digest per chunk_size bytes
            raw = _VerifiedMember(self.path, member, self._offsets[member], e["size"],
                                  None, [bytes.fromhex(d) for d in e["chunks"]],
                                  int(self.manifest["chunk_size"]))
        else:
            raw = _VerifiedMember(self.path, member, self._offsets[member], e["size"],
                                  bytes.fromhex(e["blake2b"]))
        return io.BufferedReader(raw, buffer_size=1 << 20)


class _VerifiedMember(io.RawIOBase):
    def __init__(self, path, name, offset, size, digest, chunks=None, chunk_size=PIECE):
        super().__init__()
        self._name = f"{path}:{name}"
        self._off, self._size, self._pos = offset, size, 0
        self._psize = chunk_size
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self._cache_idx, self._cache = -1, b""
        try:
            if chunks is None:
                self._pieces = self._check_whole(digest)
            else:
                self._check_chunks(chunks)
                self._pieces = chunks
        except BaseException:
            os.close(self._fd)
            raise

    def _check_chunks(self, chunks):
        """Version 2: every chunk against the manifest, several at once
        (hashlib and pread release the GIL), before anything is returned."""
        from concurrent.futures import ThreadPoolExecutor

        n = max(1, (self._size + self._psize - 1) // self._psize)
        if len(chunks) != n:
            raise CheckpointError(f"{self._name}: manifest lists {len(chunks)} chunk "
                                  f"digests for {n} chunks")

        def ok(i):
            return hmac.compare_digest(_b2(self._read_piece_raw(i)).digest(), chunks[i])

        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            for i, good in enumerate(pool.map(ok, range(n))):
                if not good:
                    raise CheckpointError(f"{self._name}: does not match its digest "
                                          f"(chunk {i}); nothing of it was read")

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
        i, within = divmod(self._pos, self._psize)
        piece = self._piece(i)
        n = min(len(b), len(piece) - within)
        b[:n] = memoryview(piece)[within:within + n]  # one copy, not two
        self._pos += n
        return n

    def close(self):
        if not self.closed and self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self._cache = b""
        super().close()
