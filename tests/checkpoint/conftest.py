"""Shared fixtures for the checkpoint tests: the kguard binary, a private
key directory, and a small sealed archive to derive bad inputs from."""
import os
import subprocess

import pytest

BIN = os.environ.get("KGUARD_BIN", "kguard")


def run(*args, env=None, check=False):
    """Run kguard with args; return CompletedProcess (text)."""
    p = subprocess.run([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"kguard {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def keyenv(tmp_path, monkeypatch):
    """A private key directory for this test (created on first seal)."""
    d = tmp_path / "keys"
    monkeypatch.setenv("KGUARD_KEY_DIR", str(d))
    return d


@pytest.fixture
def payload(tmp_path):
    """A directory like one torch.save run produces, plus a subdirectory."""
    d = tmp_path / "payload"
    (d / "sub").mkdir(parents=True)
    (d / "state.pt").write_bytes(os.urandom(300_000))
    (d / "sub" / "notes.txt").write_bytes(b"hello\n" * 100)
    return d


@pytest.fixture
def sealed(tmp_path, keyenv, payload):
    """Path of a valid, uncompressed archive of payload (step 7)."""
    out = tmp_path / "good.kgckpt.tar"
    run("ckpt", "seal", str(payload), "--step", "7", "--run", "r1", "-o", str(out), check=True)
    return out
