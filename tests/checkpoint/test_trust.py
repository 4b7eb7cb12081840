"""Attacks by another local user on what kguard reads and writes, played for
real: the test (root) is the victim, and a user it adds is the attacker,
who can write a checkpoint directory shared by a team (0777, not sticky),
or made a directory that kguard would use before its owner did.

- a zstd checkpoint's restored copy swapped for a pickle between the
  restore and torch.load (the pickle ran in the fresh kernel);
- a copy altered after the restore, even where only the user can write;
- a state directory another user made, with a symlink at the log kguard
  appends to (root's `kguard exec` wrote into a file of the attacker's
  choice);
- no HOME at all: a per-user fallback, never one shared /tmp path;
- a symlink planted at quarantine/ (archives were moved into a directory
  of the attacker's);
- a key directory another user controls (its keys decided what verified).
"""
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

from conftest import BIN, run

SRC = os.environ.get("KGUARD_SOURCE_DIR", "../..")
PYDIR = os.path.join(SRC, "python")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="plays another user: needs root")


class User:
    def __init__(self, name):
        import pwd
        pw = pwd.getpwnam(name)
        self.name, self.uid, self.gid = name, pw.pw_uid, pw.pw_gid

    def run(self, argv, **kw):
        """Run argv as this user (no supplementary groups)."""
        return subprocess.run(argv, user=self.uid, group=self.gid, extra_groups=[],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=120, **kw)


def _add_user(prefix, home=None):
    name = f"{prefix}{os.getpid()}"[:31]
    argv = ["useradd", "--system", "--shell", "/usr/sbin/nologin"]
    argv += ["--home-dir", home, "--no-create-home"] if home else ["--no-create-home"]
    subprocess.run(argv + [name], check=True, capture_output=True)
    return User(name)


@pytest.fixture(scope="module")
def attacker():
    u = _add_user("kgatk")
    yield u
    subprocess.run(["userdel", u.name], capture_output=True)


@pytest.fixture(autouse=True)
def run_r1(monkeypatch):
    """The run being resumed is the one sealed (\$KGUARD_RUN_ID, as a kernel has it)."""
    monkeypatch.setenv("KGUARD_RUN_ID", "r1")


@pytest.fixture
def shared():
    """A directory both users can reach (/tmp/kgtrust-*, 0755) with ck/, a
    team's checkpoint directory anyone can write (0777, not sticky)."""
    base = tempfile.mkdtemp(prefix="kgtrust-", dir="/tmp")
    os.chmod(base, 0o755)
    ck = os.path.join(base, "ck")
    os.mkdir(ck)
    os.chmod(ck, 0o777)
    yield base
    subprocess.run(["chmod", "-R", "u+rwx", base], capture_output=True)
    shutil.rmtree(base, ignore_errors=True)


class _Marker:
    """Unpickling this creates the file `path`: proof that a pickle of the
    attacker's ran."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


PLANT = r"""
import os, sys
d, payload = sys.argv[1], sys.argv[2]
if os.path.lexists(d):
    os.rename(d, d + ".moved-away")
os.mkdir(d, 0o755)
with open(os.path.join(d, "state.pt"), "wb") as f:
    f.write(bytes.fromhex(payload))
"""


def _state(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    code = ("import torch, sys; torch.save({'w': torch.arange(6.0), 'step': 5}, sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(src / "state.pt")], check=True)
    return src


def _kernel_load(env, out):
    """What the fresh kernel does: kguard.resume().load(), with what kguard
    handed over. Returns (exit code, stdout, stderr)."""
    e = dict(env)
    e.update({"PYTHONPATH": PYDIR, "KGUARD_BIN": BIN,
              "KGUARD_RESUME_DIR": out["dir"] or "", "KGUARD_RESUME_STEP": str(out["step"]),
              "KGUARD_RESUME_ARCHIVE": out["archive"], "KGUARD_RESUME_DIGEST": out["digest"]})
    code = ("import kguard; r = kguard.resume(); s = r.load(); "
            "print('LOADED', int(s['w'].sum()), s['step'])")
    p = subprocess.run([sys.executable, "-c", code], env=e, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def test_zstd_copy_in_a_shared_directory_cannot_be_swapped(shared, attacker, tmp_path,
                                                            keyenv):
    ck = os.path.join(shared, "ck")
    src = _state(tmp_path)
    path = run("ckpt", "seal", str(src), "--step", "5", "--run", "r1", "--into", ck, "--zstd",
               check=True).stdout.strip()
    state = tmp_path / "state"
    (state / "restored").mkdir(parents=True)
    os.chmod(state, 0o700)
    p = run("ckpt", "resume-prepare", "--dir", ck, "--before", "99999999999999", "--incident",
            "z1", "--into", str(state / "restored" / "z1"), "--json")
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["status"] == "restored", p.stdout + p.stderr
    # The attacker swaps whatever kguard left beside the archives for a
    # pickle of theirs, between the restore and the kernel's load.
    marker = tmp_path / "pwned"
    a = attacker.run([sys.executable, "-c", PLANT, os.path.join(ck, ".restored-z1"),
                      pickle.dumps(_Marker(str(marker))).hex()])
    assert a.returncode == 0, a.stderr
    rc, stdout, stderr = _kernel_load(os.environ, out)
    assert not marker.exists(), "the attacker's pickle ran in the kernel"
    assert rc == 0 and "LOADED 15 5" in stdout, stdout + stderr
    # The copy is nowhere the attacker can write, and read-only.
    assert not out["dir"].startswith(shared), out["dir"]
    assert stat.S_IMODE(os.stat(out["dir"]).st_mode) == 0o500
    assert stat.S_IMODE(os.stat(os.path.join(out["dir"], "state.pt")).st_mode) == 0o400
    # The next incident of this checkpoint directory removes that copy.
    p = run("ckpt", "resume-prepare", "--dir", ck, "--before", "99999999999999", "--incident",
            "z3", "--into", str(state / "restored" / "z3"), "--json")
    again = json.loads(p.stdout)
    assert again["dir"] == str(state / "restored" / "z3"), p.stdout
    assert sorted(os.listdir(state / "restored")) == [".z3.source", "z3"]


def test_a_copy_altered_after_the_restore_never_reaches_torch_load(tmp_path, keyenv):
    """Even a private copy is read through the signed digests: a state.pt
    put there after kguard restored it raises before torch.load sees it."""
    ck = tmp_path / "ck"
    ck.mkdir(mode=0o700)
    src = _state(tmp_path)
    run("ckpt", "seal", str(src), "--step", "5", "--run", "r1", "--into", str(ck), "--zstd",
        check=True)
    p = run("ckpt", "resume-prepare", "--dir", str(ck), "--before", "99999999999999",
            "--incident", "z2", "--into", str(tmp_path / "unused"), "--json")
    out = json.loads(p.stdout)
    assert out["status"] == "restored" and out["dir"] == str(ck / ".restored-z2"), p.stdout
    marker = tmp_path / "pwned"
    victim = ck / ".restored-z2" / "state.pt"
    os.chmod(victim.parent, 0o700)
    victim.unlink()
    victim.write_bytes(pickle.dumps(_Marker(str(marker))))
    rc, stdout, stderr = _kernel_load(os.environ, out)
    assert not marker.exists(), "an unverified pickle ran in the kernel"
    assert rc != 0 and "CheckpointError" in stderr, stdout + stderr
    # The same copy restored again (a swap back to the real bytes) loads.
    shutil.rmtree(ck / ".restored-z2")
    p = run("ckpt", "resume-prepare", "--dir", str(ck), "--before", "99999999999999",
            "--incident", "z2", "--into", str(tmp_path / "unused"), "--json")
    rc, stdout, stderr = _kernel_load(os.environ, json.loads(p.stdout))
    assert rc == 0 and "LOADED 15 5" in stdout, stdout + stderr


def test_a_state_directory_someone_else_made_is_refused(shared, attacker, tmp_path):
    """Root's `kguard exec` with a state directory the attacker made, and a
    symlink at the log it appends to: refused, naming the directory; the
    file the link points at is untouched."""
    victim = tmp_path / "root-only-file"
    victim.write_text("precious\n")
    sd = os.path.join(shared, "ck", "state")
    a = attacker.run(["sh", "-c", f"mkdir -p {sd}/logs && ln -s {victim} {sd}/logs/exec-t.log"],
                     cwd=shared)
    assert a.returncode == 0, a.stderr
    env = dict(os.environ, KGUARD_STATE_DIR=sd)
    p = subprocess.run([BIN, "exec", "--name", "t", "--", "/bin/echo", "injected"], env=env,
                       cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    assert victim.read_text() == "precious\n"
    assert p.returncode != 0
    assert sd in p.stderr and "not by you" in p.stderr and "KGUARD_STATE_DIR" in p.stderr


def test_without_home_the_state_directory_is_per_user(shared, attacker, tmp_path):
    """No HOME, XDG_STATE_HOME or KGUARD_STATE_DIR and no home directory in
    the passwd entry (a service account): the state directory is
    /tmp/kguard-state-<uid>, the user's own (0700), never a shared
    /tmp/kguard-state; one another user made first is refused."""
    user = _add_user("kgsvc", home="/nonexistent")
    mine = f"/tmp/kguard-state-{user.uid}"
    try:
        shutil.rmtree(mine, ignore_errors=True)
        env = {"PATH": "/usr/bin:/bin"}
        p = user.run([BIN, "exec", "--name", "t", "--", "/bin/true"], env=env, cwd="/tmp")
        assert p.returncode == 0, p.stderr
        st = os.lstat(mine)
        assert st.st_uid == user.uid and stat.S_IMODE(st.st_mode) == 0o700
        assert os.path.isfile(os.path.join(mine, "logs", "exec-t.log"))
        # The attacker made it first: refused, saying which and what to do.
        shutil.rmtree(mine)
        assert attacker.run(["mkdir", "-m", "0777", mine]).returncode == 0
        p = user.run([BIN, "exec", "--name", "t", "--", "/bin/true"], env=env, cwd="/tmp")
        assert p.returncode != 0 and mine in p.stderr and "not by you" in p.stderr, p.stderr
        assert os.listdir(mine) == []
    finally:
        shutil.rmtree(mine, ignore_errors=True)
        subprocess.run(["userdel", user.name], capture_output=True)


def test_a_symlink_planted_at_quarantine_is_refused(shared, attacker, tmp_path, keyenv):
    """A checkpoint sealed after the fault would have been moved into the
    attacker's directory through the link; it stays where it is, is not
    chosen, and the restore of the earlier one goes on."""
    ck = os.path.join(shared, "ck")
    src = _state(tmp_path)
    old = run("ckpt", "seal", str(src), "--step", "1", "--run", "r1", "--into", ck,
              check=True).stdout.strip()
    t_fault = json.loads(run("ckpt", "list", ck, "--json", check=True).stdout)[0][
        "sealed_at_ms"] + 1
    new = run("ckpt", "seal", str(src), "--step", "2", "--run", "r1", "--into", ck,
              "--time", str(t_fault + 5), check=True).stdout.strip()
    loot = os.path.join(ck, "loot")
    a = attacker.run(["sh", "-c", f"mkdir -m 0777 {loot} && ln -s {loot} {ck}/quarantine"])
    assert a.returncode == 0, a.stderr
    p = run("ckpt", "resume-prepare", "--dir", ck, "--before", str(t_fault), "--incident",
            "q1", "--into", str(tmp_path / "unused"), "--json")
    out = json.loads(p.stdout)
    assert os.listdir(loot) == [], "archives were moved through the planted link"
    assert os.path.exists(new)
    assert out["status"] == "restored" and out["archive"] == old, p.stdout
    assert "symbolic link" in out["quarantine_error"]
    assert any(s["archive"] == new and "at or after the failure" in s["reason"]
               for s in out["skipped"])
    # The quarantine command says the same, naming the link, and moves nothing.
    q = run("ckpt", "quarantine", ck, "--incident", "q2", "--from", str(t_fault))
    assert q.returncode == 111 and f"{ck}/quarantine" in q.stderr and os.listdir(loot) == []


def test_a_key_directory_another_user_controls_is_refused(shared, attacker, tmp_path, keyenv):
    """Pointing KGUARD_KEY_DIR at a directory the attacker owns made the
    attacker's own archives verify as the user's."""
    ck = os.path.join(shared, "ck")
    keys = f"/tmp/kgatk-keys-{os.getpid()}"  # the attacker's own, private to them
    forged_src = os.path.join(ck, "forged")
    forged = os.path.join(ck, "forged.kgckpt.tar")
    env = {"PATH": "/usr/bin:/bin", "KGUARD_KEY_DIR": keys}
    try:
        a = attacker.run(["sh", "-c", f"mkdir {forged_src} && echo evil > {forged_src}/state.pt "
                          f"&& {BIN} ckpt seal {forged_src} --step 1 -o {forged}"],
                         env=env, cwd=ck)
        assert a.returncode == 0, a.stderr
        p = subprocess.run([BIN, "ckpt", "verify", forged],
                           env=dict(os.environ, KGUARD_KEY_DIR=keys), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 100, p.stdout + p.stderr
        assert "valid" not in p.stdout and keys in p.stderr and "not by you" in p.stderr
    finally:
        shutil.rmtree(keys, ignore_errors=True)
