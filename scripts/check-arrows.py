#!/usr/bin/env python3
"""check-arrows: the supervisor's files call each other one way only, and no
source file is long.

From the built object files (not from the sources: what the linker sees is
what calls what), build the file-level graph "A calls a function defined in
B" among the C files of kguard's supervisor (supervisor/*.c and its diag/
and run/ folders; exec/ and eg/ are separate programs' libraries with their
own owners), then fail naming

  * every cycle: a strongly connected component of more than one file (A
    calls B and B, maybe through others, calls A back), with one call per
    arrow of the circle as a witness;
  * every source file (.c/.h) under supervisor/ ipc/ checkpoint/ common/
    longer than MAX_LINES, except the commented exceptions below.

Usage: check-arrows.py BUILD_DIR [SOURCE_DIR]    (exit 0 clean, 1 findings,
2 bad usage or no object files: build first). `--graph` prints every arrow;
`--layers` prints the files by layer (0: calls no other file of the graph;
n: calls files of layers below n only), when there is no cycle.
Needs `nm` (binutils).
"""
import os
import subprocess
import sys

MAX_LINES = 600

# Files over the limit that the supervisor core does not own: their areas
# have their own owners and issues; each is named so that the list cannot
# grow silently. Tests (tests/) are not counted at all.
LONG_FILE_EXCEPTIONS = {}   # none since ipc/kg_msg.c was split (kg_msg_wire.c)

# Object-file folders (relative to BUILD_DIR) whose files form the graph,
# and the source folder (relative to SOURCE_DIR) each was compiled from.
OBJECT_DIRS = [
    ("supervisor/CMakeFiles/kguard.dir", "supervisor"),
    ("supervisor/cli/CMakeFiles/kg_cli.dir", "supervisor/cli"),
    ("supervisor/kernel/CMakeFiles/kg_supervisor.dir", "supervisor/kernel"),
    ("supervisor/gpu/CMakeFiles/kg_gpu.dir", "supervisor/gpu"),
    ("supervisor/proc/CMakeFiles/kg_proc.dir", "supervisor/proc"),
    ("supervisor/pure/CMakeFiles/kg_pure.dir", "supervisor/pure"),
    ("supervisor/diag/CMakeFiles/kg_diag.dir", "supervisor/diag"),
    ("supervisor/run/CMakeFiles/kg_run.dir", "supervisor/run"),
]

LINE_DIRS = ["supervisor", "ipc", "checkpoint", "common"]


def s_objects(build_dir):
    """[(source path, object path)] for every object of the graph."""
    found = []
    for obj_dir, src_dir in OBJECT_DIRS:
        root = os.path.join(build_dir, obj_dir)
        if not os.path.isdir(root):
            continue
        for dirpath, _, names in os.walk(root):
            for name in sorted(names):
                if not name.endswith(".c.o"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                found.append((os.path.join(src_dir, rel[:-2]), os.path.join(dirpath, name)))
    return found


def s_symbols(obj):
    """(defined functions, undefined symbols) of one object file."""
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "T":
            defined.add(name)
        elif kind == "U":
            undefined.add(name)
    return defined, undefined


def s_graph(objects):
    """{file: {callee file: example symbol}}."""
    defined_in, needs = {}, {}
    for src, obj in objects:
        defined, undefined = s_symbols(obj)
        for sym in defined:
            defined_in[sym] = src
        needs[src] = undefined
    graph = {src: {} for src in needs}
    for src, undefined in needs.items():
        for sym in sorted(undefined):
            callee = defined_in.get(sym)
            if callee and callee != src:
                graph[src].setdefault(callee, sym)
    return graph


def s_components(graph):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                comps.append(sorted(comp))
    return comps


def s_long_files(source_dir):
    found = []
    for top in LINE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(source_dir, top)):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, source_dir)
                with open(path, encoding="utf-8", errors="replace") as f:
                    n = sum(1 for _ in f)
                if n > MAX_LINES and rel not in LONG_FILE_EXCEPTIONS:
                    found.append((rel, n))
    return sorted(found)


def s_layers(graph):
    """{file: layer}: 0 for a file that calls none of the graph, else one
    more than the highest layer it calls (the graph has no cycle)."""
    layer = {}

    def visit(node):
        if node not in layer:
            layer[node] = -1   # on the path; a cycle was already excluded
            layer[node] = 1 + max((visit(c) for c in graph[node]), default=-1)
        return layer[node]

    for node in graph:
        visit(node)
    return layer


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    show_graph = "--graph" in argv
    if not args or len(args) > 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build_dir = args[0]
    source_dir = args[1] if len(args) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    objects = s_objects(build_dir)
    if not objects:
        print(f"check-arrows: no supervisor object files under {build_dir}: build first",
              file=sys.stderr)
        return 2
    graph = s_graph(objects)
    if show_graph:
        for src in sorted(graph):
            for callee, sym in sorted(graph[src].items()):
                print(f"{src} -> {callee}   ({sym})")
    failed = False
    cycles = [c for c in s_components(graph) if len(c) > 1]
    for comp in sorted(cycles):
        failed = True
        members = set(comp)
        print(f"cycle of {len(comp)} files: " + " ".join(comp))
        for src in comp:
            for callee, sym in sorted(graph[src].items()):
                if callee in members:
                    print(f"    {src} -> {callee}  ({sym})")
    for rel, n in s_long_files(source_dir):
        failed = True
        print(f"too long: {rel}: {n} lines (limit {MAX_LINES})")
    if "--layers" in argv and not cycles:
        layers = s_layers(graph)
        for n in range(max(layers.values()) + 1):
            names = sorted(os.path.relpath(f, "supervisor") for f, l in layers.items() if l == n)
            print(f"layer {n}: " + " ".join(names))
    if failed:
        return 1
    print(f"check-arrows: {len(graph)} files, no cycle; no source file over {MAX_LINES} lines "
          f"({len(LONG_FILE_EXCEPTIONS)} listed exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
