"""Retention (kguard.save(keep=N), KGUARD_KEEP) and the in-notebook resume
(kguard.resume(latest=True)), through the real binary: what an open
incident or a reader in progress needs is never removed, a full disk is a
clear error that leaves earlier archives valid, and a fresh process picks
the last consistent checkpoint of its own run, naming what it skipped."""
import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

SRC = os.environ.get("KGUARD_SOURCE_DIR", "../..")
sys.path.insert(0, os.path.join(SRC, "python"))
import torch  # noqa: E402

import kguard  # noqa: E402
from conftest import BIN, run  # noqa: E402


@pytest.fixture
def ckenv(tmp_path, monkeypatch, keyenv):
    monkeypatch.setenv("KGUARD_CKPT_DIR", str(tmp_path / "ck"))
    monkeypatch.setenv("KGUARD_RUN_ID", "nb")
    monkeypatch.setenv("KGUARD_STATE_DIR", str(tmp_path / "state"))
    for k in ("KGUARD_RESUME_DIR", "KGUARD_RESUME_STEP", "KGUARD_RESUME_ARCHIVE",
              "KGUARD_RESUME_DIGEST", "KGUARD_EMULATE", "KGUARD_CKPT_LAYOUT", "RANK",
              "KGUARD_RANK", "WORLD_SIZE", "KGUARD_KEEP", "KGUARD_TRUSTED_KEYS_DIR",
              "KGUARD_HANDOVER_FILE"):
        monkeypatch.delenv(k, raising=False)
    return tmp_path


def archives(d):
    return sorted(n for n in os.listdir(d) if n.endswith(".kgckpt.tar"))


def steps(d):
    return [int(n.split("-")[1]) for n in archives(d)]


def test_keep_n_keeps_the_newest_and_what_an_open_incident_restored(ckenv):
    ck = ckenv / "ck"
    for s in (1, 2):
        kguard.save({"s": s}, s)
    # A fault now; its incident restored step 2 (the marker resume-prepare writes).
    fault_ms = int(time.time() * 1000)
    step2 = [n for n in archives(ck) if "step-0000000002" in n][0]
    (ck / ".incident-i1").write_text(f"{fault_ms} {step2}\n")
    kguard.save({"s": 3}, 3)
    for s in (4, 5, 6):
        kguard.save({"s": s}, s, keep=2)
    assert steps(ck) == [2, 5, 6]
    # Resolved: the next save lets it go.
    run("ckpt", "prune", str(ck), "--resolve", "i1", check=True)
    kguard.save({"s": 7}, 7, keep=2)
    assert steps(ck) == [6, 7]


def test_keep_counts_only_this_run(ckenv, monkeypatch):
    ck = ckenv / "ck"
    monkeypatch.setenv("KGUARD_RUN_ID", "other")
    kguard.save({"s": 1}, 1)
    monkeypatch.setenv("KGUARD_RUN_ID", "nb")
    for s in (2, 3, 4):
        kguard.save({"s": s}, s, keep=1)
    assert steps(ck) == [1, 4]


def test_keep_defaults_to_kguard_keep(ckenv, monkeypatch):
    ck = ckenv / "ck"
    monkeypatch.setenv("KGUARD_KEEP", "2")
    for s in range(1, 5):
        kguard.save({"s": s}, s)
    assert steps(ck) == [3, 4]
    kguard.save({"s": 5}, 5, keep=3)        # an explicit keep wins
    assert steps(ck) == [3, 4, 5]


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_kguard_keep_names_the_variable(ckenv, monkeypatch, value):
    monkeypatch.setenv("KGUARD_KEEP", value)
    with pytest.raises(ValueError, match="KGUARD_KEEP"):
        kguard.save({"s": 1}, 1)
    assert not (ckenv / "ck").exists() or not archives(ckenv / "ck")
    with pytest.raises(ValueError, match="keep"):
        kguard.save({"s": 1}, 1, keep=0)


def test_background_seals_prune_after_their_seal(ckenv):
    ck = ckenv / "ck"
    pending = [kguard.save({"s": s}, s, background=True, keep=2) for s in range(1, 5)]
    for p in pending:
        p.wait(60)
    assert steps(ck) == [3, 4]


READER = r"""
import sys, kguard
r = kguard.resume()
f = r.open("state.pt")
f.read(10)
print("reading", flush=True)
sys.stdin.readline()
f.close()
print("closed", flush=True)
"""


def test_a_reader_in_progress_keeps_its_archive(ckenv, monkeypatch):
    ck = ckenv / "ck"
    first = kguard.save({"w": torch.arange(1000.0)}, 1)
    env = dict(os.environ, KGUARD_RESUME_ARCHIVE=first, KGUARD_RESUME_STEP="1",
               PYTHONPATH=os.path.join(SRC, "python"))
    reader = subprocess.Popen([sys.executable, "-c", READER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert reader.stdout.readline().strip() == "reading"
        for s in (2, 3):
            kguard.save({"s": s}, s, keep=1)
        assert os.path.exists(first), "an archive being read was removed"
        assert steps(ck) == [1, 3]
        p = run("ckpt", "prune", str(ck), "--keep", "1", check=True)
        assert "being read" in p.stdout and os.path.exists(first)
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == "closed"
    finally:
        reader.stdin.close()
        reader.wait(30)
    assert reader.returncode == 0
    run("ckpt", "prune", str(ck), "--keep", "1", check=True)
    assert steps(ck) == [3]


def test_a_restore_in_progress_keeps_its_archive(ckenv, monkeypatch):
    ck = ckenv / "ck"
    first = kguard.save({"w": torch.zeros(200_000)}, 1)   # ~800 kB
    kguard.save({"s": 2}, 2)
    env = dict(os.environ, KGUARD_TEST_READ_BPS="400000")   # about two seconds
    restore = subprocess.Popen([BIN, "ckpt", "restore", first, str(ckenv / "out")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    try:
        # Wait until the restore holds its reader's lock (the condition itself).
        deadline = time.monotonic() + 20
        fd = os.open(first, os.O_RDONLY)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                except BlockingIOError:
                    break
                assert restore.poll() is None and time.monotonic() < deadline
        finally:
            os.close(fd)
        p = run("ckpt", "prune", str(ck), "--keep", "1", check=True)
        assert "being read" in p.stdout and os.path.exists(first)
    finally:
        out, err = restore.communicate(timeout=60)
    assert restore.returncode == 0, err
    assert (ckenv / "out" / "state.pt").exists()


@contextlib.contextmanager
def small_tmpfs(size):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    d = tempfile.mkdtemp(prefix="kg-enospc-")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d],
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        os.rmdir(d)
        pytest.skip(f"cannot mount a tmpfs: {p.stderr.strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", d], check=True)
        os.rmdir(d)


def test_a_full_disk_is_named_and_earlier_archives_stay_valid(ckenv, monkeypatch):
    with small_tmpfs("6m") as d:
        monkeypatch.setenv("KGUARD_CKPT_DIR", d)
        with pytest.raises(RuntimeError) as info:
            for s in range(1, 20):
                kguard.save({"w": torch.rand(400_000)}, s)   # 1.6 MB each
        msg = str(info.value)
        assert d in msg and "no space left" in msg.lower(), msg
        left = os.listdir(d)
        assert left and all(n.endswith(".kgckpt.tar") for n in left), left
        for n in left:
            run("ckpt", "verify", os.path.join(d, n), check=True)


def test_keep_lets_a_small_disk_hold_a_long_run(ckenv, monkeypatch):
    with small_tmpfs("6m") as d:
        monkeypatch.setenv("KGUARD_CKPT_DIR", d)
        for s in range(1, 11):   # 1 MB each: two kept, the new one and its staging fit
            kguard.save({"w": torch.rand(250_000)}, s, keep=2)
        assert steps(d) == [9, 10]


FRESH = r"""
import json, sys, kguard
r = kguard.resume(latest=True)
print(json.dumps(None if r is None else
                 {"step": r.step, "w": r.load()["w"].tolist(), "skipped": r.skipped}))
"""


def fresh_resume(env):
    p = subprocess.run([sys.executable, "-c", FRESH], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120,
                       env=dict(env, PYTHONPATH=os.path.join(SRC, "python")))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), p.stderr


def seal_step(ckenv, step, t_ms, run_id="nb", key_dir=None):
    d = ckenv / f"payload-{step}"
    d.mkdir()
    torch.save({"w": torch.full((3,), float(step))}, d / "state.pt")
    env = dict(os.environ, KGUARD_KEY_DIR=key_dir) if key_dir else None
    p = run("ckpt", "seal", str(d), "--step", str(step), "--run", run_id, "--into",
            str(ckenv / "ck"), "--time", str(t_ms), env=env, check=True)
    return p.stdout.strip()


def test_resume_latest_in_a_fresh_process_skips_and_names(ckenv):
    t = int(time.time() * 1000) - 60_000
    seal_step(ckenv, 10, t)
    seal_step(ckenv, 20, t + 1000, run_id="other")
    seal_step(ckenv, 30, t + 2000, key_dir=str(ckenv / "stranger"))
    tampered = seal_step(ckenv, 40, t + 3000)
    with open(tampered, "r+b") as f:       # one payload byte near the end
        f.seek(-2000, os.SEEK_END)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0xFF]))
    got, err = fresh_resume(os.environ)
    assert got["step"] == 10 and got["w"] == [10.0] * 3, err
    reasons = {os.path.basename(a).split("-")[1]: r for a, r in got["skipped"]}
    assert "corrupt" in reasons["0000000040"]
    assert "do not trust" in reasons["0000000030"]
    assert "run 'other'" in reasons["0000000020"]
    assert "resuming run nb from step 10" in err
    assert "skipped step-0000000030" in err and "do not trust" in err
    # Another run's process resumes its own checkpoint only.
    got, _ = fresh_resume(dict(os.environ, KGUARD_RUN_ID="other"))
    assert got["step"] == 20
    # Nothing was moved or marked by choosing.
    assert len(archives(ckenv / "ck")) == 4
    assert not [n for n in os.listdir(ckenv / "ck") if n.startswith(".incident-")]


def test_resume_latest_with_nothing_to_resume_is_none(ckenv):
    got, err = fresh_resume(os.environ)
    assert got is None and "starting fresh" in err
    seal_step(ckenv, 5, int(time.time() * 1000), run_id="other")
    got, err = fresh_resume(os.environ)
    assert got is None and "run 'other'" in err


def test_resume_latest_prefers_what_kguard_restored(ckenv, monkeypatch):
    old = kguard.save({"w": torch.ones(3)}, 1)
    kguard.save({"w": torch.zeros(3)}, 2)
    env = dict(os.environ, KGUARD_RESUME_ARCHIVE=old, KGUARD_RESUME_STEP="1")
    got, _ = fresh_resume(env)
    assert got["step"] == 1
