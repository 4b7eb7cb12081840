"""Fault injection over `kguard ckpt seal`, `restore` and `verify`.

For each interposed function, every early call and a spread of later ones
is made to fail in turn (the Nth call fails, as SQLite tests allocation
failures). Each run must end with a clear error (exit 100/111 or a verdict,
with a message on stderr) or succeed, never crash (no signal, no sanitizer
abort), and never leave a wrong final file: the sealed archive either does
not exist or verifies valid; the restored directory either does not exist
or holds exactly the payload. Then SIGKILL at each phase of a restore: a
new restore into the same place finds consistent state.
"""
import filecmp
import os
import subprocess

import pytest

from conftest import BIN, spread

FUNCS = ["malloc", "calloc", "realloc", "write", "fsync", "rename", "renameat",
         "renameat2", "pipe2"]

# Crashes found by this test inside libraries kguard does not own, keyed by
# (function failed, the exported symbol that called it, library). Each is
# reported upstream-style in docs/SECURITY.md; a crash anywhere else fails.
#  - libarchive 3.6.2: archive_read_new() does not check the result of
#    archive_entry_new2(); when that calloc fails, the first
#    archive_read_next_header() dereferences NULL in archive_entry_set_dev.
#  - libarchive 3.6.2: when the calloc in archive_read_set_callback_data2
#    fails, archive_read_open_fd -> archive_read_open1 dereferences NULL.
KNOWN_LIBRARY_CRASHES = {("calloc", "archive_entry_new2", "libarchive.so.13"),
                         ("calloc", "archive_read_set_callback_data2", "libarchive.so.13")}
known_seen = []


def known_crash(p, fired):
    # libarchive's own out-of-memory handler (__archive_errx) prints this
    # and calls exit(1), which skips kguard's cleanup and collides with
    # verdict 1 ("unsigned"): a library behaviour, reported, not fixable
    # from kguard short of not letting libarchive allocate.
    if p.returncode == 1 and "Fatal Internal Error in libarchive: Out of memory" in p.stderr:
        known_seen.append(fired[0] if fired else "libarchive exit(1)")
        return True
    if p.returncode != -11 or not fired:
        return False
    _, fn, _n, _pid, sym, obj = fired[0].split()
    if (fn, sym, obj) in KNOWN_LIBRARY_CRASHES:
        known_seen.append(fired[0])
        return True
    return False


def run(*args, env=None):
    return subprocess.run([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=60)


@pytest.fixture
def ckenv(tmp_path, monkeypatch):
    monkeypatch.setenv("KGUARD_KEY_DIR", str(tmp_path / "keys"))
    payload = tmp_path / "payload"
    (payload / "sub").mkdir(parents=True)
    (payload / "state.pt").write_bytes(os.urandom(200_000))
    (payload / "sub" / "notes.txt").write_bytes(b"hello\n" * 50)
    good = tmp_path / "good.kgckpt.tar"
    r = run("ckpt", "seal", str(payload), "--step", "3", "-o", str(good))
    assert r.returncode == 0, r.stderr
    return payload, good


def same_tree(a, b):
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    return all(same_tree(os.path.join(a, d), os.path.join(b, d)) for d in cmp.common_dirs)


def check_clean_failure(p, what, fired=()):
    if known_crash(p, list(fired)):
        return
    assert p.returncode >= 0, "%s: killed by signal %d\n%s" % (what, -p.returncode, p.stderr)
    assert p.returncode in (0, 1, 2, 3, 4, 5, 100, 111), "%s: exit %d\n%s" % (
        what, p.returncode, p.stderr)
    assert "AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr
    if p.returncode != 0:
        # verify reports per file on stdout; the other commands on stderr
        assert (p.stderr + p.stdout).strip(), "%s: failed (exit %d) without a message" % (
            what, p.returncode)


def test_seal_faults(faulty, ckenv, tmp_path):
    payload, _ = ckenv
    out = tmp_path / "out.kgckpt.tar"
    _, _, counts = faulty.run(["ckpt", "seal", str(payload), "--step", "4", "-o", str(out)],
                              "count")
    out.unlink()
    fired_any = 0
    for fn in FUNCS:
        for n in spread(counts.get(fn, 0)):
            what = "seal with %s #%d failing" % (fn, n)
            p, fired, _ = faulty.run(["ckpt", "seal", str(payload), "--step", "4",
                                      "-o", str(out)], "%s:%d" % (fn, n))
            check_clean_failure(p, what, fired)
            fired_any += bool(fired)
            if out.exists():
                v = run("ckpt", "verify", str(out))
                assert v.returncode == 0, "%s left a final file that does not verify: %s" % (
                    what, v.stdout + v.stderr)
                assert p.returncode == 0, "%s: exit %d but a final file exists" % (
                    what, p.returncode)
                out.unlink()
            else:
                assert p.returncode != 0, "%s: reported success without a file" % what
    assert fired_any > 20, "the shim fired only %d times: is it preloaded?" % fired_any


def test_restore_faults(faulty, ckenv, tmp_path):
    payload, good = ckenv
    dest = tmp_path / "restored"
    _, _, counts = faulty.run(["ckpt", "restore", str(good), str(dest)], "count")
    assert same_tree(payload, dest)
    subprocess.run(["rm", "-rf", str(dest)], check=True)
    for fn in FUNCS:
        for n in spread(counts.get(fn, 0)):
            what = "restore with %s #%d failing" % (fn, n)
            p, fired, _ = faulty.run(["ckpt", "restore", str(good), str(dest)],
                                     "%s:%d" % (fn, n))
            check_clean_failure(p, what, fired)
            if p.returncode < 0 or "Fatal Internal Error in libarchive" in p.stderr:
                # a known library crash or exit: nothing ran kguard's cleanup
                subprocess.run(["rm", "-rf", str(dest)], check=True)
                for x in os.listdir(tmp_path):
                    if x.startswith(".restored.restore-"):
                        subprocess.run(["rm", "-rf", str(tmp_path / x)], check=True)
                continue
            if dest.exists():
                assert p.returncode == 0, "%s: exit %d but DEST exists" % (what, p.returncode)
                assert same_tree(payload, dest), "%s: DEST differs from the payload" % what
                subprocess.run(["rm", "-rf", str(dest)], check=True)
            else:
                assert p.returncode != 0, "%s: reported success without DEST" % what
            # A failed restore removes its private temporary.
            left = [x for x in os.listdir(tmp_path) if x.startswith(".restored.restore-")]
            assert not left, "%s left %s" % (what, left)


def test_verify_faults(faulty, ckenv):
    _, good = ckenv
    _, _, counts = faulty.run(["ckpt", "verify", str(good)], "count")
    misreported = []
    for fn in ("malloc", "calloc", "realloc"):
        for n in spread(counts.get(fn, 0)):
            p, fired, _ = faulty.run(["ckpt", "verify", str(good)], "%s:%d" % (fn, n))
            check_clean_failure(p, "verify with %s #%d failing" % (fn, n), fired)
            if p.returncode < 0 or "Fatal Internal Error in libarchive" in p.stderr:
                continue
            # An allocation failure is a system failure, never a false verdict
            # about the archive (which is valid).
            if 1 <= p.returncode <= 5:
                misreported.append("%s #%d" % (fn, n))
                continue
            assert p.returncode in (0, 111), "verify with %s #%d: exit %d\n%s" % (
                fn, n, p.returncode, p.stdout + p.stderr)
    # kg_ckpt_json_parse tells cJSON's allocation failure from bad JSON, and
    # a libarchive registration or silent failure is out of memory (111).
    assert not misreported, ("allocation failure reported as a verdict on a valid "
                             "archive at: " + ", ".join(misreported))


@pytest.mark.parametrize("phase", ["write", "fsync", "renameat2"])
def test_restore_sigkill_each_phase(faulty, ckenv, tmp_path, phase):
    """SIGKILL kguard-ckpt at the 1st, a middle and the last call of each
    phase of a restore: DEST never exists half-restored, and a new restore
    into the same place succeeds with exactly the payload."""
    payload, good = ckenv
    dest = tmp_path / "restored"
    _, _, counts = faulty.run(["ckpt", "restore", str(good), str(dest)], "count")
    subprocess.run(["rm", "-rf", str(dest)], check=True)
    total = counts.get(phase, 0)
    for n in sorted({1, (total + 1) // 2, total} - {0}):
        p, fired, _ = faulty.run(["ckpt", "restore", str(good), str(dest)],
                                 "%s:%d:kill" % (phase, n))
        assert fired and p.returncode == -9, "no SIGKILL at %s #%d" % (phase, n)
        assert not dest.exists() or same_tree(payload, dest), \
            "SIGKILL at %s #%d left DEST half-restored" % (phase, n)
        if not dest.exists():
            r = run("ckpt", "restore", str(good), str(dest))
            assert r.returncode == 0, r.stderr
        assert same_tree(payload, dest)
        subprocess.run(["rm", "-rf", str(dest)], check=True)
