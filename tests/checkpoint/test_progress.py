"""What the ckpt commands show while they work: on a terminal one line
updated in place (bytes done, rate, time left) once an operation has run a
second, erased at its end; for programs, with --progress=machine, the
`kguard-progress DONE TOTAL` lines the kernel supervisor reads; off a
terminal by default, nothing.

The terminal is a real pseudo-terminal (python's pty module) on stderr; the
slow-disk test hook KGUARD_TEST_READ_BPS makes a small archive take several
seconds to read, and KGUARD_TEST_PROGRESS_AFTER_MS=0 lets a seal shorter
than a second show its line. Nothing here asserts a duration."""
import fcntl
import os
import pty
import re
import struct
import subprocess
import termios

import pytest

from conftest import BIN, run

MIB = 1 << 20
RATE = 2 * MIB   # 6 MiB at 2 MiB/s: about three seconds of reading


@pytest.fixture
def archive(tmp_path, keyenv):
    src = tmp_path / "src"
    src.mkdir()
    (src / "state.pt").write_bytes(os.urandom(6 * MIB))
    out = tmp_path / "ck" / "a.kgckpt.tar"
    out.parent.mkdir()
    run("ckpt", "seal", str(src), "--step", "3", "-o", str(out), check=True)
    return out


def on_terminal(args, env=None, cols=200):
    """Run kguard with stderr on a pseudo-terminal (cols wide) and stdout on
    a pipe. Returns (exit code, stdout, what the terminal received)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    p = subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:      # EIO: every writer of the terminal is gone
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out = p.stdout.read().decode()
    return p.wait(timeout=120), out, seen.decode(errors="replace")


def slow(**extra):
    return dict(os.environ, KGUARD_TEST_READ_BPS=str(RATE), **extra)


LINE = re.compile(r"\r(?P<what>[^\r\n]*?): (?P<done>[\d.]+ (?:B|KiB|MiB)) of 6\.\d MiB, "
                  r"[\d.]+ (?:B|KiB|MiB)/s, about \d+ s left\x1b\[K")


def test_verify_on_a_terminal_shows_one_updating_line_then_erases_it(archive):
    code, out, tty = on_terminal(["ckpt", "verify", str(archive)], env=slow())
    assert code == 0 and ": valid:" in out
    lines = list(LINE.finditer(tty))
    assert lines, repr(tty)
    assert all(m["what"] == f"verifying {archive}" for m in lines)
    assert "\n" not in tty and "kguard-progress" not in tty   # one line, rewritten
    assert tty.endswith("\r\x1b[K")                           # and erased at the end


def test_resume_prepare_and_restore_on_a_terminal(archive, tmp_path):
    code, out, tty = on_terminal(["ckpt", "resume-prepare", "--dir", str(archive.parent),
                                  "--before", "99999999999999", "--incident", "t1",
                                  "--into", str(tmp_path / "never"), "--json"], env=slow())
    assert code == 0 and '"status":"restored"' in out.replace(" ", "")
    assert [m["what"] for m in LINE.finditer(tty)][:1] == [
        f"checking the last checkpoint in {archive.parent}"], repr(tty)
    assert "kguard-progress" not in tty and tty.endswith("\r\x1b[K")

    code, out, tty = on_terminal(["ckpt", "restore", str(archive), str(tmp_path / "r")],
                                 env=slow())
    assert code == 0 and "restored step 3" in out
    assert {m["what"] for m in LINE.finditer(tty)} == {f"restoring {archive}"}, repr(tty)


def test_seal_on_a_terminal(tmp_path, keyenv):
    src = tmp_path / "src"
    src.mkdir()
    (src / "state.pt").write_bytes(os.urandom(6 * MIB))
    run("keygen", check=True)
    env = dict(os.environ, KGUARD_TEST_PROGRESS_AFTER_MS="0")
    code, out, tty = on_terminal(["ckpt", "seal", str(src), "--step", "1", "-o",
                                  str(tmp_path / "s.kgckpt.tar")], env=env)
    assert code == 0, tty
    assert re.search(rf"\rsealing {re.escape(str(src))}: [\d.]+ (B|KiB|MiB) of 6\.0 MiB", tty), \
        repr(tty)
    assert tty.endswith("\r\x1b[K")
    # zstd reads the files twice: a line for each pass.
    code, out, tty = on_terminal(["ckpt", "seal", str(src), "--step", "1", "--zstd", "-o",
                                  str(tmp_path / "s.kgckpt.tar.zst")], env=env)
    assert code == 0, tty
    assert f"\rhashing {src}: " in tty and f"\rsealing {src}: " in tty, repr(tty)


def test_the_line_fits_a_narrow_terminal(archive):
    """The label gives way, so the line never wraps (a wrapped line would
    not be rewritten in place)."""
    code, _, tty = on_terminal(["ckpt", "verify", str(archive)], env=slow(), cols=70)
    assert code == 0
    drawn = [seg[:-len("\x1b[K")] for seg in tty.split("\r") if seg.endswith("\x1b[K")]
    drawn = [d for d in drawn if d]
    assert drawn and all(len(d) <= 69 for d in drawn), drawn
    assert all(d.startswith("verifying ") and "...: " in d and " of 6." in d for d in drawn)


def test_a_quick_operation_shows_nothing(archive):
    code, out, tty = on_terminal(["ckpt", "verify", str(archive)])
    assert code == 0 and tty == ""


def test_none_shows_nothing_on_a_terminal(archive):
    code, _, tty = on_terminal(["ckpt", "verify", "--progress=none", str(archive)], env=slow())
    assert code == 0 and tty == ""


def machine_lines(text):
    return [tuple(map(int, ln.split()[1:])) for ln in text.splitlines()
            if ln.startswith("kguard-progress ")]


def test_off_a_terminal_nothing_unless_asked_then_the_machine_lines(archive, tmp_path):
    size = archive.stat().st_size
    rp = ["ckpt", "resume-prepare", "--dir", str(archive.parent), "--before",
          "99999999999999", "--incident", "m1", "--into", str(tmp_path / "never"), "--json"]
    for args in (["ckpt", "verify", str(archive)], rp,
                 ["ckpt", "restore", str(archive), str(tmp_path / "r0")]):
        p = subprocess.run([BIN, *args], capture_output=True, text=True, env=slow())
        assert p.returncode == 0, p.stderr
        assert "kguard-progress" not in p.stderr and "\r" not in p.stderr, args
    # For programs: the start (0), about once a second, the end (the archive's size).
    for args in (["ckpt", "verify", "--progress=machine", str(archive)],
                 ["ckpt", "verify", "--progress", str(archive)],   # bare, off a terminal
                 rp + ["--progress=machine"],
                 ["ckpt", "restore", "--progress=machine", str(archive), str(tmp_path / "r1")]):
        p = subprocess.run([BIN, *args], capture_output=True, text=True, env=slow())
        assert p.returncode == 0, p.stderr
        got = machine_lines(p.stderr)
        assert got[0] == (0, size) and got[-1] == (size, size), (args, got)
        assert len(got) >= 3 and [d for d, _ in got] == sorted(d for d, _ in got), (args, got)
        assert "\r" not in p.stderr


def test_seal_machine_lines_count_the_files_bytes(tmp_path, keyenv):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.bin").write_bytes(os.urandom(3 * MIB + 5))
    (src / "sub" / "b.bin").write_bytes(b"x" * 1000)
    p = subprocess.run([BIN, "ckpt", "seal", str(src), "--step", "1", "--progress=machine",
                        "-o", str(tmp_path / "m.kgckpt.tar")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    total = 3 * MIB + 5 + 1000
    got = machine_lines(p.stderr)
    assert got[0] == (0, total) and got[-1] == (total, total), got


def test_bad_progress_value_is_a_usage_error(archive):
    for args in (["ckpt", "verify", "--progress=sometimes", str(archive)],
                 ["ckpt", "restore", "--progress=loud", str(archive), "x"],
                 ["ckpt", "seal", str(archive.parent), "--step", "1", "-o", "y",
                  "--progress=maybe"]):
        p = run(*args)
        assert p.returncode == 100 and "--progress is auto, machine or none" in p.stderr, args


def test_list_latest_and_prune_on_a_terminal(archive, tmp_path):
    """The commands that verify a directory's archives show the same line;
    prune's removals are printed on stdout, not into the line."""
    ck = archive.parent
    for args, what in ((["ckpt", "list", str(ck)], f"verifying {archive.name}"),
                       (["ckpt", "latest", str(ck)], f"checking {ck}"),
                       (["ckpt", "prune", str(ck), "--keep", "1", "--dry-run"],
                        f"checking {ck}")):
        code, out, tty = on_terminal(args, env=slow())
        assert code == 0, (args, tty)
        assert {m["what"] for m in LINE.finditer(tty)} == {what}, (args, repr(tty))
        # Erased before anything else is written: only whole lines remain.
        rest = re.sub(r"\r[^\r\n]*\x1b\[K", "", tty)
        assert rest == "" or rest.endswith("\n"), (args, repr(tty))
        assert "\r" not in out, args
    p = subprocess.run([BIN, "ckpt", "prune", str(ck), "--keep", "1", "--progress=machine"],
                       capture_output=True, text=True, env=slow())
    size = archive.stat().st_size
    assert p.returncode == 0 and machine_lines(p.stderr)[-1] == (size, size), p.stderr
