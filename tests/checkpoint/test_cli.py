"""CLI behaviour: list ordering, latest --before, quarantine, resume-prepare
JSON, --help, and a SIGKILL in the middle of sealing."""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

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


def test_keygen_keeps_an_existing_key_and_says_where(keyenv):
    """The README's "once per user" step succeeds after any seal made the
    key: the key is kept (never replaced without --force) and named."""
    first = run("keygen")
    assert first.returncode == 0
    assert (keyenv / "ckpt-ed25519.secret").stat().st_mode & 0o777 == 0o600
    assert keyenv.stat().st_mode & 0o777 == 0o700
    secret = (keyenv / "ckpt-ed25519.secret").read_bytes()
    again = run("keygen")
    assert again.returncode == 0, again.stderr
    key_id = first.stdout.split()[1]
    assert again.stdout.startswith(f"key {key_id} in {keyenv}") and "already there" in again.stdout
    assert (keyenv / "ckpt-ed25519.secret").read_bytes() == secret
    forced = run("keygen", "--force")
    assert forced.returncode == 0 and forced.stdout.split()[1] != key_id
    assert (keyenv / "ckpt-ed25519.secret").read_bytes() != secret


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
    p = run("ckpt", "resume-prepare", "--run", "r1", "--dir", str(ck), "--before", str(t_fault),
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
    p = run("ckpt", "resume-prepare", "--run", "r1", "--dir", str(ck), "--before", "1000",
            "--incident", "inc-10", "--into", str(dest2), "--json")
    assert p.returncode == 0
    out = json.loads(p.stdout)
    assert out["status"] == "none" and out["archive"] is None
    assert not dest2.exists()

    # A missing directory is simply "none"; bad usage is an error object.
    p = run("ckpt", "resume-prepare", "--run", "r1", "--dir", str(tmp_path / "nope"), "--before", "5",
            "--incident", "i", "--into", str(tmp_path / "d3"), "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "none"
    p = run("ckpt", "resume-prepare", "--run", "r1", "--dir", str(ck), "--json")
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
    p = run("ckpt", "resume-prepare", "--run", "r1", "--dir", str(ck), "--before", str(t_fault),
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
    p = run("ckpt", "resume-prepare", "--run", "r1", "--dir", str(ck), "--before", str(t_fault),
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
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(ck)],
                      capture_output=True).returncode != 0:
        import pytest
        pytest.skip("needs root to mount a small tmpfs")
    try:
        src = tmp_path / "src"
        src.mkdir()
        (src / "state.pt").write_bytes(b"\0" * (16 << 20))  # compresses to almost nothing
        path = seal(src, ck, 3, "--zstd")
        p = run("ckpt", "resume-prepare", "--run", "r1", "--dir", str(ck), "--before", "99999999999999",
                "--incident", "full1", "--into", str(tmp_path / "x"), "--json")
        out = json.loads(p.stdout)
        assert p.returncode == 111 and out["status"] == "failed", p.stdout
        assert path in out["error"] and "No space left" in out["error"]
        assert out["archive"] is None and out["dir"] is None
        assert sorted(os.listdir(ck)) == sorted([os.path.basename(path), ".incident-full1"])
    finally:
        subprocess.run(["umount", str(ck)], check=True)


def test_resume_prepare_takes_only_the_run_being_resumed(tmp_path, keyenv, payload):
    """An archive of the same user's other experiment copied into run A's
    directory, newer than run A's: never chosen for run A (it was, and
    reported as verified), never quarantined for it, and the record says
    why it was passed over."""
    ck = tmp_path / "ck"
    a100 = run("ckpt", "seal", str(payload), "--step", "100", "--run", "projA", "--into",
               str(ck), check=True).stdout.strip()
    b900 = run("ckpt", "seal", str(payload), "--step", "900", "--run", "projB", "--into",
               str(ck), check=True).stdout.strip()
    t_fault = max(r["sealed_at_ms"] for r in listing(ck)) + 1
    b_late = run("ckpt", "seal", str(payload), "--step", "901", "--run", "projB", "--into",
                 str(ck), "--time", str(t_fault + 10), check=True).stdout.strip()
    env = dict(os.environ, KGUARD_RUN_ID="projA")  # what the kernel started with
    p = subprocess.run([BIN, "ckpt", "resume-prepare", "--dir", str(ck), "--before",
                        str(t_fault), "--incident", "runs1", "--into", str(tmp_path / "x"),
                        "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["status"] == "restored", p.stdout
    assert out["archive"] == a100 and out["step"] == 100 and out["run"] == "projA"
    assert out["resumed_run"] == "projA"
    why = {s["archive"]: s["reason"] for s in out["skipped"]}
    assert "run 'projB', not the run being resumed ('projA')" in why[b900]
    assert out["quarantined"] == [] and os.path.exists(b_late)  # another run's: left alone
    # --run names the run explicitly (kguard exec passes its --name).
    p = run("ckpt", "resume-prepare", "--run", "projB", "--dir", str(ck), "--before",
            str(t_fault), "--incident", "runs2", "--into", str(tmp_path / "y"), "--json")
    out = json.loads(p.stdout)
    assert out["archive"] == b900 and out["resumed_run"] == "projB"
    assert [q["archive"] for q in out["quarantined"]] == [b_late]


def test_one_rule_for_missing_paths(tmp_path, keyenv, sealed):
    """A typo gets the same answer from every ckpt command: exit 100 and
    one line naming the path once (it was 0, 1, 111 or 'system failure')."""
    missing = str(tmp_path / "nosuch")
    cases = {
        "gc": ["gc", missing], "prune": ["prune", missing, "--keep", "2"],
        "latest": ["latest", missing], "list": ["list", missing],
        "seal": ["seal", missing, "--step", "1", "--into", str(tmp_path / "ck")],
        "verify": ["verify", missing], "restore": ["restore", missing, str(tmp_path / "out")],
        "quarantine": ["quarantine", missing, "--incident", "i", "--from", "0"],
        "manifest": ["manifest", missing],
    }
    for name, argv in cases.items():
        p = run("ckpt", *argv)
        assert p.returncode == 100, (name, p.returncode, p.stdout, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"kguard ckpt {name}: no such "), (name,
                                                                                        lines)
        assert lines[0].count(missing) == 1, lines
    assert not (tmp_path / "ck").exists() and not (tmp_path / "out").exists()
    # A file where a directory is needed, and the other way round.
    p = run("ckpt", "list", str(sealed))
    assert p.returncode == 100 and "not a directory" in p.stderr
    p = run("ckpt", "verify", str(tmp_path))
    assert p.returncode == 100 and "a directory, not a file" in p.stderr
    # verify with a good file and a typo: the good one is still checked.
    p = run("ckpt", "verify", str(sealed), missing)
    assert p.returncode == 100 and f"{sealed}: valid" in p.stdout


def test_restore_refuses_a_missing_parent(tmp_path, sealed):
    """`restore a.tar typo/deeper/dest` created every missing parent (once a
    directory at the filesystem's root): now refused, as tar -C and cp do."""
    dest = tmp_path / "typo" / "deeper" / "dest"
    p = run("ckpt", "restore", str(sealed), str(dest))
    assert p.returncode == 100, p.stdout + p.stderr
    assert f"'{tmp_path / 'typo' / 'deeper'}' does not exist" in p.stderr
    assert not (tmp_path / "typo").exists()
    (tmp_path / "typo" / "deeper").mkdir(parents=True)
    assert run("ckpt", "restore", str(sealed), str(dest)).returncode == 0
    # --read-only and --digest: what kguard.resume()'s r.dir asks for.
    manifest = json.loads(run("ckpt", "manifest", str(sealed), check=True).stdout)
    ro = tmp_path / "ro"
    p = run("ckpt", "restore", "--read-only", "--digest", "0" * 64, str(sealed), str(ro))
    assert p.returncode == 2 and "not the expected" in p.stderr and not ro.exists()
    p = run("ckpt", "restore", "--read-only", "--digest", manifest["manifest_digest"],
            str(sealed), str(ro))
    assert p.returncode == 0, p.stderr
    assert (ro / "state.pt").stat().st_mode & 0o777 == 0o400
    assert ro.stat().st_mode & 0o777 == 0o500


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another user")
def test_permission_errors_name_the_path(tmp_path):
    """`kguard keygen: Permission denied` said nothing of where."""
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o755)
    nobody = 65534
    for argv, path in ((["keygen"], str(locked / "keys")),
                       (["ckpt", "list", str(locked / "ck")], str(locked / "ck"))):
        env = {"PATH": "/usr/bin:/bin", "KGUARD_KEY_DIR": str(locked / "keys")}
        p = subprocess.run([BIN, *argv], env=env, user=nobody, group=nobody, extra_groups=[],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        assert p.returncode in (100, 111), (argv, p.returncode, p.stderr)
        assert str(locked) in p.stderr, (argv, p.stderr)
        assert "Permission denied" in p.stderr, (argv, p.stderr)


def test_snapshot_seal_persist_and_resume_from_memory(tmp_path, keyenv, payload):
    """seal --snapshot keeps one complete snapshot in the memory directory,
    --persist-into copies each onto disk (second stdout line), a failed copy
    exits 111 with the snapshot sealed, and resume-prepare --memory restores
    the snapshot, newer than anything on disk, saying its tier."""
    mem, disk = tmp_path / "mem", tmp_path / "disk"
    gone = run("ckpt", "seal", str(payload), "--step", "1", "--into", str(mem), "--snapshot")
    assert gone.returncode == 100 and f"no such directory: {mem}" in gone.stderr, gone.stderr
    assert not mem.exists()                      # never made by a seal: its owner's (kguard's)
    mem.mkdir()
    t0 = 1700000000000
    out = []
    for step in (1, 2, 3):
        p = run("ckpt", "seal", str(payload), "--step", str(step), "--run", "r1", "--into",
                str(mem), "--time", str(t0 + step * 1000), "--snapshot", "--persist-into",
                str(disk), "--persist-keep", "2", check=True)
        out.append(p.stdout.splitlines())
    assert [l[1] for l in out] == ["persisted: %s" % (disk / os.path.basename(l[0]))
                                   for l in out]
    assert sorted(os.listdir(mem)) == [os.path.basename(out[2][0])]
    assert len(os.listdir(disk)) == 2
    assert run("ckpt", "seal", str(payload), "--step", "4", "--into", str(mem), "--snapshot",
               "--zstd").returncode == 100
    (tmp_path / "file").write_text("x")
    p = run("ckpt", "seal", str(payload), "--step", "4", "--run", "r1", "--into", str(mem),
            "--time", str(t0 + 4000), "--snapshot", "--persist-into", str(tmp_path / "file"))
    assert p.returncode == 111 and "is sealed in memory" in p.stderr
    snap4 = p.stdout.splitlines()[0]
    assert os.path.exists(snap4) and len(p.stdout.splitlines()) == 1
    p = run("ckpt", "resume-prepare", "--run", "r1", "--dir", str(disk), "--memory", str(mem),
            "--before", str(t0 + 10000), "--incident", "i1", "--into", str(tmp_path / "d"),
            "--json")
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert (res["status"], res["tier"], res["archive"]) == ("restored", "memory", snap4)
    assert res["memory_dir"] == str(mem) and res["skipped"] == []


def test_latest_memory_chooses_a_newer_snapshot_without_reading_the_disk(tmp_path, keyenv,
                                                                          payload):
    """latest --memory makes resume-prepare --memory's choice, moving
    nothing: a newer snapshot wins and the disk's newest archive (corrupt)
    is neither verified nor reported; a snapshot sealed at or after
    --before stays where it is; a missing MEMDIR holds none."""
    mem, disk = tmp_path / "mem", tmp_path / "disk"
    mem.mkdir()
    t0 = 1700000000000
    d1 = seal(payload, disk, 1, "--time", str(t0 + 1000))
    d2 = seal(payload, disk, 2, "--time", str(t0 + 2000))
    m3 = seal(payload, mem, 3, "--time", str(t0 + 3000), "--snapshot")
    with open(d2, "r+b") as f:
        f.seek(os.path.getsize(d2) - 5000)
        f.write(b"\xff" * 16)
    p = run("ckpt", "latest", str(disk), "--memory", str(mem), "--json", "--run", "r1")
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert (res["status"], res["tier"], res["archive"]) == ("restored", "memory", m3)
    assert res["memory_dir"] == str(mem) and res["skipped"] == []
    p = run("ckpt", "latest", str(disk), "--memory", str(mem), "--json", "--run", "r1",
            "--before", str(t0 + 3000))
    res = json.loads(p.stdout)
    assert (res["tier"], res["archive"]) == ("disk", d1), res
    assert [(s["archive"], s["tier"]) for s in res["skipped"]] == [(m3, "memory"), (d2, "disk")]
    assert "corrupt" in res["skipped"][1]["reason"] and "quarantined" not in res
    assert os.listdir(mem) == [os.path.basename(m3)]
    gone = tmp_path / "gone"
    p = run("ckpt", "latest", str(disk), "--memory", str(gone), "--json", "--run", "r1")
    res = json.loads(p.stdout)
    assert (res["tier"], res["archive"]) == ("disk", d1) and not gone.exists()
    p = run("ckpt", "latest", str(disk), "--memory", str(mem))
    assert p.returncode == 100 and "add --json" in p.stderr
