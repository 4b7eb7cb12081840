"""`kguard doctor` and `kguard install` tell the truth about the kernel that
will start: a Python or kernelspec that cannot start is a problem (doctor
exits 1) or a refusal (install exits 100, nothing written); doctor judges
the kernel it names and checks every guarded one; a kernelspec written by a
kguard that has since gone is flagged with the command that writes it
again; `kguard uninstall` removes what install wrote, and only that."""
import json
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from conftest import KGUARD, PYTHON, kguard

INNER = [PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def doctor(env, *args):
    p = kguard("doctor", "--json", *args, env=env)
    assert p.returncode in (0, 1), (p.returncode, p.stderr)
    return p.returncode, json.loads(p.stdout)


def guarded(env, name, inner=INNER, kguard_bin=KGUARD, where="jpath"):
    return env.spec(name, [kguard_bin, "kernel", "-f", "{connection_file}", "--name", name,
                           "--", *inner], where=where,
                    metadata={"kguard": {"wraps": "python3"}})


def test_doctor_python_that_does_not_exist_is_a_problem(env, tmp_path):
    code, rep = doctor(env, "--python", str(tmp_path / "nonexistent" / "python3"))
    assert code == 1
    (problem,) = [p for p in rep["problems"] if "nonexistent" in p]
    assert "could not be started: No such file or directory" in problem
    assert rep["stack"]["decision"] == "unknown"


def test_doctor_kernelspec_that_cannot_start_is_a_problem(env, tmp_path):
    env.spec("gone", [str(tmp_path / "no" / "python3"), "-m", "ipykernel_launcher", "-f",
                      "{connection_file}"])
    code, rep = doctor(env, "--kernel", "gone")
    assert code == 1
    assert any("kernelspec gone" in p and "cannot start" in p and "No such file" in p
               for p in rep["problems"]), rep["problems"]
    # text too: the problem and the spec marked
    out = kguard("doctor", "--kernel", "gone", env=env)
    assert out.returncode == 1 and "cannot start" in out.stdout


def test_doctor_missing_module_is_a_problem(env):
    env.spec("nomod", [PYTHON, "-m", "kguard_test_no_such_module", "-f", "{connection_file}"])
    code, rep = doctor(env, "--kernel", "nomod")
    assert code == 1
    assert any("cannot import kguard_test_no_such_module" in p for p in rep["problems"]), rep


def test_doctor_broken_guarded_spec_is_a_problem(env, tmp_path):
    guarded(env, "kg-broken", inner=[str(tmp_path / "gone" / "python"), "-m",
                                     "ipykernel_launcher", "-f", "{connection_file}"])
    code, rep = doctor(env, "--kernel", "kg-broken")
    assert code == 1
    assert any("kernelspec kg-broken" in p and "the wrapped kernel's program" in p
               for p in rep["problems"]), rep["problems"]


def test_doctor_without_kernel_checks_every_guarded_spec(env, tmp_path):
    """Two guarded kernelspecs: the alphabetically first cannot start. Doctor
    judges python3-kguard (the default name), says so, and still reports
    the broken one."""
    guarded(env, "a-kguard", inner=[str(tmp_path / "gone" / "python"), "-m",
                                    "ipykernel_launcher", "-f", "{connection_file}"])
    guarded(env, "python3-kguard")
    code, rep = doctor(env)
    assert rep["kernel"]["name"] == "python3-kguard"
    assert "a-kguard" in rep["kernel"]["chosen"] and "--kernel" in rep["kernel"]["chosen"]
    assert code == 1
    assert any("kernelspec a-kguard" in p and "cannot start" in p for p in rep["problems"])
    assert not any("python3-kguard" in p for p in rep["problems"])


def test_doctor_flags_a_kernelspec_whose_kguard_is_gone(env, tmp_path):
    """Written by a kguard that was moved away (a build tree removed): doctor
    names it, gives the install command, and that command fixes it with the
    options the kernelspec had."""
    old = tmp_path / "old-build" / "kguard"
    old.parent.mkdir()
    shutil.copy(KGUARD, old)
    kguard("install", "--name", "stale", "--checkpoints", str(tmp_path / "ck"),
           "--max-restarts", "5", "--preflight", "first", env=env, binary=str(old), check=0)
    shutil.rmtree(old.parent)
    code, rep = doctor(env, "--kernel", "stale")
    assert code == 1
    (problem,) = [p for p in rep["problems"] if "kernelspec stale" in p]
    assert str(old) in problem and "No such file" in problem
    fix = problem.split("write it again with this kguard: `", 1)[1].rstrip("`")
    assert fix.startswith(KGUARD + " install --kernel python3 --name stale --user")
    for part in ("--checkpoints " + str(tmp_path / "ck"), "--max-restarts 5",
                 "--preflight first"):
        assert part in fix, fix
    out = kguard(*shlex.split(fix)[1:], env=env)
    assert out.returncode == 0, out.stderr
    spec = json.loads((tmp_path / "data" / "kernels" / "stale" / "kernel.json").read_text())
    assert spec["argv"][0] == KGUARD and "--checkpoints" in spec["argv"]
    assert spec["env"]["KGUARD_PREFLIGHT"] == "first"
    code, rep = doctor(env, "--kernel", "stale")
    assert not any("stale" in p for p in rep["problems"]), rep["problems"]


def test_install_refuses_a_kernelspec_that_cannot_start(env, tmp_path):
    env.spec("gone", [str(tmp_path / "no" / "python3"), "-m", "ipykernel_launcher", "-f",
                      "{connection_file}"])
    out = kguard("install", "--kernel", "gone", env=env)
    assert out.returncode == 100, out
    assert out.stderr.startswith("kguard install: kernelspec 'gone'")
    assert "cannot start here" in out.stderr and str(tmp_path / "no" / "python3") in out.stderr
    assert "--no-check" in out.stderr
    assert not (tmp_path / "data").exists()
    # ... unless asked to
    out = kguard("install", "--kernel", "gone", "--no-check", env=env, check=0)
    assert (tmp_path / "data" / "kernels" / "gone-kguard" / "kernel.json").exists()


def test_install_refuses_a_python_without_the_module(env, tmp_path):
    env.spec("nomod", [PYTHON, "-m", "kguard_test_no_such_module", "-f", "{connection_file}"])
    out = kguard("install", "--kernel", "nomod", env=env)
    assert out.returncode == 100
    assert "cannot import kguard_test_no_such_module" in out.stderr
    assert not (tmp_path / "data").exists()


def test_install_says_how_to_remove_it_and_uninstall_does(env, tmp_path):
    out = kguard("install", env=env, check=0)
    kdir = tmp_path / "data" / "kernels" / "python3-kguard"
    assert "remove it with: kguard uninstall --name python3-kguard" in out.stdout
    assert (kdir / "kernel.json").exists()
    out = kguard("uninstall", env=env, check=0)
    assert out.stdout == "removed kernelspec python3-kguard (%s)\n" % kdir
    assert not kdir.exists()
    out = kguard("uninstall", env=env)
    assert out.returncode == 100 and "no kernelspec named 'python3-kguard'" in out.stderr


def test_uninstall_with_a_prefix_and_resources(env, tmp_path):
    prefix = tmp_path / "prefix"
    out = kguard("install", "--name", "Pk", "--prefix", str(prefix), env=env, check=0)
    assert "kguard uninstall --name pk --prefix %s" % prefix in out.stdout
    kdir = prefix / "share" / "jupyter" / "kernels" / "pk"
    (kdir / "sub").mkdir()
    (kdir / "sub" / "extra.txt").write_text("x")   # a copied resource directory
    # not there: nothing removed
    out = kguard("uninstall", "--name", "pk", "--user", env=env)
    assert out.returncode == 100 and kdir.exists()
    kguard("uninstall", "--name", "pk", "--prefix", str(prefix), env=env, check=0)
    assert not kdir.exists() and (prefix / "share" / "jupyter" / "kernels").exists()


def test_install_with_a_prefix_jupyter_does_not_search_warns(env, tmp_path):
    # As `jupyter kernelspec install --prefix` does: the kernel is written, and
    # the user is told Jupyter will not find it, and what to set.
    prefix = tmp_path / "elsewhere"
    out = kguard("install", "--name", "far", "--prefix", str(prefix), env=env, check=0)
    kdir = prefix / "share" / "jupyter" / "kernels"
    assert (kdir / "far" / "kernel.json").exists()
    assert ("warning: %s is not in Jupyter's kernelspec search path" % kdir) in out.stderr
    assert "JUPYTER_PATH=%s/share/jupyter" % prefix in out.stderr
    # Searched (JUPYTER_PATH names it): no warning.
    env["JUPYTER_PATH"] += ":" + str(prefix / "share" / "jupyter")
    out = kguard("install", "--name", "near", "--prefix", str(prefix), env=env, check=0)
    assert "search path" not in out.stderr


def test_uninstall_leaves_other_kernelspecs_alone(env, tmp_path):
    d = env.spec("plain", INNER)
    out = kguard("uninstall", "--name", "plain", env=env)
    assert out.returncode == 100
    assert "not a kguard kernelspec" in out.stderr and "jupyter kernelspec remove" in out.stderr
    assert (d / "kernel.json").exists()


def test_errors_name_the_path_once(env, tmp_path):
    missing = str(tmp_path / "x.json")
    out = kguard("restart", "-f", missing, env=env)
    assert out.returncode == 100
    assert out.stderr == "kguard restart: %s: No such file or directory\n" % missing
    # a permission error names the directory it could not create: as nobody,
    # in a directory of root's that everyone may read
    base = Path(tempfile.mkdtemp(prefix="kguard-cli-"))
    try:
        base.chmod(0o755)
        locked = base / "locked"
        locked.mkdir(mode=0o755)
        env = dict(env, HOME=str(base), JUPYTER_DATA_DIR=str(base / "data"))
        env.pop("JUPYTER_PATH", None)
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              KGUARD, "install", "--prefix", str(locked)],
                             capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 111, out
        assert out.stderr == ("kguard install: unable to create %s/share/jupyter/kernels/"
                              "python3-kguard: Permission denied\n" % locked), out.stderr
        # the signing key's directory, for keygen and for a seal that would make one
        data = base / "data"
        data.mkdir(mode=0o755)
        (data / "w").write_text("x")
        keys = locked / "keys"
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", KGUARD]
        env["KGUARD_KEY_DIR"] = str(keys)
        out = subprocess.run(nobody + ["keygen"], capture_output=True, text=True, env=env,
                             timeout=60)
        assert out.returncode == 111 and str(keys) in out.stderr, out
        assert out.stderr.startswith("kguard keygen: ") and "Permission denied" in out.stderr
        out = subprocess.run(nobody + ["ckpt", "seal", str(data), "--step", "1", "-o",
                                       str(base / "x.tar")],
                             capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 111 and "Permission denied" in out.stderr, out
        assert out.stderr.startswith("kguard ckpt seal: ") and str(keys) in out.stderr, out
    finally:
        shutil.rmtree(base)
