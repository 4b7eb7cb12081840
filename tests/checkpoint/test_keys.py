"""`kguard keys`: trusting another signer's public key (a colleague's,
another node's). Verifying an archive signed by another key used to say
"run kguard keygen", which made a new key under which the archive still
read unsigned; nothing said how to trust a key. The store's contract is in
checkpoint/kg_keys.h and docs/checkpoints.md."""
import json
import os
import subprocess

import pytest

from conftest import BIN


def kg(keys, *args, stdin=None, extra=None):
    env = dict(os.environ, KGUARD_KEY_DIR=str(keys))
    env.pop("KGUARD_TRUSTED_KEYS_DIR", None)
    env.update(extra or {})
    return subprocess.run([BIN, *args], env=env, input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)


@pytest.fixture
def two(tmp_path, payload):
    """Alice's and Bob's key directories, and an archive Alice sealed."""
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    archive = tmp_path / "ck" / "a.kgckpt.tar"
    archive.parent.mkdir()
    p = kg(alice, "ckpt", "seal", str(payload), "--step", "3", "--run", "r1", "-o", str(archive))
    assert p.returncode == 0, p.stderr
    assert kg(bob, "keygen").returncode == 0
    return alice, bob, archive


def test_export_import_verify_names_the_signer(two, tmp_path):
    alice, bob, archive = two
    p = kg(bob, "ckpt", "verify", str(archive))
    assert p.returncode == 1 and "which you do not trust" in p.stdout
    assert "kguard keys import" in p.stdout and "keygen" not in p.stdout
    line = kg(alice, "keys", "export")
    assert line.returncode == 0
    fields = line.stdout.split()
    assert fields[0] == "kguard-ckpt-ed25519" and fields[2].startswith("b2:")
    alice_id = fields[2]
    assert alice_id in p.stdout  # the message named the key that signed it
    (tmp_path / "alice.pub").write_text("# Alice's checkpoint key\n\n" + line.stdout)
    imp = kg(bob, "keys", "import", "alice", str(tmp_path / "alice.pub"))
    assert imp.returncode == 0 and alice_id in imp.stdout, imp.stderr
    v = kg(bob, "ckpt", "verify", str(archive))
    assert v.returncode == 0, v.stdout
    assert f"signed by trusted key 'alice' ({alice_id})" in v.stdout
    own = kg(alice, "ckpt", "verify", str(archive))
    assert own.returncode == 0 and f"signed by your key ({alice_id})" in own.stdout
    # list: Bob's own key first, then Alice's; --json for programs.
    rows = json.loads(kg(bob, "keys", "list", "--json").stdout)
    assert [r["own"] for r in rows] == [True, False]
    assert rows[1] == {"id": alice_id, "name": "alice", "own": False,
                       "file": str(bob / "trusted" / "alice.pub")}
    text = kg(bob, "keys", "list").stdout
    assert "(yours)" in text and "alice" in text
    # A trusted key's line can be passed on, and imports again as itself.
    assert kg(bob, "keys", "export", "alice").stdout.split()[:3] == fields[:3]
    # remove: Alice's archives read as unsigned again.
    assert kg(bob, "keys", "remove", "alice").returncode == 0
    assert kg(bob, "ckpt", "verify", str(archive)).returncode == 1
    assert kg(bob, "keys", "remove", "alice").returncode == 100


def test_resume_prepare_restores_an_archive_a_trusted_key_signed(two, tmp_path, payload):
    alice, bob, _ = two
    ck = tmp_path / "shared-ck"
    p = kg(alice, "ckpt", "seal", str(payload), "--step", "40", "--run", "r1", "--into", str(ck))
    assert p.returncode == 0, p.stderr
    args = ["ckpt", "resume-prepare", "--run", "r1", "--dir", str(ck), "--before",
            "99999999999999", "--incident", "k1", "--into", str(tmp_path / "x"), "--json"]
    out = json.loads(kg(bob, *args).stdout)
    assert out["status"] == "none" and "which you do not trust" in out["skipped"][0]["reason"]
    line = kg(alice, "keys", "export").stdout
    assert kg(bob, "keys", "import", "alice", "-", stdin=line).returncode == 0
    out = json.loads(kg(bob, *args).stdout)
    assert out["status"] == "restored" and out["step"] == 40, out
    man = json.loads(kg(bob, "ckpt", "manifest", out["archive"]).stdout)
    assert man["signer"] == "alice" and man["manifest_digest"] in out["digest"]


def test_import_is_idempotent_and_checks_names_and_files(two, tmp_path):
    alice, bob, _ = two
    line = kg(alice, "keys", "export").stdout
    carol = tmp_path / "carol"
    assert kg(carol, "keygen").returncode == 0
    carol_line = kg(carol, "keys", "export").stdout
    imp = lambda name, data, *more: kg(bob, "keys", "import", *more, name, "-", stdin=data)
    assert imp("alice", line).returncode == 0
    again = imp("alice", line)
    assert again.returncode == 0 and "nothing changed" in again.stdout
    dup = imp("alice2", line)
    assert dup.returncode == 0 and "already" in dup.stdout
    assert not (bob / "trusted" / "alice2.pub").exists()
    taken = imp("alice", carol_line)
    assert taken.returncode == 100 and "--replace" in taken.stderr
    assert imp("alice", carol_line, "--replace").returncode == 0
    for bad in ("../x", ".hidden", "a b", "x" * 65, ""):
        assert imp(bad, line).returncode == 100, bad
    for junk in ("", "hello\n", "kguard-ckpt-ed25519 notbase64!\n",
                 "kguard-ckpt-ed25519 AAAA\n", "ssh-ed25519 AAAAC3Nza alice@x\n"):
        p = imp("junk", junk)
        assert p.returncode == 100 and p.stderr.startswith("kguard keys import: "), (junk,
                                                                                     p.stderr)
    assert kg(bob, "keys", "import", "x", str(tmp_path / "nosuch")).returncode == 100
    # A raw 32-byte ckpt-ed25519.public imports as well.
    raw = kg(bob, "keys", "import", "carol-raw", str(carol / "ckpt-ed25519.public"))
    assert raw.returncode == 0  # carol's key is trusted already, as 'alice' now
    # Raw keys are any 32 bytes, newlines included (one in eight random keys
    # holds a 0x0a byte: it was then taken for a text line and refused).
    (tmp_path / "raw.public").write_bytes(b"\n" * 16 + b"k" * 16)
    assert kg(bob, "keys", "import", "raw-nl", str(tmp_path / "raw.public")).returncode == 0
    # Your own key is no import.
    own = kg(bob, "keys", "import", "me", str(bob / "ckpt-ed25519.public"))
    assert own.returncode == 0 and "your own" in own.stdout
    assert kg(bob, "keys", "bogus").returncode == 100
    assert kg(bob, "keys", "--help").stdout.startswith("usage: kguard keys")


def test_a_jobs_keys_live_apart(two, tmp_path):
    """--trusted-dir and $KGUARD_TRUSTED_KEYS_DIR: how kguard exec's
    coordinator trusts each node's key for one job without touching the
    user's own trust."""
    alice, bob, archive = two
    job = tmp_path / "job-keys"
    line = kg(alice, "keys", "export").stdout
    p = kg(bob, "keys", "import", "--trusted-dir", str(job), "node1", "-", stdin=line)
    assert p.returncode == 0, p.stderr
    assert (job / "node1.pub").read_text().split()[:2] == line.split()[:2]
    assert not (bob / "trusted").exists()
    assert kg(bob, "ckpt", "verify", str(archive)).returncode == 1
    v = kg(bob, "ckpt", "verify", str(archive), extra={"KGUARD_TRUSTED_KEYS_DIR": str(job)})
    assert v.returncode == 0 and "trusted key 'node1'" in v.stdout
    # A job directory others could write is refused, never silently skipped.
    os.chmod(job, 0o777)
    v = kg(bob, "ckpt", "verify", str(archive), extra={"KGUARD_TRUSTED_KEYS_DIR": str(job)})
    assert v.returncode == 100 and str(job) in v.stderr and "writable by everyone" in v.stderr
    os.chmod(job, 0o700)
    (job / "broken.pub").write_text("not a key\n")
    v = kg(bob, "ckpt", "verify", str(archive), extra={"KGUARD_TRUSTED_KEYS_DIR": str(job)})
    assert v.returncode == 100 and "broken.pub" in v.stderr


def test_keygen_after_a_seal_is_no_error(tmp_path, payload):
    """The README's "once per user" step after the demo (whose seal made
    the key): exit 0 and where the key is."""
    keys = tmp_path / "k"
    assert kg(keys, "ckpt", "seal", str(payload), "--step", "1", "-o",
              str(tmp_path / "a.tar")).returncode == 0
    p = kg(keys, "keygen")
    assert p.returncode == 0 and str(keys) in p.stdout and "already there" in p.stdout
