"""Shared helpers of the command-line tests: the real kguard binary, run
with a private Jupyter data dir, Jupyter path and state dir per test, so
that no kernelspec, incident or key of the machine is read or written."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("KGUARD_SOURCE_DIR", HERE.parents[1]))
KGUARD = os.environ.get("KGUARD_BIN")
PYTHON = os.environ.get("KGUARD_PYTHON", sys.executable)

pytestmark = pytest.mark.skipif(not KGUARD, reason="KGUARD_BIN not set")


def kguard(*args, env=None, timeout=120, check=None, binary=None):
    """Run kguard; check=N asserts the exit code (with the output on failure)."""
    p = subprocess.run([binary or KGUARD, *args], capture_output=True, text=True,
                       timeout=timeout, env=env)
    if check is not None:
        assert p.returncode == check, (args, p.returncode, p.stdout, p.stderr)
    return p


def tables():
    """kguard's option tables (`kguard help --format=json`)."""
    return json.loads(kguard("help", "--format=json", check=0).stdout)


def commands(root=None, hidden=False):
    """[(words, table)] for every command and subcommand, ("ckpt", "seal")."""
    root = root or tables()
    out = []
    for c in root["commands"]:
        if c["hidden"] and not hidden:
            continue
        out.append((tuple(c["name"].split()), c))
        for s in c["commands"]:
            if not s["hidden"] or hidden:
                out.append((tuple(s["name"].split()), s))
    return out


class Env(dict):
    """An environment with its own Jupyter dirs and kguard state."""

    def __init__(self, root):
        super().__init__(os.environ)
        self.root = root
        self["JUPYTER_DATA_DIR"] = str(root / "data")
        self["JUPYTER_PATH"] = str(root / "jpath")
        self["KGUARD_STATE_DIR"] = str(root / "state")
        self["KGUARD_KEY_DIR"] = str(root / "keys")
        for k in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH"):
            self.pop(k, None)

    def spec(self, name, argv, where="jpath", **extra):
        """Write kernelspec name under JUPYTER_PATH (or the data dir)."""
        d = self.root / where / "kernels" / name
        d.mkdir(parents=True, exist_ok=True)
        spec = {"argv": argv, "display_name": "test " + name, "language": "python", **extra}
        (d / "kernel.json").write_text(json.dumps(spec))
        return d


@pytest.fixture
def env(tmp_path):
    return Env(tmp_path)
