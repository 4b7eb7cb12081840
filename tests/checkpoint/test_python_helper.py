"""kguard.save / kguard.resume through the real binary, and check_targets."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.environ.get("KGUARD_SOURCE_DIR", "../.."), "python"))
import torch  # noqa: E402

import kguard  # noqa: E402
from kguard import checkpoint as kc  # noqa: E402
from kguard.archive import CheckpointError  # noqa: E402
from conftest import run  # noqa: E402


@pytest.fixture
def ckenv(tmp_path, monkeypatch, keyenv):
    monkeypatch.setenv("KGUARD_CKPT_DIR", str(tmp_path / "ck"))
    monkeypatch.setenv("KGUARD_RUN_ID", "run-py")
    monkeypatch.setenv("KGUARD_STATE_DIR", str(tmp_path / "state"))
    for k in ("KGUARD_RESUME_DIR", "KGUARD_RESUME_STEP", "KGUARD_RESUME_ARCHIVE",
              "KGUARD_RESUME_DIGEST", "KGUARD_EMULATE", "KGUARD_CKPT_LAYOUT", "RANK",
              "KGUARD_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    return tmp_path


def test_save_then_resume_round_trip(ckenv, monkeypatch):
    state = {"w": torch.arange(12.0).reshape(3, 4), "step": 41}
    path = kguard.save(state, 41)
    assert os.path.isfile(path) and path.endswith(".kgckpt.tar")
    assert run("ckpt", "verify", path).returncode == 0
    # No temporary directory left behind next to the archive.
    assert os.listdir(ckenv / "ck") == [os.path.basename(path)]
    assert kguard.resume() is None

    dest = ckenv / "restored"
    p = run("ckpt", "resume-prepare", "--dir", str(ckenv / "ck"), "--before", "99999999999999",
            "--incident", "t1", "--into", str(dest), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["dir"] == "" and not dest.exists()
    # What the supervisor hands the next kernel: the archive, no directory.
    monkeypatch.setenv("KGUARD_RESUME_STEP", "41")
    monkeypatch.setenv("KGUARD_RESUME_ARCHIVE", out["archive"])
    monkeypatch.setenv("KGUARD_RESUME_DIGEST", out["digest"])
    r = kguard.resume()
    assert r.step == 41 and r.archive == path
    loaded = r.load()
    assert loaded["step"] == 41 and torch.equal(loaded["w"], state["w"])
    assert sorted(os.listdir(ckenv / "ck")) == [".incident-t1", os.path.basename(path)]
    assert not (ckenv / "state").exists()  # read in place: no copy anywhere

    # A manifest other than the one kguard verified is refused.
    monkeypatch.setenv("KGUARD_RESUME_DIGEST", "blake2b-256:" + "0" * 64)
    with pytest.raises(CheckpointError, match="replaced"):
        kguard.resume().load()

    # The older contract (a restored directory) still loads, checked
    # against the archive's signed digests as it is read.
    monkeypatch.setenv("KGUARD_RESUME_DIGEST", out["digest"])
    assert run("ckpt", "restore", path, str(dest)).returncode == 0
    monkeypatch.setenv("KGUARD_RESUME_DIR", str(dest))
    r = kguard.resume()
    assert r.dir == str(dest) and torch.equal(r.load()["w"], state["w"])


def _collect_once(monkeypatch, where):
    """Another rank's seal collects staging directories whose lock is free
    (kg_ckpt_gc): emulate it removing ours once, in the window `where`."""
    done = []
    real_mkdtemp, real_flock = kc.tempfile.mkdtemp, kc.fcntl.flock

    def mkdtemp(*a, **kw):
        d = real_mkdtemp(*a, **kw)
        if where == "before-open" and not done:
            done.append(d)
            os.rmdir(d)
        return d

    def flock(fd, op):
        if where == "before-lock" and not done:
            d = os.readlink(f"/proc/self/fd/{fd}")
            done.append(d)
            os.rmdir(d)
        return real_flock(fd, op)

    monkeypatch.setattr(kc.tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(kc.fcntl, "flock", flock)
    return done


@pytest.mark.parametrize("where", ["before-open", "before-lock"])
def test_save_survives_a_collector_between_staging_and_lock(ckenv, monkeypatch, where):
    # Two ranks saving into one directory: one rank's seal removed the other's
    # fresh staging directory before its lock was taken; the save died with
    # FileNotFoundError (the bench's unexplained exit 1). Now it takes a new one.
    done = _collect_once(monkeypatch, where)
    path = kguard.save({"w": torch.ones(3), "step": 7}, 7)
    assert done, "the emulated collector never ran"
    assert run("ckpt", "verify", path).returncode == 0
    assert os.listdir(ckenv / "ck") == [os.path.basename(path)]


def test_failed_device_sync_is_never_sealed(ckenv, monkeypatch):
    def boom(torch_mod):
        raise RuntimeError("CUDA error: device-side assert triggered")
    monkeypatch.setattr(kc, "_synchronize", boom)
    with pytest.raises(RuntimeError, match="device-side assert"):
        kguard.save({"x": 1}, 3)
    assert os.listdir(ckenv / "ck") == []


def test_seal_failure_is_reported(ckenv, monkeypatch):
    monkeypatch.setenv("KGUARD_BIN", "/bin/false")
    with pytest.raises(RuntimeError, match="seal failed"):
        kguard.save({"x": 1}, 3)
    assert os.listdir(ckenv / "ck") == []


def test_check_targets_seed_example():
    with pytest.raises(ValueError, match=r"target 4 out of range \[0, 4\) at index 2"):
        kguard.check_targets(torch.tensor([0, 2, 4]), 4)
    with pytest.raises(ValueError, match="target -1 out of range"):
        kguard.check_targets(torch.tensor([-1, 0]), 4)


def test_check_targets_valid_pass():
    t = torch.tensor([0, 1, 2, 3])
    assert kguard.check_targets(t, 4) is t
    kguard.check_targets(torch.tensor([0, -100, 3]), 4)
    kguard.check_targets(torch.tensor([0, 255, 3]), 4, ignore_index=255)


def test_check_targets_segmentation_targets_n_d1_dn():
    # nll_loss's class indices per position: [N, H, W] with logits [N, C, H, W].
    t = torch.zeros(2, 3, 5, dtype=torch.long)
    t[1, 2, 4] = 3
    assert kguard.check_targets(t, 4) is t
    assert kguard.check_targets(t, 4, logits=torch.zeros(2, 4, 3, 5)) is t
    t[0, 1, 2] = 4
    with pytest.raises(ValueError, match=r"target 4 out of range \[0, 4\) at index \(0, 1, 2\)"):
        kguard.check_targets(t, 4)
    with pytest.raises(ValueError, match=r"does not fit logits of shape \[2, 4, 3, 6\]"):
        kguard.check_targets(torch.zeros(2, 3, 5, dtype=torch.long), 4,
                             logits=torch.zeros(2, 4, 3, 6))
    with pytest.raises(ValueError, match="logits have 5 classes"):
        kguard.check_targets(torch.zeros(2, 3, dtype=torch.long), 4, logits=torch.zeros(2, 5, 3))


def test_check_targets_rejects_one_hot_shape_dtype_and_all_ignored():
    # One-hot long targets are told from [N, d1] indices by the logits' shape.
    onehot = torch.nn.functional.one_hot(torch.tensor([0, 3]), 4)
    with pytest.raises(ValueError, match=r"logits' shape \[2, 4\]: one-hot.*argmax\(dim=1\)"):
        kguard.check_targets(onehot, 4, logits=torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"torch.long.*argmax\(dim=1\)"):
        kguard.check_targets(torch.tensor([[0.9, 0.1], [0.2, 0.8]]), 2)
    with pytest.raises(ValueError, match="scalar"):
        kguard.check_targets(torch.tensor(1), 4)
    with pytest.raises(ValueError, match="torch.long"):
        kguard.check_targets(torch.tensor([0.0, 1.0]), 4)
    with pytest.raises(ValueError, match="really are class indices"):
        kguard.check_targets(torch.tensor([0, 1], dtype=torch.int32), 4)
    with pytest.raises(ValueError, match="no entries other than ignore_index=-100"):
        kguard.check_targets(torch.tensor([-100, -100]), 4)
    with pytest.raises(ValueError, match="no entries"):
        kguard.check_targets(torch.tensor([], dtype=torch.long), 4)
    with pytest.raises(ValueError, match="classes"):
        kguard.check_targets(torch.tensor([0]), 0)


def test_import_needs_nothing_but_stdlib():
    code = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, %r); "
            "import kguard; print(kguard.resume())") % os.path.join(
                os.environ.get("KGUARD_SOURCE_DIR", "../.."), "python")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if not k.startswith("KGUARD_RESUME")})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "None"


def test_multi_node_exec_ranks_seal_and_resume_in_their_own_directories(ckenv, monkeypatch):
    # What a multi-node `kguard exec` gives rank 1 of 2 (torchrun's RANK/WORLD_SIZE).
    monkeypatch.setenv("KGUARD_CKPT_LAYOUT", "rank-dirs")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    path = kguard.save({"step": 6, "rank": 1}, 6)
    assert os.path.dirname(path) == str(ckenv / "ck" / "rank-1")
    assert path.endswith("-rank1of2.kgckpt.tar")   # the signed manifest says rank 1 of 2
    m = json.loads(run("ckpt", "manifest", path).stdout)["manifest"]
    assert (m["rank"], m["world_size"]) == (1, 2)
    # A script written for the old contract joined rank-$RANK itself: same directory.
    monkeypatch.setenv("KGUARD_CKPT_DIR", str(ckenv / "ck" / "rank-1"))
    assert os.path.dirname(kguard.save({"step": 7}, 7)) == str(ckenv / "ck" / "rank-1")
    monkeypatch.setenv("KGUARD_CKPT_DIR", str(ckenv / "ck"))

    # kguard exec restored each rank of the node into RESUME_DIR/rank-R and names the
    # node's first rank's archive; rank 1 loads its own copy under the plain name.
    base = ckenv / "restored"
    base.mkdir()
    assert run("ckpt", "restore", path, str(base / "rank-1")).returncode == 0
    monkeypatch.setenv("KGUARD_RESUME_DIR", str(base))
    monkeypatch.setenv("KGUARD_RESUME_STEP", "6")
    monkeypatch.setenv("KGUARD_RESUME_ARCHIVE", path)
    r = kguard.resume()
    assert r.dir == str(base / "rank-1") and r.step == 6 and r.archive == path
    assert r.load() == {"step": 6, "rank": 1}
    # Another rank's archive is not passed off as this rank's.
    monkeypatch.setenv("KGUARD_RESUME_ARCHIVE", str(ckenv / "ck" / "rank-0" / "x.kgckpt.tar"))
    (ckenv / "ck" / "rank-0").mkdir()
    (ckenv / "ck" / "rank-0" / "x.kgckpt.tar").write_bytes(b"")
    assert kguard.resume().archive is None
    # A restore that left this rank out is an error, never a silent start over.
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(RuntimeError, match="not rank 0's checkpoint"):
        kguard.resume()


def test_without_kguard_exec_layout_world_size_changes_no_directory(ckenv, monkeypatch):
    # torchrun alone (or one node): every rank seals a shard into KGUARD_CKPT_DIR itself.
    monkeypatch.delenv("KGUARD_CKPT_LAYOUT", raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    path = kguard.save({"step": 3}, 3)
    assert os.path.dirname(path) == str(ckenv / "ck")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("KGUARD_CKPT_LAYOUT", "rank-dirs")   # one process: unchanged
    assert os.path.dirname(kguard.save({"step": 4}, 4)) == str(ckenv / "ck")
