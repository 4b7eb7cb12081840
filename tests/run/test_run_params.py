"""`kguard run` options that shape the run, through the real runner: papermill
parameters (-p, -f JSON/YAML, the injected cell, its metadata, re-execution
after a restart), --cwd, the cells' output, strict UTF-8, and the "verified
checkpoint not restored" outcome (exit 5).

Most tests use KGUARD_RUN_PASSTHROUGH (the runner without the supervisor,
over plain ipykernel); the restart test uses the real kguard binary and the
labelled CPU emulation of a CUDA device-side assert."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import HERE, PYTHON, kguard_run, stream_text, text_of

PASS = os.environ.get("KGUARD_RUN_PASSTHROUGH")
BIN = os.environ.get("KGUARD_BIN")
pytestmark = pytest.mark.skipif(not PASS, reason="KGUARD_RUN_PASSTHROUGH not set")


def _cell(source, tags=None, cell_id=None):
    cell = {"cell_type": "code", "metadata": {"tags": tags} if tags else {},
            "source": source, "outputs": [], "execution_count": None}
    if cell_id:
        cell["id"] = cell_id
    return cell


def _notebook(path, cells, minor=5):
    for i, c in enumerate(cells):
        if minor >= 5:
            c.setdefault("id", "c%d" % i)
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3",
          "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": minor}
    path.write_text(json.dumps(nb))
    return path


def _validate(path):
    """nbformat itself must read and validate the written notebook."""
    code = ("import nbformat, sys\n"
            "nb = nbformat.read(sys.argv[1], as_version=4)\n"
            "nbformat.validate(nb)\n")
    out = subprocess.run([PYTHON, "-c", code, str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


SHOW = "print('VALUES', repr((lr, epochs, name, flag, nothing, ids, conf)))"


def test_parameters_injected_after_parameters_cell(workdir):
    d, env = workdir
    nb = _notebook(d / "p.ipynb", [
        _cell("# setup"),
        _cell("lr = 0.1\nepochs = 1\nname = 'default'\nflag = False\nnothing = 1\n"
              "ids = []\nconf = {}", tags=["parameters"]),
        _cell(SHOW)])
    run = kguard_run(PASS, nb, env, "-p", "lr", "0.001", "-p", "epochs", "3",
                     "-p", "name", "run one", "-p", "flag", "True", "-p", "nothing", "None",
                     "-p", "ids", "[1, 2]", "-p", "conf", '{"a": {"b": null}}')
    assert run.code == 0, run
    cells = run.nb["cells"]
    assert [c["metadata"].get("tags") for c in cells] == [
        None, ["parameters"], ["injected-parameters"], None]
    injected = "".join(cells[2]["source"])
    assert injected.startswith("# Parameters\n")
    assert "name = \"run one\"\n" in injected
    assert stream_text(cells[3]).strip() == (
        "VALUES (0.001, 3, 'run one', True, None, [1, 2], {'a': {'b': None}})")
    assert run.meta()["parameters"] == {"lr": 0.001, "epochs": 3, "name": "run one",
                                        "flag": True, "nothing": None, "ids": [1, 2],
                                        "conf": {"a": {"b": None}}}
    _validate(run.out_path)
    # Running the output again replaces its injected cell, never adds one.
    again = kguard_run(PASS, run.out_path, env, "-o", str(d / "again.ipynb"),
                       "-p", "lr", "5")
    assert again.code == 0, again
    tags = [c["metadata"].get("tags") for c in again.nb["cells"]]
    assert tags.count(["injected-parameters"]) == 1
    assert "lr = 5\n" in "".join(again.nb["cells"][2]["source"])


def test_parameters_without_parameters_cell_go_first(workdir):
    d, env = workdir
    nb = _notebook(d / "p.ipynb", [_cell("print('N', n)")], minor=4)
    run = kguard_run(PASS, nb, env, "-p", "n", "007")
    assert run.code == 0, run
    assert run.nb["cells"][0]["metadata"]["tags"] == ["injected-parameters"]
    assert "id" not in run.nb["cells"][0]           # nbformat 4.4: no cell ids
    assert stream_text(run.nb["cells"][1]).strip() == "N 7"
    _validate(run.out_path)


def test_parameter_files_and_precedence(workdir):
    d, env = workdir
    nb = _notebook(d / "p.ipynb", [_cell("x = 0", tags=["parameters"]), _cell(SHOW)])
    (d / "p.yaml").write_text("---\n# training\nlr: 0.5\nepochs: 2  # two\nname: 'it''s'\n"
                              "flag: yes\nnothing: ~\nids: [3]\nconf: {\"k\": 1}\n")
    run = kguard_run(PASS, nb, env, "-p", "epochs", "9", "-f", str(d / "p.yaml"))
    assert run.code == 0, run
    # The file is read first, -p wins, whatever their order on the line.
    assert stream_text(run.nb["cells"][2]).strip() == (
        "VALUES (0.5, 9, \"it's\", True, None, [3], {'k': 1})")
    (d / "p.json").write_text(json.dumps({"lr": 1e-4, "epochs": 1, "name": "é\n\"q\"",
                                          "flag": False, "nothing": None,
                                          "ids": [1.5, "a"], "conf": {"x": [True]}}))
    run = kguard_run(PASS, nb, env, "-f", str(d / "p.json"))
    assert run.code == 0, run
    assert stream_text(run.nb["cells"][2]).strip() == (
        "VALUES (0.0001, 1, 'é\\n\"q\"', False, None, [1.5, 'a'], {'x': [True]})")


@pytest.mark.parametrize("args,needle", [
    (["-p", "not-a-name", "1"], "not a Python identifier"),
    (["-p", "class", "1"], "Python keyword"),
    (["-p", "x", "[1,"], "is not JSON"),
    (["-p", "x"], "needs a NAME and a VALUE"),
    # Python would read 1e400 as inf, which the notebook's JSON metadata
    # cannot record: refused, not recorded as the string "1e400".
    (["-p", "lr", "1e400"], "-p lr 1e400: 1e400 is beyond the range of a float"),
    (["-p", "lr", "-1e400"], "beyond the range of a float"),
    (["-f", "PARAMS/inf.yaml"], "line 1: lr: 1.0e400 is beyond the range of a float"),
    # A forgotten value: the next option is not taken for it.
    (["-p", "lr", "-q"], "-p needs a NAME and a VALUE, not the option '-q'"),
    (["-p", "lr", "--quiet"], "-p needs a NAME and a VALUE, not the option '--quiet'"),
    (["-f", "PARAMS/nested.yaml"], "line 2: an indented line"),
    (["-f", "PARAMS/list.json"], "expected a JSON object"),
    (["-f", "PARAMS/missing.json"], "cannot read"),
    (["-f", "PARAMS/p.toml"], "must end in .json, .yaml or .yml"),
    (["--cwd", "PARAMS/no-such-dir"], "no such directory"),
])
def test_bad_parameters_are_usage_errors(workdir, args, needle):
    d, env = workdir
    (d / "nested.yaml").write_text("a:\n  b: 1\n")
    (d / "list.json").write_text("[1]")
    (d / "p.toml").write_text("a = 1")
    (d / "inf.yaml").write_text("lr: 1.0e400\n")
    nb = _notebook(d / "p.ipynb", [_cell("1")])
    args = [a.replace("PARAMS", str(d)) for a in args]
    run = kguard_run(PASS, nb, env, *args)
    assert run.code == 100, run
    assert needle in run.stderr
    assert not run.out_path.exists()


def test_negative_numbers_are_values(workdir):
    d, env = workdir
    nb = _notebook(d / "p.ipynb", [_cell("print(repr((a, b, c)))")])
    run = kguard_run(PASS, nb, env, "-p", "a", "-0.5", "-p", "b", "-3", "-p", "c", "-1e-3")
    assert run.code == 0, run
    assert stream_text(run.code_cells()[1]) == "(-0.5, -3, -0.001)\n"
    assert run.meta()["parameters"] == {"a": -0.5, "b": -3, "c": -0.001}


def test_cwd_and_cell_output(workdir):
    d, env = workdir
    work = d / "work"
    work.mkdir()
    (work / "data.txt").write_text("payload\n")
    nb = _notebook(d / "p.ipynb", [
        _cell("import os\nprint('CWD', os.getcwd())\nprint(open('data.txt').read().strip())"),
        _cell("import sys\nprint('to stderr', file=sys.stderr)\n6 * 7"),
        _cell("raise ValueError('boom')")])
    run = kguard_run(PASS, nb, env, "--cwd", str(work))
    assert run.code == 1, run
    cells = run.code_cells()
    assert stream_text(cells[0]).splitlines() == ["CWD %s" % work, "payload"]
    # Shown by default, as the cells' code run as a script would show it:
    # stdout and results on stdout, stderr and the traceback on stderr.
    assert run.stdout.splitlines() == ["CWD %s" % work, "payload", "42"], run.stdout
    assert "to stderr" in run.stderr and "ValueError: boom" in run.stderr
    assert "to stderr" not in run.stdout
    # The traceback is plain text when stderr is not a terminal.
    assert "\x1b[" not in run.stderr
    # --quiet hides it; papermill's --log-output shows it even then.
    quiet = kguard_run(PASS, nb, env, "--cwd", str(work), "--quiet")
    assert quiet.stdout == "" and "to stderr" not in quiet.stderr
    both = kguard_run(PASS, nb, env, "--cwd", str(work), "--quiet", "--log-output")
    assert "payload" in both.stdout and "to stderr" in both.stderr
    assert "cell 1/3" not in both.stderr


def test_invalid_utf8_is_refused(workdir):
    d, env = workdir
    good = json.dumps({"cells": [_cell("print('ok')")], "metadata": {}, "nbformat": 4,
                       "nbformat_minor": 4})
    bad = good.encode().replace(b"ok", b"o\xffk")
    nb = d / "bad.ipynb"
    nb.write_bytes(bad)
    run = kguard_run(PASS, nb, env)
    assert run.code == 3, run
    assert "not UTF-8: invalid byte 0xff" in run.stderr
    assert not run.out_path.exists()
    # Overlong and surrogate encodings too (Python's strict decoder refuses them).
    for seq in (b"\xc0\xaf", b"\xed\xa0\x80"):
        nb.write_bytes(good.encode().replace(b"ok", seq))
        assert kguard_run(PASS, nb, env).code == 3


def _fakelang_env(d, env):
    """The fake non-Python kernel's spec, found through JUPYTER_PATH."""
    share = d / "share" / "jupyter"
    shutil.copytree(HERE / "fakelang", share / "kernels" / "fakelang")
    env["JUPYTER_PATH"] = str(share)
    return share


def _fake_notebook(path, lines):
    nb = {"cells": [_cell(line) for line in lines],
          "metadata": {"kernelspec": {"name": "fakelang", "display_name": "FakeLang"}},
          "nbformat": 4, "nbformat_minor": 4}
    path.write_text(json.dumps(nb))
    return path


def test_checkpoint_not_restored_is_not_success(workdir):
    """A kguard notice whose metadata.kguard.checkpoint.status is "failed" (a
    verified checkpoint existed but could not be restored) makes the run end
    with exit 5 and says so in the metadata, though every cell ran. The fake
    kernel publishes the notice as the supervisor's contract describes it."""
    d, env = workdir
    _fakelang_env(d, env)
    ck = {"status": "failed", "step": 40, "archive": "ckpt-40.kgckpt.tar",
          "error": "restore failed: no space left on device"}
    notice = json.dumps({"event": "restored", "incident": "inc-1", "checkpoint": ck})
    nb = _fake_notebook(d / "f.ipynb", ["echo one", "notice " + notice, "echo two"])
    run = kguard_run(PASS, nb, env)
    assert run.code == 5, run
    assert run.meta()["run"]["result"] == "checkpoint-not-restored"
    expected = {k: v for k, v in ck.items() if k != "status"}
    assert run.meta()["run"]["checkpoints_not_restored"] == [dict(expected, incident="inc-1")]
    assert "could NOT be restored" in run.stderr and "no space left" in run.stderr
    assert "finished WITHOUT the checkpoint" in run.stderr
    assert stream_text(run.code_cells()[2]).strip() == "two"
    # The same notice with status "restored" is a plain success.
    ok = dict(ck, status="restored")
    nb = _fake_notebook(d / "g.ipynb", ["notice " + json.dumps({"event": "restored",
                                                                 "checkpoint": ok})])
    run = kguard_run(PASS, nb, env)
    assert run.code == 0, run
    assert run.meta()["run"]["checkpoints_not_restored"] == []


def test_run_fills_resource_dir_of_a_non_python_kernel(workdir):
    """The fake kernel's argv starts with {resource_dir}/fakelang-kernel: `run`
    fills it as jupyter_client does. Parameters need a Python kernel."""
    d, env = workdir
    _fakelang_env(d, env)
    nb = _fake_notebook(d / "f.ipynb", ["echo hello", "value 42"])
    run = kguard_run(PASS, nb, env)
    assert run.code == 0, run
    cells = run.code_cells()
    assert stream_text(cells[0]) == "hello\n"
    assert text_of(cells[1]["outputs"][0]["data"]["text/plain"]) == "42"
    run = kguard_run(PASS, nb, env, "-p", "a", "1")
    assert run.code == 100 and "declares language \"fakelang\"" in run.stderr, run


@pytest.mark.skipif(not BIN, reason="KGUARD_BIN not set")
def test_parameters_survive_a_restart(workdir):
    """A sticky (emulated) device assert restarts the kernel; the re-execution
    from the top runs the injected cell again, so the fresh kernel has the
    same parameters."""
    d, env = workdir
    env["KGUARD_EMULATE"] = "cuda-assert:step=1:once"
    nb = _notebook(d / "p.ipynb", [
        _cell("tag = 'default'", tags=["parameters"]),
        _cell("import kguard.emulate as em\nprint('TAG', tag)\nfor s in range(3):\n"
              "    em.step(s)\nprint('DONE', tag)")])
    run = kguard_run(BIN, nb, env, "-p", "tag", "p1", "--checkpoints", str(d / "ckpt"))
    assert run.code == 0, run
    assert run.meta()["run"]["restarts"] == 1, run
    assert run.meta()["run"]["executions"] == 6     # 3 cells, twice
    assert stream_text(run.nb["cells"][2]).splitlines() == ["TAG p1", "DONE p1"]
    assert run.meta()["parameters"] == {"tag": "p1"}


def test_bad_kernel_names(workdir):
    """--kernel is checked as jupyter_client checks names: ".." cannot reach a
    kernel.json outside the kernels directories (usage, 100); the same name in
    the notebook's metadata makes it a bad notebook (3). Nothing written."""
    d, env = workdir
    share = d / "share" / "jupyter"
    (share / "kernels").mkdir(parents=True)
    (share / "kernel.json").write_text(json.dumps({"argv": ["true"], "display_name": "x"}))
    env["JUPYTER_PATH"] = str(share)
    nb = _notebook(d / "p.ipynb", [_cell("1")])
    run = kguard_run(PASS, nb, env, "--kernel", "..")
    assert run.code == 100 and "directory reference" in run.stderr, run
    assert not run.out_path.exists()
    doc = json.loads(nb.read_text())
    doc["metadata"]["kernelspec"]["name"] = "a b"
    nb.write_text(json.dumps(doc))
    run = kguard_run(PASS, nb, env)
    assert run.code == 3 and "invalid kernelspec name" in run.stderr, run
    assert not run.out_path.exists()
