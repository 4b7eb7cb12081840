"""scripts/check-arrows.py on a made-up build: it must name a circle of
calls between object files and a source file over the limit, and pass a
one-way graph. The objects are compiled here from three tiny C files laid
out as CMake lays out kg_supervisor's objects."""
import os
import shutil
import subprocess
import sys

import pytest

SOURCE_DIR = os.environ.get("KGUARD_SOURCE_DIR",
                            os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "scripts", "check-arrows.py")
CC = shutil.which("cc") or shutil.which("gcc")


def s_tree(tmp_path, files, long_lines=0):
    """A source tree and a build tree with the objects of files
    ({name: C source}); one extra header of long_lines lines if asked."""
    src, build = tmp_path / "src", tmp_path / "build"
    for top in ("supervisor", "ipc", "checkpoint", "common"):
        (src / top).mkdir(parents=True)
    (src / "supervisor" / "kernel").mkdir()
    objdir = build / "supervisor" / "kernel" / "CMakeFiles" / "kg_supervisor.dir"
    objdir.mkdir(parents=True)
    for name, code in files.items():
        c = src / "supervisor" / "kernel" / name
        c.write_text(code)
        subprocess.run([CC, "-c", str(c), "-o", str(objdir / (name + ".o"))], check=True)
    if long_lines:
        (src / "common" / "kg_long.h").write_text("/* x */\n" * long_lines)
    return str(build), str(src)


def s_run(build, src, *extra):
    return subprocess.run([sys.executable, SCRIPT, build, src, *extra], capture_output=True,
                          text=True)


@pytest.mark.skipif(not CC, reason="no C compiler")
def test_names_a_circle_and_a_long_file(tmp_path):
    build, src = s_tree(tmp_path, {
        "kg_a.c": "void kg_b(void); void kg_a(void) { kg_b(); }\n",
        "kg_b.c": "void kg_c(void); void kg_b(void) { kg_c(); }\n",
        "kg_c.c": "void kg_a(void); void kg_c(void) { kg_a(); }\n",
    }, long_lines=601)
    r = s_run(build, src)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("cycle of 3 files: supervisor/kernel/kg_a.c supervisor/kernel/kg_b.c "
            "supervisor/kernel/kg_c.c"
            in r.stdout)
    assert "supervisor/kernel/kg_c.c -> supervisor/kernel/kg_a.c  (kg_a)" in r.stdout
    assert "too long: common/kg_long.h: 601 lines (limit 600)" in r.stdout


@pytest.mark.skipif(not CC, reason="no C compiler")
def test_passes_one_way_arrows_and_prints_layers(tmp_path):
    build, src = s_tree(tmp_path, {
        "kg_top.c": "void kg_mid(void); void kg_top(void) { kg_mid(); }\n",
        "kg_mid.c": "void kg_low(void); void kg_mid(void) { kg_low(); }\n",
        "kg_low.c": "void kg_low(void) {}\n",
    }, long_lines=600)
    r = s_run(build, src, "--layers")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "layer 0: kernel/kg_low.c" in r.stdout
    assert "layer 2: kernel/kg_top.c" in r.stdout
    assert "no cycle" in r.stdout


def test_without_objects_it_says_build_first(tmp_path):
    r = s_run(str(tmp_path), SOURCE_DIR)
    assert r.returncode == 2
    assert "build first" in r.stderr
