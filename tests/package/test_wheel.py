"""kguard installed as pip-installed native tools are: scripts/wheel.sh
builds the wheel; `pip install` puts it into a fresh venv (system site
packages on, so torch and ipykernel come from Debian and kguard only from
the wheel); every ELF file in it resolves its libraries from the wheel or
from glibc/libstdc++/libgcc, and needs no glibc newer than its tag; the
`--sys-prefix` kernelspec names the venv's kguard and Python and runs the
example through an emulated device-side assert (resumed from step 40); a
`kguard exec` job imports kguard; `pip uninstall` leaves nothing of it.

KG_WHEEL_BUILD: the build directory scripts/wheel.sh reuses between runs."""
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

SOURCE = Path(os.environ.get("KGUARD_SOURCE_DIR", Path(__file__).resolve().parents[2]))
SYSTEM = re.compile(r"^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|"
                    r"libstdc\+\+|libgcc_s)[.-]")


def run(cmd, timeout=600, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert p.returncode == 0, (cmd, p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    return p


def elf_files(root):
    for p in sorted(Path(root).rglob("*")):
        if p.is_file() and not p.is_symlink() and p.open("rb").read(4) == b"\x7fELF":
            yield p


def test_wheel_install_use_uninstall(tmp_path):
    build = os.environ.get("KG_WHEEL_BUILD", str(tmp_path / "wheel-build"))
    env = dict(os.environ)
    if shutil.which("ccache"):
        env.setdefault("CMAKE_C_COMPILER_LAUNCHER", "ccache")
    out = run(["bash", str(SOURCE / "scripts" / "wheel.sh"), build], timeout=1200, env=env)
    whl = Path(out.stdout.strip().splitlines()[-1])
    version = re.search(r"project\(kguard VERSION (\S+)",
                        (SOURCE / "CMakeLists.txt").read_text()).group(1)
    m = re.fullmatch(r"kguard-%s-py3-none-manylinux_(\d+)_(\d+)_x86_64\.whl"
                     % re.escape(version), whl.name)
    assert m, whl.name
    tag = (int(m.group(1)), int(m.group(2)))
    assert tag <= (2, 35), tag   # Ubuntu 22.04's glibc
    names = zipfile.ZipFile(whl).namelist()
    data = "kguard-%s.data/" % version
    for want in ("scripts/kguard", "data/libexec/kguard/kguard-ckpt",
                 "data/libexec/kguard/kguard-eg", "data/share/kguard/python/kguard/__init__.py",
                 "data/share/kguard/rules/gpu-errors.json", "data/share/man/man1/kguard.1.gz",
                 "data/share/bash-completion/completions/kguard"):
        assert data + want in names, want

    venv = tmp_path / "venv"
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)])
    before = {p for p in venv.rglob("*")}
    run([str(venv / "bin/pip"), "install", "--no-index", "--no-cache-dir", str(whl)])
    kg = venv / "bin" / "kguard"
    assert os.access(kg, os.X_OK)

    # every library from the wheel or the system's C/C++ runtime, even with
    # an LD_LIBRARY_PATH that offers others; no symbol newer than the tag
    bundle = str((venv / "libexec/kguard/lib").resolve()) + "/"
    elves = list(elf_files(venv / "libexec")) + [kg]
    assert len(elves) > 3
    newest = (2, 0)
    for f in elves:
        ldd = run(["ldd", str(f)], env=dict(os.environ, LD_LIBRARY_PATH="/usr/lib/x86_64-linux-gnu")
                  ).stdout
        for soname, path in re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M):
            assert SYSTEM.match(soname) or os.path.realpath(path).startswith(bundle), \
                (f, soname, path)
        for v in re.findall(r"\bGLIBC_2\.(\d+)", run(["objdump", "-p", str(f)]).stdout):
            newest = max(newest, (2, int(v)))
    assert newest == tag, (newest, tag)

    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    e = {k: v for k, v in os.environ.items()
         if k not in ("JUPYTER_PATH", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX",
                      "KGUARD_DATADIR", "KGUARD_RULES", "KGUARD_BIN", "KGUARD_SOURCE_DIR")}
    e.update(HOME=str(home), JUPYTER_DATA_DIR=str(home / "jupyter"),
             KGUARD_STATE_DIR=str(tmp_path / "state"), KGUARD_KEY_DIR=str(tmp_path / "keys"),
             PATH="/usr/bin:/bin")   # not activated: the venv's kguard by its path
    doctor = run([str(kg), "doctor", "--json"], env=e, cwd=work, timeout=120)
    me = json.loads(doctor.stdout)["kguard"]
    assert me == {"executable": str(kg), "install": "wheel (pip)", "prefix": str(venv),
                  "python_env": str(venv)}, me
    out = run([str(kg), "install", "--sys-prefix"], env=e, cwd=work).stdout
    spec_dir = venv / "share/jupyter/kernels/python3-kguard"
    assert str(spec_dir) in out
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"][0] == str(kg)
    assert spec["argv"][spec["argv"].index("--") + 1] == str(venv / "bin/python")
    assert spec["display_name"] == "Python 3 (kguard)"
    listed = run([str(venv / "bin/python"), "-c",
                  "import jupyter_client.kernelspec as k;"
                  "print(k.KernelSpecManager().find_kernel_specs()['python3-kguard'])"],
                 env=e, cwd=work).stdout.strip()
    assert listed == str(spec_dir)

    nb = work / "train_classifier.ipynb"
    shutil.copy(SOURCE / "examples/train_classifier.ipynb", nb)
    r = subprocess.run([str(kg), "run", str(nb), "-k", "python3-kguard", "-o", "out.ipynb"],
                       env=dict(e, KGUARD_EMULATE="cuda-assert:step=60:once"), cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    text = (work / "out.ipynb").read_text()
    assert "RESULT final_step=200" in text and "resumed_from=40" in text, r.stderr[-3000:]
    # a training command: the venv's Python imports kguard through the .pth,
    # and from the wheel's copy
    job = run([str(kg), "exec", "--checkpoints", str(work / "ck"), "--",
               str(venv / "bin/python"), "-c", "import kguard; print(kguard.__file__)"],
              env=e, cwd=work, timeout=120).stdout
    assert str(venv / "share/kguard/python/kguard/__init__.py") in job, job
    run([str(kg), "uninstall", "--sys-prefix"], env=e, cwd=work)
    assert not spec_dir.exists()

    # the GPU check from the wheel, as on a bare CUDA machine (here: named SKIPs)
    gpu = subprocess.run(["sh", str(SOURCE / "tests/gpu/run-on-device.sh"), str(whl),
                          str(tmp_path / "gpu")], env=dict(e, KGUARD_PYTHON="/usr/bin/python3"),
                         cwd=work, capture_output=True, text=True, timeout=400)
    assert gpu.returncode == 0, (gpu.stdout, gpu.stderr[-2000:])
    summary = json.loads((tmp_path / "gpu/summary.json").read_text())
    verdicts = {c["check"]: c["verdict"] for c in summary["checks"]}
    assert verdicts.pop("install") == "PASS", gpu.stdout
    exec_checks = {"exec-label4", "exec-same-bug", "exec-fault-to-step", "exec-nproc2"}
    assert set(verdicts) == {"doctor", "preflight", "driver-assert", "driver-trap",
                             "kernel-assert", "run-notebook", "torch_label4"} | exec_checks, \
        gpu.stdout
    assert summary["failures"] == 0, gpu.stdout
    # no GPU here: the exec flows are SKIPs by name, and each also ran on the
    # CPU under the labelled emulation, reported apart from a GPU verdict
    for c in summary["checks"]:
        if c["check"] in exec_checks:
            assert c["verdict"] == "SKIP" and "no CUDA device visible" in c["facts"], c
            assert c["cpu_emulated"]["verdict"] == "PASS", c
            assert "PASS (cpu-emulated) %s: " % c["check"] in gpu.stdout
    cold = next(c for c in summary["checks"] if c["check"] == "exec-fault-to-step")
    parts = cold["cpu_emulated"]["measured"]
    assert parts["standby"]["torch_preimported"] and not parts["cold"]["torch_preimported"]
    assert parts["cold"]["import_torch_s"] > parts["standby"]["import_torch_s"]

    run([str(venv / "bin/pip"), "uninstall", "-y", "kguard"])
    left = sorted(str(p.relative_to(venv)) for p in venv.rglob("*")
                  if p not in before and not p.is_dir())
    assert left == [], left
    # no directory of its own either
    for d in ("libexec/kguard", "share/kguard", "share/jupyter/kernels/python3-kguard"):
        assert not (venv / d).exists(), d
