"""The bad-input corpus, generated at test time from a genuinely sealed
archive: every case must be refused by `verify` with its own exit code and
reason, and by `restore` without writing anything outside DEST or leaving
DEST half-written (DEST must not exist afterwards)."""
import io
import os
import shutil
import subprocess
import tarfile
import time
import zipfile

import pytest

from conftest import run

VALID, UNSIGNED, CORRUPT, INCOMPLETE, MALFORMED, UNSAFE = 0, 1, 2, 3, 4, 5
MANIFEST, SIG = "KGUARD-MANIFEST.json", "KGUARD-MANIFEST.sig"


def members(path):
    """[(TarInfo, bytes)] of a tar archive."""
    out = []
    with tarfile.open(path, "r:") as t:
        for m in t.getmembers():
            out.append((m, t.extractfile(m).read() if m.isfile() else b""))
    return out


def build(path, entries, fmt=tarfile.GNU_FORMAT):
    """Write a tar whose entries are (TarInfo, bytes-or-None)."""
    with tarfile.open(path, "w:", format=fmt, encoding="utf-8",
                      errors="surrogateescape") as t:
        for info, data in entries:
            if data is not None:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            else:
                t.addfile(info)
    return path


def reg(name, data):
    i = tarfile.TarInfo(name)
    i.size = len(data)
    i.mode = 0o644
    return i, data


def special(name, kind, link=""):
    i = tarfile.TarInfo(name)
    i.type = kind
    i.linkname = link
    i.mode = 0o644
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        i.devmajor, i.devminor = 1, 3
    return i, None


def head_and_payload(sealed):
    ms = members(sealed)
    assert ms[0][0].name == MANIFEST and ms[1][0].name == SIG
    return ms[:2], ms[2:]


def check_refused(archive, code, reason, tmp_path):
    """verify exits with code and says reason; restore refuses the same way
    and leaves no DEST, no temporary, nothing outside."""
    p = run("ckpt", "verify", str(archive))
    assert p.returncode == code, p.stdout + p.stderr
    assert reason in p.stdout, p.stdout
    assert len(p.stdout.strip().splitlines()) == 1
    parent = tmp_path / "restore-parent"
    parent.mkdir(exist_ok=True)
    before = sorted(os.listdir(tmp_path))
    dest = parent / "dest"
    r = run("ckpt", "restore", str(archive), str(dest))
    assert r.returncode == code, r.stdout + r.stderr
    assert not dest.exists()
    assert os.listdir(parent) == []
    assert sorted(os.listdir(tmp_path)) == before
    for escaped in ("evil", "etc-passwd-copy"):
        assert not (tmp_path / escaped).exists()


# ---- truncation ---------------------------------------------------------------

def test_truncated_at_several_offsets(sealed, tmp_path):
    data = sealed.read_bytes()
    with tarfile.open(sealed) as t:
        infos = t.getmembers()
    state = next(i for i in infos if i.name == "state.pt")
    last = infos[-1]
    offsets = {
        "mid first header": 100,
        "mid manifest": infos[0].offset_data + 20,
        "mid signature header": infos[1].offset + 200,
        "mid payload": state.offset_data + 1000,
        "member boundary": last.offset,
        "mid last member": last.offset_data + 3,
    }
    for label, off in offsets.items():
        cut = tmp_path / f"cut-{off}.tar"
        cut.write_bytes(data[:off])
        check_refused(cut, INCOMPLETE, "incomplete", tmp_path)


def test_truncated_zstd(tmp_path, keyenv, payload):
    out = tmp_path / "z.kgckpt.tar.zst"
    run("ckpt", "seal", str(payload), "--step", "1", "-o", str(out), "--zstd", check=True)
    assert run("ckpt", "verify", str(out)).returncode == VALID
    data = out.read_bytes()
    for frac in (0.5, 0.9):
        cut = tmp_path / f"z-{frac}.zst"
        cut.write_bytes(data[: int(len(data) * frac)])
        check_refused(cut, INCOMPLETE, "incomplete", tmp_path)


def test_empty_file(tmp_path, keyenv):
    f = tmp_path / "empty.kgckpt.tar"
    f.write_bytes(b"")
    check_refused(f, INCOMPLETE, "empty file", tmp_path)


# ---- flipped bits and keys ---------------------------------------------------

def flip(src, dst, offset):
    b = bytearray(src.read_bytes())
    b[offset] ^= 0x01
    dst.write_bytes(bytes(b))
    return dst


def test_flipped_bit_in_payload(sealed, tmp_path):
    with tarfile.open(sealed) as t:
        state = t.getmember("state.pt")
    f = flip(sealed, tmp_path / "flip-payload.tar", state.offset_data + 12345)
    check_refused(f, CORRUPT, "member 'state.pt' does not match its digest", tmp_path)


def test_flipped_bit_in_manifest(sealed, tmp_path):
    data = sealed.read_bytes()
    with tarfile.open(sealed) as t:
        m = t.getmember(MANIFEST)
    pos = data.index(b'"step":', m.offset_data) + len(b'"step":') + 1
    f = flip(sealed, tmp_path / "flip-manifest.tar", pos)
    check_refused(f, CORRUPT, "manifest signature does not match", tmp_path)


def test_flipped_bit_in_signature(sealed, tmp_path):
    with tarfile.open(sealed) as t:
        s = t.getmember(SIG)
    f = flip(sealed, tmp_path / "flip-sig.tar", s.offset_data + 10)
    check_refused(f, CORRUPT, "manifest signature does not match", tmp_path)


def test_wrong_key(sealed, tmp_path, monkeypatch):
    monkeypatch.setenv("KGUARD_KEY_DIR", str(tmp_path / "other-keys"))
    assert run("keygen").returncode == 0
    check_refused(sealed, UNSIGNED, "which you do not trust", tmp_path)
    # The message points at the way to trust the signer, not at keygen.
    out = run("ckpt", "verify", str(sealed)).stdout
    assert "kguard keys import" in out and "keygen" not in out


def test_no_key_at_all(sealed, tmp_path, monkeypatch):
    monkeypatch.setenv("KGUARD_KEY_DIR", str(tmp_path / "no-keys"))
    check_refused(sealed, UNSIGNED, "unsigned", tmp_path)


def test_signature_missing(sealed, tmp_path):
    head, body = head_and_payload(sealed)
    f = build(tmp_path / "nosig.tar", [head[0]] + body)
    check_refused(f, UNSIGNED, "no KGUARD-MANIFEST.sig", tmp_path)


# ---- structure -----------------------------------------------------------------

def test_no_manifest(sealed, tmp_path):
    _, body = head_and_payload(sealed)
    f = build(tmp_path / "nomanifest.tar", body)
    check_refused(f, MALFORMED, "no manifest", tmp_path)


def test_listed_member_missing(sealed, tmp_path):
    head, body = head_and_payload(sealed)
    f = build(tmp_path / "missing.tar", head + [e for e in body if e[0].name != "state.pt"])
    check_refused(f, INCOMPLETE, "listed member 'state.pt' is missing", tmp_path)


def test_unlisted_member(sealed, tmp_path):
    head, body = head_and_payload(sealed)
    f = build(tmp_path / "unlisted.tar", head + body + [reg("evil", b"x" * 10)])
    check_refused(f, UNSAFE, "'evil' is not listed", tmp_path)


def test_duplicate_names(sealed, tmp_path):
    head, body = head_and_payload(sealed)
    f = build(tmp_path / "dup.tar", head + body + body[:1])
    check_refused(f, UNSAFE, "appears twice", tmp_path)


@pytest.mark.parametrize("name,reason", [
    ("../evil", "'..' path component"),
    ("sub/../../evil", "'..' path component"),
    ("/tmp/kguard-corpus-evil", "absolute name"),
])
def test_escaping_names(sealed, tmp_path, name, reason):
    head, body = head_and_payload(sealed)
    f = build(tmp_path / "escape.tar", head + [reg(name, b"pwned")] + body)
    check_refused(f, UNSAFE, reason, tmp_path)
    assert not os.path.exists("/tmp/kguard-corpus-evil")


@pytest.mark.parametrize("kind,target,reason", [
    (tarfile.SYMTYPE, "/etc/passwd", "symbolic link"),
    (tarfile.SYMTYPE, "../../evil", "symbolic link"),
    (tarfile.LNKTYPE, "/etc/passwd", "hard link"),
    (tarfile.LNKTYPE, "../etc-passwd-copy", "hard link"),
    (tarfile.CHRTYPE, "", "character device"),
    (tarfile.BLKTYPE, "", "block device"),
    (tarfile.FIFOTYPE, "", "fifo"),
    (tarfile.DIRTYPE, "", "directory"),
])
def test_links_devices_fifos(sealed, tmp_path, kind, target, reason):
    head, body = head_and_payload(sealed)
    # Named like a listed member, placed before the genuine one.
    f = build(tmp_path / "special.tar", head + [special("state.pt", kind, target)] + body)
    check_refused(f, UNSAFE, reason, tmp_path)


def test_size_larger_than_manifest(sealed, tmp_path):
    head, body = head_and_payload(sealed)
    body = [(i, d + b"extra" if i.name == "state.pt" else d) for i, d in body]
    f = build(tmp_path / "bigger.tar", head + body)
    check_refused(f, UNSAFE, "more than the manifest's", tmp_path)


def test_size_smaller_than_manifest(sealed, tmp_path):
    head, body = head_and_payload(sealed)
    body = [(i, d[:-1] if i.name == "state.pt" else d) for i, d in body]
    f = build(tmp_path / "smaller.tar", head + body)
    check_refused(f, CORRUPT, "the manifest says", tmp_path)


def test_header_lies_about_size(sealed, tmp_path):
    """A header claiming 1 TiB with little data behind it: refused at the
    header, nothing is read or allocated for it."""
    head, body = head_and_payload(sealed)
    f = tmp_path / "liar.tar"
    build(f, head)
    raw = bytearray(f.read_bytes().rstrip(b"\0"))
    raw += b"\0" * (-len(raw) % 512)
    info = tarfile.TarInfo("state.pt")
    info.size = 1 << 40
    raw += info.tobuf(format=tarfile.GNU_FORMAT)
    raw += b"A" * 4096
    f.write_bytes(bytes(raw))
    check_refused(f, UNSAFE, "claims 1099511627776 bytes", tmp_path)


@pytest.mark.skipif(shutil.which("zstd") is None, reason="needs the zstd command")
def test_decompression_bomb(sealed, tmp_path):
    """zstd stream of 2 GiB of zeros behind a signed manifest that says the
    member is small: refused quickly without inflating it."""
    head, _ = head_and_payload(sealed)
    hdr = io.BytesIO()
    with tarfile.open(fileobj=hdr, mode="w:", format=tarfile.GNU_FORMAT) as t:
        for info, data in head:
            t.addfile(info, io.BytesIO(data))
    prefix = hdr.getvalue().rstrip(b"\0")
    prefix += b"\0" * (-len(prefix) % 512)
    info = tarfile.TarInfo("state.pt")
    info.size = 2 << 30
    bomb = tmp_path / "bomb.kgckpt.tar.zst"
    with open(bomb, "wb") as out:
        z = subprocess.Popen(["zstd", "-q", "-1", "-c"], stdin=subprocess.PIPE, stdout=out)
        z.stdin.write(prefix + info.tobuf(format=tarfile.GNU_FORMAT))
        zeros = b"\0" * (1 << 20)
        for _ in range(2048):
            z.stdin.write(zeros)
        z.stdin.close()
        assert z.wait() == 0
    assert bomb.stat().st_size < 1 << 20
    t0 = time.monotonic()
    check_refused(bomb, UNSAFE, "more than the manifest's", tmp_path)
    assert time.monotonic() - t0 < 10


def test_non_utf8_name(sealed, tmp_path):
    head, body = head_and_payload(sealed)
    bad = b"st\xffate.pt".decode("utf-8", "surrogateescape")
    f = build(tmp_path / "nonutf8.tar", head + [reg(bad, b"data")] + body)
    check_refused(f, UNSAFE, "not valid UTF-8", tmp_path)


# ---- not kguard archives --------------------------------------------------------

def test_not_an_archive(tmp_path, keyenv):
    f = tmp_path / "text.kgckpt.tar"
    f.write_bytes(b"this is not an archive at all\n" * 100)
    check_refused(f, MALFORMED, "malformed", tmp_path)


def torch_zip(path):
    import torch
    torch.save({"w": torch.arange(1000, dtype=torch.float32)}, path)
    return path


def test_plain_torch_zip_is_complete_but_unauthenticated(tmp_path, keyenv):
    f = torch_zip(tmp_path / "model.pt")
    assert zipfile.is_zipfile(f)
    check_refused(f, UNSIGNED, "complete", tmp_path)
    p = run("ckpt", "verify", str(f))
    assert "every CRC matches" in p.stdout and "not authenticated" in p.stdout


def test_torch_zip_with_flipped_bit(tmp_path, keyenv):
    f = torch_zip(tmp_path / "model.pt")
    with zipfile.ZipFile(f) as z:
        info = next(i for i in z.infolist() if i.filename.endswith("data/0"))
    data = bytearray(f.read_bytes())
    # Local header is 30 bytes + name + extra before the stored data.
    raw = data[info.header_offset:info.header_offset + 30]
    start = info.header_offset + 30 + int.from_bytes(raw[26:28], "little") \
        + int.from_bytes(raw[28:30], "little")
    data[start + 100] ^= 0x10
    g = tmp_path / "model-flipped.pt"
    g.write_bytes(bytes(data))
    check_refused(g, CORRUPT, "CRC", tmp_path)


def test_torch_zip_truncated(tmp_path, keyenv):
    f = torch_zip(tmp_path / "model.pt")
    data = f.read_bytes()
    g = tmp_path / "model-cut.pt"
    g.write_bytes(data[: len(data) // 2])
    check_refused(g, INCOMPLETE, "incomplete", tmp_path)


# ---- signed manifests that C and Python must read alike ------------------------

def _sign(manifest, key_dir):
    """The detached Ed25519 signature of manifest by the test's own key
    (libsodium, as kguard signs)."""
    import ctypes
    sodium = ctypes.CDLL("libsodium.so.23")
    sk = (key_dir / "ckpt-ed25519.secret").read_bytes()
    sig = ctypes.create_string_buffer(64)
    assert sodium.crypto_sign_detached(sig, None, manifest, ctypes.c_ulonglong(len(manifest)),
                                       sk) == 0
    return sig.raw


def _signed_archive(sealed, path, keyenv, members, manifest_text):
    """An archive of `members` [(name, bytes)] behind manifest_text (the
    sealed archive's manifest with its members replaced by edit), signed by
    the user's own key: only the manifest's content is hostile."""
    manifest = manifest_text.encode()
    head, _ = head_and_payload(sealed)
    mi, _ = head[0]
    si, _ = head[1]
    return build(path, [(mi, manifest), (si, _sign(manifest, keyenv))]
                 + [reg(n, d) for n, d in members])


def _manifest_with(sealed, entries):
    """The sealed archive's manifest (JSON text) listing entries
    [(json-escaped path, bytes)] instead of its own members."""
    import hashlib
    import json
    m = json.loads(members(sealed)[0][1])
    listed = []
    for path, data in entries:
        listed.append('{"path": "%s", "size": %d, "chunks": ["%s"]}'
                      % (path, len(data), hashlib.blake2b(data, digest_size=32).hexdigest()))
    m["members"] = []
    m["total_size"] = sum(len(d) for _, d in entries)
    text = json.dumps(m)
    return text.replace('"members": []', '"members": [' + ", ".join(listed) + "]")


def test_file_that_is_also_a_directory(sealed, tmp_path, keyenv):
    """A manifest listing both `a` and `a/b` (and an archive holding both):
    it once verified valid while restore failed with 111; one verdict for
    both, unsafe, naming the pair."""
    a, ab = b"file a\n", b"file a/b\n"
    text = _manifest_with(sealed, [("a", a), ("a/b", ab)])
    f = _signed_archive(sealed, tmp_path / "a-and-ab.tar", keyenv, [("a", a), ("a/b", ab)], text)
    check_refused(f, UNSAFE, "'a' both as a file and as a directory of 'a/b'", tmp_path)
    # Not only the direct child: any depth, whatever sorts between them.
    text = _manifest_with(sealed, [("d/x", a), ("d/x-y", a), ("d/x/y/z", ab)])
    f = _signed_archive(sealed, tmp_path / "deep.tar", keyenv,
                        [("d/x", a), ("d/x-y", a), ("d/x/y/z", ab)], text)
    check_refused(f, UNSAFE, "'d/x' both as a file and as a directory of 'd/x/y/z'", tmp_path)


def test_nul_in_a_member_name(sealed, tmp_path, keyenv):
    """JSON's \\u0000 in a member name: C strings end at the NUL ("state.pt"
    matched the archive's member and verified valid) while Python kept the
    whole name (and refused the member as unlisted). Both refuse it now."""
    data = b"weights"
    text = _manifest_with(sealed, [("state.pt\\u0000.evil", data)])
    f = _signed_archive(sealed, tmp_path / "nul.tar", keyenv, [("state.pt", data)], text)
    check_refused(f, UNSAFE, "NUL character", tmp_path)
    # The in-kernel reader agrees: the manifest is refused before any member.
    import sys
    sys.path.insert(0, os.path.join(os.environ.get("KGUARD_SOURCE_DIR", "../.."), "python"))
    from kguard.archive import Archive, CheckpointError
    with pytest.raises(CheckpointError):
        Archive(str(f))
    with pytest.raises(CheckpointError, match="both as a file and as a directory"):
        from kguard.archive import _check_paths
        _check_paths("x", {"a": {}, "a/b": {}})
    with pytest.raises(CheckpointError, match="NUL"):
        _check_paths("x", {"state.pt\0.evil": {}})
