#!/usr/bin/env python3
"""How many of each library's sources have a test named after them: a file
tests/**/test_<name>.c or .py, where <name> is the source's name without
"kg_" (kg_gate.c: test_gate.c). Prints one line per library and the total;
exits 0 (a report, not a gate). With --list, names the sources without one.

usage: scripts/test-coverage-names.py [--list] [SOURCE_DIR]"""
import re
import sys
from pathlib import Path

ROOTS = ("common", "ipc", "checkpoint", "supervisor")

# Folders whose sources are the concern files of one object rather than
# classes of their own: a test named after each would test a slice of an
# object no caller sees alone. They count through the tests named here.
PARTS_OF_ONE = {
    "supervisor/kernel": "kg_sup_*.c are the concern files of one object, kg_supervisor: "
                         "its rows by test_sup_states, its pure rules in decide/, its "
                         "behaviour by tests/integration and tests/fault",
}


def libraries(src):
    """[(library, folder, [source stems])] from every add_library of kguard's
    own folders, in the order the CMakeLists list them."""
    out = []
    for root in ROOTS:
        for cm in sorted((src / root).rglob("CMakeLists.txt")):
            text = re.sub(r"#.*", "", cm.read_text())
            for m in re.finditer(r"add_library\(\s*(\w+)\s+(?:STATIC|SHARED|OBJECT)?([^)]*)\)",
                                 text):
                stems = [Path(w).stem for w in m.group(2).split() if w.endswith(".c")]
                if stems:
                    out.append((m.group(1), cm.parent.relative_to(src).as_posix(), stems))
    return out


def tested_names(src):
    names = set()
    for p in (src / "tests").rglob("test_*"):
        if p.suffix in (".c", ".py"):
            names.add(p.stem[len("test_"):])
    return names


def main(argv):
    show = "--list" in argv
    args = [a for a in argv if a != "--list"]
    src = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    names = tested_names(src)
    total = have = 0
    for lib, folder, stems in libraries(src):
        hit = [s for s in stems if re.sub(r"^kg_", "", s) in names]
        total += len(stems)
        have += len(hit)
        print(f"{lib:18} {folder:28} {len(hit):3} of {len(stems):3}")
        if show and folder in PARTS_OF_ONE:
            print(f"    note: {PARTS_OF_ONE[folder]}")
        if show:
            for s in stems:
                if s not in hit:
                    print(f"    untested by name: {folder}/{s}.c")
    print(f"{'total':18} {'':28} {have:3} of {total:3}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
