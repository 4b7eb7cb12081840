"""The Python helper's public API as docs/python-api.md lists it: every
function, class and field there exists with exactly the documented
signature, and every public name of the code is there. Code written
against the earlier docs keeps working: `r.dir` is a usable directory."""
import importlib
import inspect
import json
import os
import re
import stat
import sys

import pytest

SRC = os.environ.get("KGUARD_SOURCE_DIR", "../..")
sys.path.insert(0, os.path.join(SRC, "python"))
import torch  # noqa: E402

import kguard  # noqa: E402
from kguard import archive as ka  # noqa: E402
from kguard import checkpoint as kc  # noqa: E402
from kguard import emulate as ke  # noqa: E402
from conftest import run  # noqa: E402

DOC = os.path.join(SRC, "docs", "python-api.md")
HEADING = re.compile(r"^#{3,4} `([A-Za-z_.]+)(\(.*\))?`\s*$")
CLASSES = {"Resume": kc.Resume, "PendingSeal": kc.PendingSeal, "Archive": ka.Archive,
           "Snapshot": kguard.Snapshot}


def documented():
    """[(name, signature or None)] of the page's ### and #### headings."""
    out = []
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            m = HEADING.match(line.rstrip("\n"))
            if m:
                out.append((m.group(1), m.group(2)))
    return out


def _instance_fields(cls):
    """Names the __init__ of cls or of a class it derives from assigns as
    self.NAME (plain fields)."""
    inits = {k.__init__ for k in cls.__mro__ if "__init__" in vars(k) and k is not object}
    return {n for f in inits
            for n in re.findall(r"self\.([a-z][a-z_]*)\s*=", inspect.getsource(f))}


def test_every_documented_name_exists_with_its_signature():
    entries = documented()
    assert len(entries) > 30, "the page's headings were not found"
    for name, sig in entries:
        owner, _, attr = name.rpartition(".")
        if owner in CLASSES:
            cls = CLASSES[owner]
            if attr in _instance_fields(cls) and not hasattr(cls, attr):
                assert sig is None, name
                continue
            obj = getattr(cls, attr)
        else:
            mod = importlib.import_module(owner)
            obj = getattr(mod, attr)
        if sig is not None:
            assert callable(obj), name
            got = inspect.signature(obj)
            if owner in CLASSES:  # a method: documented without self
                got = got.replace(parameters=list(got.parameters.values())[1:])
            assert str(got) == sig, (name, str(got), sig)


def test_every_public_name_is_documented():
    names = {n for n, _ in documented()}
    for mod, prefix in ((kguard, "kguard"), (ka, "kguard.archive"), (ke, "kguard.emulate")):
        for n in mod.__all__:
            assert f"{prefix}.{n}" in names, f"{prefix}.{n} is not in docs/python-api.md"
    for cname, cls in CLASSES.items():
        public = {n for n in vars(cls) if not n.startswith("_")} | {
            n for n in _instance_fields(cls) if not n.startswith("_")}
        public.discard("prechecked")   # Archive's copy of a constructor argument
        public.discard("copy_dir")
        for n in public:
            assert f"{cname}.{n}" in names, f"{cname}.{n} is not in docs/python-api.md"


@pytest.fixture
def resumed(tmp_path, monkeypatch, keyenv):
    """A checkpoint sealed by kguard.save and verified by resume-prepare,
    handed over as the supervisor hands it to a fresh kernel."""
    monkeypatch.setenv("KGUARD_CKPT_DIR", str(tmp_path / "ck"))
    monkeypatch.setenv("KGUARD_RUN_ID", "api")
    monkeypatch.setenv("KGUARD_STATE_DIR", str(tmp_path / "state"))
    for k in ("KGUARD_RESUME_DIR", "KGUARD_CKPT_LAYOUT", "RANK", "KGUARD_RANK", "WORLD_SIZE",
              "KGUARD_EMULATE", "KGUARD_TRUSTED_KEYS_DIR"):
        monkeypatch.delenv(k, raising=False)
    state = {"w": torch.arange(5.0), "step": 12}
    kguard.save(state, 12)
    p = run("ckpt", "resume-prepare", "--dir", str(tmp_path / "ck"), "--before",
            "99999999999999", "--incident", "api1", "--into", str(tmp_path / "x"), "--json")
    out = json.loads(p.stdout)
    assert out["status"] == "restored", p.stdout
    monkeypatch.setenv("KGUARD_RESUME_ARCHIVE", out["archive"])
    monkeypatch.setenv("KGUARD_RESUME_STEP", str(out["step"]))
    monkeypatch.setenv("KGUARD_RESUME_DIGEST", out["digest"])
    return state, tmp_path


def test_code_written_against_the_earlier_docs_walks_r_dir(resumed):
    """`r.dir` was None for archives read in place: os.listdir(r.dir)
    raised TypeError. It is a verified, read-only directory again."""
    state, tmp_path = resumed
    r = kguard.resume()
    files = sorted(os.listdir(r.dir))
    assert files == ["state.pt"]
    loaded = torch.load(os.path.join(r.dir, "state.pt"))
    assert torch.equal(loaded["w"], state["w"]) and loaded["step"] == 12
    assert r.dir.startswith(str(tmp_path / "state" / "restored") + "/")
    assert stat.S_IMODE(os.stat(r.dir).st_mode) == 0o500
    assert stat.S_IMODE(os.stat(os.path.join(r.dir, "state.pt")).st_mode) == 0o400
    # Made once: a later kernel (a new Resume) reuses it.
    assert kguard.resume().dir == r.dir
    assert r.members() == ["state.pt"] and r.step == 12


def test_r_dir_that_cannot_be_made_names_load_and_open(resumed, monkeypatch):
    state, tmp_path = resumed
    unsafe = tmp_path / "shared-state"
    unsafe.mkdir()
    os.chmod(unsafe, 0o777)  # no private copy can be made there
    monkeypatch.setenv("KGUARD_STATE_DIR", str(unsafe))
    r = kguard.resume()
    with pytest.raises(ka.CheckpointError, match=r"r\.load\(name\) and r\.open\(name\)"):
        r.dir
    assert torch.equal(r.load()["w"], state["w"])  # reading in place still works
