"""Checkpoint sets across ranks, with several local processes as ranks:
each seals its own shard; the seal that completes the set writes the signed
index; resume-prepare and `latest` choose only complete, verified sets, and
each rank then loads its own shard."""
import json
import os
import subprocess
import sys
import tarfile

import pytest

sys.path.insert(0, os.path.join(os.environ.get("KGUARD_SOURCE_DIR", "../.."), "python"))
import torch  # noqa: E402

from kguard import checkpoint as kc  # noqa: E402
from conftest import BIN, run  # noqa: E402

PYDIR = os.path.join(os.environ.get("KGUARD_SOURCE_DIR", "../.."), "python")
RANK_SAVE = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import torch, kguard
r = int(os.environ["RANK"])
print(kguard.save({"rank": r, "w": torch.full((4,), float(r))}, int(sys.argv[2])))
"""


@pytest.fixture
def ck(tmp_path, monkeypatch, keyenv):
    monkeypatch.setenv("KGUARD_CKPT_DIR", str(tmp_path / "ck"))
    monkeypatch.setenv("KGUARD_BIN", os.path.abspath(BIN))
    for k in ("KGUARD_RESUME_DIR", "KGUARD_RESUME_ARCHIVE", "KGUARD_RESUME_DIGEST", "RANK",
              "KGUARD_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    run("keygen", check=True)  # one key before the ranks start, as on a real job
    return tmp_path / "ck"


def ranks_save(step, ranks, world):
    procs = [subprocess.Popen([sys.executable, "-c", RANK_SAVE, PYDIR, str(step)],
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(world)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in ranks]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    return [o[0].strip() for o in outs]


def resume_prepare(ck, tmp):
    p = run("ckpt", "resume-prepare", "--dir", str(ck), "--before", "99999999999999",
            "--incident", "s1", "--into", str(tmp / "never"), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout)


def sets_in(ck):
    return sorted(n for n in os.listdir(ck) if n.endswith(".kgset.tar"))


def test_only_complete_sets_are_chosen_and_each_rank_loads_its_shard(ck, tmp_path,
                                                                     monkeypatch):
    shards5 = ranks_save(5, range(3), 3)          # concurrently, all three ranks
    assert all("-rank" in s for s in shards5)
    assert len(sets_in(ck)) == 1
    ranks_save(10, [0, 2], 3)                     # rank 1 never saved step 10
    assert len(sets_in(ck)) == 1

    out = resume_prepare(ck, tmp_path)
    assert out["status"] == "restored" and out["step"] == 5 and out["dir"] == ""
    assert out["archive"].endswith(".kgset.tar") and out["set"]["world_size"] == 3
    assert sorted(s["archive"] for s in out["set"]["shards"]) == sorted(shards5)
    skipped = [s["reason"] for s in out["skipped"]]
    assert len(skipped) == 2 and all("chosen only with its complete set" in r for r in skipped)
    p = run("ckpt", "latest", str(ck))
    assert p.returncode == 0 and p.stdout.strip() == out["archive"]
    listing = json.loads(run("ckpt", "list", str(ck), "--json", check=True).stdout)
    sets = [r for r in listing if r.get("kind") == "set"]
    assert [(s["step"], s["status"], s["world_size"]) for s in sets] == [(5, "valid", 3)]

    monkeypatch.setenv("KGUARD_RESUME_ARCHIVE", out["archive"])
    monkeypatch.setenv("KGUARD_RESUME_DIGEST", out["digest"])
    monkeypatch.setenv("WORLD_SIZE", "3")
    for r in range(3):
        monkeypatch.setenv("RANK", str(r))
        state = kc.resume().load()
        assert state["rank"] == r and torch.equal(state["w"], torch.full((4,), float(r)))

    # Completing step 10 later makes it the choice.
    ranks_save(10, [1], 3)
    assert len(sets_in(ck)) == 2
    assert resume_prepare(ck, tmp_path)["step"] == 10


def test_a_set_with_a_bad_shard_is_never_chosen(ck, tmp_path):
    shards = ranks_save(7, range(2), 2)
    with tarfile.open(shards[1], "r:") as tf:
        ti = tf.getmember("state.pt")
    with open(shards[1], "r+b") as f:  # one byte in the middle of rank 1's state
        f.seek(ti.offset_data + ti.size // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    out = resume_prepare(ck, tmp_path)
    assert out["status"] == "none"
    assert any("shard of rank 1" in s["reason"] and "corrupt" in s["reason"]
               for s in out["skipped"])
    os.unlink(shards[1])
    out = resume_prepare(ck, tmp_path)
    assert out["status"] == "none"
    assert any("incomplete set" in s["reason"] for s in out["skipped"])
    assert run("ckpt", "latest", str(ck)).returncode == 1
