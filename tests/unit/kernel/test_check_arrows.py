"""scripts/check-arrows.py on made-up builds: it must name an arrow that runs
back up (by include and by call), a private header used outside its folder,
a circle of libraries, a circle of files (in any library) and a long file,
and pass a house whose arrows all point down. The objects are compiled here
from tiny C files laid out as CMake lays out kguard's libraries."""
import os
import shutil
import subprocess
import sys

import pytest

SOURCE_DIR = os.environ.get("KGUARD_SOURCE_DIR",
                            os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "scripts", "check-arrows.py")
CC = shutil.which("cc") or shutil.which("gcc")

FOLDERS = ["common", "ipc", "checkpoint", "supervisor", "supervisor/diag",
           "supervisor/kernel/decide", "supervisor/kernel/peers", "supervisor/gpu",
           "supervisor/kernel", "supervisor/cli",
           "supervisor/exec", "supervisor/run", "supervisor/eg"]


def s_tree(tmp_path, files, long_lines=0):
    """A source tree and a build tree from files ({"folder/name": text}):
    every .c is compiled into BUILD/folder/CMakeFiles/t.dir/name.c.o; one
    extra header of long_lines lines in common/ if asked."""
    src, build = tmp_path / "src", tmp_path / "build"
    for folder in FOLDERS:
        (src / folder).mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (src / rel).write_text(text)
    includes = [f"-I{src / folder}" for folder in FOLDERS]
    for rel in files:
        if not rel.endswith(".c"):
            continue
        folder, name = os.path.split(rel)
        objdir = build / folder / "CMakeFiles" / "t.dir"
        objdir.mkdir(parents=True, exist_ok=True)
        subprocess.run([CC, *includes, "-c", str(src / rel), "-o", str(objdir / (name + ".o"))],
                       check=True)
    if long_lines:
        (src / "common" / "kg_long.h").write_text("/* x */\n" * long_lines)
    return str(build), str(src)


def s_run(build, src, *extra):
    return subprocess.run([sys.executable, SCRIPT, build, src, *extra], capture_output=True,
                          text=True)


needs_cc = pytest.mark.skipif(not CC, reason="no C compiler")


@needs_cc
def test_passes_a_house_whose_arrows_point_down(tmp_path):
    build, src = s_tree(tmp_path, {
        "common/kg_low.h": "void kg_low(void);\n",
        "common/kg_low.c": '#include "kg_low.h"\nvoid kg_low(void) {}\n',
        "ipc/kg_wire.h": "void kg_wire(void);\n",
        "ipc/kg_wire.c": '#include "kg_wire.h"\n#include "kg_low.h"\n'
                         "void kg_wire(void) { kg_low(); }\n",
        "supervisor/kernel/kg_sup_priv.h": "void kg__mid(void);\n",
        "supervisor/kernel/kg_sup_mid.c": '#include "kg_sup_priv.h"\n#include "kg_wire.h"\n'
                                          "void kg__mid(void) { kg_wire(); }\n",
        "supervisor/kernel/kg_sup_top.c": '#include "kg_sup_priv.h"\n'
                                          "void kg__top(void) { kg__mid(); }\n",
        "supervisor/run/kg_run.c": '#include "kg_wire.h"\nvoid kg_run(void) { kg_wire(); }\n',
    }, long_lines=1000)
    r = s_run(build, src, "--layers")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 arrow(s) back up" in r.stdout
    assert "0 circle(s) of libraries, 0 circle(s) of files" in r.stdout
    assert "kernel layer 0: kg_sup_mid.c\n" in r.stdout
    assert "kernel layer 1: kg_sup_top.c\n" in r.stdout
    assert "run layer 0: kg_run.c\n" in r.stdout
    assert "ipc layer 0: kg_wire.c\n" in r.stdout


@needs_cc
def test_names_an_include_that_runs_back_up(tmp_path):
    build, src = s_tree(tmp_path, {
        "common/kg_low.c": '#include "kg_wire.h"\nint kg_low(void) { return KG_WIRE; }\n',
        "ipc/kg_wire.h": "#define KG_WIRE 1\n",
    })
    r = s_run(build, src)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "arrow runs back up: common/kg_low.c (common) includes kg_wire.h (ipc)" in r.stdout


@needs_cc
def test_names_a_call_that_runs_back_up_and_the_circle_it_closes(tmp_path):
    build, src = s_tree(tmp_path, {
        "supervisor/kernel/decide/kg_gate.c": "void kg_kernel_poke(void);\n"
                                     "void kg_gate(void) { kg_kernel_poke(); }\n",
        "supervisor/kernel/peers/kg_kernel.c": "void kg_gate(void);\n"
                                       "void kg_kernel_poke(void) {}\n"
                                       "void kg_kernel(void) { kg_gate(); }\n",
    })
    r = s_run(build, src)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("arrow runs back up: supervisor/kernel/decide/kg_gate.c (decide) calls kg_kernel_poke, "
            "defined in supervisor/kernel/peers/kg_kernel.c (peers)") in r.stdout
    assert "circle of 2 libraries: decide peers" in r.stdout
    assert "    decide -> peers  (supervisor/kernel/decide/kg_gate.c calls kg_kernel_poke" in r.stdout
    assert "cycle of 2 files: supervisor/kernel/decide/kg_gate.c supervisor/kernel/peers/kg_kernel.c" in r.stdout


@needs_cc
def test_sideways_is_not_down(tmp_path):
    """exec, run and eg stand beside the kernel supervisor: exec may not call
    pure/, and eg may not call diag/."""
    build, src = s_tree(tmp_path, {
        "supervisor/kernel/decide/kg_state.c": "void kg_state(void) {}\n",
        "supervisor/diag/kg_policy.c": "void kg_policy(void) {}\n",
        "supervisor/exec/kg_exec.c": "void kg_state(void);\nvoid kg_policy(void);\n"
                                     "void kg_exec(void) { kg_state(); kg_policy(); }\n",
        "supervisor/eg/kg_eg.c": "void kg_policy(void);\nvoid kg_eg(void) { kg_policy(); }\n",
    })
    r = s_run(build, src)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "supervisor/exec/kg_exec.c (exec) calls kg_state" in r.stdout
    assert "kg_exec.c (exec) calls kg_policy" not in r.stdout
    assert "supervisor/eg/kg_eg.c (eg) calls kg_policy" in r.stdout
    assert "2 arrow(s) back up" in r.stdout


@needs_cc
def test_names_a_private_header_used_outside_its_folder(tmp_path):
    build, src = s_tree(tmp_path, {
        "supervisor/kernel/kg_sup_priv.h": "#define KG__X 1\n",
        "supervisor/cli/kg_cli.c": '#include "kg_sup_priv.h"\nint kg_cli(void) { return KG__X; }\n',
    })
    r = s_run(build, src)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("private header: supervisor/cli/kg_cli.c includes kg_sup_priv.h, private to "
            "supervisor/kernel/") in r.stdout
    assert "0 arrow(s) back up, 1 private header(s)" in r.stdout


@needs_cc
def test_names_a_circle_of_files_and_a_long_file(tmp_path):
    build, src = s_tree(tmp_path, {
        "supervisor/kernel/kg_a.c": "void kg_b(void); void kg_a(void) { kg_b(); }\n",
        "supervisor/kernel/kg_b.c": "void kg_c(void); void kg_b(void) { kg_c(); }\n",
        "supervisor/kernel/kg_c.c": "void kg_a(void); void kg_c(void) { kg_a(); }\n",
    }, long_lines=1001)
    r = s_run(build, src)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("cycle of 3 files: supervisor/kernel/kg_a.c supervisor/kernel/kg_b.c "
            "supervisor/kernel/kg_c.c" in r.stdout)
    assert "supervisor/kernel/kg_c.c -> supervisor/kernel/kg_a.c  (kg_a)" in r.stdout
    assert "too long: common/kg_long.h: 1001 lines (limit 1000)" in r.stdout


@needs_cc
def test_names_a_circle_of_files_in_every_library(tmp_path):
    """Not only the kernel supervisor's: exec, checkpoint and common keep
    their files one way too."""
    files = {}
    for folder in ("supervisor/exec", "checkpoint", "common"):
        tag = folder.rsplit("/", 1)[-1]
        files[f"{folder}/kg_{tag}_up.c"] = (f"void kg_{tag}_down(void);\n"
                                           f"void kg_{tag}_up(void) {{ kg_{tag}_down(); }}\n")
        files[f"{folder}/kg_{tag}_down.c"] = (f"void kg_{tag}_up(void);\n"
                                             f"void kg_{tag}_down(void) {{ kg_{tag}_up(); }}\n")
    build, src = s_tree(tmp_path, files)
    r = s_run(build, src)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("cycle of 2 files: supervisor/exec/kg_exec_down.c supervisor/exec/kg_exec_up.c"
            in r.stdout)
    assert "cycle of 2 files: checkpoint/kg_checkpoint_down.c checkpoint/kg_checkpoint_up.c" \
        in r.stdout
    assert "cycle of 2 files: common/kg_common_down.c common/kg_common_up.c" in r.stdout
    assert "0 circle(s) of libraries, 3 circle(s) of files" in r.stdout


@needs_cc
def test_an_object_whose_source_is_gone_does_not_count(tmp_path):
    """A build tree keeps the objects of deleted sources; they are not the
    house's."""
    build, src = s_tree(tmp_path, {
        "supervisor/kernel/decide/kg_old.c": "void kg_kernel_poke(void);\n"
                                    "void kg_old(void) { kg_kernel_poke(); }\n",
        "supervisor/kernel/peers/kg_kernel.c": "void kg_kernel_poke(void) {}\n",
    })
    r = s_run(build, src)
    assert r.returncode == 1 and "kg_old.c (decide) calls kg_kernel_poke" in r.stdout
    os.remove(os.path.join(src, "supervisor", "kernel", "decide", "kg_old.c"))
    r = s_run(build, src)
    assert r.returncode == 0, r.stdout + r.stderr


def test_without_objects_it_says_build_first(tmp_path):
    r = s_run(str(tmp_path), SOURCE_DIR)
    assert r.returncode == 2
    assert "build first" in r.stderr
