"""The library layout the pages describe is the one CMake builds: every
add_library target of kguard's own folders, with its folder, is in
docs/CONTRIBUTING.md's layout table (folder and library), and every such
folder is a row of docs/ARCHITECTURE.md's library table; neither page names
a library or a library folder CMake does not build."""
import os
import re
from pathlib import Path

SOURCE = Path(os.environ.get("KGUARD_SOURCE_DIR", Path(__file__).resolve().parents[2]))
ROOTS = ("common", "ipc", "checkpoint", "supervisor")


def built():
    """{library: folder} from the CMakeLists under kguard's own folders."""
    libs = {}
    for root in ROOTS:
        for cm in sorted((SOURCE / root).rglob("CMakeLists.txt")):
            text = re.sub(r"#.*", "", cm.read_text())
            folder = cm.parent.relative_to(SOURCE).as_posix() + "/"
            for name in re.findall(r"^\s*add_library\(\s*([A-Za-z0-9_]+)", text, flags=re.M):
                libs[name] = folder
    return libs


def table_rows(page, heading):
    """The rows of the first table after the heading line, as cell lists."""
    lines = (SOURCE / "docs" / page).read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(heading))
    rows, inside = [], False
    for line in lines[start + 1:]:
        if line.startswith("|"):
            inside = True
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif inside:
            break
    return rows[1:]   # without the header


def library_folders(cell):
    return {f for f in re.findall(r"`([a-z/]+/)`", cell)
            if f.split("/")[0] in ROOTS}


def test_contributing_layout_names_every_library_with_its_folder():
    libs = built()
    assert libs, "no add_library found"
    documented = {}
    for row in table_rows("CONTRIBUTING.md", "## Layout"):
        folders = library_folders(row[0])
        for name in re.findall(r"`(kg_[a-z0-9_]+)`", row[1]):
            assert len(folders) == 1, f"{name}: one folder per library row, got {row[0]}"
            documented[name] = next(iter(folders))
    assert documented == libs, (
        "docs/CONTRIBUTING.md's layout table and the CMakeLists differ:\n"
        f"  only in CMake: {sorted(set(libs.items()) - set(documented.items()))}\n"
        f"  only in the page: {sorted(set(documented.items()) - set(libs.items()))}")


def test_architecture_table_has_a_row_per_library_folder():
    folders = set(built().values())
    rows = table_rows("ARCHITECTURE.md", "## Libraries and their arrows")
    documented = set()
    for row in rows:
        documented |= library_folders(row[0])
    assert documented == folders, (
        "docs/ARCHITECTURE.md's library table and the CMakeLists differ:\n"
        f"  only in CMake: {sorted(folders - documented)}\n"
        f"  only in the page: {sorted(documented - folders)}")
