"""kguard installed as a user installs it: scripts/package.sh builds the
Debian package, `apt-get install ./kguard_VERSION_ARCH.deb` installs it, and
with the build tree moved away and the source tree hidden (a private mount
namespace), the installed kguard installs its kernelspec, runs the example
notebook through an emulated CUDA device-side assert, and verifies the
checkpoint it restored; `apt-get purge` then leaves nothing behind.
`cmake --install --prefix P` writes the same tree as the package.

Needs root and dpkg; refuses to run where a kguard package is installed
already (it would replace it), and never leaves the package installed."""
import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("KGUARD_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = "/usr/bin/kguard"


def _installed():
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "kguard"], capture_output=True,
                       text=True)
    return "install ok installed" in p.stdout or "config-files" in p.stdout


pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="installing a package needs root"),
    pytest.mark.skipif(not shutil.which("dpkg") or not shutil.which("apt-get"),
                       reason="not a Debian machine"),
    pytest.mark.skipif(shutil.which("dpkg") is not None and _installed(),
                       reason="a kguard package is installed on this machine: the test "
                              "would replace it"),
]

APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300"]


def run(cmd, timeout=600, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert p.returncode == 0, (cmd, p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    return p


def _deb_files(deb):
    """The regular files a package holds, as absolute paths."""
    out = run(["dpkg-deb", "-c", str(deb)]).stdout
    return {line.split()[-1][1:] for line in out.splitlines() if line.startswith("-")}


# Everything after `apt-get install`, run where neither the source tree nor
# the build tree can be seen: each output goes to a file for the checks.
IN_NAMESPACE = r"""
set -eu
mount -t tmpfs none "$KG_SOURCE"
mount -t tmpfs none "$KG_MOVED"
test ! -e "$KG_SOURCE/CMakeLists.txt"
export HOME="$T/home" JUPYTER_DATA_DIR="$T/home/jupyter" KGUARD_STATE_DIR="$T/state" \
       KGUARD_KEY_DIR="$T/keys" PATH=/usr/sbin:/usr/bin:/sbin:/bin
unset JUPYTER_PATH PYTHONPATH VIRTUAL_ENV CONDA_PREFIX KGUARD_DATADIR KGUARD_RULES
mkdir -p "$HOME" "$T/work"
cd "$T/work"
command -v kguard > which.out
kguard --version > version.out
kguard install > install.out
cp "$JUPYTER_DATA_DIR/kernels/python3-kguard/kernel.json" spec.json
python3 -c 'import kguard; print(kguard.__file__)' > import.out
# an interpreter that sees none of Debian's site directories (as a venv or
# conda kernel): kguard puts the package on its path itself
kguard exec --state-dir "$T/state" -- python3 -S -c 'import kguard; print(kguard.__file__)' \
  > import-exec.out
cp /usr/share/doc/kguard/examples/train_classifier.ipynb .
KGUARD_EMULATE=cuda-assert:step=60:once \
  kguard run train_classifier.ipynb -k python3-kguard -o out.ipynb > run.out 2> run.err
kguard ckpt latest kguard-checkpoints > latest.out 2> latest.err
kguard ckpt verify "$(cat latest.out)" > verify.out
kguard doctor --kernel python3-kguard --json > doctor.json || echo $? > doctor.rc
kguard help run > help.out
MANPATH=/usr/share/man man -w kguard-run > man.out 2>&1 || true
kguard uninstall > uninstall.out
"""


def test_package_install_use_remove(tmp_path):
    build = tmp_path / "build"
    out = run(["bash", str(SOURCE / "scripts" / "package.sh"), str(build)], timeout=1200)
    built = Path(out.stdout.strip().splitlines()[-1])
    version = re.search(r"project\(kguard VERSION (\S+)",
                        (SOURCE / "CMakeLists.txt").read_text()).group(1)
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    assert built.name == "kguard_%s_%s.deb" % (version, arch)
    deb = tmp_path / built.name
    shutil.copy(built, deb)

    # what it depends on, from the binaries and for the Python helper
    depends = run(["dpkg-deb", "-f", str(deb), "Depends"]).stdout
    for lib in ("libzmq5", "libsodium23", "libcjson1", "libarchive13", "libssl3", "python3"):
        assert re.search(r"(^|, )%s( |,|$)" % lib, depends.strip()), depends

    # `cmake --install --prefix P` writes the package's tree under P
    prefix = tmp_path / "prefix"
    run(["cmake", "--install", str(build), "--prefix", str(prefix)])
    tree = {"/usr/" + str(p.relative_to(prefix)) for p in prefix.rglob("*")
            if p.is_file()}
    files = _deb_files(deb)
    assert tree == files, (sorted(tree - files), sorted(files - tree))
    for want in ("/usr/bin/kguard", "/usr/libexec/kguard/kguard-ckpt",
                 "/usr/libexec/kguard/kguard-eg", "/usr/share/kguard/python/kguard/__init__.py",
                 "/usr/share/kguard/rules/gpu-errors.json",
                 "/usr/lib/python3/dist-packages/kguard.pth",
                 "/usr/share/man/man1/kguard.1.gz", "/usr/share/man/man1/kguard-run.1.gz",
                 "/usr/share/bash-completion/completions/kguard",
                 "/usr/share/doc/kguard/cli.md",
                 "/usr/share/doc/kguard/examples/train_classifier.ipynb"):
        assert want in files, want

    moved = tmp_path / "build.moved"
    build.rename(moved)
    before = set(run(["dpkg-query", "-W", "-f=${Package}\n"]).stdout.split())
    listed = set()
    apt_env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # offline: every dependency is here already, nothing would be fetched
    sim = run(APT + ["--simulate", "install", str(deb)], env=apt_env).stdout
    assert re.findall(r"^Inst (\S+)", sim, re.M) == ["kguard"], sim
    try:
        run(APT + ["install", str(deb)], timeout=600, cwd=str(tmp_path), env=apt_env)
        # nothing else was installed
        after = set(run(["dpkg-query", "-W", "-f=${Package}\n"]).stdout.split())
        assert after - before == {"kguard"}
        listed = set(run(["dpkg", "-L", "kguard"]).stdout.split())
        assert files <= listed
        env = dict(os.environ, T=str(tmp_path), KG_SOURCE=str(SOURCE), KG_MOVED=str(moved))
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c",
                            IN_NAMESPACE], capture_output=True, text=True, timeout=600,
                           env=env)
        work = tmp_path / "work"
        assert p.returncode == 0, (p.stdout, p.stderr,
                                   (work / "run.err").read_text()
                                   if (work / "run.err").exists() else "")
        assert (work / "which.out").read_text().strip() == BIN
        assert (work / "version.out").read_text() == "kguard %s\n" % version
        # the kernelspec names the installed binary, never a build tree
        spec = json.loads((work / "spec.json").read_text())
        assert spec["argv"][0] == BIN
        assert "kguard uninstall --name python3-kguard" in (work / "install.out").read_text()
        # Debian's python3 imports the helper without any PYTHONPATH
        assert (work / "import.out").read_text().strip() == \
            "/usr/share/kguard/python/kguard/__init__.py"
        assert (work / "import-exec.out").read_text().strip() == \
            "/usr/share/kguard/python/kguard/__init__.py"
        # the example ran through the fault, from a verified checkpoint
        nb = json.loads((work / "out.ipynb").read_text())
        text = json.dumps(nb)
        assert "RESULT final_step=200" in text and "resumed_from=40" in text, \
            (work / "run.err").read_text()
        assert re.search(r": valid: step 200,", (work / "verify.out").read_text())
        rep = json.loads((work / "doctor.json").read_text())
        assert not any("python3-kguard" in x for x in rep["problems"]), rep["problems"]
        assert (work / "help.out").read_text().startswith("usage: kguard run ")
        man = (work / "man.out").read_text()
        if shutil.which("man"):
            assert man.strip() == "/usr/share/man/man1/kguard-run.1.gz", man
        assert not (tmp_path / "home" / "jupyter" / "kernels" / "python3-kguard").exists()
    finally:
        if _installed():
            subprocess.run(APT + ["purge", "kguard"], capture_output=True, text=True,
                           timeout=600, env=apt_env)
    assert not _installed()
    # nothing of it is left: no file, no directory of its own, no byte-code
    left = [f for f in listed if os.path.lexists(f) and not os.path.isdir(f)]
    assert left == []
    for d in ("/usr/share/kguard", "/usr/libexec/kguard", "/usr/share/doc/kguard"):
        assert not os.path.lexists(d), d
