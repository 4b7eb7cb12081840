"""CLI behaviour: list ordering, latest --before, quarantine, resume-prepare
JSON, --help, and a SIGKILL in the middle of sealing."""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time

from conftest import BIN, run


def seal(src, ckdir, step, *extra):
    p = run("ckpt", "seal", str(src), "--step", str(step), "--run", "r1", "--into", str(ckdir),
            *extra, check=True)
    return p.stdout.strip()


def listing(ckdir):
    p = run("ckpt", "list", str(ckdir), "--json", check=True)
    return json.loads(p.stdout)


def test_help_texts():
    p = run("ckpt", "--help")
    assert p.returncode == 0 and "resume-prepare" in p.stdout
    for sub in ("seal", "verify", "list", "latest", "restore", "quarantine", "resume-prepare"):
        p = run("ckpt", sub, "--help")
        assert p.returncode == 0 and p.stdout.startswith("usage: kguard ckpt " + sub), sub
    v = run("ckpt", "verify", "--help").stdout
    for line in ("1 unsigned", "2 corrupt", "3 incomplete", "4 malformed", "5 unsafe"):
        assert line in v
    assert run("keygen", "--help").returncode == 0
    assert run("ckpt", "bogus").returncode == 100
    assert run("ckpt", "seal", "x").returncode == 100


def test_keygen_refuses_to_replace(keyenv):
    assert run("keygen").returncode == 0
    assert (keyenv / "ckpt-ed25519.secret").stat().st_mode & 0o777 == 0o600
    assert keyenv.stat().st_mode & 0o777 == 0o700
    assert run("keygen").returncode == 100
    assert run("keygen", "--force").returncode == 0


def test_list_newest_first_and_latest_before(tmp_path, keyenv, payload):
    ck = tmp_path / "ck"
    paths = [seal(payload, ck, s) for s in (10, 20, 30)]
    rows = listing(ck)
    assert [r["step"] for r in rows] == [30, 20, 10]
    assert all(r["status"] == "valid" for r in rows)
    times = [r["sealed_at_ms"] for r in rows]
    assert times == sorted(times, reverse=True)

    p = run("ckpt", "latest", str(ck))
    assert p.returncode == 0 and p.stdout.strip() == paths[2]

    # Strictly before the step-30 seal time: step 20, and 30 is explained.
    p = run("ckpt", "latest", str(ck), "--before", str(times[0]))
    assert p.returncode == 0 and p.stdout.strip() == paths[1]
    assert "skipped " + os.path.basename(paths[2]) in p.stderr
    assert "not before" in p.stderr

    # ISO 8601 works as well as ms.
    iso = rows[1]["sealed_at"]
    p = run("ckpt", "latest", str(ck), "--before", iso)
    assert p.stdout.strip() == paths[0]

    # Corrupt the newest: latest falls back and says why.
    with open(paths[2], "r+b") as f:
        f.seek(os.path.getsize(paths[2]) - 5000)
        f.write(b"\xff" * 16)
    p = run("ckpt", "latest", str(ck))
    assert p.stdout.strip() == paths[1]
    assert "corrupt" in p.stderr
    assert listing(ck)[0]["status"] == "corrupt"

    p = run("ckpt", "latest", str(ck), "--before", "1970-01-01T00:00:01Z")
    assert p.returncode == 1 and p.stdout == ""


def test_quarantine_moves_never_deletes(tmp_path, keyenv, payload):
    ck = tmp_path / "ck"
    paths = [seal(payload, ck, s) for s in (1, 2, 3)]
    t2 = listing(ck)[1]["sealed_at_ms"]
    sizes = {os.path.basename(p): os.path.getsize(p) for p in paths}
    p = run("ckpt", "quarantine", str(ck), "--incident", "inc-1", "--from", str(t2))
    assert p.returncode == 0, p.stderr
    q = ck / "quarantine" / "inc-1"
    assert sorted(os.listdir(q)) == sorted(os.path.basename(x) for x in paths[1:])
    for name in os.listdir(q):
        assert os.path.getsize(q / name) == sizes[name]
    assert [r["step"] for r in listing(ck)] == [1]
    assert run("ckpt", "latest", str(ck)).stdout.strip() == paths[0]
    assert run("ckpt", "quarantine", str(ck), "--incident", "../x", "--from", "0").returncode == 100


def test_resume_prepare(tmp_path, keyenv, payload):
    ck = tmp_path / "ck"
    paths = [seal(payload, ck, s) for s in (100, 200, 300)]
    rows = listing(ck)
    t_fault = rows[0]["sealed_at_ms"]  # the step-300 seal is at/after T
    # Corrupt step 200 (sealed before T): skipped, not quarantined.
    with open(paths[1], "r+b") as f:
        f.seek(os.path.getsize(paths[1]) - 4000)
        f.write(b"\x00\x01" * 8)
    dest = tmp_path / "state" / "restored" / "inc-9"
    p = run("ckpt", "resume-prepare", "--dir", str(ck), "--before", str(t_fault),
            "--incident", "inc-9", "--into", str(dest), "--json", "--progress=machine")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "restored"
    assert out["step"] == 100 and out["run"] == "r1"
    assert out["archive"] == paths[0]
    assert out["sealed_at_ms"] == rows[2]["sealed_at_ms"] < t_fault
    assert out["digest"].startswith("blake2b-256:") and out["digest_of"] == "manifest"
    # Checked in place: nothing copied, into DEST or anywhere else.
    assert out["dir"] == "" and out["in_place"] is True and out["compression"] == "none"
    assert out["archive_abs"] == os.path.realpath(paths[0])
    assert not dest.exists() and not (tmp_path / "state").exists()
    assert [q["archive"] for q in out["quarantined"]] == [paths[2]]
    assert out["quarantined"][0]["to"].startswith(str(ck / "quarantine" / "inc-9"))
    assert [s["archive"] for s in out["skipped"]] == [paths[1]]
    assert "corrupt" in out["skipped"][0]["reason"]
    assert os.path.exists(paths[1])  # corrupt but older than T: left in place
    assert sorted(os.listdir(ck)) == sorted([os.path.basename(paths[0]),
                                             os.path.basename(paths[1]), "quarantine",
                                             ".incident-inc-9"])
    assert "kguard-progress 0 " in p.stderr

    # Nothing before T left: status none, exit 0, DEST not created.
    dest2 = tmp_path / "state" / "restored" / "inc-10"
    p = run("ckpt", "resume-prepare", "--dir", str(ck), "--before", "1000",
            "--incident", "inc-10", "--into", str(dest2), "--json")
    assert p.returncode == 0
    out = json.loads(p.stdout)
    assert out["status"] == "none" and out["archive"] is None
    assert not dest2.exists()

    # A missing directory is simply "none"; bad usage is an error object.
    p = run("ckpt", "resume-prepare", "--dir", str(tmp_path / "nope"), "--before", "5",
            "--incident", "i", "--into", str(tmp_path / "d3"), "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "none"
    p = run("ckpt", "resume-prepare", "--dir", str(ck), "--json")
    assert p.returncode == 100 and json.loads(p.stdout)["status"] == "error"


def test_restore_refuses_existing_dest(sealed, tmp_path):
    dest = tmp_path / "exists"
    dest.mkdir()
    (dest / "keep").write_text("mine")
    assert run("ckpt", "restore", str(sealed), str(dest)).returncode == 100
    assert os.listdir(dest) == ["keep"]


def test_zstd_round_trip(tmp_path, keyenv, payload):
    ck = tmp_path / "ck"
    path = seal(payload, ck, 5, "--zstd")
    assert path.endswith(".kgckpt.tar.zst")
    assert run("ckpt", "verify", path).returncode == 0
    dest = tmp_path / "out"
    assert run("ckpt", "restore", path, str(dest)).returncode == 0
    assert (dest / "state.pt").read_bytes() == (payload / "state.pt").read_bytes()


def test_resume_prepare_zstd_copies_beside_the_archives(tmp_path, keyenv, payload):
    """A zstd checkpoint cannot be read in place: it is restored into
    CKPT_DIR/.restored-ID (not into --into, the home state directory), and
    the copy goes once a newer checkpoint is sealed."""
    ck = tmp_path / "ck"
    path = seal(payload, ck, 5, "--zstd")
    t_fault = listing(ck)[0]["sealed_at_ms"] + 1
    into = tmp_path / "state" / "restored" / "z1"
    p = run("ckpt", "resume-prepare", "--dir", str(ck), "--before", str(t_fault),
            "--incident", "z1", "--into", str(into), "--json")
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["status"] == "restored" and out["archive"] == path
    assert out["dir"] == str(ck / ".restored-z1") and out["in_place"] is False
    assert (ck / ".restored-z1" / "state.pt").read_bytes() == (payload / "state.pt").read_bytes()
    assert not (tmp_path / "state").exists()
    assert [r["status"] for r in listing(ck)] == ["valid"]  # the copy is no checkpoint
    # A background seal of a state captured before the fault keeps the copy...
    seal(payload, ck, 6, "--time", str(t_fault - 1))
    assert (ck / ".restored-z1" / "state.pt").exists()
    # ...a checkpoint sealed after it means the run moved on.
    seal(payload, ck, 7)
    assert not (ck / ".restored-z1").exists()


def wait_for(cond, deadline_s, what):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.001)  # polling interval, not synchronisation
    raise AssertionError("timed out waiting for " + what)


def test_sigkill_mid_seal_leaves_no_final_file(tmp_path, keyenv, payload):
    ck = tmp_path / "ck"
    good = seal(payload, ck, 1)
    big = tmp_path / "big"
    big.mkdir()
    for i in range(4):
        with open(big / f"part{i}.bin", "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(96):
                f.write(block)
    proc = subprocess.Popen([BIN, "ckpt", "seal", str(big), "--step", "2", "--into", str(ck)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def temp_grown():
        for name in os.listdir(ck):
            if name.startswith(".") and ".tmp-" in name:
                try:
                    if os.path.getsize(ck / name) > (8 << 20):
                        return name
                except FileNotFoundError:
                    pass
        assert proc.poll() is None, "seal finished before it could be interrupted"
        return None

    tmpname = wait_for(temp_grown, 60, "the temporary archive to grow")
    proc.kill()
    proc.wait()
    names = os.listdir(ck)
    assert tmpname in names
    finals = [n for n in names if not n.startswith(".")]
    assert finals == [os.path.basename(good)]
    p = run("ckpt", "latest", str(ck))
    assert p.returncode == 0 and p.stdout.strip() == good
    rows = listing(ck)
    assert [r["status"] for r in rows].count("leftover") == 1
    assert [r["step"] for r in rows if r["status"] == "valid"] == [1]

    # The killed writer's lock is gone with it: gc removes its temporary,
    # never a sealed archive.
    p = run("ckpt", "gc", str(ck), check=True)
    assert p.stdout.startswith("removed 1 ")
    assert os.listdir(ck) == [os.path.basename(good)]


def test_gc_keeps_what_a_live_writer_holds(tmp_path, keyenv, payload):
    """A temporary (or kguard.save staging directory) whose writer still
    holds its lock is kept by gc and by a later seal; once the lock is free
    it is removed."""
    ck = tmp_path / "ck"
    good = seal(payload, ck, 1)
    tmp = ck / ".step-0000000002-20260101T000000000Z.kgckpt.tar.tmp-abcdef"
    tmp.write_bytes(b"x" * 4096)
    stage = ck / ".kguard-save-abc123"
    stage.mkdir()
    (stage / "state.pt").write_bytes(b"y" * 100)
    f = os.open(tmp, os.O_RDONLY)
    d = os.open(stage, os.O_RDONLY)
    fcntl.flock(f, fcntl.LOCK_EX)
    fcntl.flock(d, fcntl.LOCK_EX)
    try:
        p = run("ckpt", "gc", str(ck), check=True)
        assert "removed 0 " in p.stdout and "2 still being written" in p.stdout
        later = seal(payload, ck, 3)  # a later seal collects too, but not these
        assert tmp.exists() and stage.exists()
    finally:
        os.close(f)
        os.close(d)
    later2 = seal(payload, ck, 4)
    assert sorted(os.listdir(ck)) == sorted(os.path.basename(x) for x in (good, later, later2))


def test_ckpt_commands_find_their_helper(tmp_path, keyenv, payload):
    """`kguard ckpt`/`keygen` exec kguard-ckpt: beside kguard (build tree) or
    in ../libexec/kguard (installed); without it, a clear error naming it."""
    helper = os.path.join(os.path.dirname(os.path.realpath(BIN)), "kguard-ckpt")
    installed = tmp_path / "prefix"
    (installed / "bin").mkdir(parents=True)
    (installed / "libexec" / "kguard").mkdir(parents=True)
    shutil.copy2(os.path.realpath(BIN), installed / "bin" / "kguard")
    shutil.copy2(helper, installed / "libexec" / "kguard" / "kguard-ckpt")
    p = subprocess.run([str(installed / "bin" / "kguard"), "ckpt", "seal", str(payload),
                        "--step", "3", "-o", str(tmp_path / "a.tar")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([str(installed / "bin" / "kguard"), "ckpt", "verify", str(tmp_path / "a.tar")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr

    os.unlink(installed / "libexec" / "kguard" / "kguard-ckpt")
    fresh = tmp_path / "fresh-keys"
    p = subprocess.run([str(installed / "bin" / "kguard"), "keygen"], capture_output=True,
                       text=True, timeout=60, env={**os.environ, "KGUARD_KEY_DIR": str(fresh)})
    assert p.returncode == 111
    assert "kguard-ckpt" in p.stderr and "libexec/kguard" in p.stderr
    assert not fresh.exists()   # nothing was done without the helper


def test_keep_prunes_after_a_newer_one_verified(tmp_path, keyenv, payload):
    """seal --keep 2 prunes older checkpoints once a newer one verified;
    the checkpoint an open incident restored, keep-every multiples,
    quarantine and unauthenticated files survive; --resolve closes."""
    ck = tmp_path / "ck"
    p10 = seal(payload, ck, 10)
    p20 = seal(payload, ck, 20)
    t_fault = listing(ck)[0]["sealed_at_ms"]  # step 20 at/after the fault
    p = run("ckpt", "resume-prepare", "--dir", str(ck), "--before", str(t_fault),
            "--incident", "inc-1", "--into", str(tmp_path / "x"), "--json")
    assert json.loads(p.stdout)["archive"] == p10
    stray = ck / "step-0000000001-20200101T000000000Z.kgckpt.tar"
    stray.write_bytes(b"not an archive")
    later = [seal(payload, ck, s, "--keep", "2", "--keep-every", "100") for s in (30, 100, 40, 50)]
    names = set(os.listdir(ck))
    # Kept: newest two (50, 40), the keep-every multiple (100), the open
    # incident's restore (10), the stray file; 30 is gone.
    assert os.path.basename(later[-1]) in names and os.path.basename(later[-2]) in names
    assert os.path.basename(later[1]) in names and os.path.basename(p10) in names
    assert stray.name in names and os.path.basename(later[0]) not in names
    assert os.listdir(ck / "quarantine" / "inc-1") == [os.path.basename(p20)]
    # Closing the incident lets its checkpoint go at the next prune.
    assert run("ckpt", "prune", str(ck), "--resolve", "inc-1").returncode == 0
    p = run("ckpt", "prune", str(ck), "--keep", "2", "--keep-every", "100", check=True)
    assert "removed " in p.stdout and os.path.basename(p10) in p.stdout
    assert not os.path.exists(p10)
    # Corrupt the newest: nothing newer than the newest valid one goes,
    # and the rest is judged from the valid one down.
    with open(later[-1], "r+b") as f:
        f.seek(os.path.getsize(later[-1]) - 3000)
        f.write(b"\xff" * 8)
    p = run("ckpt", "prune", str(ck), "--keep", "1", check=True)
    assert os.path.exists(later[-1]) and os.path.exists(later[-2])
    assert run("ckpt", "prune", str(ck)).returncode == 100


def test_resume_prepare_says_failed_when_a_verified_checkpoint_cannot_be_restored(
        tmp_path, keyenv):
    """A zstd checkpoint whose copy does not fit (a 4 MiB tmpfs): status
    "failed" with the reason, exit 111, nothing partial left; never "none"."""
    ck = tmp_path / "ck"
    ck.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(ck)],
                      capture_output=True).returncode != 0:
        import pytest
        pytest.skip("needs root to mount a small tmpfs")
    try:
        src = tmp_path / "src"
        src.mkdir()
        (src / "state.pt").write_bytes(b"\0" * (16 << 20))  # compresses to almost nothing
        path = seal(src, ck, 3, "--zstd")
        p = run("ckpt", "resume-prepare", "--dir", str(ck), "--before", "99999999999999",
                "--incident", "full1", "--into", str(tmp_path / "x"), "--json")
        out = json.loads(p.stdout)
        assert p.returncode == 111 and out["status"] == "failed", p.stdout
        assert path in out["error"] and "No space left" in out["error"]
        assert out["archive"] is None and out["dir"] is None
        assert sorted(os.listdir(ck)) == sorted([os.path.basename(path), ".incident-full1"])
    finally:
        subprocess.run(["umount", str(ck)], check=True)
